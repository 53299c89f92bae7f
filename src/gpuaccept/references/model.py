"""The reference values as the judge holds them: a metric's reference (:class:`MetricReference`, the one place
where a measured value is held against its band), a GPU SKU's (:class:`GpuSku`) and a node type's
(:class:`NodeType`), the names that become paths (:func:`check_name`) and the error every reference problem is.

The files they come from, their two layers and their format: gpuaccept.references (the package) and
docs/reference-values.md.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept import metric_table

SCHEMA_V1 = "gpuaccept.references/1"  # one file holding both layers
SCHEMA = "gpuaccept.references/2"  # a node type naming its GPU SKU: the node layer only
GPU_SCHEMA = "gpuaccept.gpu/1"  # a GPU SKU: the per-GPU layer
NODE_BASELINE_SCHEMA = "gpuaccept.node_baseline/1"  # one node's own host figures, from its accepted runs
NODE_BASELINE_FILE = "node-baseline.yaml"  # results/<node>/node-baseline.yaml, beside the node's runs
GPU_DIR = "gpus"
SOURCE_KINDS = ("measured", "datasheet", "public", "synthetic")  # synthetic: test fixtures only
UNITS = metric_table.UNITS
MAX_TOLERANCE = 0.5  # a wider tolerance needs 'wide_tolerance: <why>' in its entry
MAX_FILE_BYTES = 1 << 20
# Node types, GPU SKUs and run ids: one pattern, checked everywhere a name becomes a path component.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")  # whole string: check_name uses fullmatch
NODE_TYPE_RE = NAME_RE  # the name it had
PASS, FAIL, INFO = "pass", "fail", "info"


class ReferenceError(Exception):
    """A reference file is missing, malformed, or has no entry for what was asked."""


def check_name(value: Any, what: str = "node type") -> str:
    """``value`` if it is a safe name (node type, GPU SKU, run id: letters, digits, '_', '.', '-', not starting
    with '.' or '-', at most 128 characters, so never a path); ReferenceError otherwise."""
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        shown = _show(value)
        raise ReferenceError(
            f"{what} {shown} is not a valid name: letters, digits, '_', '.' and '-', starting with a letter or digit, "
            "at most 128 characters"
        )
    return value


def _show(value: Any, limit: int = 60) -> str:
    """repr() of a value for a message, cut short: a message never carries a huge value."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."



@dataclass(frozen=True)
class MetricReference:
    """One metric's reference: judged (value and tolerance) or informational (reported, not judged)."""

    check: str
    metric: str
    unit: str
    value: float | None
    lower: float | None  # fraction below ``value`` that still passes; None: no lower bound
    upper: float | None  # fraction above ``value`` that still passes; None: no upper bound
    source: str
    informational: str | None = None  # the reason it is not judged
    where: str = ""  # "file:line" for messages
    layer: str = metric_table.GPU  # 'gpu': from the GPU SKU's file; 'node': from the node type's
    source_kind: str = ""  # the kind of its source: measured, datasheet, public, synthetic
    owner: str = metric_table.GPU  # what the figure is a property of: gpu, link, host, node (metric_table)
    band: str = ""  # why the band is what it is (the reference file's 'band', or how a link gate was formed)
    link_fraction: float | None = None  # a link figure: the fraction of the link's rate that must be reached

    @property
    def needs_link(self) -> bool:
        """A link gate not yet bound to a node's link (``for_link``): it cannot judge a value by itself."""
        return self.link_fraction is not None and self.value is None

    @property
    def judged(self) -> bool:
        return self.informational is None

    @property
    def provenance(self) -> str:
        """Where the figure comes from, for a verdict row: 'source id (kind), file:line'."""
        kind = f" ({self.source_kind})" if self.source_kind else ""
        return f"{self.source}{kind}, {self.where}" if self.where else f"{self.source}{kind}"

    @property
    def lower_bound(self) -> float | None:
        if self.value is None or self.lower is None:
            return None
        return self.value * (1.0 - self.lower)

    @property
    def upper_bound(self) -> float | None:
        if self.value is None or self.upper is None:
            return None
        return self.value * (1.0 + self.upper)

    def assess(self, measured: Any) -> tuple[str, str, tuple[float | None, float | None]]:
        """(status, reason, (lower bound, upper bound)) of a measured value against this reference: the one place
        where pass or fail of a value is decided. Status is 'pass', 'fail' or 'info' (informational: reported,
        not judged); the reason is empty on a pass."""
        bounds = (self.lower_bound, self.upper_bound)
        if not self.judged:
            return INFO, f"informational: {self.informational}", (None, None)
        if self.needs_link:
            return FAIL, "a link gate not bound to the node's PCIe link (the judge binds it from the facts)", bounds
        if measured is None:
            return FAIL, "no value", bounds
        if isinstance(measured, bool) or not isinstance(measured, (int, float)) or not math.isfinite(measured):
            return FAIL, f"not a finite number: {_show(measured)}", bounds
        lo, hi = bounds
        tol = f"{self.value:.6g} {self.unit}"
        if lo is not None and measured < lo and self.link_fraction is not None:
            return FAIL, f"below {lo:.6g} {self.unit}: {self.band} ({self.provenance})", bounds
        if lo is not None and measured < lo:
            return FAIL, f"below {lo:.6g} {self.unit} (reference {tol} -{self.lower:.0%}, {self.provenance})", bounds
        if hi is not None and measured > hi:
            return FAIL, f"above {hi:.6g} {self.unit} (reference {tol} +{self.upper:.0%}, {self.provenance})", bounds
        return PASS, "", bounds

    def for_link(self, rate_gbps: float, link: str) -> MetricReference:
        """A link gate bound to the node's link: the floor is ``link_fraction`` of the link's rate per direction
        (a bidirectional figure moves both directions at once: twice the rate)."""
        assert self.link_fraction is not None
        rate = rate_gbps * (2.0 if self.metric.startswith("bidir") else 1.0)
        floor = self.link_fraction * rate
        both = ", both directions" if rate != rate_gbps else ""
        band = f"at least {self.link_fraction:g} of the link ({link}{both})"
        return dataclasses.replace(self, value=floor, lower=0.0, upper=None, band=band)

    def judge(self, measured: float | None) -> bool | None:
        """True/False for a judged metric, None for an informational one (``assess`` decides)."""
        status = self.assess(measured)[0]
        return None if status == INFO else status == PASS

    def reframe_tuple(self) -> tuple[float, None, None, str]:
        """The ReFrame reference tuple: the value and unit, with no thresholds. ReFrame records the figures next
        to their reference; pass or fail is the judge's alone (``assess``), never decided twice."""
        return (self.value or 0.0, None, None, self.unit)


