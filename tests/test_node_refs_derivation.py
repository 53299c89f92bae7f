"""The measured multi-GPU types' node layers are what their recorded healthy runs give: scripts/derive_node_refs.py
run on the fixtures writes `h200_x2.yaml` and `h200_x4.yaml` byte for byte as shipped, every derived band passes
each healthy run and fails it 10 % worse (power-capped figures: a loss of more than 10 % from the median), and a
rejected run is refused rather than taken into a reference."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, REFERENCE_DIR, ROOT, band_holds, shipped
from judge_support import edit, unpack_results

spec = importlib.util.spec_from_file_location("derive_node_refs", ROOT / "scripts" / "derive_node_refs.py")
derive_node_refs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(derive_node_refs)

#: node type -> (archives, the healthy `make accept` runs among them: every one the type's references come from)
RECORDED_RUNS = {
    "h200_x2": (
        ["multigpu_h200x2/results-commission.tar.gz", "multigpu_h200x2/results.tar.gz",
         "multigpu_h200x2_one_revision/start1-results.tar.gz", "multigpu_h200x2_one_revision/start2-results.tar.gz"],
        ["20261127T190859Z-commission", "20261127T192405Z-nightly", "20261127T192543Z-nightly",
         "20261127T192711Z-nightly", "20261127T192856Z-nightly", "20261127T235116Z-nightly",
         "20261127T235246Z-nightly", "20261127T235433Z-nightly", "20261127T235946Z-commission",
         "20261128T000546Z-nightly", "20261128T000736Z-nightly", "20261128T000925Z-nightly",
         "20261128T001114Z-nightly", "20261128T001257Z-nightly"],
    ),
    "h200_x4": (
        ["multigpu_h200x4/results.tar.gz", "multigpu_h200x4_one_revision/start1-results.tar.gz",
         "multigpu_h200x4_one_revision/start2-results.tar.gz"],
        ["20261127T172659Z-commission", "20261127T173454Z-nightly", "20261127T174439Z-nightly",
         "20261127T214532Z-commission", "20261127T215147Z-nightly", "20261127T215327Z-nightly",
         "20261127T215510Z-nightly", "20261127T215655Z-nightly", "20261127T215839Z-nightly",
         "20261127T220239Z-nightly", "20261127T220422Z-nightly", "20261127T220605Z-nightly",
         "20261127T220747Z-nightly"],
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, Path]:
    """Each type's archives unpacked into a folder of its own: node type -> the folder of its run directories."""
    return {node_type: unpack_results(tmp_path_factory.mktemp(node_type), *(FIXTURES / a for a in archives))
            for node_type, (archives, _) in RECORDED_RUNS.items()}  # fmt: skip


@pytest.mark.parametrize("node_type", sorted(RECORDED_RUNS))
def test_the_shipped_node_layer_is_what_the_recorded_runs_give(recorded, node_type):
    runs = [recorded[node_type] / name for name in RECORDED_RUNS[node_type][1]]
    text, _ = derive_node_refs.derive(node_type, runs, (REFERENCE_DIR / f"{node_type}.yaml").read_text())
    assert text == (REFERENCE_DIR / f"{node_type}.yaml").read_text(), (
        f"reference_values/{node_type}.yaml differs from what its runs give: scripts/derive_node_refs.py --write")


@pytest.mark.parametrize("node_type", sorted(RECORDED_RUNS))
def test_every_derived_band_passes_each_healthy_run_and_catches_a_loss(recorded, node_type):
    runs = [recorded[node_type] / name for name in RECORDED_RUNS[node_type][1]]
    values, _ = derive_node_refs.node_values(runs, node_type)
    checks = shipped(node_type)["checks"]
    problems = []
    for (check, metric), vals in values.items():
        entry = checks[check][metric]
        assert entry["source"].startswith(node_type.replace("_", "")), (check, metric, entry["source"])
        problems += [f"{check}.{metric}: {p}" for p in band_holds(entry, vals)]
        if (check, metric) in derive_node_refs.POWER_CAPPED:
            median_loss = entry["value"] * 0.899
            assert median_loss < entry["value"] * (1 - entry["lower"]), (check, metric)
    assert not problems, "\n".join(problems)
    assert {k for k in values} == {(c, m) for c, ms in derive_node_refs.JUDGED.items() for m in ms}


def test_a_rejected_run_is_refused_not_taken_into_a_reference(recorded):
    rejected = recorded["h200_x4"] / "20261127T173640Z-nightly"  # a foreign matmul on GPU 1: REJECTED
    with pytest.raises(SystemExit, match="only ACCEPTED runs of h200_x4"):
        derive_node_refs.node_values([rejected], "h200_x4")
    with pytest.raises(SystemExit, match="only ACCEPTED runs of h200_x2"):  # and a run of another node type
        derive_node_refs.node_values([recorded["h200_x4"] / "20261127T172659Z-commission"], "h200_x2")


def test_a_run_is_accepted_by_its_rows_not_by_the_verdict_field_beside_them(recorded, tmp_path):
    """A rejected run whose 'verdict' field was edited to pass is still refused: the judge's rule over the rows
    (gpuaccept.judge.readback) decides, as everywhere else a recorded verdict is read."""
    run = shutil.copytree(recorded["h200_x4"] / "20261127T173640Z-nightly", tmp_path / "edited")
    edit(run / "verdict.json", lambda doc: doc.update(verdict="pass", failed_checks=[]))
    with pytest.raises(SystemExit, match="REJECTED by its rows"):
        derive_node_refs.node_values([run], "h200_x4")
