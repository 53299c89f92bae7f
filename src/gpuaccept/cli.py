"""The ``gpuaccept`` command: node facts, node type detection, reference checks, verdicts, baselines.

Exit codes: 0 success (or node accepted), 1 node rejected, 2 usage error (an unknown option or a missing
argument), 3 cannot judge (``gpuaccept run``: no usable GPU, or the suite could not run to the end; a verdict
is written all the same), 4 bad input (one line on stderr names the path or value and what is wrong with it);
docs/exit-status.md. ``health`` says 2 for an unhealthy node and 3 when it could not look, ``powercheck`` 2 for a
failed verification, and ``sample`` exits with its command's status.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path

from gpuaccept import (
    __version__,
    across_run,
    cli_fleet,
    healthcheck,
    helptext,
    manifest,
    redact,
    references,
    run,
    textinput,
)
from gpuaccept.atomic import OutputError, write_text_atomic
from gpuaccept.judge import (
    coverage,
    fabric_expect,
    health_rules,
    metric_table,
    readback,
    summarize,
    verdict,
)
from gpuaccept.judge.checks import CHECKS, SUITES
from gpuaccept.layout import BENCH_SCHEMA, METRICS_FILE, REFERENCE_DIR, REPORT_FILE, VERDICT_FILE
from gpuaccept.probe import burnin, crosscheck, dcgm, facts, health, overlap, peaks, power, powercheck
from gpuaccept.results import baseline, compare, health_expect, sensitivity

EXIT_REJECTED = 1
EXIT_INPUT = 4


def default_reference_dir() -> Path:
    return Path(os.environ.get("GPUACCEPT_REFERENCE_DIR") or REFERENCE_DIR)


class InputError(Exception):
    pass


def _load_json(path: str, what: str) -> dict:
    """A JSON object from a file, read strictly (gpuaccept.textinput.load_json); InputError naming the file and what
    is wrong with it otherwise."""
    return textinput.load_json(Path(path), f"the {what}", InputError)


def cmd_facts(args: argparse.Namespace) -> int:
    text = json.dumps(facts.gather(), indent=2, sort_keys=True) + "\n"
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_detect(args: argparse.Namespace) -> int:
    node = _load_json(args.facts, "node facts") if args.facts else facts.gather()
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


def cmd_summarize(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    # A node type whose file lacks a check of the suite: refused before anything is judged (one that does not
    # exist, or cannot be read, is the verdict's to say).
    try:
        why = coverage.sections_error(references.load_node_type(args.reference_dir, args.node_type), args.suite)
    except references.ReferenceError:
        why = ""
    if why:
        raise references.ReferenceError(why)
    node_facts = None if args.facts else facts.gather()
    result, written = summarize.judge_run_dir(
        run_dir,
        node_facts,
        args.reference_dir,
        args.node_type,
        args.suite,
        expected_gpus=args.expected_gpus,
        textfile_dir=args.textfile_dir,
        facts_file=Path(args.facts) if args.facts else None,
        commission=Path(args.commission_run) if args.commission_run else None,
    )
    print(verdict.table(result))
    if args.pushgateway:
        from gpuaccept.judge import pushgateway  # noqa: PLC0415

        grouping = pushgateway.push(result, args.pushgateway, args.pushgateway_instance)
        print(f"\npushed:  {redact.url(args.pushgateway)} (job {pushgateway.JOB}, {grouping})")
    print(f"\nreport:  {run_dir / VERDICT_FILE}")
    print(f"reframe: {run_dir / REPORT_FILE}")
    for path in written[1:]:
        print(f"prom:    {path}")
    if result.accepted:
        return 0
    cannot = verdict.cannot_judge(result)
    if cannot:
        print(f"\n{result.node}: {cannot}")
        return run.EXIT_NOT_RUN
    return EXIT_REJECTED


def _newest_verdicts(results: Path, newer_than: float | None) -> list[Path]:
    """verdict.json files under a results tree, newest run per node first."""
    found = [p for p in results.rglob(VERDICT_FILE) if newer_than is None or p.stat().st_mtime > newer_than]
    newest: dict[Path, Path] = {}
    for p in sorted(found, key=lambda p: p.stat().st_mtime):
        newest[p.parent.parent] = p  # results/<node>/<run>/verdict.json: the last one per node wins
    return list(newest.values())


def _show_archives(path: Path) -> int:
    """gpuaccept show over a run archive or a folder of them: every verdict found in them, then what was found."""
    from gpuaccept.results import archive  # noqa: PLC0415

    try:
        folders, unpacked = archive.expand(path)
    except archive.ArchiveError as err:
        raise InputError(str(err)) from None
    found: dict[tuple[str, str], list[Path]] = {}  # (node, run) -> its verdicts: one run kept in two archives
    for p in sorted((p for f in folders for p in f.rglob(VERDICT_FILE)), key=lambda p: (p.parent.name, str(p))):
        found.setdefault((p.parent.parent.name, p.parent.name), []).append(p)
    what = f"{len(unpacked)} archive{'s' if len(unpacked) != 1 else ''} ({', '.join(unpacked)})"
    if not found:
        raise InputError(f"{path}: no {VERDICT_FILE} in it or in the {what} it holds: no judged run to show")
    top = folders[-1]  # the temporary folder the archives were unpacked into (removed at exit)
    status = max(cmd_show(argparse.Namespace(run_dir=str(ps[0]), newer_than=None,
                                             inside=(path, top) if ps[0].is_relative_to(top) else None))
                 for ps in found.values())  # fmt: skip
    twice = sum(1 for ps in found.values() if len(ps) > 1)
    again = f"; {twice} of them kept in more than one archive, shown once" if twice else ""
    print(f"\n{path}: {len(found)} judged run{'s' if len(found) != 1 else ''} found in {what}{again}")
    return status


def cmd_show(args: argparse.Namespace) -> int:
    path = Path(args.run_dir)
    if (path.is_file() and path.name.endswith((".tar", ".tar.gz", ".tgz"))) or (
        path.is_dir() and not args.newer_than and not any(path.rglob(VERDICT_FILE))
        and any(path.glob("*.tar*"))):  # fmt: skip
        return _show_archives(path)
    if path.is_dir() and not (path / VERDICT_FILE).exists():
        since = None
        if args.newer_than:
            try:
                since = Path(args.newer_than).stat().st_mtime
            except OSError as err:
                raise InputError(f"--newer-than {args.newer_than}: {err.strerror}") from None
        paths = _newest_verdicts(path, since)
        if not paths:
            newer = f" newer than {args.newer_than}" if args.newer_than else ""
            raise InputError(f"{path}: no {VERDICT_FILE}{newer} under it: no run there was judged (gpuaccept run "
                             "writes one when it judges a node)")  # fmt: skip
        return max(cmd_show(argparse.Namespace(run_dir=str(p), newer_than=None)) for p in paths)
    path = path / VERDICT_FILE if path.is_dir() else path
    doc = readback.read(path, InputError)
    try:  # accepted or not by its rows (verdict.decide), whatever its 'verdict' field says
        result = verdict.Verdict.from_json(doc)
    except ValueError as err:
        raise InputError(f"{path}: {err}") from None
    print(verdict.table(result))
    edited = "; ".join(x for x in (readback.disagreement(doc), manifest.unvouched(path.parent)) if x)
    if edited:
        print(f"\nwarning: {path}: {edited}")
        print(f"gpuaccept show: warning: {path}: {edited}", file=sys.stderr)
    inside = getattr(args, "inside", None)  # (archive or folder, unpacked top): the run as the archive holds it
    if inside:
        print(f"\nrun:     {inside[0]}: {path.parent.relative_to(inside[1])}")
        return 0 if result.accepted else EXIT_REJECTED
    print(f"\nreport:  {path}")
    if (path.parent / REPORT_FILE).exists():
        print(f"reframe: {path.parent / REPORT_FILE}")
    prom = path.parent / METRICS_FILE
    if prom.exists():
        print(f"prom:    {prom}")
    return 0 if result.accepted else EXIT_REJECTED


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
    node = _load_json(args.facts, "node facts") if args.facts else None
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


def cmd_sample(args: argparse.Namespace) -> int:
    return power.run(args.cmd, args.output, args.interval, argv=["gpuaccept", *sys.argv[1:]], backend_name=args.backend)


def cmd_sensitivity(args: argparse.Namespace) -> int:
    try:
        losses = [float(x) for x in args.loss.split(",")]
    except ValueError:
        raise InputError(f"--loss {args.loss!r}: fractions separated by commas, e.g. 0.05,0.10,0.20") from None
    if not losses or not all(0 < x < 1 for x in losses):
        raise InputError(f"--loss {args.loss!r}: each fraction between 0 and 1")
    run_dirs = [Path(p) for p in args.runs]
    for d in run_dirs:
        if not (d / VERDICT_FILE).is_file():
            raise InputError(f"{d}: no {VERDICT_FILE}: give run directories made by gpuaccept run")
    if args.references:
        return _sensitivity_references(run_dirs, Path(args.reference_dir), losses, args.json)
    figures, notes = sensitivity.measure(run_dirs, Path(args.reference_dir), losses)
    print(sensitivity.table(figures, losses))
    for note in notes:
        print(f"note: {note}")
    if args.json:
        write_text_atomic(args.json, json.dumps(sensitivity.to_json(figures, losses, notes), indent=2) + "\n")
    return 0 if figures else 1


def _sensitivity_references(runs: list[Path], reference_dir: Path, losses: list[float], out: str | None) -> int:
    """gpuaccept sensitivity --references: the band and the deviation rules together (results/sensitivity_refs)."""
    from gpuaccept.judge import deviation  # noqa: PLC0415
    from gpuaccept.results import deviation_noise, sensitivity_refs  # noqa: PLC0415

    thresholds = deviation.load(reference_dir)
    if thresholds.problem:
        raise InputError(thresholds.problem)
    healthy, notes = deviation_noise.healthy_runs(runs, reference_dir)
    rejected = sensitivity_refs.healthy_rejections(healthy, thresholds)
    cases = sensitivity_refs.measure(healthy, thresholds, losses)
    print(sensitivity_refs.table(cases, losses))
    print(f"{len(healthy)} healthy run(s); rejected by a deviation rule as recorded: {len(rejected)}")
    for line in [*rejected, *notes]:
        print(f"note: {line}")
    if out:
        doc = sensitivity_refs.to_json(cases, losses, [str(h.run) for h in healthy], rejected, notes)
        write_text_atomic(out, json.dumps(doc, indent=2) + "\n")
    return 0 if cases and not rejected else 1


def cmd_compare(args: argparse.Namespace) -> int:
    if args.top < 0:
        raise InputError(f"--top {args.top}: give how many to list (0 lists them all)")
    found = compare.find_verdicts([Path(p) for p in args.results], every_run=args.every_run)
    devs = compare.deviations(found, args.reference_dir)
    if args.json:
        doc = {
            "schema": "gpuaccept.compare/1",
            "runs": [str(p) for p, _ in found],
            "deviations": [d.to_json() for d in devs],
        }
        write_text_atomic(args.json, json.dumps(doc, indent=2) + "\n")
    outside = [d for d in devs if d.outside]
    shown = devs if args.all else outside
    if args.top:
        shown = shown[: args.top]
    nodes = {(d.node, d.node_type) for d in devs}
    bad_nodes = {(d.node, d.node_type) for d in outside}
    if shown:
        print(compare.table(shown))
        print()
    print(
        f"{len(outside)} of {len(devs)} judged metrics outside their tolerance on {len(bad_nodes)} of "
        f"{len(nodes)} node(s) ({len(found)} run(s) against "
        f"{args.reference_dir or 'the references they were judged with'})"
    )
    inside = [d for d in devs if not d.outside]
    if inside and not args.all:
        d = inside[0]
        print(f"closest to its edge among the rest: {d.node} {d.check}.{d.metric} at {d.units:.2f} tolerances")
    return EXIT_REJECTED if outside else 0


def _archives(names: list[str]) -> str:
    """', from N archive(s): a, b' where a report column's paths were run archives; '' otherwise."""
    return f", from {len(names)} archive{'s' if len(names) != 1 else ''}: {', '.join(names)}" if names else ""