@dataclass
class GpuSku:
    """A parsed ``reference_values/gpus/<sku>.yaml``: how NVML names the GPU, and its per-GPU figures."""

    name: str
    path: Path
    description: str
    names: list[str]  # NVML's nvmlDeviceGetName
    pci_device_ids: list[str]  # NVML's pciDeviceId, "0x233010DE" (device id << 16 | vendor id 10DE)
    sources: dict[str, dict[str, Any]]
    checks: dict[str, dict[str, MetricReference]]
    health: dict[str, Any] | None = None  # per-GPU health expectations, for a node type without a file

    def fits(self, gpu: dict[str, Any]) -> bool:
        """Whether a GPU of the node facts is of this SKU: by PCI device id where the facts have one (the
        name alone where they do not: facts recorded before device ids were read)."""
        device = gpu.get("pci_device_id")
        if device and self.pci_device_ids:
            return str(device).upper() in {d.upper() for d in self.pci_device_ids}
        return gpu.get("name") in self.names


@dataclass
class NodeType:
    """A node type: its GPU SKU's per-GPU references and its own node-level ones, merged per check."""

    name: str
    path: Path
    description: str
    match: dict[str, Any]  # gpu_count, gpu_model (the SKU's first name), and pcie_gen, pcie_width, cpu_model
    sources: dict[str, dict[str, Any]]
    checks: dict[str, dict[str, MetricReference]]
    extra: dict[str, Any] = field(default_factory=dict)
    sku: GpuSku | None = None  # None: a self-contained gpuaccept.references/1 file
    # Why the node layer is missing (a known SKU, no node type file for this GPU count); None when present.
    node_layer_missing: str | None = None

    @property
    def gpu_count(self) -> int:
        return int(self.match["gpu_count"])

    def check(self, check: str) -> dict[str, MetricReference]:
        """The references of one check; a node type without them is an error, never an empty dict."""
        try:
            return self.checks[check]
        except KeyError:
            raise ReferenceError(
                f"{self.path}: node type {self.name!r} has no references for check {check!r} "
                f"(it has: {', '.join(sorted(self.checks)) or 'none'}); add a 'checks: {check}:' section "
                "(docs/reference-values.md)"
                + (f"; {self.node_layer_missing}" if self.node_layer_missing else "")
            ) from None

    def metric(self, check: str, metric: str) -> MetricReference:
        refs = self.check(check)
        try:
            return refs[metric]
        except KeyError:
            raise ReferenceError(
                f"{self.path}: node type {self.name!r} has no reference for metric {metric!r} of check "
                f"{check!r}; add it under 'checks: {check}:' (docs/reference-values.md)"
            ) from None

    def missing_reason(self, check: str, metric: str) -> str | None:
        """Why a metric has no reference when that is the node layer's absence (NOT RUN, not FAIL); else None."""
        if self.node_layer_missing is None:
            return None
        try:
            layer = metric_table.layer(check, metric)
        except metric_table.UnknownMetric:
            return None
        return self.node_layer_missing if layer == metric_table.NODE else None

    def reframe_reference(self, check: str) -> dict[str, dict[str, tuple]]:
        """ReFrame's ``reference`` dictionary for one check, bound to every system ('*')."""
        return {"*": {name: ref.reframe_tuple() for name, ref in self.check(check).items()}}


def _merge(*layers: dict[str, dict[str, MetricReference]]) -> dict[str, dict[str, MetricReference]]:
    out: dict[str, dict[str, MetricReference]] = {}
    for layer in layers:
        for check, refs in layer.items():
            out.setdefault(check, {}).update(refs)
    return out
