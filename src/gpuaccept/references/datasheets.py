"""The GPU models' datasheet figures (``reference_values/datasheets/gpu_peaks.yaml``, schema
``gpuaccept.gpu_peaks/1``): each model's peak rate per precision, memory bandwidth, maximum board power and NVLink
rate, with the datasheet each comes from. The judge bounds figures with them (gpuaccept.references.bounds); the probe
sets a benchmark's rates against them (gpuaccept.probe.peaks)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuaccept import textinput

SCHEMA = "gpuaccept.gpu_peaks/1"
PRECISIONS = ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8")
DEFAULT_PATH = Path("datasheets") / "gpu_peaks.yaml"  # under the reference directory

#: Why a datasheet fraction is reported and not judged: the reference files' reason, and what `gpuaccept baseline`
#: proposes for every ``*_peak_fraction`` this module adds.
NOT_JUDGED = (
    "the rate over the datasheet peak of its precision (reference_values/datasheets/gpu_peaks.yaml): how close a GPU "
    "at its power cap comes to the vendor's boost-clock figure; reported, not judged"
)
#: The checks whose ``*_peak_fraction`` metrics this module adds (cpu_gemm's are its own tool's, and judged).
CHECKS_ANNOTATED = ("gemm", "hplstyle")

# gpuaccept-gemm's precisions -> the datasheet figure they run on (cuBLAS's DGEMM uses the FP64 tensor cores
# on GPUs that have them; FP32 is pedantic, no TF32).
GEMM_PRECISION = {"fp64": "fp64_tensor", "fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}


class PeaksError(Exception):
    """The peaks file is missing or malformed; the message names the file and the key."""


@dataclass(frozen=True)
class GpuPeaks:
    key: str
    names: tuple[str, ...]
    pci_device_ids: tuple[str, ...]
    tflops: dict[str, float]
    source: str
    reference: str
    memory_gbps: float | None = None  # the GPU memory bandwidth (GB/s): the judge's bound on a device copy
    max_power_w: float | None = None  # the maximum board power (W): the judge's bound on an average power
    nvlink_gbps: float | None = None  # NVLink per GPU, both directions together (GB/s): what the report sets
    # GPU-to-GPU copies and NCCL's bus bandwidth against (half of it per direction)


def load(path: str | Path) -> list[GpuPeaks]:
    path = Path(path)
    data = textinput.load_yaml(path, "peaks file", PeaksError, object)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise PeaksError(f"{path}: 'schema' must be {SCHEMA!r}")
    sources = data.get("sources")
    gpus = data.get("gpus")
    if not isinstance(sources, dict) or not isinstance(gpus, dict) or not gpus:
        raise PeaksError(f"{path}: needs the mappings 'sources' and 'gpus'")
    out = []
    for key, g in gpus.items():
        where = f"{path}: gpus.{key}"
        if not isinstance(g, dict):
            raise PeaksError(f"{where}: must be a mapping")
        names, ids, tflops = g.get("names"), g.get("pci_device_ids", []), g.get("tflops")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise PeaksError(f"{where}.names: a non-empty list of device names")
        if not isinstance(ids, list) or not all(isinstance(i, str) and i.lower().startswith("0x") for i in ids):
            raise PeaksError(f"{where}.pci_device_ids: a list of strings such as '0x2330'")
        if not isinstance(tflops, dict) or not tflops:
            raise PeaksError(f"{where}.tflops: a mapping of precision to TFLOP/s")
        for prec, value in tflops.items():
            if prec not in PRECISIONS:
                raise PeaksError(f"{where}.tflops.{prec}: unknown precision (known: {', '.join(PRECISIONS)})")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise PeaksError(f"{where}.tflops.{prec}: {value!r} is not a positive number")
        limits = {}
        for lim in ("memory_gbps", "max_power_w", "nvlink_gbps"):
            value = g.get(lim)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
                raise PeaksError(f"{where}.{lim}: {value!r} is not a positive number")
            limits[lim] = None if value is None else float(value)
        source = g.get("source")
        if source not in sources:
            raise PeaksError(f"{where}.source: {source!r} is not under 'sources'")
        reference = (sources[source] or {}).get("reference") if isinstance(sources[source], dict) else None
        if not isinstance(reference, str) or not reference:
            raise PeaksError(f"{path}: sources.{source}.reference: the datasheet it comes from")
        out.append(GpuPeaks(str(key), tuple(names), tuple(i.lower() for i in ids),
                            {p: float(v) for p, v in tflops.items()}, source, reference, **limits))
    return out


def find(peaks: list[GpuPeaks], name: str, pci_device_id: str | None = None) -> GpuPeaks | None:
    """The entry for a GPU: by PCI device id first, then by exact device name."""
    if pci_device_id:
        for p in peaks:
            if pci_device_id.lower() in p.pci_device_ids:
                return p
    for p in peaks:
        if name in p.names:
            return p
    return None
