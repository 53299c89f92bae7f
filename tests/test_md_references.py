"""The shipped md_apoa1 references of h100_sxm5_80gb are what `gpuaccept baseline` derives from the 5 H100 runs
kept as evidence (docs/evidence/2026-11-23-md-apoa1/batch2); md_apoa1_x12 (one run) and the H200 (none) are
informational; the NAMD references say that no NAMD run on our hardware exists."""

import conftest
from conftest import EVIDENCE

from gpuaccept.results import baseline

SOURCE = "h100-md-apoa1-2026-11-23"
INFORMATIONAL = {
    "md_apoa1.energy_bonded_max_rel_diff": "judged by the tool's own verification (0.01 % of NAMD 3.0's step 0)",
    "md_apoa1.energy_nonbonded_rel_diff": "judged by the tool's own verification (0.05 % of NAMD 3.0's step 0)",
    "md_apoa1.energy_drift_ratio": "judged by the tool's own verification (--drift-tol 0.02)",
    "md_apoa1.gpu_memory_used_gib": "the whole GPU's memory in use (NVML), CUDA context included: reported",
}


def test_md_apoa1_references_are_reproducible_from_the_evidence():
    shipped = conftest.shipped("h100_sxm5_80gb")
    runs = sorted(p for p in (EVIDENCE / "2026-11-23-md-apoa1" / "batch2").glob("run[0-9]*") if p.is_dir())
    docs = baseline.collect(runs, "md_apoa1")
    assert len(docs) == shipped["sources"][SOURCE]["runs"] == 5
    checks, _ = baseline.derive({"md_apoa1": docs}, SOURCE, informational=INFORMATIONAL)
    assert checks == {"md_apoa1": shipped["checks"]["md_apoa1"]}
    judged = {m for m, e in checks["md_apoa1"].items() if "value" in e}
    assert judged == {"ns_per_day", "s_per_step", "wall_s", "gpu_power_avg_w", "gpu_energy_kj", "ns_per_day_per_kw",
                      "cpu_ns_per_day", "speedup_vs_cpu"}  # fmt: skip


def test_replica_and_h200_references_are_informational_with_their_reason():
    h100 = conftest.shipped("h100_sxm5_80gb")
    assert all("value" not in e and e["informational"] for e in h100["checks"]["md_apoa1_x12"].values())
    assert "one run (batch 1" in h100["checks"]["md_apoa1_x12"]["ns_per_day"]["informational"]
    h200 = conftest.shipped("h200")
    for check in ("md_apoa1", "md_apoa1_x12"):
        for entry in h200["checks"][check].values():
            assert "value" not in entry and entry["informational"].startswith("not measured on an H200")


def test_namd_references_are_informational_with_their_provenance():
    for name in ("h100_sxm5_80gb", "h200"):
        shipped = conftest.shipped(name)
        for check in ("namd_apoa1", "namd_stmv"):
            entries = shipped["checks"][check]
            assert entries and all("value" not in e and e["informational"] for e in entries.values())
            for entry in entries.values():
                src = shipped["sources"][entry["source"]]
                assert src["kind"] == "public" and "no NAMD run on this hardware exists" in src["reference"]