def _name_nodes(groups: list, names: list[str]) -> None:
    """gpuaccept report --node-name [LABEL=]NAME: the node of column LABEL (of every column without LABEL=) as the
    operator names it."""
    for given in names:
        label, sep, name = given.rpartition("=")
        if not name.strip():
            raise InputError(f"--node-name {given!r}: no name given ([LABEL=]NAME)")
        named = [g for g in groups if not sep or g.label == label]
        if not named:
            raise InputError(f"--node-name {given!r}: no input is labelled {label!r} "
                             f"(the labels: {', '.join(g.label for g in groups)})")  # fmt: skip
        for g in named:
            g.node_name = name.strip()


def cmd_report(args: argparse.Namespace) -> int:
    try:
        from gpuaccept.results import report  # noqa: PLC0415 (matplotlib is optional: requirements/report.txt)

        report._pyplot()
    except ImportError as err:
        raise InputError(f"the report needs matplotlib ({err}): pip install -r requirements/report.txt") from None
    if args.pdf and not report.chromium():
        raise InputError("--pdf prints with headless Chromium, and none is on PATH: apt-get install chromium (Debian's "
                         "package; or name a Chromium with GPUACCEPT_CHROMIUM)")  # fmt: skip
    groups = [report.load_group(spec) for spec in args.inputs]
    _name_nodes(groups, args.node_name)
    from gpuaccept.results import across_heatmap  # noqa: PLC0415 (matplotlib, as above)

    across = [(path, across_heatmap.load(Path(path))) for path in args.across or []]
    text = report.build(groups, args.title, args.baseline, args.generated, Path(args.reference_dir), across)
    write_text_atomic(args.output, text)
    if args.pdf:
        report.print_pdf(Path(args.output), Path(args.pdf))
        print(f"wrote {args.pdf} (printed by headless Chromium)")
    inputs = ", ".join(f"{g.label} ({len(g.docs)} documents, {len(g.verdicts)} verdicts{_archives(g.archives)})"
                       for g in groups)  # fmt: skip
    print(f"wrote {args.output} ({len(text) // 1024} KiB): {inputs}")
    return 0


