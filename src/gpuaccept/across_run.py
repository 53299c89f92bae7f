"""``gpuaccept across``: NCCL between nodes in the isolation modes, every raw document kept, one summary written
atomically, a table printed (docs/checks/across-nodes.md). The launches are gpuaccept.across_launch's, the modes
gpuaccept.results.across_modes', the decisions gpuaccept.judge.across_rules'.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import tabulate

from gpuaccept import across_launch, textinput
from gpuaccept.atomic import make_dirs, write_text_atomic
from gpuaccept.cli_common import default_reference_dir
from gpuaccept.judge import across_rules
from gpuaccept.judge.across_rules import Floor, GroupFigure
from gpuaccept.results import across_doc, across_modes, across_schedule, slurm

EXIT_REJECTED, EXIT_NOT_RUN = 1, 3
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SUMMARY_FILE = "across.json"
SUMMARY_SCHEMA = "gpuaccept.across/1"  # gpuaccept.results.across_heatmap.SCHEMA reads it


class AcrossError(ValueError):
    """Bad input to gpuaccept across (hosts, floors); the message names the file or option."""


def read_hosts(args: argparse.Namespace) -> tuple[list[str], str]:
    """The nodes: an Ansible inventory's hosts, a Slurm allocation's (``scontrol show hostnames``), or a file of
    one host a line (``#`` comments); and the node type the inventory gives them all (``gpuaccept_node_type``),
    "" where it gives none or several."""
    node_types: set[str] = set()
    if args.inventory:
        inv = slurm.load_inventory(args.inventory)
        hostvars = (inv.get("_meta") or {}).get("hostvars") or {}
        hosts = sorted(hostvars)
        node_types = {str((hostvars[h] or {}).get("gpuaccept_node_type") or "") for h in hosts}
    elif args.slurm:
        nodelist = os.environ.get("SLURM_JOB_NODELIST", "")
        if not nodelist:
            raise AcrossError("--slurm: SLURM_JOB_NODELIST is not set: run inside an allocation (salloc, sbatch)")
        res = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise AcrossError(f"scontrol show hostnames {nodelist} failed: {res.stderr.strip()}")
        hosts = res.stdout.split()
    else:
        try:
            text = Path(args.hosts).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise AcrossError(f"--hosts {args.hosts}: cannot read it: {err}") from None
        hosts = []
        for n, line in enumerate(text.splitlines(), 1):
            host = line.split("#", 1)[0].strip()
            if host and not HOST_NAME.fullmatch(host):
                raise AcrossError(f"--hosts {args.hosts}:{n}: {host[:60]!r} is not a host name")
            hosts += [host] if host else []
    if args.limit:
        wanted = args.limit.split(",")
        hosts = [h for h in hosts if h in wanted]
    if not hosts:
        raise AcrossError("no hosts to measure")
    across_schedule.check_nodes(hosts)  # a name twice is refused
    return hosts, node_types.pop() if len(node_types) == 1 else ""


FLOORS_SCHEMA = "gpuaccept.across-floors/1"


def load_floor(path: Path, node_type: str) -> Floor | None:
    """The node type's floor between nodes from a floors file (``floors: {<node type>: {value, source}}``;
    reference_values/across/floors.yaml), None where it names none; a bad file is an error naming it."""
    if not node_type:
        return None
    doc = textinput.load_yaml(path, "floors between nodes", AcrossError, object)
    if not isinstance(doc, dict) or doc.get("schema") != FLOORS_SCHEMA or not isinstance(doc.get("floors"), dict):
        raise AcrossError(f"{path}: not a floors file (schema: {FLOORS_SCHEMA}, floors: a mapping)")
    entry = doc["floors"].get(node_type)
    if entry is None:
        return None
    value = entry.get("value") if isinstance(entry, dict) else None
    source = entry.get("source") if isinstance(entry, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0 or not source:
        raise AcrossError(f"{path}: floors: {node_type}: a positive 'value' (GB/s) and a 'source' are required")
    return Floor(float(value), str(source))


def run_command(argv: list[str], env: dict[str, str], timeout_s: float) -> tuple[int, str]:
    """Exit status and the output's tail of one launch; past ``timeout_s`` its whole process group is killed (the
    launcher and what it started here) and the status is 124."""
    try:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)  # fmt: skip
    except OSError as err:
        return 127, f"cannot start {argv[0]}: {err}"
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, out[-4000:]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return 124, f"{out[-3000:]}\nno result within {timeout_s:g} s: the launch was killed"


class Runner:
    """Runs rounds through a launcher and keeps every launch's document, output and record."""

    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.raw = make_dirs(work / "raw")
        self.rounds: list[dict[str, Any]] = []

    def launch(self, groups: list[tuple[str, ...]], mode: str, layout: str = "groups") -> list[GroupFigure]:
        a = self.args
        out = self.raw / f"{len(self.rounds) + 1:03d}-{mode}.json"
        launch = across_launch.build(a.launcher, groups, a.tool, out, self.raw, a.ranks_per_node, layout,
                                     not a.no_ring, a.launcher_arg or [], a.gpus, tool_args=a.tool_arg or [],
                                     slow_node=a.emulate_slow_node)  # fmt: skip
        for name, text in launch.files.items():
            write_text_atomic(name, text)
        started = time.monotonic()
        rc, tail = run_command(launch.argv, {**os.environ, **launch.env, "LC_ALL": "C"}, a.timeout_s)
        write_text_atomic(out.with_suffix(".log"), tail)
        got = across_doc.read(out, groups, mode, layout == "rail", launch.aliases)
        if rc != 0 and not any(f.error for f in got):  # a failed launch never passes on the figures it left
            why = f"the launch exited {rc}: {' '.join(tail.split())[-300:]}"
            got = [GroupFigure(f.nodes, f.busbw_gbps, f.latency_us, why, mode, f.rail, f.source) for f in got]
        self.rounds.append({"mode": mode, "groups": [list(g) for g in groups], "argv": launch.argv,
                            "env": launch.env, "exit_status": rc, "seconds": round(time.monotonic() - started, 3),
                            "document": str(out), "output": str(out.with_suffix(".log"))})  # fmt: skip
        return got


