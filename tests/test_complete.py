"""A verdict that accounts for every GPU, every byte and every second: the judge judges what a document says about
its own completeness instead of believing it (docs/judge.md, "Every GPU, once").

The input is the recorded healthy 4 x H200 commission run (tests/fixtures/multigpu_h200x4_one_revision, ACCEPTED by
today's references), copied, with one thing changed where each test says; the burn-in cases start from the
recorded 1 x H100 burn-in (tests/fixtures/h100_burnin_commission). Every change is made here, in code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, REFERENCE_DIR
from judge_support import edit, references_before_later_checks, unpack_results

from gpuaccept import layout, manifest, references
from gpuaccept.cli import main
from gpuaccept.judge import config_drift, exporter, readback, summarize, verdict
from gpuaccept.results import fleet

NODE_TYPE, SUITE = "h200_x4", "commission"
COMMISSION = "20261127T214532Z-commission"
BUILTIN = Path("reframe") / "output" / "gpuaccept" / "node" / "builtin"
DOC = {
    "gemm": BUILTIN / "GpuGemm" / "gemm.json",
    "bandwidth": BUILTIN / "GpuBandwidth" / "bandwidth.json",
    "memtest": BUILTIN / "GpuMemtest" / "memtest.json",
    "hpl_cuda": BUILTIN / "GpuHplCuda" / "hpl_cuda.json",
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    into = tmp_path_factory.mktemp("x4")
    return unpack_results(into, FIXTURES / "multigpu_h200x4_one_revision" / "start1-results.tar.gz") / COMMISSION


@pytest.fixture
def run_dir(recorded: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "results" / "x4" / COMMISSION
    shutil.copytree(recorded, copy)
    (copy / manifest.MANIFEST_FILE).unlink()  # each test changes a document: the manifest would refuse it
    return copy


def judge(run_dir: Path, reference_dir: Path = REFERENCE_DIR) -> verdict.Verdict:
    return summarize.judge_run_dir(run_dir, None, reference_dir, NODE_TYPE, SUITE)[0]


def reasons(v: verdict.Verdict, check: str) -> str:
    return " ".join(r.reason for r in v.rows if r.check == check and r.status in (verdict.FAIL, verdict.NOT_RUN))


def rejected(v: verdict.Verdict, check: str, *says: str) -> None:
    assert not v.accepted and check in v.failed_checks(), verdict.table(v)
    text = reasons(v, check)
    for s in says:
        assert s in text, (s, text)


def test_the_recorded_run_is_accepted(run_dir):
    v = judge(run_dir)
    assert v.accepted, verdict.table(v)


# ------------------------------------------------------------------------------------------------
# Every per-GPU document: each GPU of the node once, by the identities the node facts give it.


@pytest.mark.parametrize("check", ["gemm", "bandwidth"])
def test_a_document_that_lists_one_gpu_twice_and_never_measures_the_fourth_is_rejected(run_dir, check):
    def twice(doc: dict) -> None:
        doc["devices"][3] = {**doc["devices"][2], "index": 3}
        doc["gpu_metrics"][3] = {**doc["gpu_metrics"][2], "gpu": 3}

    edit(run_dir / DOC[check], twice)
    rejected(judge(run_dir), check, "GPU 3 (bus 00000000:00:09.0, serial 1654024030872) is not among its devices",
             "GPU 2 (bus 00000000:00:08.0, serial 1654024028641) is listed 2 times")  # fmt: skip


def test_a_device_whose_uuid_is_another_gpus_is_rejected(run_dir):
    edit(run_dir / DOC["gemm"], lambda d: d["devices"][1].update(uuid=d["devices"][0]["uuid"]))
    rejected(judge(run_dir), "gemm", "device 1 at bus 0000:00:07.0 has uuid GPU-ce20893c")


def test_a_document_without_figures_of_one_of_its_gpus_is_rejected(run_dir):
    edit(run_dir / DOC["gemm"], lambda d: d.update(gpu_metrics=d["gpu_metrics"][:3]))
    rejected(judge(run_dir), "gemm", "gpu_metrics has no figures of GPU 3 (bus 00000000:00:09.0")


def test_two_gpus_with_one_serial_and_uuid_in_the_node_facts_are_rejected(run_dir):
    def same(facts: dict) -> None:
        facts["gpus"][3].update(serial=facts["gpus"][2]["serial"], uuid=facts["gpus"][2]["uuid"])

    edit(run_dir / layout.FACTS_FILE, same)
    v = judge(run_dir)
    row = next(r for r in v.rows if (r.check, r.metric) == ("node", "gpu_identity"))
    assert not v.accepted and row.status == verdict.FAIL, verdict.table(v)
    assert "serial 1654024028641 is given to 2 GPUs" in row.reason and "GPU 3 (bus 00000000:00:09.0" in row.reason


# ------------------------------------------------------------------------------------------------
# The memory test covers the GPUs, the bytes and the time asked.


def test_a_memory_test_of_three_gpus_of_four_is_rejected(run_dir):
    edit(run_dir / DOC["memtest"], lambda d: d["results"].update(per_gpu=d["results"]["per_gpu"][:3]))
    rejected(judge(run_dir), "memtest", "results.per_gpu holds no record of GPU 3 (bus 0000:00:09.0): never tested")


def test_a_memory_test_killed_after_one_short_pass_is_rejected(run_dir):
    edit(run_dir / DOC["memtest"],
         lambda d: d["results"]["per_gpu"][1].update(passes=1, seconds=0.2, stopped="killed by signal 9"))  # fmt: skip
    rejected(judge(run_dir), "memtest", "stopped before its budget was spent: killed by signal 9",
             "ran 1 pass(es) in 0.2 s of the 20 s asked")  # fmt: skip


def test_a_memory_test_over_fewer_bytes_than_planned_is_rejected(run_dir):
    edit(run_dir / DOC["memtest"], lambda d: d["results"]["per_gpu"][0].update(tested_bytes=1 << 30))
    rejected(judge(run_dir), "memtest", "tested 1073741824 bytes of the 146282643456 planned")


# ------------------------------------------------------------------------------------------------
# NVLink counters that cannot be compared are not waived on a node type that has NVLink.


def test_an_nvlink_node_without_the_end_of_suite_reading_fails_health(run_dir):
    (run_dir / layout.FACTS_END_FILE).unlink()
    rejected(judge(run_dir), "health", "NVLink error counters not judged: no NVLink reading after the suite")


def _end(run_dir: Path, change) -> None:
    edit(run_dir / layout.FACTS_END_FILE, change)


def test_an_nvlink_counter_that_went_down_is_a_reset_and_fails(run_dir):
    _end(run_dir, lambda f: f["gpus"][0]["nvlink"]["links"][0]["counters"].update(crc_data=0))
    rejected(judge(run_dir), "health",
             "NVLink link 0: the crc_data counter went from 66 to 0 during the suite: reset")  # fmt: skip


def test_a_link_unreadable_at_the_end_fails(run_dir):
    def gone(f: dict) -> None:
        links = f["gpus"][1]["nvlink"]["links"]
        f["gpus"][1]["nvlink"]["links"] = [ln for ln in links if ln["link"] != 5]

    _end(run_dir, gone)
    rejected(judge(run_dir), "health", "NVLink link 5 read before the suite, not after it")


# ------------------------------------------------------------------------------------------------
# A node type file that lacks an expected check's section fails loudly.


def test_a_node_type_without_the_memory_tests_section_is_refused_before_judging(run_dir, capsys):
    refs = references_before_later_checks()  # every node type less its memtest section
    before = (run_dir / layout.VERDICT_FILE).read_bytes()  # the one the run wrote
    code = main(["summarize", "--run-dir", str(run_dir), "--reference-dir", str(refs), "--node-type", NODE_TYPE,
                 "--suite", SUITE, "--facts", str(run_dir / layout.FACTS_FILE)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 4 and "no 'checks:' section for memtest, which the commission suite runs" in err, err
    assert "Traceback" not in err and (run_dir / layout.VERDICT_FILE).read_bytes() == before  # nothing judged


def test_a_memory_test_that_found_bad_words_rejects_even_on_a_type_without_its_section(run_dir):
    def bad(d: dict) -> None:
        d["results"]["per_gpu"][2]["mismatches"] = 3
        d["metrics"]["errors_total"]["value"] = 3

    edit(run_dir / DOC["memtest"], bad)
    v = judge(run_dir, references_before_later_checks())
    row = next(r for r in v.rows if r.check == "memtest" and r.metric is None)
    assert not v.accepted and row.expected and row.status == verdict.FAIL, verdict.table(v)
    assert "GPU 2 (bus 0000:00:08.0" in row.reason and "3 bad 64-bit word(s)" in row.reason


# ------------------------------------------------------------------------------------------------
# The GPUs of one node agree, whether or not the node type pins the field.

DISAGREE = {
    "power limit": (lambda c: c.update(power_enforced_limit_w=500.0, power_limit_w=500.0),
                    "power_enforced_limit_w 500.0"),
    "MIG on one": (lambda c: c.update(mig_mode_current="enabled"), "mig_mode_current enabled"),
    "VBIOS": (lambda c: c.update(vbios_version="96.00.99.00.01"), "vbios_version 96.00.99.00.01"),
    "InfoROM": (lambda c: c.update(inforom_image_version="G520.0200.00.01"), "inforom_image_version G520.0200.00.01"),
    "ECC off": (lambda c: c.update(ecc_mode_current="disabled"), "ecc_mode_current disabled"),
}  # fmt: skip


@pytest.mark.parametrize("field", sorted(DISAGREE))
def test_a_gpu_that_differs_from_the_others_of_its_node_is_named(run_dir, field):
    change, says = DISAGREE[field]
    assert not config_drift.pin_differences(json.loads((run_dir / layout.FACTS_FILE).read_text())["gpus"][2]["config"],
                                            references.load_node_type(REFERENCE_DIR, NODE_TYPE).extra.get("health")
                                            or {})  # fmt: skip
    edit(run_dir / layout.FACTS_FILE, lambda f: change(f["gpus"][2]["config"]))
    v = judge(run_dir)
    row = next(r for r in v.rows if (r.check, r.metric) == ("node", "gpu_agreement"))
    assert not v.accepted and row.status == verdict.FAIL, verdict.table(v)
    assert f"GPU 2 (bus 00000000:00:08.0, serial 1654024028641): {says} differs" in row.reason, row.reason
    assert "GPU 0 " not in row.reason


# ------------------------------------------------------------------------------------------------
# Documents agree with themselves.


def test_a_node_figure_far_below_every_gpus_own_is_a_contradiction(run_dir):
    """The host figure h2d_pageable_min is reported, never judged against a reference: given as a tenth of the
    slowest GPU's own figure, it contradicts the document's per-GPU figures, which it is the minimum of."""
    edit(run_dir / DOC["bandwidth"], lambda d: d["metrics"]["h2d_pageable_min"].update(value=0.566060226))
    rejected(judge(run_dir), "bandwidth", "node figure h2d_pageable_min 0.56606 is not the smallest of its GPUs' "
             "figures (5.6606;")  # fmt: skip


def test_hpl_cuda_over_two_gpus_of_four_is_rejected(run_dir):
    def two(d: dict) -> None:
        d["parameters"]["backend"].update(ranks=2, gpus_used=2, grid="1 x 2")
        for run in d["results"]["runs"]:
            run.update(p=1, q=2)

    edit(run_dir / DOC["hpl_cuda"], two)
    rejected(judge(run_dir), "hpl_cuda", "HPL-CUDA's gpus_used is 2, the node has 4 GPUs",
             "HPL ran on a 1 x 2 grid (2 processes, one per GPU), the node has 4 GPUs")  # fmt: skip


# ------------------------------------------------------------------------------------------------
# Readers flag what they cannot vouch for.


def test_a_run_whose_manifest_was_deleted_is_flagged_by_every_reader(recorded, tmp_path, capsys):
    run = tmp_path / "results" / "x4" / COMMISSION
    shutil.copytree(recorded, run)
    assert manifest.unvouched(run) == "" and not fleet.collect(run.parent.parent)[0].reason
    (run / manifest.MANIFEST_FILE).unlink()
    says = "no manifest"
    (entry,) = fleet.collect(run.parent.parent)
    assert says in entry.reason and entry.verdict == verdict.PASS
    assert main(["show", str(run)]) == 0 and says in capsys.readouterr().err
    pytest.importorskip("matplotlib")
    from gpuaccept.results import report  # noqa: PLC0415

    assert says in report.verdict_summary([report.load_group(str(run))])
    prom = exporter.render(judge(run))
    assert 'gpuaccept_inputs_vouched{node_type="h200_x4",suite="commission"} 0.0' in prom


def test_a_manifest_without_the_node_facts_is_a_failed_input(recorded, tmp_path):
    run = tmp_path / "results" / "x4" / COMMISSION
    shutil.copytree(recorded, run)
    assert judge(run).accepted
    edit(run / manifest.MANIFEST_FILE, lambda m: m["files"].pop(layout.FACTS_FILE))
    v = judge(run)
    assert not v.accepted and f"{layout.FACTS_FILE}: not in the manifest" in reasons(v, "inputs"), verdict.table(v)
    assert "does not hold node-facts.json" in manifest.unvouched(run)


@pytest.fixture
def written(run_dir: Path) -> Path:
    """The run judged (its verdict.json written by today's judge) with 3 bad words on GPU 2: REJECTED for memtest."""
    edit(run_dir / DOC["memtest"], lambda d: d["results"]["per_gpu"][2].update(mismatches=3))
    assert not judge(run_dir).accepted
    return run_dir / layout.VERDICT_FILE


@pytest.mark.parametrize("how", ["rows deleted", "marked not expected"])
def test_a_verdict_whose_failing_rows_were_deleted_or_hidden_is_refused(written, how, capsys):
    def hide(doc: dict) -> None:
        if how == "rows deleted":
            doc["rows"] = [r for r in doc["rows"] if r["check"] != "memtest"]
        else:
            for r in doc["rows"]:
                r["expected"] = r["expected"] and r["check"] != "memtest"
        doc["verdict"], doc["failed_checks"] = "pass", []

    edit(written, hide)
    doc = json.loads(written.read_text())
    assert verdict.decide(readback.rows(doc))  # the judge's rule over what is left would accept it
    assert not readback.accepted(doc) and "refused as incomplete" in readback.disagreement(doc)
    assert main(["show", str(written.parent)]) == 1
    out = capsys.readouterr()
    assert "REJECTED" in out.out and "refused as incomplete" in out.err
    (entry,) = fleet.collect(written.parent.parent.parent)
    assert entry.verdict == verdict.FAIL and "refused as incomplete" in entry.reason
    assert not verdict.Verdict.from_json(doc).accepted


# ------------------------------------------------------------------------------------------------
# No traceback on any input: the reference reader refuses deep nesting.


@pytest.mark.parametrize("nesting", ["block", "flow"])
def test_a_node_type_file_nested_hundreds_deep_is_a_clear_error(tmp_path, run_dir, nesting, capsys):
    refs = tmp_path / "refs"
    shutil.copytree(REFERENCE_DIR, refs)
    deep = ("a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 400)) + "  " * 400 + "x: 1\n"
            if nesting == "block" else "a: " + "[" * 3000 + "]" * 3000 + "\n")  # fmt: skip
    (refs / f"{NODE_TYPE}.yaml").write_text(deep)
    with pytest.raises(references.ReferenceError, match="nested more than the 64 allowed"):
        references.load_node_type(refs, NODE_TYPE)
    code = main(["references", "--reference-dir", str(refs)])
    err = capsys.readouterr().err
    assert code == 4 and "nested more than the 64 allowed" in err and "Traceback" not in err
    v = judge(run_dir, refs)  # the judge writes a verdict naming the file
    assert not v.accepted and "nested more than the 64 allowed" in reasons(v, "references")
    assert (run_dir / layout.VERDICT_FILE).exists()


def test_a_yaml_file_nested_deep_is_refused_by_the_strict_reader():
    from gpuaccept import textinput  # noqa: PLC0415

    with pytest.raises(yaml.YAMLError, match="nested more than"):
        textinput.parse_yaml("a: " + "{b: " * 2000 + "1" + "}" * 2000)


# ------------------------------------------------------------------------------------------------
# A burn-in lasts what was asked and at least the judge's floor, every GPU sampled throughout (built documents,
# as tests/test_burnin.py builds them from the probe's layout).


def test_a_burn_in_of_12_seconds_is_rejected_whatever_it_asked():
    from test_burnin import built_gpu, built_timeline, findings  # noqa: PLC0415

    found, _ = findings([built_gpu(0, built_timeline(12))], elapsed_s=12, duration_s=12)
    assert [f.rule for f in found if f.rule == "duration"] == ["duration"], found
    assert "asked for 12 s: shorter than the 60 s any burn-in must last" in " ".join(f.message for f in found)


def test_a_burn_in_with_no_record_of_one_gpu_is_rejected_naming_it(tmp_path):
    from test_burnin import H100, built_document, built_gpu  # noqa: PLC0415

    gpus = [built_gpu(0), built_gpu(1)]
    facts = {"hostname": "n1", "gpus": [{**H100, "index": g["gpu"], "pci_bus_id": g["pci_bus_id"],
                                         "serial": g["serial"]} for g in gpus]}  # fmt: skip
    doc = built_document(gpus)
    doc["results"]["per_gpu"] = gpus[:1]  # GPU 1 listed among the devices, never watched
    (tmp_path / "burnin.json").write_text(json.dumps(doc))
    report = {"runs": [{"testcases": [{"check_key": "burnin", "result": "pass", "outputdir": str(tmp_path)}]}]}
    v = verdict.build(report, facts, REFERENCE_DIR, "h100_sxm5_80gb_x2", "burnin")
    rejected(v, "burnin", "results.per_gpu holds no record of GPU 1 (bus 00000000:19:00.0): never tested")


@pytest.mark.parametrize("where", ["first", "last"])
def test_a_burn_in_unwatched_in_its_first_or_last_seconds_fails(where):
    from test_burnin import built_gpu, built_timeline, findings  # noqa: PLC0415

    from gpuaccept.probe import burnin_timeline as tl  # noqa: PLC0415

    full = built_timeline(600)
    keep = [i for i, t in enumerate(full["t_s"]) if (t >= 30 if where == "first" else t <= 570)]
    timeline = {column: [values[i] for i in keep] for column, values in full.items()}
    assert tl.length(timeline) == 571
    found, _ = findings([built_gpu(0, timeline)])
    assert [f.rule for f in found] == ["sampling"] and "no sample for 30 s" in found[0].message, found


def test_a_burn_in_that_recorded_no_gpu_fails():
    from test_burnin import findings  # noqa: PLC0415

    found, _ = findings([])
    assert [f.message for f in found] == ["the burn-in recorded no GPU"]


# ------------------------------------------------------------------------------------------------
# The node type's pins, and what a retry may measure again.


def test_vbios_and_mig_pins_are_judged():
    config = {"vbios_version": "96.00.A5.00.1A", "mig_mode_current": "enabled", "power_enforced_limit_w": 700.0}
    found = config_drift.pin_differences(config, {"vbios_versions": ["96.00.99"], "mig_mode": "disabled"})
    assert [(d.key, d.value) for d in found] == [("vbios_version", "96.00.A5.00.1A"),
                                                   ("mig_mode_current", "enabled")]  # fmt: skip


def test_a_check_with_one_figure_out_of_band_and_one_missing_is_not_retried(run_dir):
    """A figure out of its band alone is measured again; one that was not measured at all is a fault."""
    def change(doc: dict) -> None:
        for part in (doc["metrics"], *(e["metrics"] for e in doc["gpu_metrics"])):
            part["fp64_tflops_min"]["value"] *= 0.8
            part.pop("fp32_tflops_min")

    edit(run_dir / DOC["gemm"], change)
    first = verdict.build(verdict.load_report(run_dir / layout.REPORT_FILE),
                          json.loads((run_dir / layout.FACTS_FILE).read_text()), REFERENCE_DIR, NODE_TYPE, SUITE,
                          run_dir=run_dir)  # fmt: skip
    assert not first.accepted and "gemm" in first.failed_checks(), verdict.table(first)
    assert "gemm" not in verdict.out_of_band_checks(first)


def test_gpuaccept_run_refuses_a_node_type_without_a_suites_section_before_anything_runs():
    from gpuaccept import run  # noqa: PLC0415

    refs = references_before_later_checks()  # every node type less its memtest section
    run.check_node_type(NODE_TYPE, refs, "nightly")  # the nightly suite runs no memory test: nothing missing
    with pytest.raises(references.ReferenceError, match="no 'checks:' section for memtest, which the commission"):
        run.check_node_type(NODE_TYPE, refs, SUITE)
    run.check_node_type(NODE_TYPE, REFERENCE_DIR, SUITE)  # every shipped node type has every section
    for t in references.load_all(REFERENCE_DIR):
        for suite in ("nightly", "commission", "burnin"):
            run.check_node_type(t.name, REFERENCE_DIR, suite)
