"""The shipped md_openmm references are what `gpuaccept baseline` derives from the H100 runs kept as evidence,
and the NAMD references say that no NAMD run on our hardware exists; the ReFrame runs kept there pass them."""

import yaml
from conftest import REFERENCE_DIR, ROOT

from gpuaccept.judge import references, verdict
from gpuaccept.results import baseline


def test_md_openmm_references_are_reproducible_from_the_evidence():
    shipped = yaml.safe_load((REFERENCE_DIR / "h100_sxm5_80gb.yaml").read_text())
    source = shipped["sources"]["h100-openmm-2026-11-22"]
    runs = sorted(p for p in (ROOT / source["evidence"]).glob("run*") if p.is_dir())
    docs = baseline.collect(runs, "md_openmm")
    assert len(docs) == source["runs"] >= 3
    checks, _ = baseline.derive({"md_openmm": docs}, "h100-openmm-2026-11-22")
    assert checks == {"md_openmm": shipped["checks"]["md_openmm"]}


def test_namd_references_are_informational_with_their_provenance():
    for name in ("h100_sxm5_80gb", "h200"):
        shipped = yaml.safe_load((REFERENCE_DIR / f"{name}.yaml").read_text())
        for check in ("namd_apoa1", "namd_stmv"):
            entries = shipped["checks"][check]
            assert entries and all("value" not in e and e["informational"] for e in entries.values())
            for entry in entries.values():
                src = shipped["sources"][entry["source"]]
                assert src["kind"] == "public" and "no NAMD run on this hardware exists" in src["reference"]


def test_recorded_reframe_runs_pass_the_shipped_md_openmm_references():
    """The two md_openmm runs through ReFrame on the H100 failed the provisional 3-run references (CPU baseline,
    one ns/day per kW); every figure they measured is within the shipped 5-run references."""
    run = ROOT / "docs" / "evidence" / "2026-11-22-h100-openmm" / "reframe"
    report = verdict.load_report(run / "reframe-report.json")
    refs = references.load_node_type(REFERENCE_DIR, "h100_sxm5_80gb").check("md_openmm")
    cases = [tc for r in report["runs"] for tc in r["testcases"] if tc.get("check_key") == "md_openmm"]
    assert len(cases) == 2 and {tc["result"] for tc in cases} == {"fail"}
    for tc in cases:
        values = {key.rsplit(":", 1)[-1]: entry[0] for key, entry in tc["perfvalues"].items()}
        assert len(values) == 8
        for name, value in values.items():
            ref = refs[name]
            assert ref.assess(value)[0] != "fail", (name, value, ref)
        assert values["cpu_ns_per_day"] < 0.92 * refs["cpu_ns_per_day"].value  # the noisy CPU baseline
