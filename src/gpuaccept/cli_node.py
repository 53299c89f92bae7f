"""``gpuaccept facts``, ``gpuaccept detect`` and ``gpuaccept references``: this node's facts, the node type
that matches them, and the reference files checked (docs/reference-values.md)."""

from __future__ import annotations

import argparse
import json
import sys

from gpuaccept import metric_table, references
from gpuaccept.atomic import write_text_atomic
from gpuaccept.cli_common import (
    add_reference_dir,
    load_json,
)
from gpuaccept.judge import (
    coverage,
    fabric_expect,
    health_rules,
    verdict,
)
from gpuaccept.probe import facts


def cmd_facts(args: argparse.Namespace) -> int:
    text = json.dumps(facts.gather(), indent=2, sort_keys=True) + "\n"
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_detect(args: argparse.Namespace) -> int:
    node = load_json(args.facts, "node facts") if args.facts else facts.gather()
    if args.expect and args.expect != "auto":
        node_type = references.load_node_type(args.reference_dir, args.expect)
        why = references.mismatches(node_type, node)
        if why:
            raise references.ReferenceError(
                f"this node ({node.get('hostname')}) is not a {node_type.name} as {node_type.path} describes it: "
                f"{'; '.join(why)}"
            )
    else:
        node_type = references.detect(args.reference_dir, node)
    print(node_type.name)
    if node_type.node_layer_missing:
        print(f"gpuaccept detect: {node_type.name}: per-GPU references only; {node_type.node_layer_missing}",
              file=sys.stderr)
    return 0


def cmd_references(args: argparse.Namespace) -> int:
    if args.node_type:
        loaded = [references.load_node_type(args.reference_dir, t) for t in args.node_type]
    else:
        loaded = references.load_all(args.reference_dir)
    gaps = []
    for t in loaded:
        gaps += coverage.gaps(t)
        if "health" in t.extra:
            health_rules.expectations(t)  # validated here too, so that a bad health: section fails before a suite runs
        fabric_expect.expectations(t)  # likewise the fabric: section (docs/checks/fabric.md)
        layers = [r.layer for m in t.checks.values() for r in m.values()]
        gpu = f"{t.gpu_count} x {t.sku.name} ({t.sku.path}), " if t.sku else ""
        print(
            f"{t.path}: {t.name}: {gpu}{len(t.checks)} checks, {layers.count('gpu')} per-GPU and "
            f"{layers.count('node')} node-level metrics, sources: {', '.join(t.sources)}"
            + (f"; {t.node_layer_missing}" if t.node_layer_missing else "")
        )
        owners = [r.owner for m in t.checks.values() for r in m.values() if r.judged]
        print(f"  judged against: {', '.join(f'{owners.count(o)} {o}' for o in metric_table.OWNERS)} (gpu: the "
              "GPU model; link: the PCIe link NVML reports; host: this node's own baseline; node: the node type)")
        for suite, kinds in verdict.coverage(t).items():
            line = f"  {suite}: expects {', '.join(kinds[verdict.EXPECTED]) or 'nothing'}"
            if kinds[verdict.WHERE_INSTALLED]:
                line += f"; judges {', '.join(kinds[verdict.WHERE_INSTALLED])} where installed"
            if kinds[verdict.UNREFERENCED]:
                line += f"; no references (not run): {', '.join(kinds[verdict.UNREFERENCED])}"
            print(line)
    for gap in gaps:
        print(f"gpuaccept references: {gap}", file=sys.stderr)
    if gaps:
        print(f"gpuaccept references: {len(gaps)} gated metric(s) or check(s) without a reference: a healthy node of "
              "such a type would be rejected for it (docs/reference-values.md)", file=sys.stderr)  # fmt: skip
    return 1 if gaps else 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept facts`, `gpuaccept detect` and `gpuaccept references`."""
    sp = sub.add_parser("facts", help="print this node's facts (CPU, NUMA, GPUs via NVML or nvidia-smi) as JSON")
    sp.add_argument("--output", help="write to this file (atomically) instead of stdout")
    sp.set_defaults(func=cmd_facts)

    sp = sub.add_parser("detect", help="print the node type whose reference file matches this node")
    add_reference_dir(sp)
    sp.add_argument("--facts", help="facts JSON (default: gather them now)")
    sp.add_argument("--expect", help="fail unless the node matches this node type")
    sp.set_defaults(func=cmd_detect)

    sp = sub.add_parser("references", help="validate reference files (all, or the node types named)")
    add_reference_dir(sp)
    sp.add_argument("node_type", nargs="*", help="node types to validate (default: every <node_type>.yaml)")
    sp.set_defaults(func=cmd_references)