def cmd_health(args: argparse.Namespace) -> int:
    """Probe (gpuaccept.probe.health), then, with --node-type, the judge's health rules on what it recorded:
    exit 0 healthy, 2 unhealthy, 3 could not look (kernel log unreadable), 1 GPUs unreadable."""
    # The node type first: a bad reference directory or name is a bad command line, before anything runs.
    node_type = references.load_node_type(args.reference_dir, args.node_type) if args.node_type else None
    doc, status = health.run(args, ["gpuaccept", *sys.argv[1:]])
    if status != 0 or node_type is None:
        return status
    findings, notes, not_run = health_rules.assess(doc, node_type, args.expected_gpus)
    for f in findings:
        print(f"UNHEALTHY: {f['message']}\n  fix: {f['fix']}")
    for note in notes:
        print(f"note: {note}")
    if findings:
        return 2
    if not_run:
        print(f"NOT RUN: {not_run}")
        return 3
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


def cmd_powercheck(args: argparse.Namespace) -> int:
    return powercheck.run(args, ["gpuaccept", *sys.argv[1:]])


def cmd_overlap_model(args: argparse.Namespace) -> int:
    doc_path = Path(args.document)
    doc = _load_json(args.document, "gpuaccept-overlap document")
    if doc.get("schema") != BENCH_SCHEMA:
        raise InputError(f"{doc_path}: not a {BENCH_SCHEMA} document")
    bw_doc = _load_json(args.bandwidth, "gpuaccept-bw document") if args.bandwidth else None
    source = f"{args.bandwidth} (gpuaccept-bw's fit)" if args.bandwidth else ""
    try:
        overlap.annotate(doc, bw_doc, source)
    except overlap.OverlapError as err:
        raise InputError(f"{doc_path}: {err}") from None
    write_text_atomic(doc_path, json.dumps(doc, indent=1) + "\n")
    print(overlap.summary(doc))
    return 0


