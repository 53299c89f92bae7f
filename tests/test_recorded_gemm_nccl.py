"""gpuaccept-gemm (cuBLASLt, algorithm choice, NVML clocks) and gpuaccept-nccl documents recorded on the H100
(docs/evidence/2026-11-23-h100-gemm-lt, docs/evidence/2026-11-23-h100-nccl)."""

import json

import pytest
from conftest import RECORDED, REFERENCE_DIR

from gpuaccept import references
from gpuaccept.probe import peaks

GEMM_DIR = RECORDED / "2026-11-23-h100-gemm-lt"
NCCL_DIR = RECORDED / "2026-11-23-h100-nccl"
COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast")


def gemm_docs():
    return sorted(p for p in GEMM_DIR.rglob("*.json") if "gemm" in p.name and "inject" not in p.name
                  and "torch" not in p.name and "crosscheck" not in p.name)  # fmt: skip


def nccl_docs():
    return sorted(p for p in NCCL_DIR.rglob("nccl*.json") if "inject" not in p.name)


@pytest.mark.parametrize("path", gemm_docs(), ids=lambda p: str(p.relative_to(GEMM_DIR)))
def test_every_gemm_row_says_its_algorithm_and_clocks(path):
    doc = json.loads(path.read_text())
    assert doc["verification"]["passed"] and not doc["errors"]
    assert doc["nvml"]["available"] and doc["nvml"]["gpus"][0]["pci_device_id"] == "0x2330"
    rows = [r for r in doc["results"]["gemm"] if "skipped" not in r]
    assert {r["precision"] for r in rows} == {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8"}
    for r in rows:
        a, c = r["algorithm"], r["clocks"]
        assert 0 <= a["heuristic_rank"] < a["candidates"] <= 8, r
        assert a["compute_type"].startswith("CUBLAS_COMPUTE_"), r
        assert c["readings"] >= 2 and 300 <= c["sm_clock_mhz_median"] <= 1980, r
        assert c["pstate_min"] == 0 and c["clocks_event_reason_names"], r
        if a["candidates_timed"] > 1:  # the chosen one was the fastest while choosing
            assert a["tune_tflops_chosen"] >= a["tune_tflops_heuristic_first"], r
    # FP32 stays FP32: pedantic wherever the heuristic offered it, and inside the FP32 tolerance.
    fp32 = [r["algorithm"]["compute_type"] for r in rows if r["precision"] == "fp32"]
    assert fp32 and set(fp32) == {"CUBLAS_COMPUTE_32F_PEDANTIC"}
    # The sustained windows run at the power cap: the sampler saw it.
    windows = [r for r in rows if r["phase"] == "window"]
    assert any("sw_power_cap" in r["clocks"]["clocks_event_reason_names"] for r in windows)


@pytest.mark.parametrize("path", gemm_docs(), ids=lambda p: str(p.relative_to(GEMM_DIR)))
def test_recorded_gemm_rates_as_fractions_of_the_h100_peak(path):
    doc = peaks.annotate(json.loads(path.read_text()), peaks.load(REFERENCE_DIR / peaks.DEFAULT_PATH), "peaks")
    fractions = {k: v["value"] for k, v in doc["metrics"].items() if k.endswith("_peak_fraction")}
    assert len(fractions) == 6 and all(0.5 < v < 1.0 for v in fractions.values()), fractions
    clocks = doc["peak"]["fractions"]["bf16_tflops_min"]["clocks"]
    assert clocks and clocks[0]["sm_clock_mhz_median"] < 1980  # the window ran below the boost clock


def test_the_gemm_verifier_still_fails_a_wrong_product():
    doc = json.loads(next(GEMM_DIR.rglob("gemm_inject.json")).read_text())
    assert not doc["verification"]["passed"] and doc["verification"]["failures"]
    assert all("--inject-error" in f for f in doc["verification"]["failures"])


@pytest.mark.parametrize("path", nccl_docs(), ids=lambda p: str(p.relative_to(NCCL_DIR)))
def test_one_gpu_nccl_self_test_runs_every_collective_and_waives_the_metrics(path):
    doc = json.loads(path.read_text())
    assert doc["tool"] == "gpuaccept-nccl" and doc["verification"]["passed"] and not doc["errors"]
    assert doc["parameters"]["ranks"] == 1 and doc["results"]["self_test"] is True
    assert doc["parameters"]["nvls"] == "off (NCCL_NVLS_ENABLE=0)"
    assert doc["cuda"]["nccl_version"] >= 22800 and doc["metrics"] == {}
    rows = doc["results"]["collectives"]
    sizes = doc["parameters"]["sizes_bytes"]
    assert {(r["collective"], r["bytes"]) for r in rows} == {(c, s) for c in COLLECTIVES for s in sizes}
    for r in rows:
        assert r["verified"] and r["mismatches"] == 0
        assert r["algbw_gbps"] == pytest.approx(r["bytes"] / r["time_us_median"] / 1e3, rel=1e-6)
        # nccl-tests' bus factors with n = 1: 2(n-1)/n = (n-1)/n = 0, broadcast 1.
        factor = 1.0 if r["collective"] == "broadcast" else 0.0
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * factor)
    # The node type's references for the check: all informational, each waived in the document with the reason.
    refs = references.load_node_type(REFERENCE_DIR, "h100_sxm5_80gb").check("nccl")
    assert set(refs) == set(doc["waived"]) and not any(r.judged for r in refs.values())
    assert all(why.startswith("one GPU: no peers") for why in doc["waived"].values())


def test_the_nccl_verifier_fails_a_wrong_result():
    doc = json.loads(next(NCCL_DIR.rglob("nccl_inject.json")).read_text())
    failures = doc["verification"]["failures"]
    assert not doc["verification"]["passed"]
    assert len(failures) == len(doc["results"]["collectives"]) and all("1 wrong elements" in f for f in failures)
