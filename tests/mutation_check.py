"""Delete each rule of the judge in turn and list the tests that go red (issue 24, item 7): a rule no test
catches is a rule that can be lost unnoticed. Not collected by pytest (its name does not start with test_).

    PYTHONPATH=src python tests/mutation_check.py [--only NAME]

Each mutation copies src/ to a temporary directory, replaces one exact snippet (the rule) with code that does
nothing, and runs the tests that cover the rules (tests/test_judge_rules_fail.py; the fleet's in
tests/test_fleet.py) against the copy. Exit 1 when a mutation leaves every test green.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULES_TESTS = ["tests/test_judge_rules_fail.py"]

# (name, file under src/gpuaccept, the rule as written, what replaces it, tests to run); a rule written in two
# places gives both, as tuples.
MUTATIONS: list[tuple[str, str, str | tuple[str, ...], str | tuple[str, ...], list[str]]] = [
    ("reframe result neither pass nor fail", "judge/validate.py",
     'if result not in ("pass", "fail"):', "if False:", RULES_TESTS),
    ("reframe failure before sanity", "judge/validate.py",
     'if result == "fail" and phase not in ("sanity", "performance"):', "if False:", RULES_TESTS),
    ("the tool's own errors", "judge/rules.py",
     'problems = [f"{path.name}: error: {e}" for e in doc.get("errors") or []]', "problems = []", RULES_TESTS),
    ("the tool's failed verification", "judge/rules.py",
     'if not verification["passed"]:', "if False:", RULES_TESTS),
    ("a GPU document without devices", "judge/rules.py",
     'if gpus_seen_by_node is not None and "devices" not in doc:', "if False:", RULES_TESTS),
    ("a GPU count other than the node's", "judge/rules.py",
     "if seen != gpus_seen_by_node:", "if False:", RULES_TESTS),
    ("the power sampler's errors", "judge/rules.py",
     'problems += [f"power sampler: {e}" for e in power_doc.get("errors") or []]', "pass", RULES_TESTS),
    ("the power sampler's failed verification", "judge/rules.py",
     'if not pver.get("passed", False):', "if False:", RULES_TESTS),
    ("a sampled check without the sampler's document", "judge/validate.py",
     'problems.append(f"power sampler: {case.power.error}")', "pass", RULES_TESTS),
    ("an unknown throttle reason", "judge/rules.py",
     'if reason in FAULT_REASONS or reason.startswith("unknown"):', "if reason in FAULT_REASONS:", RULES_TESTS),
    ("a throttle fault", "judge/rules.py",
     'if reason in FAULT_REASONS or reason.startswith("unknown"):', 'if reason.startswith("unknown"):', RULES_TESTS),
    ("a missing HPL scaled residual", "judge/rules.py",
     'problems.append(f"{path.name}: {what}: no scaled residual ({residual!r})")', "pass", RULES_TESTS),
    ("an HPL residual not below its threshold", "judge/rules.py",
     "elif threshold is not None and not residual < threshold:", "elif False:", RULES_TESTS),
    ("no finite HPL threshold", "judge/rules.py",
     'problems.append(f"{path.name}: no finite residual threshold ({threshold!r}): nothing was checked")', "pass",
     RULES_TESTS),
    ("an HPL threshold outside (0, 16]", "judge/rules.py",
     "elif not 0 < threshold <= HPL_THRESHOLD_MAX:", "elif False:", RULES_TESTS),
    ("HPL's own failed residual check", "judge/rules.py",
     'if run.get("residual_verdict", "PASSED") != "PASSED" or run.get("passed", True) is not True:', "if False:",
     RULES_TESTS),
    ("no HPL run recorded", "judge/rules.py",
     "if not runs:\n        problems.append(", "if False:\n        problems.append(", RULES_TESTS),
    ("a failed check the node type only reports", "judge/verdict.py",
     "if row.status == NOT_RUN and expected and check.optional and not metric_rows:",
     "if expected and check.optional:", RULES_TESTS),
    ("a metric without a reference", "judge/verdict.py",
     'rows.append(Row(key, metric, FAIL, value, unit, reason="no reference value for this metric",',
     'rows.append(Row(key, metric, INFO, value, unit, reason="no reference value for this metric",', RULES_TESTS),
    ("a referenced metric not measured", "judge/verdict.py",
     "FAIL if ref.judged else INFO,", "INFO,", RULES_TESTS),
    ("a figure in another unit than its reference", "judge/verdict.py",
     "if status != INFO and unit != ref.unit:", "if False:", RULES_TESTS),
    ("a run in which nothing ran", "judge/verdict.py",
     "return ran and all(r.status == PASS for r in judged)", "return all(r.status == PASS for r in judged)",
     RULES_TESTS),
    ("an expected check not run", "judge/verdict.py",
     "return ran and all(r.status == PASS for r in judged)",
     "return ran and all(r.status in (PASS, NOT_RUN) for r in judged)", RULES_TESTS),
    # Two rules guard this, each enough alone (the failed 'references' row, and accepting no node without a node
    # type): deleting one leaves the other, so they are deleted together.
    ("no reference file for the node type", "judge/verdict.py",
     ("accepted = node_type is not None and decide(rows)",
      'rows.append(Row("references", None, FAIL, reason=why_no_refs + BASELINE_HINT))'),
     ("accepted = decide(rows)", "pass"), RULES_TESTS),
    ("the GPU count of the node", "judge/verdict.py",
     "ok = seen_gpus == claim", "ok = True", RULES_TESTS),
    ("physical bounds of the figures", "judge/verdict.py",
     "impossible = bounds.problems(key, metrics, limits)", "impossible = {}", RULES_TESTS),
    ("physical bounds: above the hardware", "judge/bounds.py",
     "if b.high is not None and value > b.high:", "if False:", RULES_TESTS),
    ("physical bounds: zero or negative", "judge/bounds.py",
     "if b.low is not None and (value <= b.low if b.low_open else value < b.low):", "if False:", RULES_TESTS),
    ("reference values bounded", "judge/references.py",
     "if value is not None and why:", "if False:", RULES_TESTS),
    ("the smallest reference that judges", "judge/bounds.py",
     'if floor is not None and value < floor and (unit != "ratio" or higher_is_better):', "if False:", RULES_TESTS),
    ("a fleet verdict whose rows are not a list", "results/fleet.py",
     "broken = _unreadable(rows, failed)", 'broken = ""', ["tests/test_fleet.py", "-k", "unreadable"]),
    ("a fleet whose configuration drifts", "results/fleet.py",
     "return bool(entries) and all(e.verdict == PASS for e in entries) and not drifted",
     "return bool(entries) and all(e.verdict == PASS for e in entries)", ["tests/test_nvlink.py", "-k", "fleet"]),
    ("a failed DCGM test", "judge/dcgm_rules.py",
     'if status in ("pass", "skip", "not_run"):', "if True:", ["tests/test_dcgm.py"]),
    ("an NVLink error counter that grew", "judge/nvlink_rules.py",
     "if delta > limit:", "if False:", ["tests/test_nvlink.py"]),
    ("an NVLink link that went down during the suite", "judge/nvlink_rules.py",
     'if ln.get("state") == "up" and later.get("state") != "up":', "if False:", ["tests/test_nvlink.py"]),
    ("fewer NVLink links up than the node type's", "judge/nvlink_rules.py",
     "elif want and up < want:", "elif False:", ["tests/test_nvlink.py"]),
    ("a GPU off its node type's pins", "judge/health_rules.py",
     'findings.append(finding("config_drift", g, message, FIX_PINS[d.field]))', "pass", ["tests/test_nvlink.py"]),
]  # fmt: skip


def mutate(name: str, file: str, old: str | tuple[str, ...], new: str | tuple[str, ...], tests: list[str]) -> list[str]:
    """The tests that fail with the rule replaced (an empty list: the rule is not covered)."""
    with tempfile.TemporaryDirectory(prefix="gpuaccept-mutation-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "src", src)
        os.symlink(ROOT / "reference_values", Path(tmp) / "reference_values")  # bounds.SHIPPED_PEAKS
        path = src / "gpuaccept" / file
        text = path.read_text()
        for was, now in zip(*((x,) if isinstance(x, str) else x for x in (old, new)), strict=True):
            if text.count(was) != 1:
                raise SystemExit(f"{name}: {was!r} is {text.count(was)} times in src/gpuaccept/{file}, expected once")
            text = text.replace(was, now)
        path.write_text(text)
        env = {**os.environ, "PYTHONPATH": str(src)}
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-o", "addopts=", *tests],
            cwd=ROOT, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
    failed = sorted({line.removeprefix("FAILED ").split(" - ")[0] for line in proc.stdout.splitlines()
                     if line.startswith("FAILED ")})  # fmt: skip
    count = re.search(r"(\d+) failed", proc.stdout)
    if (count and int(count.group(1)) != len(failed)) or proc.returncode not in (0, 1):
        raise SystemExit(f"{name}: pytest exited {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="only mutations whose name contains this")
    args = parser.parse_args()
    uncaught = []
    for name, file, old, new, tests in MUTATIONS:
        if args.only and args.only not in name:
            continue
        red = mutate(name, file, old, new, tests)
        print(f"{'RED  ' if red else 'GREEN'} {name} (src/gpuaccept/{file}): {len(red)} test(s) fail")
        for test in red:
            print(f"        {test}")
        if not red:
            uncaught.append(name)
        sys.stdout.flush()
    print(f"\n{len(uncaught)} rule(s) no test catches" + (": " + "; ".join(uncaught) if uncaught else ""))
    return 1 if uncaught else 0


if __name__ == "__main__":
    sys.exit(main())
