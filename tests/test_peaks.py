"""The datasheet peak table and the *_peak_fraction metrics, on documents recorded on the GPU machines."""

import copy
import json
from pathlib import Path

import pytest
import yaml
from conftest import RECORDED, REFERENCE_DIR

from gpuaccept import cli, references
from gpuaccept.probe import peaks

PEAKS = REFERENCE_DIR / peaks.DEFAULT_PATH
GEMM_H100 = RECORDED / "2026-11-22-h100-smoke" / "gemm.json"
HPL_H100 = RECORDED / "2026-11-22-h100-hpl" / "default1.json"


@pytest.fixture(scope="module")
def table():
    return peaks.load(PEAKS)


def test_every_shipped_node_type_has_its_gpu_in_the_table(table):
    for t in references.load_all(REFERENCE_DIR):
        if not t.match["gpu_count"]:
            continue
        path, model = t.path, t.match["gpu_model"]
        entry = peaks.find(table, model)
        assert entry is not None, f"{path.name}: {model!r} has no datasheet peaks"
        assert {"fp64_tensor", "fp32", "tf32", "bf16", "fp16"} <= set(entry.tflops)
        # The judge's physical bounds (gpuaccept.references.bounds): the memory bandwidth and the board power.
        assert entry.memory_gbps and entry.max_power_w, f"{path.name}: {model!r} has no memory_gbps or max_power_w"


def test_pci_device_id_wins_over_the_name(table):
    assert peaks.find(table, "some other name", "0x2330").key == "h100_sxm5_80gb"
    assert peaks.find(table, "NVIDIA H200", None).key == "h200_sxm_141gb"
    assert peaks.find(table, "NVIDIA H100 PCIe", "0x2331") is None


def test_gemm_fractions_are_the_measured_rate_over_the_peak(table):
    doc = json.loads(GEMM_H100.read_text())
    out = peaks.annotate(copy.deepcopy(doc), table, PEAKS)
    m = out["metrics"]
    assert m["fp64_tflops_min_peak_fraction"]["value"] == pytest.approx(doc["metrics"]["fp64_tflops_min"]["value"] / 67)
    bf16 = doc["metrics"]["bf16_tflops_min"]["value"]
    assert m["bf16_tflops_min_peak_fraction"]["value"] == pytest.approx(bf16 / 989.5)
    assert m["fp8_tflops_min_peak_fraction"]["unit"] == "ratio"
    assert all(0.3 < v["value"] < 1.0 for k, v in m.items() if k.endswith("_peak_fraction"))
    # One GPU: the concurrent rate is waived, and so is its fraction, with the reason carried over.
    assert "one GPU" in out["waived"]["fp64_concurrent_tflops_min_peak_fraction"]
    assert out["peak"]["gpu_model"] == "h100_sxm5_80gb" and "datasheet" in out["peak"]["source"]
    assert not any(k.startswith(("fp64_xfer", "bf16_xfer")) and k.endswith("_peak_fraction") for k in m)


def test_hplstyle_fractions_use_the_fp64_tensor_peak(table):
    doc = json.loads(HPL_H100.read_text())
    out = peaks.annotate(copy.deepcopy(doc), table, PEAKS)
    assert out["metrics"]["tflops_min_peak_fraction"]["value"] == pytest.approx(
        doc["metrics"]["tflops_min"]["value"] / 67
    )
    assert out["peak"]["fractions"]["tflops_sum"]["figure"] == "fp64_tensor"


def test_a_gpu_without_figures_is_waived_not_guessed(table):
    doc = json.loads(GEMM_H100.read_text())
    for d in doc["devices"]:
        d["name"] = "NVIDIA Future GPU"
    out = peaks.annotate(doc, table, PEAKS)
    assert not [k for k in out["metrics"] if k.endswith("_peak_fraction")]
    assert "no datasheet peak for GPU 'NVIDIA Future GPU'" in out["waived"]["fp64_tflops_min_peak_fraction"]


def test_a_precision_without_a_figure_is_waived(table):
    doc = json.loads(GEMM_H100.read_text())
    for d in doc["devices"]:
        d["name"] = "NVIDIA A100-SXM4-80GB"
    out = peaks.annotate(doc, table, PEAKS)
    assert out["waived"]["fp8_tflops_min_peak_fraction"] == "a100_sxm4_80gb: no datasheet figure for fp8"
    assert "fp64_tflops_min_peak_fraction" in out["metrics"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["gpus"]["h100_sxm5_80gb"]["tflops"].update(fp4=1.0), "tflops.fp4: unknown precision"),
        (lambda d: d["gpus"]["h100_sxm5_80gb"]["tflops"].update(bf16=0), "tflops.bf16: 0 is not a positive number"),
        (lambda d: d["gpus"]["h200_sxm_141gb"].update(source="nowhere"), "gpus.h200_sxm_141gb.source"),
        (lambda d: d["gpus"]["a100_sxm4_80gb"].update(pci_device_ids=[8370]), "pci_device_ids"),
        (lambda d: d.update(schema="other"), "'schema' must be"),
    ],
)
def test_a_malformed_table_names_the_key(tmp_path, edit, message):
    data = yaml.safe_load(PEAKS.read_text())
    edit(data)
    bad = tmp_path / "gpu_peaks.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(peaks.PeaksError, match=message.replace("(", r"\(")):
        peaks.load(bad)


def test_the_command_annotates_in_place_and_rejects_bad_input(tmp_path: Path, capsys):
    doc = tmp_path / "gemm.json"
    doc.write_text(GEMM_H100.read_text())
    assert cli.main(["annotate", "peaks", str(doc), "--reference-dir", str(REFERENCE_DIR)]) == 0
    assert "fp64_tflops_min_peak_fraction" in json.loads(doc.read_text())["metrics"]
    assert "fp64_tflops_min: 0.79" in capsys.readouterr().out
    doc.write_text("{not json")
    assert cli.main(["annotate", "peaks", str(doc)]) == cli.EXIT_INPUT
    assert f"{doc}: the gpuaccept-gemm or gpuaccept-hplstyle document is not valid JSON" in capsys.readouterr().err
    doc.write_text(GEMM_H100.read_text())
    assert cli.main(["annotate", "peaks", str(doc), "--peaks", str(tmp_path / "missing.yaml")]) == cli.EXIT_INPUT
    assert "missing.yaml: peaks file is missing" in capsys.readouterr().err
    assert doc.read_text() == GEMM_H100.read_text()
    assert cli.main(["peaks", str(doc), "--reference-dir", str(REFERENCE_DIR)]) == 0  # the same runner, older name
    assert "fp64_tflops_min_peak_fraction" in json.loads(doc.read_text())["metrics"]


def test_hplstyle_fraction_carries_the_power_samplers_clocks(table):
    stage = next((RECORDED / "2026-11-22-h100-hpl-reframe").rglob("GpuHplStyle_*/hplstyle.json")).parent
    doc = json.loads((stage / "hplstyle.json").read_text())
    power = json.loads((stage / "power.json").read_text())
    out = peaks.annotate(doc, table, PEAKS, power)
    (clocks,) = out["peak"]["fractions"]["tflops_min"]["clocks"]
    assert 1000 < clocks["sm_mhz_median"] < 1981 and clocks["power_limit_w"] == 700.0
    assert "sw_power_cap" in clocks["throttled_s"]
