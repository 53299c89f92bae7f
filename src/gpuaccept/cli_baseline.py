"""``gpuaccept baseline``: reference values proposed from repeated runs, with a diff to the reviewed file, or a
node's own baseline of host figures (docs/reference-values.md, docs/verdicts.md)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from gpuaccept import references
from gpuaccept.atomic import write_text_atomic
from gpuaccept.checks import CHECKS
from gpuaccept.cli_common import (
    InputError,
    add_reference_dir,
    load_json,
)
from gpuaccept.judge import (
    readback,
)
from gpuaccept.layout import VERDICT_FILE
from gpuaccept.results import baseline


def _write_node_baseline(
    args: argparse.Namespace, node_type: str, run_dirs: list[Path], docs: dict, source: dict
) -> int:
    """gpuaccept baseline --node-baseline: the node's host figures from its own ACCEPTED runs, written (atomically)
    to results/<node>/node-baseline.yaml, where the judge finds them (docs/verdicts.md)."""
    nodes = set()
    for d in run_dirs:
        found = sorted(d.rglob(VERDICT_FILE))
        if not found:
            raise InputError(f"{d}: no {VERDICT_FILE}: a node baseline comes from judged runs")
        for path in found:
            v = readback.read(path, InputError)
            try:
                passed = readback.accepted(v)  # by its rows, whatever its 'verdict' field says
            except ValueError as err:
                raise InputError(f"{path}: not a gpuaccept verdict: {err}") from None
            if not passed or v.get("node_type") != node_type:
                shown = "pass" if passed else "fail"
                raise InputError(f"{path}: {v.get('node_type')!r} {shown!r}: a node baseline comes from "
                                 f"ACCEPTED runs of node type {node_type}")  # fmt: skip
            nodes.add(str(v.get("node")))
    if len(nodes) != 1:
        raise InputError(f"the runs are of {len(nodes)} nodes ({', '.join(sorted(nodes))}): a baseline is one node's")
    node = references.check_name(nodes.pop(), "node")
    checks, _stats = baseline.derive(docs, args.source_id, args.reject, host_baseline=True)
    if not checks:
        raise InputError("no host figure in these runs (pageable copies, latencies, host GEMM, host HPL)")
    out = Path(args.output) if args.output else run_dirs[0].resolve().parent / references.NODE_BASELINE_FILE
    if out.exists() and not args.force:
        raise InputError(f"{out} exists: --force replaces it")
    text = baseline.node_baseline(node, node_type, args.source_id, source, checks,
                                  f"{node}'s own baseline from {len(run_dirs)} accepted runs; judged on {node} only.")
    write_text_atomic(out, text)
    references.load_node_baseline(out)  # what was written loads
    print(f"wrote {out}: {sum(len(m) for m in checks.values())} host figures of {node} (docs/verdicts.md)")
    return 0


def cmd_baseline(args: argparse.Namespace) -> int:
    node_type = references.check_name(args.node_type, "--node-type")
    run_dirs = [Path(d) for d in args.runs]
    for d in run_dirs:
        if not d.is_dir():
            raise InputError(f"{d}: not a run directory")
    if not 0 <= args.reject < 1:
        raise InputError(f"--reject {args.reject}: a fraction from 0 (keep every run) to below 1")
    docs = {key: baseline.collect(run_dirs, key) for key in CHECKS}
    counts = {k: len(v) for k, v in docs.items() if v}
    if not counts:
        raise InputError(f"no benchmark documents found under {', '.join(map(str, run_dirs))}")
    node = load_json(args.facts, "node facts") if args.facts else None
    gpus = (node or {}).get("gpus") or []
    sku = _baseline_sku(args, gpus)
    match: dict = {}
    if gpus and gpus[0].get("pcie_gen_max"):
        match.update(pcie_gen=gpus[0]["pcie_gen_max"], pcie_width=gpus[0]["pcie_width_max"])
    runs = min(counts.values())
    rejection = (
        f"; runs more than {args.reject:.0%} worse than the median of the runs kept are rejected first, repeatedly "
        "(named in each metric's note)"
        if args.reject
        else "; no outlier rejection"
    )
    source = {
        "kind": "measured",
        "machine": args.machine,
        "date": args.date or dt.date.today().isoformat(),
        "runs": runs,
        "statistic": f"median of {runs} runs of each check; each run's figure is the benchmark's own statistic "
        f"(docs/benchmark-json.md); tolerance = max(unit floor, 1.5 x largest deviation from the median), "
        f"capped at {baseline.CAP:.0%}" + (rejection if args.provenance else ""),
        "evidence": args.evidence,
    }
    if args.provenance:
        source.update(baseline.provenance(docs))
    informational = {}
    for spec in args.informational or []:
        pattern, sep, reason = spec.partition("=")
        if not sep or not pattern or not reason.strip():
            raise InputError(f"--informational {spec!r}: write CHECK.METRIC=REASON (the pattern may use * and ?)")
        informational[pattern] = reason.strip()
    if args.node_baseline:
        return _write_node_baseline(args, node_type, run_dirs, docs, source)
    if not args.description:
        raise InputError("--description: the node type's one-line description is required for a proposal")
    checks, stats = baseline.derive(docs, args.source_id, args.reject, informational)
    reference_dir = Path(args.reference_dir)
    reviewed = reference_dir / f"{node_type}.yaml"
    header = (
        f"Proposed by gpuaccept baseline from {runs} runs ({', '.join(f'{k}: {v}' for k, v in counts.items())}).\n"
        f"Review it, and the diff against the reviewed file in {reference_dir}, before copying it there."
    )
    # (proposal text, reviewed file, where the proposal goes relative to --output)
    outputs: list[tuple[str, Path, str]] = []
    if sku is None:
        match = {"gpu_model": gpus[0]["name"], "gpu_count": len(gpus), **match} if gpus else {"gpu_count": 0}
    node_text, gpu_text = baseline.proposals(
        node_type, args.description, match, args.source_id, source, checks, header, sku, len(gpus)
    )
    outputs.append((node_text, reviewed, ""))
    if sku is not None and gpu_text is not None:
        outputs.append((gpu_text, reference_dir / references.GPU_DIR / f"{sku[0]}.yaml", references.GPU_DIR))
    if args.output:
        out = Path(args.output)
        targets = [(text, rev, out if not sub else out.parent / sub / rev.name) for text, rev, sub in outputs]
        for _text, rev, target in targets:
            if target.resolve() == rev.resolve():
                raise InputError(
                    f"{target} is the reviewed reference file {rev}: baseline writes a proposal and a "
                    "diff beside it, never over it (write elsewhere, review the diff, then copy)"
                )
            if target.exists() and not args.force:
                raise InputError(f"{target} exists: pass --force to replace an earlier proposal")
        for text, rev, target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(target, text)
            print(f"wrote {target} from {counts} runs")
            if rev.exists():
                diff = baseline.unified_diff(rev, text, str(target))
                diff_path = target.with_name(target.name + ".diff")
                write_text_atomic(diff_path, diff)
                print(f"wrote {diff_path}: the proposal against {rev}")
                changed = baseline.changes(rev.read_text(encoding="utf-8"), text)
                for line in changed or ["no value or tolerance differs from the reviewed file"]:
                    print(f"  {line}")
            else:
                print(f"no reviewed file {rev} yet: the proposal is the first one")
    else:
        sys.stdout.write("---\n".join(text for text, _rev, _sub in outputs))
    for key, s in sorted(stats.items()):
        rejected = f" rejected={', '.join(f'{v:.4g}' for v in s['rejected'])}" if s["rejected"] else ""
        print(
            f"# {key}: runs={s['runs']} median={s['median']:.4g} min={s['min']:.4g} max={s['max']:.4g} "
            f"tolerance={s['tolerance']:.1%}{rejected}",
            file=sys.stderr,
        )
    return 0


def _baseline_sku(args: argparse.Namespace, gpus: list[dict]) -> tuple[str, dict, str] | None:
    """(name, match, description) of the GPU SKU the proposal's per-GPU layer goes to; None for a node without
    GPUs (one self-contained file). The SKU is --sku, else the known SKU the facts' GPUs are of."""
    if not gpus:
        if args.sku:
            raise InputError("--sku needs --facts of a node with GPUs (the GPU count and NVML's names)")
        return None
    names = sorted({g["name"] for g in gpus if g.get("name")})
    ids = sorted({g["pci_device_id"] for g in gpus if g.get("pci_device_id")})
    known = None
    try:
        known = references.detect_sku(args.reference_dir, {"gpus": gpus})
    except references.ReferenceError as err:
        if not args.sku:
            raise InputError(f"{err}; name the new SKU with --sku") from None
    if args.sku:
        references.check_name(args.sku, "--sku")
        if known is not None and known.name != args.sku:
            raise InputError(f"--sku {args.sku}: the facts' GPUs are of the known SKU {known.name} ({known.path})")
    name = args.sku or known.name  # type: ignore[union-attr]
    if known is not None:
        names = sorted(set(known.names) | set(names))
        ids = sorted(set(known.pci_device_ids) | set(ids))
    match: dict = {"names": names}
    if ids:
        match["pci_device_ids"] = ids
    description = args.sku_description or (known.description if known else names[0])
    return name, match, description


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept baseline`."""
    sp = sub.add_parser(
        "baseline", help="propose reference values from repeated runs, with a diff to the reviewed file"
    )
    add_reference_dir(sp)
    sp.add_argument("--node-type", required=True, help="the node type the proposal is for")
    sp.add_argument("--description", help="the node type's one-line description in the proposal (required but for "
                    "--node-baseline)")
    sp.add_argument("--machine", required=True, help="what the runs ran on, for the provenance")
    sp.add_argument("--evidence", required=True, help="where the runs' outputs are kept")
    sp.add_argument("--source-id", required=True, help="name of the provenance entry")
    sp.add_argument(
        "--facts",
        help="facts JSON of a measured node: its GPUs give the GPU SKU and count (per-GPU figures go to "
        "gpus/<sku>.yaml, node-level ones to <node_type>.yaml); without GPUs, one self-contained file",
    )
    sp.add_argument("--sku", help="name of a GPU SKU not yet in the reference directory (default: the known one)")
    sp.add_argument("--sku-description", help="description of a new GPU SKU (default: NVML's name)")
    sp.add_argument("--date", help="when the runs were made, for the provenance (default: today)")
    sp.add_argument(
        "--output",
        help="write the node type's proposal here and the GPU SKU's to gpus/<sku>.yaml beside it (refuses to "
        "replace a file without --force)",
    )
    sp.add_argument("--force", action="store_true", help="replace an earlier proposal (never the reviewed file)")
    sp.add_argument(
        "--reject",
        type=float,
        default=baseline.CAP,
        help="drop runs worse than the median of the others by more than this fraction, repeatedly "
        "(default %(default)s; 0 keeps every run)",
    )
    sp.add_argument(
        "--no-provenance",
        dest="provenance",
        action="store_false",
        help="leave out the nodes, run dates and rejection rule from the source entry (older files' form)",
    )
    sp.add_argument(
        "--informational",
        action="append",
        metavar="CHECK.METRIC=REASON",
        help="report the metrics matching this pattern (e.g. 'gemm.*_xfer_tflops_min') without judging them, for "
        "this reason; the entry keeps the range measured (repeatable)",
    )
    sp.add_argument(
        "--node-baseline",
        action="store_true",
        help="record this node's own host figures from its ACCEPTED runs instead (results/<node>/node-baseline.yaml, "
        "or --output): pageable copies, latencies, host GEMM and HPL are then judged against it (docs/verdicts.md)",
    )
    sp.add_argument("runs", nargs="+", help="run directories (results/<node>/<run>, or folders holding them)")
    sp.set_defaults(func=cmd_baseline)
