"""Reference files: every shipped file loads; bad input names the file, line and key."""

import os
from pathlib import Path

import pytest
from conftest import REFERENCE_DIR

from gpuaccept import metric_table, references, textinput
from gpuaccept.checks import CHECKS, node_checks
from gpuaccept.references import ReferenceError

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
    fp8_tflops_min: {{informational: no FP8 here, unit: TFLOP/s, source: m}}
  power:
    idle_power_max_w: {{value: 80.0, unit: W, upper: 0.5, source: m}}
"""


def write(tmp_path: Path, text: str, name: str = "testnode") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def test_every_shipped_reference_file_loads():
    loaded = references.load_all(REFERENCE_DIR)
    assert {t.name for t in loaded} >= {"a100_sxm4_80gb"}
    for node_type in loaded:
        assert set(node_type.checks) <= set(CHECKS) | set(metric_table.METRICS), node_type.path
        for check, refs in node_type.checks.items():
            for ref in refs.values():
                assert ref.source in node_type.sources
                assert (ref.unit, ref.layer) == metric_table.lookup(check, ref.metric), ref.where
                assert ref.source_kind == node_type.sources[ref.source]["kind"]


def test_shipped_measured_types_cover_every_check():
    for node_type in references.load_all(REFERENCE_DIR):
        kinds = {s["kind"] for s in node_type.sources.values()}
        if "measured" in kinds and node_type.match["gpu_count"] > 0:
            required = {key for key, check in node_checks().items() if not check.optional}
            assert required <= set(node_type.checks) <= set(CHECKS) | set(metric_table.METRICS), node_type.path


def test_good_file_gives_reframe_tuples(tmp_path):
    t = references.load_file(write(tmp_path, GOOD.format(name="testnode")))
    ref = t.reframe_reference("gemm")["*"]
    assert ref["fp64_tflops_min"] == (50.0, None, None, "TFLOP/s")  # ReFrame records; the judge decides
    assert t.reframe_reference("power")["*"]["idle_power_max_w"] == (80.0, None, None, "W")
    assert ref["fp8_tflops_min"] == (0.0, None, None, "TFLOP/s")
    m = t.metric("gemm", "fp64_tflops_min")
    assert m.assess(45.0)[:2] == ("pass", "") and m.assess(44.9)[0] == "fail" and m.assess(float("nan"))[0] == "fail"
    assert t.metric("power", "idle_power_max_w").assess(120.1)[0] == "fail"
    assert t.metric("gemm", "fp8_tflops_min").assess(None)[0] == "info"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("lower: 0.1", "lower: 1.5"), "checks.gemm.fp64_tflops_min.lower: 1.5 must be below 1"),
        (("lower: 0.1", "lower: -0.1"), "checks.gemm.fp64_tflops_min.lower: -0.1 must be >= 0"),
        (("value: 50.0, unit: TFLOP/s, lower: 0.1, ", "unit: TFLOP/s, lower: 0.1, "), "required key 'value'"),
        (("unit: TFLOP/s, lower", "unit: TFLOPS, lower"), "unit 'TFLOPS' is not the metric's unit 'TFLOP/s'"),
        (("unit: TFLOP/s, lower", "unit: GB/s, lower"), "unit 'GB/s' is not the metric's unit 'TFLOP/s'"),
        (("source: m}\n    fp8", "source: nope}\n    fp8"), "source 'nope' is not defined"),
        (("value: 80.0, unit: W, upper: 0.5", "value: 80.0, unit: W"), "give a tolerance"),
        (("gpu_count: 2", "gpu_count: two"), "match.gpu_count: 'two' must be of type integer"),
        (("schema: gpuaccept.references/1", "schema: other/2"), "schema must be"),
        (("runs: 5, ", ""), "required key 'runs'"),
        (("node_type: testnode", "node_type: othername"), "must equal the file name"),
        (("description: test node\n", "description: test node\nextra: 1\n"), "unknown top-level key 'extra'"),
        (("informational: no FP8 here", "informational: ''"), "must not be empty (say why)"),
        # The hostile cases of issue 12: tolerances that switch judging off, values that are not numbers.
        (("lower: 0.1", "lower: 0.9999"), "lower 0.9999 is over 0.5: a tolerance that wide hardly judges"),
        (("upper: 0.5", "upper: .inf"), "checks.power.idle_power_max_w.upper must be a finite number, not inf"),
        (("upper: 0.5", "upper: .inf, wide_tolerance: why"), "idle_power_max_w.upper must be a finite number, not inf"),
        (("upper: 0.5", "upper: .nan"), "checks.power.idle_power_max_w.upper must be a finite number, not nan"),
        (("value: 50.0", "value: .inf"), "checks.gemm.fp64_tflops_min.value must be a finite number, not inf"),
        (("informational: no FP8 here,", "informational: no FP8 here, value: .nan,"), "must be a finite number"),
        (("fp8_tflops_min:", "fp7_tflops:"), "check 'gemm' has no metric 'fp7_tflops'"),
        (("  power:", "  powr:"), "unknown check 'powr'"),
        (("lower: 0.1, source: m}", "lower: 0.1, upper: 0.1, informational: x, source: m}"), "not both"),
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


def test_a_wide_tolerance_needs_its_reason(tmp_path):
    text = GOOD.format(name="testnode").replace("lower: 0.1", "lower: 0.6, wide_tolerance: 'vCPU scheduling'")
    ref = references.load_file(write(tmp_path, text)).metric("gemm", "fp64_tflops_min")
    assert ref.lower == 0.6 and ref.assess(20.1) == ("pass", "", (pytest.approx(20.0), None))


def test_assess_is_the_one_decision():
    t = references.load_file(REFERENCE_DIR / "h100_sxm5_80gb.yaml")
    fp64 = t.metric("gemm", "fp64_tflops_min")
    assert fp64.layer == "gpu" and fp64.source_kind == "measured" and "gpus/h100_sxm5_80gb.yaml:" in fp64.where
    lo = fp64.value * (1 - fp64.lower)
    assert fp64.assess(fp64.value) == ("pass", "", (pytest.approx(lo), None))
    status, reason, _ = fp64.assess(lo * 0.99)
    assert status == "fail" and reason.startswith(f"below {lo:.6g} TFLOP/s (reference {fp64.value:.6g} TFLOP/s -")
    assert "h100-device-2026-11-22 (measured), " in reason
    for bad in (None, float("nan"), float("inf"), "53", True):
        assert fp64.assess(bad)[0] == "fail", bad
    assert t.metric("gemm", "fp8_xfer_tflops_min").assess(1.0)[0] == "info"
    p2p = t.metric("bandwidth", "p2p_read_min")
    assert p2p.layer == "node" and str(t.path) in p2p.where


def test_yaml_aliases_are_refused_not_expanded(tmp_path):
    # A "billion laughs" in a reference value: refused at the first alias, and the message stays short.
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    text = GOOD.format(name="testnode").replace("no FP8 here", "no FP8 here, note: *a8") + "\n".join(lines) + "\n"
    with pytest.raises(ReferenceError) as err:
        references.load_file(write(tmp_path, text))
    assert "YAML alias *a8 is not allowed" in str(err.value) and len(str(err.value)) < 300


def test_one_yaml_loader_refuses_aliases_and_keys_twice_with_or_without_lines():
    # gpuaccept.textinput.parse_yaml reads every YAML input: the reference files (with line numbers), the
    # datasheets and the floors between nodes (without); the same refusals in both.
    for lines in (False, True):
        with pytest.raises(textinput.YamlError, match=r"line 2: YAML alias \*x is not allowed"):
            textinput.parse_yaml("a: &x [1, 2]\nb: *x\n", lines=lines)
        with pytest.raises(textinput.YamlError, match="line 3: key 'a' appears twice"):
            textinput.parse_yaml("a: 1\nb: 2\na: 3\n", lines=lines)
        assert textinput.parse_yaml("a: {b: [1, {c: 2}]}\n", lines=lines) == {"a": {"b": [1, {"c": 2}]}}
    doc = textinput.parse_yaml("x: 1\ny:\n  z: 2\n", lines=True)
    assert (doc.line, doc.lines, doc["y"].lines) == (1, {"x": 1, "y": 2}, {"z": 3})
    assert textinput.parse_yaml("1: one\n") == {1: "one"}  # a number as a key, where lines are not kept
    with pytest.raises(textinput.YamlError, match="line 1: key 1 is not a string"):
        textinput.parse_yaml("1: one\n", lines=True)


def test_only_regular_files_of_bounded_size(tmp_path):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ReferenceError, match="not a regular file"):
        references.load_file(fifo)  # opened for reading, a FIFO would block until a writer came
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(ReferenceError, match="not a regular file"):
        references.load_file(tmp_path / "dir.yaml")
    big = write(tmp_path, GOOD.format(name="big") + "#" * references.MAX_FILE_BYTES + "\n", "big")
    with pytest.raises(ReferenceError, match="a reference file is at most"):
        references.load_file(big)


@pytest.mark.parametrize(
    "name", ["../../x", "../h100_sxm5_80gb", "/etc/passwd", ".hidden", "a/b", "", "x" * 129, "h200_x3\n", "h200\nx"]
)
def test_names_that_would_be_paths_are_refused(name):
    with pytest.raises(ReferenceError, match="is not a valid name"):
        references.check_name(name)
    with pytest.raises(ReferenceError):
        references.load_node_type(REFERENCE_DIR, name)


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
    with pytest.raises(ReferenceError, match="no references for check 'health'"):
        t.check("health")
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


# ------------------------------------------------------------------------------------------------
# Owners (issue 24): what each figure is judged against.

def test_every_shipped_entry_names_its_owner_and_every_judged_one_its_band():
    """Each metric's class and the reason for its band stand next to it in the shipped reference files; host
    figures are never judged against another machine's, link figures always against the node's link."""
    for node_type in references.load_all(REFERENCE_DIR):
        for check, refs in node_type.checks.items():
            for name, ref in refs.items():
                assert ref.owner == metric_table.owner(check, name), ref.where
                if ref.judged:
                    assert ref.band, f"{ref.where}: {check}.{name} is judged without a band reason"
                    assert ref.owner != metric_table.HOST, ref.where
                if ref.owner == metric_table.LINK and ref.judged:
                    assert ref.link_fraction is not None and ref.value is None, ref.where
    text = (REFERENCE_DIR / "gpus" / "h100_sxm5_80gb.yaml").read_text()
    assert "owner: link" in text and "owner: host" in text and "owner: gpu" in text


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("latency_h2d_max: {value: 2.0, unit: us, upper: 0.5, source: m}", "is a host figure"),
        ("h2d_pinned_min: {value: 54.0, unit: GB/s, lower: 0.1, source: m}", "is a link figure: give 'link_fraction'"),
        ("d2d_min: {link_fraction: 0.8, unit: GB/s, source: m}", "only link figures are judged against the link"),
        ("d2d_min: {value: 1500, unit: GB/s, lower: 0.05, owner: link, source: m}", "the metric is owned by 'gpu'"),
        ("h2d_pinned_min: {link_fraction: 1.5, unit: GB/s, source: m}", "link_fraction: 1.5 must be <= 1"),
        ("h2d_pinned_min: {link_fraction: 0.8, value: 50, unit: GB/s, source: m}", "checks.bandwidth.h2d_pinned_min"),
    ],
)
def test_owner_rules_name_the_file_and_line(tmp_path, entry, message):
    text = GOOD.format(name="testnode") + "  bandwidth:\n    " + entry + "\n"
    with pytest.raises(ReferenceError, match=r"testnode\.yaml:[0-9]+") as err:
        references.load_file(write(tmp_path, text))
    assert message in str(err.value)


def test_a_synthetic_source_may_judge_host_and_link_figures_as_recorded(tmp_path):
    """Test fixtures and re-judging a recorded day (tests/judge_support.py) keep the old judged values."""
    synthetic = "sources:\n  s: {kind: synthetic, date: 2026-11-25, reference: x}\n"
    text = GOOD.format(name="testnode").replace("sources:\n", synthetic)
    text += "  bandwidth:\n    latency_h2d_max: {value: 2.0, unit: us, upper: 0.5, source: s}\n"
    t = references.load_file(write(tmp_path, text))
    assert t.metric("bandwidth", "latency_h2d_max").judged


def test_a_link_gate_is_a_fraction_of_the_node_link():
    t = references.load_node_type(REFERENCE_DIR, "h100_sxm5_80gb")
    gate = t.metric("bandwidth", "h2d_pinned_min")
    assert gate.needs_link and gate.assess(55.0)[0] == "fail"  # never judged unbound
    gen5 = {"gpus": [{"index": 0, "pcie_gen_max": 5, "pcie_width_max": 16}]}
    bound = references.bind_link(t, gen5).metric("bandwidth", "h2d_pinned_min")
    assert bound.value == pytest.approx(0.8 * 63.015, rel=1e-3) and bound.assess(51.0)[0] == "pass"
    status, reason, _ = bound.assess(49.9)
    assert status == "fail" and "PCIe Gen5 x16" in reason
    bidir = references.bind_link(t, gen5).metric("bandwidth", "bidir_pinned_min")
    assert bidir.value == pytest.approx(0.5 * 2 * 63.015, rel=1e-3)
    gen4 = {"gpus": [{"index": 0, "pcie_gen_max": 4, "pcie_width_max": 16}]}
    assert references.bind_link(t, gen4).metric("bandwidth", "h2d_pinned_min").assess(30.0)[0] == "pass"
    unknown = references.bind_link(t, {"gpus": [{"index": 0}]}).metric("bandwidth", "h2d_pinned_min")
    assert unknown.needs_link and "NVML reported no PCIe link for GPU 0" in unknown.band


NODE_BASELINE = """\
schema: gpuaccept.node_baseline/1
node: n1
node_type: h100_sxm5_80gb
description: n1's own host figures
sources:
  n1: {kind: measured, machine: n1, date: 2026-11-25, runs: 3, statistic: median, evidence: results/n1}
checks:
  cpu_gemm:
    dgemm_gflops: {value: 800.0, unit: GFLOP/s, lower: 0.1, source: n1, band: 3 accepted runs}
"""


def test_a_node_baseline_judges_the_host_figures_of_that_node(tmp_path):
    path = tmp_path / references.NODE_BASELINE_FILE
    path.write_text(NODE_BASELINE)
    baseline = references.load_node_baseline(path)
    t = references.with_node_baseline(references.load_node_type(REFERENCE_DIR, "h100_sxm5_80gb"), baseline)
    ref = t.metric("cpu_gemm", "dgemm_gflops")
    assert ref.judged and ref.assess(700.0)[0] == "fail" and ref.assess(750.0)[0] == "pass"
    with pytest.raises(ReferenceError, match="node baseline of node type 'h100_sxm5_80gb'"):
        references.with_node_baseline(references.load_node_type(REFERENCE_DIR, "h200"), baseline)
    path.write_text(NODE_BASELINE.replace("cpu_gemm:\n    dgemm_gflops", "gemm:\n    fp64_tflops_min").replace(
        "GFLOP/s", "TFLOP/s"))
    with pytest.raises(ReferenceError, match="is a gpu figure: a node baseline holds host figures only"):
        references.load_node_baseline(path)
