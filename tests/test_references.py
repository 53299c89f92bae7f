"""Reference files: every shipped file loads; bad input names the file, line and key."""

from pathlib import Path

import pytest
from conftest import REFERENCE_DIR

from gpuaccept.judge import references
from gpuaccept.judge.checks import CHECKS, node_checks
from gpuaccept.judge.references import ReferenceError

GOOD = """\
schema: gpuaccept.references/1
node_type: {name}
description: test node
match: {{gpu_model: NVIDIA Test GPU, gpu_count: 2, pcie_gen: 5, pcie_width: 16}}
sources:
  m: {{kind: measured, machine: lab, date: 2026-11-22, runs: 5, statistic: median, evidence: docs/evidence/x}}
checks:
  gemm:
    fp64_tflops_min: {{value: 50.0, unit: TFLOP/s, lower: 0.1, source: m}}
    latency: {{value: 2.0, unit: us, upper: 0.5, source: m}}
    fp8_tflops_min: {{informational: no FP8 here, unit: TFLOP/s, source: m}}
"""


def write(tmp_path: Path, text: str, name: str = "testnode") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def test_every_shipped_reference_file_loads():
    loaded = references.load_all(REFERENCE_DIR)
    assert {t.name for t in loaded} >= {"a100_sxm4_80gb"}
    for node_type in loaded:
        assert set(node_type.checks) <= set(CHECKS), node_type.path
        for refs in node_type.checks.values():
            for ref in refs.values():
                assert ref.source in node_type.sources


def test_shipped_measured_types_cover_every_check():
    for node_type in references.load_all(REFERENCE_DIR):
        kinds = {s["kind"] for s in node_type.sources.values()}
        if "measured" in kinds and node_type.match["gpu_count"] > 0:
            required = {key for key, check in node_checks().items() if not check.optional}
            assert required <= set(node_type.checks) <= set(CHECKS), node_type.path


def test_good_file_gives_reframe_tuples(tmp_path):
    t = references.load_file(write(tmp_path, GOOD.format(name="testnode")))
    ref = t.reframe_reference("gemm")["*"]
    assert ref["fp64_tflops_min"] == (50.0, None, None, "TFLOP/s")  # ReFrame records; the judge decides
    assert ref["latency"] == (2.0, None, None, "us")
    assert ref["fp8_tflops_min"] == (0.0, None, None, "TFLOP/s")
    m = t.metric("gemm", "fp64_tflops_min")
    assert m.assess(45.0) == ("pass", "") and m.assess(44.9)[0] == "fail" and m.assess(float("nan"))[0] == "fail"
    assert t.metric("gemm", "latency").assess(3.1)[0] == "fail"
    assert t.metric("gemm", "fp8_tflops_min").assess(None)[0] == "info"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("lower: 0.1", "lower: 1.5"), "checks.gemm.fp64_tflops_min.lower must be below 1"),
        (("lower: 0.1", "lower: -0.1"), "must be a fraction >= 0"),
        (("value: 50.0, unit: TFLOP/s, lower: 0.1, ", "unit: TFLOP/s, lower: 0.1, "), "required key 'value'"),
        (("unit: TFLOP/s, lower", "unit: TFLOPS, lower"), "unit 'TFLOPS' is not one of"),
        (("source: m}\n    latency", "source: nope}\n    latency"), "source 'nope' is not defined"),
        (("value: 2.0, unit: us, upper: 0.5", "value: 2.0, unit: us"), "give a tolerance"),
        (("gpu_count: 2", "gpu_count: two"), "match.gpu_count must be int"),
        (("schema: gpuaccept.references/1", "schema: other/2"), "schema must be"),
        (("runs: 5, ", ""), "required key 'runs'"),
        (("node_type: testnode", "node_type: othername"), "must equal the file name"),
        (("description: test node\n", "description: test node\nextra: 1\n"), "unknown top-level key 'extra'"),
        (("informational: no FP8 here", "informational: ''"), "must say why"),
    ],
)
def test_bad_files_name_file_line_and_key(tmp_path, change, message):
    text = GOOD.format(name="testnode")
    assert change[0] in text
    path = write(tmp_path, text.replace(change[0], change[1], 1))
    with pytest.raises(ReferenceError) as err:
        references.load_file(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_line_numbers_point_at_the_key(tmp_path):
    path = write(tmp_path, GOOD.format(name="testnode").replace("lower: 0.1", "lower: 2"))
    with pytest.raises(ReferenceError, match=rf"{path}:9: "):
        references.load_file(path)


def test_malformed_yaml_and_duplicates(tmp_path):
    with pytest.raises(ReferenceError, match="not valid YAML"):
        references.load_file(write(tmp_path, "checks: [unclosed\n"))
    dup = GOOD.format(name="testnode") + "checks: {}\n"
    with pytest.raises(ReferenceError, match="key 'checks' appears twice"):
        references.load_file(write(tmp_path, dup))


def test_unknown_node_type_lists_known_ones(tmp_path):
    write(tmp_path, GOOD.format(name="known_type"), "known_type")
    with pytest.raises(ReferenceError, match=r"unknown node type 'nope'.*known node types: known_type"):
        references.load_node_type(tmp_path, "nope")
    with pytest.raises(ReferenceError, match="no node type given"):
        references.load_node_type(tmp_path, "auto")


def test_missing_check_and_metric_are_errors(tmp_path):
    t = references.load_file(write(tmp_path, GOOD.format(name="testnode")))
    with pytest.raises(ReferenceError, match="no references for check 'bandwidth'"):
        t.check("bandwidth")
    with pytest.raises(ReferenceError, match="no reference for metric 'bf16_tflops_min'"):
        t.metric("gemm", "bf16_tflops_min")


def facts(n=2, name="NVIDIA Test GPU", gen=5, width=16):
    gpu = {"name": name, "pcie_gen_max": gen, "pcie_width_max": width}
    return {"hostname": "n1", "cpu_model": "Xeon", "gpus": [dict(gpu, index=i) for i in range(n)]}


def test_detect_and_mismatch_reasons(tmp_path):
    write(tmp_path, GOOD.format(name="testnode"))
    assert references.detect(tmp_path, facts()).name == "testnode"
    t = references.load_node_type(tmp_path, "testnode")
    assert references.mismatches(t, facts(n=1)) == ["1 GPUs found, testnode has 2"]
    assert "pcie_width 8, testnode has 16" in references.mismatches(t, facts(width=8))
    with pytest.raises(ReferenceError, match=r"no reference file .* matches this node \(no GPU"):
        references.detect(tmp_path, {"gpus": [], "gpu_error": "no NVIDIA GPU found"})
