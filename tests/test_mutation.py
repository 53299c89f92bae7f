"""Mutation testing of the judge in CI (tests/mutation_check.py): every decision of src/gpuaccept/judge/ it lists is
still in the source, each module of the judge that decides anything has mutants, and a sample of the mutants is
run against the tests that must catch each: none may survive.

The sample: every mutant, each against its own tests and stopped at the first that fails (``-x``): about 100 s on
two busy cores. GPUACCEPT_MUTATION_SAMPLE=0 or =1 runs every other one (the even or the odd ones) where that is too
long. The whole list, each mutant against its own tests and the rules' test file, every failing test named, is
run by hand and recorded in docs/evidence/2026-11-27-mutation/.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import mutation_check
import pytest

# The modules of the judge that decide pass or fail (or what a retry may replace, or what is read): each must have
# mutants. checks.py, metric_table.py, checkdoc.py, rules/finding.py, rules/registry.py, status.py, row.py,
# references/link.py and pushgateway.py hold tables, data or plumbing.
DECIDING = ("judge/validate.py", "judge/rules/document.py", "judge/load.py", "judge/summarize.py", "judge/verdict.py",
            "judge/rules/table.py", "judge/retry.py", "references/model.py", "references/parse.py",
            "references/detect.py", "references/baselines.py", "references/resolve.py", "references/bounds.py",
            "judge/readback.py",
            "judge/exporter.py",
            "judge/health_rules.py", "judge/pergpu.py", "judge/burnin_rules.py", "judge/dcgm_rules.py",
            "judge/nvlink_rules.py", "judge/config_drift.py", "judge/coverage.py", "textinput.py",
            "manifest.py", "judge/completeness.py", "judge/consistency.py")  # fmt: skip


def sample() -> list[mutation_check.Mutation]:
    chosen = os.environ.get("GPUACCEPT_MUTATION_SAMPLE", "all")
    if chosen not in ("all", "0", "1"):
        pytest.fail(f"GPUACCEPT_MUTATION_SAMPLE={chosen!r}: all, 0 or 1")
    return list(mutation_check.MUTATIONS) if chosen == "all" else mutation_check.MUTATIONS[int(chosen) :: 2]


@pytest.mark.parametrize("mutation", mutation_check.MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_still_applies(mutation):
    assert mutation_check.applies(mutation) == "", "update tests/mutation_check.py for the changed code"


def test_every_deciding_module_of_the_judge_has_mutants():
    files = {m.file for m in mutation_check.MUTATIONS}
    assert set(DECIDING) <= files, set(DECIDING) - files
    names = [m.name for m in mutation_check.MUTATIONS]
    assert len(names) == len(set(names))


def test_no_sampled_mutant_survives():
    chosen = sample()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        caught = list(pool.map(lambda m: mutation_check.run(m, first=True), chosen))
    survivors = [m.name for m, red in zip(chosen, caught, strict=True) if not red]
    assert not survivors, f"no test catches: {survivors} (tests/mutation_check.py names the tests that must)"