def follow_up_needed(verdict: across_rules.Judgement) -> bool:
    """Whether the modes run left a fault unexplained: a node the judge could not place, or a slow whole set or
    rail with no node named."""
    unplaced = any(r.status == across_rules.NOT_RUN for r in verdict.nodes)
    set_rows = [*verdict.rails, *([verdict.whole_set] if verdict.whole_set else [])]
    unexplained = any(r.status == across_rules.FAIL for r in set_rows)
    return unplaced or (unexplained and not verdict.named())


def measure_all(args: argparse.Namespace, hosts: list[str], runner: Runner, floor: Floor | None) -> list[GroupFigure]:
    """The modes asked for, in order, then the follow-up mode where they left a fault unexplained."""
    figures: list[GroupFigure] = []
    modes = args.modes.split(",")
    for mode in modes:
        if mode in ("rail", "world"):
            figures += runner.launch([tuple(hosts)], mode, layout=mode)
        else:
            measure = lambda groups, m=mode: runner.launch(groups, m)  # noqa: E731
            whole = next((f for f in figures if f.mode == "world"), None)
            figures += across_modes.run(mode, hosts, measure, floor, args.node_type, whole)
    verdict = across_rules.judge(hosts, figures, floor, args.node_type)
    follow = args.on_failure
    if follow != "none" and follow not in modes and len(hosts) > 2 and follow_up_needed(verdict):
        whole = next((f for f in figures if f.mode == "world"), None)
        measure = lambda groups: runner.launch(groups, follow)  # noqa: E731
        figures += across_modes.run(follow, hosts, measure, floor, args.node_type, whole)
    return figures


def table(verdict: across_rules.Judgement) -> str:
    rows = [(r.subject, r.status.upper(), r.reason) for r in verdict.all_rows()]
    return tabulate.tabulate(rows, headers=["node", "verdict", "reason"], maxcolwidths=[None, None, 90])


