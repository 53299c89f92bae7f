"""Judge benchmark documents as the judge judges a run's (gpuaccept.judge: load, validate, judge), without
ReFrame: each document is a test case of its check (found by its file name: gemm.json, bandwidth.json,
hplstyle.json, power_check.json, health.json), the node facts and the reference files as `gpuaccept run` would
use them. The verdict is taken over the checks given (the suite's others did not run here), printed as the table
`gpuaccept show` prints, and written as JSON with --output.

    PYTHONPATH=src python3 docs/evidence/2026-11-27-multigpu/judge_documents.py --facts facts.json \\
        [--node-type auto] [--expect-accepted | --expect-gpu 1] [--output verdict.json] DOC...

--expect-accepted: exit 0 when the checks are ACCEPTED. --expect-gpu N: exit 0 when they are REJECTED, every
failed metric row is one of GPU N's per-GPU rows (so every other GPU's rows pass), and every failed check's reason
names GPU N and no other. Otherwise exit 1, saying why. A check the judge could not judge here because the kernel
log was unreadable (health NOT RUN) is left out of the expectation, and said so.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path

from gpuaccept import references
from gpuaccept.checks import CHECKS
from gpuaccept.judge import load, rules, validate, verdict
from gpuaccept.layout import REFERENCE_DIR

BY_FILE = {check.result_file: key for key, check in CHECKS.items()}
GPU_NAMED = re.compile(r"GPU (\d+) \(bus ")


def judge(paths: list[Path], facts: dict, reference_dir: Path, node_type: str, suite: str) -> verdict.Verdict:
    run = load.load_run(load.Run(None, facts, node_type, suite), reference_dir)
    for path in paths:
        if path.name not in BY_FILE:
            raise SystemExit(f"{path}: not a check's document (known: {', '.join(sorted(BY_FILE))})")
        try:
            document = load.Document(path, rules.load_document(path))
        except rules.DocumentError as err:
            document = load.Document(path, error=str(err))
        run.cases.append(load.Case(BY_FILE[path.name], {"result": "pass"}, document=document))
    v = verdict.judge(run, validate.validate(run))
    ran = {BY_FILE[p.name] for p in paths}
    rows = [r for r in v.rows if r.check in ran]
    return dataclasses.replace(v, rows=rows, accepted=verdict.decide(rows))


def expectation(v: verdict.Verdict, gpu: int | None) -> list[str]:
    """What contradicts the expectation (empty: it holds): ACCEPTED (gpu None), or REJECTED by GPU ``gpu`` alone."""
    unlooked = {
        r.check for r in v.rows if r.metric is None and r.status == verdict.NOT_RUN and "kernel log" in r.reason
    }
    rows = [r for r in v.rows if r.check not in unlooked]
    problems = [f"{c}: NOT RUN (kernel log unreadable): left out of the expectation" for c in sorted(unlooked)]
    if gpu is None:
        bad = [r for r in rows if r.expected and r.status in (verdict.FAIL, verdict.NOT_RUN)]
        return problems + [f"{r.check}.{r.metric or '(check)'} gpu {r.gpu}: {r.status}: {r.reason}" for r in bad]
    if verdict.decide(rows):
        return [*problems, f"ACCEPTED, expected REJECTED by GPU {gpu}"]
    out = list(problems)
    failed = [r for r in rows if r.status == verdict.FAIL and r.metric]
    for r in failed:
        if r.gpu is None:
            out.append(f"{r.check}.{r.metric}: failed, and not as one GPU's figure: {r.reason}")
        elif r.gpu != gpu:
            out.append(f"{r.check}.{r.metric}: GPU {r.gpu} failed too: {r.reason}")
    for r in rows:
        if r.metric is None and r.status == verdict.FAIL:
            named = {int(n) for n in GPU_NAMED.findall(r.reason)}
            if named - {gpu}:
                out.append(f"{r.check}: its reason names GPUs {sorted(named)}: {r.reason}")
            if not named:
                out.append(f"{r.check}: failed without naming a GPU: {r.reason}")
    if not any(r.gpu == gpu and r.status == verdict.FAIL for r in failed):
        out.append(f"no per-GPU row of GPU {gpu} failed")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("documents", nargs="+", type=Path)
    ap.add_argument("--facts", required=True, type=Path)
    ap.add_argument("--reference-dir", type=Path, default=REFERENCE_DIR)
    ap.add_argument("--node-type", default="auto")
    ap.add_argument("--suite", default="commission")
    ap.add_argument("--output", type=Path)
    want = ap.add_mutually_exclusive_group()
    want.add_argument("--expect-accepted", action="store_true")
    want.add_argument("--expect-gpu", type=int)
    args = ap.parse_args()
    facts = json.loads(args.facts.read_text())
    node_type = args.node_type
    if node_type == "auto":
        node_type = references.detect(args.reference_dir, facts).name
    v = judge(args.documents, facts, args.reference_dir, node_type, args.suite)
    print(verdict.table(v))
    if args.output:
        args.output.write_text(json.dumps(v.to_json(), indent=1) + "\n")
    failed_gpus = sorted({r.gpu for r in v.rows if r.status == verdict.FAIL and r.gpu is not None})
    print(f"failed per-GPU rows: GPUs {failed_gpus or 'none'}")
    if not (args.expect_accepted or args.expect_gpu is not None):
        return 0
    problems = expectation(v, None if args.expect_accepted else args.expect_gpu)
    hard = [p for p in problems if "left out of the expectation" not in p]
    for p in problems:
        print(f"note: {p}" if p not in hard else f"NOT AS EXPECTED: {p}")
    what = "ACCEPTED" if args.expect_accepted else f"REJECTED naming GPU {args.expect_gpu} alone"
    print(f"expectation ({what}): {'holds' if not hard else 'does not hold'}")
    return 0 if not hard else 1


if __name__ == "__main__":
    sys.exit(main())
