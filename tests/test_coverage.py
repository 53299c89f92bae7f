"""Every shipped node type covers what its checks gate (gpuaccept.judge.coverage): walked node type by node type,
suite by suite, metric by metric, for the node type files and for ``<sku>_x<count>`` types derived from a GPU model
alone; a gap makes ``gpuaccept references`` exit 1. A reported metric never fails a node for want of a reference."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import FIXTURES, REFERENCE_DIR

from gpuaccept import metric_table, references
from gpuaccept.checks import CHECKS, SAMPLER, SUITES, in_suite
from gpuaccept.judge import checkdoc, coverage, summarize, verdict

NODE_TYPES = sorted(p.stem for p in REFERENCE_DIR.glob("*.yaml"))
SKUS = sorted(p.stem for p in (REFERENCE_DIR / references.GPU_DIR).glob("*.yaml"))


def gated_names(check_key: str) -> list[str]:
    return [n for m in CHECKS[check_key].metrics if m.gated for n in m.metric_names()]


@pytest.mark.parametrize("node_type", [*NODE_TYPES, *(f"{s}_x{n}" for s in SKUS for n in (1, 3, 16))])
def test_every_shipped_node_type_references_every_gated_metric_of_its_checks(node_type):
    t = references.load_node_type(REFERENCE_DIR, node_type)
    assert coverage.gaps(t) == []
    derived = t.node_layer_missing is not None
    for suite in SUITES:
        if suite == "multinode":
            continue
        for check in in_suite(suite):
            if check.key not in t.checks:
                assert derived or check.optional or suite not in coverage.REQUIRED_SUITES, (suite, check.key)
                continue
            for name in gated_names(check.key):
                if derived and metric_table.layer(check.key, name) == metric_table.NODE:
                    continue
                if metric_table.gated(check.key, name):  # the declaration that owns the name gates it
                    assert name in t.checks[check.key], (node_type, suite, check.key, name)


def test_every_gated_wildcard_names_what_it_stands_for():
    """A gated pattern lists its names, so that the walk above sees each one; each name matches its pattern."""
    for key, check in CHECKS.items():
        for m in check.metrics:
            if m.gated and any(c in m.pattern for c in "*?["):
                assert m.names, (key, m.pattern)
            assert all(fnmatch.fnmatchcase(n, m.pattern) for n in m.names), (key, m.pattern)


def test_the_power_samplers_figures_are_reported():
    assert not any(m.gated for m in SAMPLER)


def _copy_without(tmp_path, node_type: str, check: str, metric: str):
    refs = tmp_path / "refs"
    shutil.copytree(REFERENCE_DIR, refs)
    path = refs / f"{node_type}.yaml"
    doc = yaml.safe_load(path.read_text())
    del doc["checks"][check][metric]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return refs


def test_a_node_type_without_a_gated_reference_fails_gpuaccept_references(tmp_path):
    refs = _copy_without(tmp_path, "h200_x2", "nccl", "allreduce_busbw_gbps_max")
    gaps = coverage.gaps(references.load_node_type(refs, "h200_x2"))
    assert len(gaps) == 1 and "'allreduce_busbw_gbps_max'" in gaps[0] and "h200_x2.yaml" in gaps[0]
    cmd = [sys.executable, "-m", "gpuaccept", "references", "--reference-dir"]
    res = subprocess.run([*cmd, str(refs)], capture_output=True, text=True, check=False)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "allreduce_busbw_gbps_max" in res.stderr and "1 gated metric(s)" in res.stderr
    ok = subprocess.run([*cmd, str(REFERENCE_DIR)], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr


def test_a_node_type_forgetting_a_required_check_is_a_gap(tmp_path):
    refs = tmp_path / "refs"
    shutil.copytree(REFERENCE_DIR, refs)
    path = refs / "h100_sxm5_80gb_x4.yaml"
    doc = yaml.safe_load(path.read_text())
    del doc["checks"]["nccl"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    gaps = coverage.gaps(references.load_node_type(refs, "h100_sxm5_80gb_x4"))
    assert any("no references for check 'nccl'" in g for g in gaps), gaps


HPL_CUDA_RUN = FIXTURES / "hpl_cuda_reframe" / "20261125T231620Z-commission"


@pytest.mark.parametrize("node_type", [t for t in NODE_TYPES if not t.startswith("a100")])
def test_hpl_cuda_judged_on_every_h100_and_h200_type_without_a_reference_failure(node_type):
    """HPL-CUDA's recorded H100 run (its energy and power from the sampler included) judged as each H100/H200 node
    type: no row fails for want of a reference; and where it did not run, the optional check rejects nothing."""
    t = references.load_node_type(REFERENCE_DIR, node_type)
    assert "hpl_cuda" in t.checks
    recorded, facts, report = summarize.read_recorded(HPL_CUDA_RUN)
    v = summarize.judge_run(HPL_CUDA_RUN, report, facts, REFERENCE_DIR, node_type, recorded["suite"])
    rows = [r for r in v.rows if r.check == "hpl_cuda" and r.metric]
    assert {"tflops", "energy_j", "power_avg_w"} <= {r.metric for r in rows}
    assert not [r for r in rows if r.reason == "no reference value for this metric"], verdict.table(v)
    gpus = [{"index": i, "pcie_gen_max": 5, "pcie_width_max": 16} for i in range(t.gpu_count)]
    v = verdict.build(None, {"hostname": "n", "gpus": gpus}, REFERENCE_DIR, node_type, "commission", report_error="x")
    row = next(r for r in v.rows if r.check == "hpl_cuda" and r.metric is None)
    assert row.status == verdict.NOT_RUN and not row.expected and verdict.OPTIONAL_NOT_RUN in row.reason


def test_the_metric_list_shows_each_gate():
    """docs/metrics.md's list carries the gate the declarations give (tests/test_checkdoc.py keeps it fresh)."""
    table = "\n".join(checkdoc.metrics_table())
    assert "| gated |" in table and "| reported |" in table
