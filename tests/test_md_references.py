"""The shipped md_openmm references are what `gpuaccept baseline` derives from the H100 runs kept as evidence,
and the NAMD references say that no NAMD run on our hardware exists."""

import yaml
from conftest import REFERENCE_DIR, ROOT

from gpuaccept import baseline


def test_md_openmm_references_are_reproducible_from_the_evidence():
    shipped = yaml.safe_load((REFERENCE_DIR / "h100_sxm5_80gb.yaml").read_text())
    source = shipped["sources"]["h100-openmm-2026-11-22"]
    runs = sorted(p for p in (ROOT / source["evidence"]).glob("run*") if p.is_dir())
    docs = baseline.find_documents(runs, "md_openmm")
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
