"""The node type of a run, resolved once (gpuaccept.references.resolve): node-type.json written and read strictly,
the checks' view of it (a file changed since, no node type, the partition's extras where gpuaccept run gave no
file), and the judge taking it where the run wrote one and its caller's node type where not."""

import json
from pathlib import Path

import pytest
from conftest import REFERENCE_DIR

from gpuaccept.judge import summarize
from gpuaccept.references import ReferenceError, resolve

CI_TYPE = """\
schema: gpuaccept.references/1
node_type: ci_cpu
description: CI host without GPUs (synthetic test references)
match: {gpu_count: 0}
sources:
  synthetic: {kind: synthetic, date: 2026-11-23, reference: "tests/test_node_type_file.py: plumbing test"}
checks:
  cpu_gemm:
    dgemm_gflops: {value: 1.0, unit: GFLOP/s, lower: 0.9, wide_tolerance: plumbing test, source: synthetic}
"""
NO_GPU = {"hostname": "ci", "gpus": [], "gpu_error": "no NVIDIA GPU found", "cpu_model": "Test CPU"}
H200 = {"name": "NVIDIA H200", "pci_device_id": "0x233510DE", "pcie_gen_max": 5, "pcie_width_max": 16}


@pytest.fixture()
def refs(tmp_path: Path) -> Path:
    (tmp_path / "refs").mkdir()
    (tmp_path / "refs" / "ci_cpu.yaml").write_text(CI_TYPE)
    return tmp_path / "refs"


def test_resolved_once_written_and_read_back(tmp_path, refs):
    found = resolve.resolve("auto", refs, NO_GPU)
    assert (found.name, found.error, found.warning) == ("ci_cpu", None, "")
    path = resolve.write(tmp_path, found)
    assert path.name == "node-type.json" and resolve.of_run(tmp_path) == found
    assert found.load().name == "ci_cpu" and found.load() is found.load()  # parsed once for every check
    # A node type of a GPU SKU names both of its files.
    h200 = resolve.resolve("auto", REFERENCE_DIR, {"hostname": "n", "gpus": [{"index": 0, **H200}]})
    assert h200.name == "h200" and [Path(p).name for p, _ in h200.files] == ["h200.yaml", "h200.yaml"]
    assert [Path(p).parent.name for p, _ in h200.files] == ["reference_values", "gpus"]


def test_a_node_of_no_type_is_written_with_why_and_fails_loudly_when_loaded(tmp_path, refs):
    gpu_node = {"hostname": "n", "gpus": [{"index": 0, **H200}], "cpu_model": "x"}
    found = resolve.resolve("auto", refs, gpu_node)
    assert found.name == "" and found.error.startswith("no reference file for this node")
    assert "ci_cpu (gpu_count 0)" in found.error
    resolve.write(tmp_path, found)
    assert resolve.of_run(tmp_path).error == found.error
    with pytest.raises(ReferenceError, match="no node type for this node: no reference file"):
        found.load()


def test_a_named_node_type_that_does_not_fit_warns(refs):
    found = resolve.resolve("ci_cpu", refs, {"hostname": "n", "gpus": [{"index": 0, **H200}]})
    assert found.name == "ci_cpu" and "n does not match node type ci_cpu" in found.warning


def test_a_reference_file_changed_since_the_run_resolved_it_is_refused(refs):
    found = resolve.resolve("ci_cpu", refs, NO_GPU)
    (refs / "ci_cpu.yaml").write_text(CI_TYPE.replace("value: 1.0", "value: 0.5"))
    with pytest.raises(ReferenceError, match=r"ci_cpu.yaml: changed since the run resolved node type ci_cpu"):
        found.load()


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda t: t.replace('"name"', '"error": null, "name"', 1), "'error' appears twice"),
        (lambda t: t.replace("gpuaccept.node_type/1", "gpuaccept.node_type/9"), "'schema' must be"),
        (lambda t: t.replace('"ci_cpu"', '"../ci_cpu"', 1), "is not a valid name"),
        (lambda t: t.replace('"name": "ci_cpu"', '"name": ""'), "no node type and no error saying why"),
        (lambda t: t.replace('"sha256"', '"sha"'), "'files' must be a list"),
        (lambda t: t[:20], "not valid JSON"),
    ],
)
def test_node_type_json_is_read_strictly(tmp_path, refs, edit, why):
    path = resolve.write(tmp_path, resolve.resolve("ci_cpu", refs, NO_GPU))
    path.write_text(edit(path.read_text()))
    with pytest.raises(ReferenceError, match=why):
        resolve.of_run(tmp_path)


def test_a_check_reads_the_runs_file_else_the_partitions_node_type(tmp_path, refs, monkeypatch):
    path = resolve.write(tmp_path, resolve.resolve("ci_cpu", refs, NO_GPU))
    monkeypatch.setenv(resolve.FILE_ENV, str(path))
    assert resolve.for_check({"node_type": "other"}).name == "ci_cpu"  # the run's, resolved once
    monkeypatch.delenv(resolve.FILE_ENV)
    named = resolve.for_check({"node_type": "ci_cpu", "reference_dir": str(refs)})
    assert (named.name, named.error, named.load().name) == ("ci_cpu", None, "ci_cpu")
    assert resolve.for_check({"node_type": "", "reference_dir": str(refs)}).error.startswith("no node type fits")
    for extras in ({}, {"node_type": "auto"}):
        with pytest.raises(ReferenceError, match=r"has no extras\.node_type"):
            resolve.for_check(extras)


def test_the_judge_takes_the_runs_node_type_where_it_wrote_one(tmp_path, refs):
    assert summarize.run_node_type(tmp_path, "h200", None) == ("h200", None)  # none written: the caller's
    none = resolve.resolve("auto", refs, {"hostname": "n", "gpus": [{"index": 0, **H200}]})
    resolve.write(tmp_path, none)
    assert summarize.run_node_type(tmp_path, "", None) == ("", none.error)
    assert summarize.run_node_type(tmp_path, "ci_cpu", None) == ("ci_cpu", None)  # judged as another on purpose
    (tmp_path / "node-type.json").write_text(json.dumps({"schema": "x"}))
    name, error = summarize.run_node_type(tmp_path, "ci_cpu", None)
    assert name == "ci_cpu" and "node-type.json: 'schema' must be" in error