def cmd_across(args: argparse.Namespace) -> int:
    unknown = [m for m in args.modes.split(",") if m not in across_schedule.MODES]
    if unknown:
        known = ", ".join(across_schedule.MODES)
        raise AcrossError(f"--modes {args.modes}: unknown {', '.join(unknown)} (one of {known})")
    hosts, inventory_type = read_hosts(args)
    args.node_type = args.node_type or inventory_type
    floor = load_floor(Path(args.floors), args.node_type)
    run_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-across"
    work = make_dirs(Path(args.results) / "_across" / run_id)
    runner = Runner(args, work)
    figures = measure_all(args, hosts, runner, floor) if len(hosts) > 1 else []
    verdict = across_rules.judge(hosts, figures, floor, args.node_type)
    summary: dict[str, Any] = {
        "schema": SUMMARY_SCHEMA, "hosts": hosts, "node_type": args.node_type, "launcher": args.launcher,
        "modes": args.modes.split(","), "on_failure": args.on_failure,
        "floor": None if floor is None else {"value": floor.value, "unit": floor.unit, "source": floor.source},
        "rounds": runner.rounds, "figures": [vars(f) | {"nodes": list(f.nodes)} for f in figures],
        "cost_rounds": {m: across_schedule.rounds(m, len(hosts)) for m in across_schedule.MODES},
        "judgement": verdict.to_json(),
    }  # fmt: skip
    write_text_atomic(work / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    try:
        from gpuaccept.results import across_heatmap  # noqa: PLC0415  (matplotlib: the report's requirements)

        for path in across_heatmap.write(summary, work):
            print(f"heat map: {path}")
    except ImportError as err:
        print(f"heat map: not drawn ({err})")
    print(table(verdict))
    print(f"\nsummary: {work / SUMMARY_FILE}")
    if verdict.accepted:
        return 0
    return EXIT_REJECTED if verdict.failed else EXIT_NOT_RUN


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept across` (gpuaccept.cli_common says how subcommands are added)."""
    sp = sub.add_parser("across", help="NCCL between nodes: the whole set, rails, pairs, halving; names the bad node")
    src = sp.add_mutually_exclusive_group(required=True)
    src.add_argument("--hosts", help="a file of host names, one a line")
    src.add_argument("--inventory", help="an Ansible inventory (or its ansible-inventory --list JSON)")
    src.add_argument("--slurm", action="store_true", help="this Slurm allocation's nodes (scontrol show hostnames)")
    sp.add_argument("--limit", help="only these hosts (comma-separated)")
    sp.add_argument("--launcher", choices=across_launch.LAUNCHERS, default="mpirun", help="default: %(default)s")
    sp.add_argument("--launcher-arg", action="append", help="one more argument to the launcher (repeatable)")
    sp.add_argument("--tool", default="gpuaccept-nccl", help="the gpuaccept-nccl executable (default: %(default)s)")
    sp.add_argument("--tool-arg", action="append", help="one more option to gpuaccept-nccl, e.g. its sweep: "
                    "--tool-arg=--max-bytes --tool-arg=67108864 (repeatable)")  # fmt: skip
    sp.add_argument("--emulate-slow-node", default="", help="emulate: this node's first rank starved of CPU "
                    "(gpuaccept.nccl_emulate --slow-rank), wherever each round places it")  # fmt: skip
    sp.add_argument("--ranks-per-node", type=int, default=1, help="ranks (GPUs) per node (default: %(default)s)")
    sp.add_argument("--gpus", type=int, default=0, help="emulate: this machine's GPUs, rank r on GPU r mod GPUS "
                    "(default: one per rank)")  # fmt: skip
    sp.add_argument("--modes", default="world,quick", help="comma-separated, in order: world, rail, pairwise, "
                    "quick, halving (default: %(default)s)")  # fmt: skip
    sp.add_argument("--on-failure", default="halving", choices=("halving", "pairwise", "quick", "none"),
                    help="the mode run when the judge finds a fault (default: %(default)s)")  # fmt: skip
    sp.add_argument("--node-type", default="", help="the node type whose floor between nodes applies (default: the "
                    "one the inventory gives every host, if it does)")  # fmt: skip
    sp.add_argument("--floors", default=str(default_reference_dir() / "across" / "floors.yaml"),
                    help="the floors file (default: %(default)s)")  # fmt: skip
    sp.add_argument("--no-ring", action="store_true", help="let NCCL choose its algorithm (default: --ring)")
    sp.add_argument("--timeout-s", type=float, default=600.0, help="per launch (default: %(default)s)")
    sp.add_argument("--results", default="results", help="writes <results>/_across/<run id>/ (default: %(default)s)")
    sp.set_defaults(func=cmd_across)