def cmd_peaks(args: argparse.Namespace) -> int:
    path = Path(args.peaks) if args.peaks else Path(args.reference_dir) / peaks.DEFAULT_PATH
    table = peaks.load(path)
    doc_path = Path(args.document)
    doc = textinput.load(doc_path, "benchmark document", textinput.JSON, InputError)
    if not isinstance(doc, dict) or doc.get("schema") != BENCH_SCHEMA:
        raise InputError(f"{doc_path}: not a {BENCH_SCHEMA} document")
    power_doc = None
    if args.power:
        try:
            power_doc = json.loads(Path(args.power).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise InputError(f"{args.power}: cannot read the power sampler's document: {err}") from None
    peaks.annotate(doc, table, path, power_doc)
    write_text_atomic(doc_path, json.dumps(doc, indent=1) + "\n")
    block = doc["peak"]
    for name, f in block["fractions"].items():
        print(f"{name}: {f['fraction']:.3f} of {f['figure']} {f['peak_tflops']:g} TFLOP/s ({block['gpu_model']})")
    for name, why in doc["waived"].items():
        if name.endswith("_peak_fraction"):
            print(f"{name}: waived: {why}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpuaccept", description=helptext.summary(__doc__))
    p.add_argument("--version", action="version", version=f"gpuaccept {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def bench_output(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--output", required=True, help=f"the {BENCH_SCHEMA} document to write (atomically)")

    def sample_interval(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--interval", type=float, default=0.1, help="seconds between samples (default %(default)s)")

    def refdir(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--reference-dir",
            default=default_reference_dir(),
            help="directory of <node_type>.yaml files (default: %(default)s)",
        )

    sp = sub.add_parser("facts", help="print this node's facts (CPU, NUMA, GPUs via NVML or nvidia-smi) as JSON")
    sp.add_argument("--output", help="write to this file (atomically) instead of stdout")
    sp.set_defaults(func=cmd_facts)

    sp = sub.add_parser("detect", help="print the node type whose reference file matches this node")
    refdir(sp)
    sp.add_argument("--facts", help="facts JSON (default: gather them now)")
    sp.add_argument("--expect", help="fail unless the node matches this node type")
    sp.set_defaults(func=cmd_detect)

    sp = sub.add_parser("references", help="validate reference files (all, or the node types named)")
    refdir(sp)
    sp.add_argument("node_type", nargs="*", help="node types to validate (default: every <node_type>.yaml)")
    sp.set_defaults(func=cmd_references)

    sp = sub.add_parser("summarize", help="judge a run directory: verdict.json, gpuaccept.prom, verdict table")
    refdir(sp)
    sp.add_argument("--run-dir", required=True, help="holds reframe-report.json; results are written here")
    sp.add_argument("--node-type", required=True, help="judge against reference_values/<NODE_TYPE>.yaml")
    sp.add_argument("--suite", required=True, choices=SUITES, help="the suite that ran (which checks it expects)")
    sp.add_argument("--commission-run", help="the node's accepted commissioning run to compare the run with (the "
                    "own-baseline rule; default: the newest accepted one beside --run-dir)")  # fmt: skip
    sp.add_argument("--facts", help="facts JSON (default: gather them now)")
    run.add_verdict_outputs(sp, "the node's hostname")
    sp.set_defaults(func=cmd_summarize)

    sp = sub.add_parser(
        "show",
        help="print the verdict table of a run directory, a verdict.json, or the newest runs under a results directory",
    )
    sp.add_argument("run_dir", help="a run directory, its verdict.json, or a results tree (newest run per node)")
    sp.add_argument("--newer-than", help="with a results directory: only runs newer than this file")
    sp.set_defaults(func=cmd_show)

    sp = sub.add_parser(
        "baseline", help="propose reference values from repeated runs, with a diff to the reviewed file"
    )
    refdir(sp)
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

    sp = sub.add_parser(
        "sample",
        help="run a command while sampling every GPU's power, clocks, temperature and throttle reasons; "
        "exits with the command's exit status",
    )
    sample_interval(sp)
    bench_output(sp)
    sp.add_argument(
        "--backend", choices=power.BACKENDS, default="auto", help="how GPUs are read (default: NVML, else nvidia-smi)"
    )
    run.add_command_tail(
        sp, "cmd", "-- COMMAND [ARGS...]", "the command to sample (exit status 127 when it cannot be started)"
    )
    sp.set_defaults(func=cmd_sample)

    sp = sub.add_parser(
        "compare",
        help="compare the latest results of one node or a fleet with the references: outliers, worst first",
    )
    sp.add_argument(
        "--reference-dir",
        help="judge the runs again against the <node_type>.yaml files here (default: the verdicts as judged)",
    )
    sp.add_argument("results", nargs="+", help="verdict.json files, run directories or results trees")
    sp.add_argument("--every-run", action="store_true", help="every run, not only the newest per node")
    sp.add_argument("--all", action="store_true", help="list every judged metric, not only those outside")
    sp.add_argument("--top", type=int, default=0, help="list at most this many (default: all)")
    sp.add_argument("--json", help="also write every deviation to this file (atomically)")
    sp.set_defaults(func=cmd_compare)

    sp = sub.add_parser(
        "sensitivity",
        help="what the references catch: healthy runs judged again with one gating figure at a time made worse",
    )
    refdir(sp)
    sp.add_argument("runs", nargs="+", help="run directories (each with verdict.json, reframe-report.json, facts)")
    sp.add_argument("--loss", default="0.05,0.10,0.20", help="fractions to make each figure worse (%(default)s)")
    sp.add_argument("--json", help="also write the table as JSON to this file (atomically)")
    sp.add_argument("--references", action="store_true",
                    help="the band and the siblings, fleet and own-baseline rules together, each loss on one GPU and "
                    "on the whole node (the runs given make the fleet; docs/verdicts.md)")  # fmt: skip
    sp.set_defaults(func=cmd_sensitivity)

    sp = sub.add_parser("report", help="one self-contained HTML evaluation report from run directories")
    sp.add_argument(
        "inputs",
        nargs="+",
        metavar="[LABEL=]PATH[,PATH...]",
        help="runs of one node type or vendor per argument: run directories, results trees, document folders, "
        "run archives (.tar, .tar.gz) or folders of them",
    )
    sp.add_argument("--output", required=True, help="the HTML file to write (atomically)")
    sp.add_argument("--node-name", action="append", default=[], metavar="[LABEL=]NAME",
                    help="the node's name as the report prints it, for the column LABEL (every column without "
                    "LABEL=); default: the inventory's name, or the host name in the runs' facts where that is "
                    "localhost")  # fmt: skip
    sp.add_argument("--title", default="GPU node evaluation", help="the report's title (default: %(default)s)")
    sp.add_argument("--baseline", help="the label ratios are taken against (default: the first input)")
    sp.add_argument("--generated", help="the date printed as when the report was made (default: now)")
    sp.add_argument("--pdf", help="also print the report to this PDF with headless Chromium (Debian: chromium)")
    sp.add_argument("--across", action="append", help="a gpuaccept across summary (across.json) to show, its pair "
                    "heat map and each node's verdict (repeatable)")  # fmt: skip
    refdir(sp)
    sp.set_defaults(func=cmd_report)

    cli_fleet.register(sub, default_reference_dir())
    across_run.register(sub, default_reference_dir())
    run.add_subparser(sub, default_reference_dir())
    crosscheck.add_subparser(sub)
    dcgm.add_subparser(sub)
    health_expect.add_subparser(sub)

    sp = sub.add_parser(
        "health",
        help="probe the GPUs' health (count, driver, PCIe under load, ECC, row remapping, XID, processes); "
        "exit 0 healthy, 2 unhealthy, 3 could not look, 1 GPUs unreadable",
    )
    refdir(sp)
    sp.add_argument(
        "--node-type", help="also judge what was recorded against this node type's health expectations and print it"
    )
    bench_output(sp)
    sp.add_argument("--expected-gpus", type=int, help="GPUs the inventory says this node has")
    sp.add_argument(
        "--xid-since", default="24h", help="XID lines since: boot, 24h/30m/2d ago, epoch seconds or ISO time"
    )
    sp.add_argument("--load-s", type=float, help="seconds of copy load while the PCIe link is read (default 1)")
    sp.add_argument("--quick", action="store_true", help="nightly: a 0.5 s load")
    sp.add_argument(
        "--exempt-pid", type=int, action="append", help="a compute process that is not foreign (repeatable)"
    )
    sp.set_defaults(func=cmd_health)

    sp = sub.add_parser(
        "powercheck",
        help="idle power, power under a sustained GEMM on every GPU, GFLOP/s per watt, throttling; "
        "exit 0 pass, 2 a rule failed, 1 could not measure",
    )
    sp.add_argument("--gemm", required=True, help="the gpuaccept-gemm executable")
    bench_output(sp)
    sp.add_argument("--precision", default="fp64", help="GEMM precision of the load (default %(default)s)")
    sp.add_argument("--idle-s", type=float, help="seconds of idle sampling (default 5, --quick 3)")
    sp.add_argument("--load-s", type=float, help="seconds of the sustained GEMM window (default 10, --quick 5)")
    sample_interval(sp)
    sp.add_argument("--quick", action="store_true", help="nightly: shorter idle and load phases")
    sp.set_defaults(func=cmd_powercheck)

    burnin.add_subparser(sub)
    healthcheck.add_subparser(sub, default_reference_dir())

    sp = sub.add_parser(
        "overlap-model",
        help="add the predictions of van Werkhoven et al. (2014)'s model (sync, streams, mapped, managed) and their "
        "errors to a gpuaccept-overlap document (in place)",
    )
    sp.add_argument("document", help="a gpuaccept-overlap JSON document")
    sp.add_argument("--bandwidth", help="a gpuaccept-bw document of the same node: its fitted PCIe model (L+o, G, g) "
                    "instead of the overlap run's own copies")  # fmt: skip
    sp.set_defaults(func=cmd_overlap_model)

    sp = sub.add_parser(
        "peaks",
        help="add each GEMM/HPL-style rate's fraction of the GPU's datasheet peak to a benchmark document (in place)",
    )
    sp.add_argument("document", help="a gpuaccept-gemm or gpuaccept-hplstyle JSON document")
    refdir(sp)
    sp.add_argument("--peaks", help="the peaks file (default: <reference-dir>/datasheets/gpu_peaks.yaml)")
    sp.add_argument("--power", help="the power sampler's document of the same run: its clocks go with the fractions")
    sp.set_defaults(func=cmd_peaks)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (InputError, run.RunError, references.ReferenceError, peaks.PeaksError, OutputError, ValueError) as err:
        print(f"gpuaccept {args.command}: {err}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as err:  # a path the modules did not check themselves: name it, no traceback
        where = f"{err.filename}: " if err.filename else ""
        print(f"gpuaccept {args.command}: {where}{err.strerror or err}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
