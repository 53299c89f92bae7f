"""Running a fleet through Slurm: a ReFrame configuration generated from the Ansible inventory, one verdict
per node from a ``reframe --distribute`` run, and the opt-in drain of a failed node (``apply_health``: the rule the
health check shares, docs/fleet.md "The node's lifecycle in Slurm").

The inventory (``ansible-inventory --list``, group and host variables merged) gives each node its node type
(``gpuaccept_node_type``), its GPU count (``gpuaccept_gpu_count``) and its Slurm partition
(``gpuaccept_slurm_partition``; optional ``gpuaccept_slurm_reservation`` for commissioning and
``gpuaccept_slurm_access``, more sbatch options). Each node type becomes one ReFrame partition of system
``gpuaccept`` whose jobs go to that Slurm partition, so ``reframe --distribute`` runs one job per node of it.
The environments and logging are those of a node's own configuration (gpuaccept.rfmconfig), so local and
Slurm runs log and build alike.
"""

from __future__ import annotations

import json
import pprint
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept import manifest, redact, rfmconfig, textinput
from gpuaccept.atomic import write_text_atomic
from gpuaccept.judge import summarize, verdict
from gpuaccept.layout import REPORT_FILE, VERDICT_FILE
from gpuaccept.references import check_name

SCHEDULERS = ("squeue", "slurm")  # squeue: no accounting database needed; slurm: sacct
LAUNCHERS = ("local", "srun", "mpirun")


class SlurmError(ValueError):
    """Bad inventory or Slurm input; the message names the host, group or file."""


@dataclass
class Partition:
    node_type: str
    slurm_partition: str
    reservation: str = ""
    access: list[str] = field(default_factory=list)
    gpu_count: int | None = None
    hosts: list[str] = field(default_factory=list)

    @property
    def access_options(self) -> list[str]:
        opts = [f"--partition={self.slurm_partition}"]
        if self.reservation:
            opts.append(f"--reservation={self.reservation}")
        return opts + list(self.access)


def partitions(inventory: dict[str, Any], limit: list[str] | None = None) -> list[Partition]:
    """One partition per node type, from ``ansible-inventory --list`` output. Every host must name its node type
    and Slurm partition, and the hosts of one node type must agree on partition, reservation and GPU count."""
    hostvars = (inventory.get("_meta") or {}).get("hostvars")
    if not isinstance(hostvars, dict):
        raise SlurmError("the inventory has no _meta.hostvars: pass the output of `ansible-inventory --list`")
    found: dict[str, Partition] = {}
    for host in sorted(hostvars):
        if limit and host not in limit:
            continue
        hv = hostvars[host] or {}
        node_type = hv.get("gpuaccept_node_type")
        if not node_type or node_type == "auto":
            raise SlurmError(
                f"host {host}: gpuaccept_node_type is {node_type!r}: a Slurm run needs the node type from the "
                "inventory (set it in the node type's group_vars)"
            )
        if not re.fullmatch(r"[A-Za-z0-9_]+", str(node_type)):
            raise SlurmError(f"host {host}: gpuaccept_node_type {node_type!r} is not a valid ReFrame partition name")
        slurm_partition = hv.get("gpuaccept_slurm_partition")
        if not slurm_partition:
            raise SlurmError(f"host {host}: no gpuaccept_slurm_partition (the Slurm partition its jobs go to)")
        access = hv.get("gpuaccept_slurm_access") or []
        if not isinstance(access, list) or not all(isinstance(a, str) for a in access):
            raise SlurmError(f"host {host}: gpuaccept_slurm_access must be a list of sbatch options, not {access!r}")
        gpus = hv.get("gpuaccept_gpu_count")
        part = Partition(
            str(node_type),
            str(slurm_partition),
            str(hv.get("gpuaccept_slurm_reservation") or ""),
            access,
            None if gpus in (None, "") else int(gpus),
        )
        seen = found.setdefault(part.node_type, part)
        if (seen.slurm_partition, seen.reservation, seen.access, seen.gpu_count) != (
            part.slurm_partition,
            part.reservation,
            part.access,
            part.gpu_count,
        ):
            raise SlurmError(
                f"host {host}: node type {node_type} has Slurm partition {part.slurm_partition!r}, reservation "
                f"{part.reservation!r}, access {part.access}, {part.gpu_count} GPUs, but {seen.hosts[0]} has "
                f"{seen.slurm_partition!r}, {seen.reservation!r}, {seen.access}, {seen.gpu_count}: one node type, one "
                "setting (put them in the node type's group_vars)"
            )
        seen.hosts.append(host)
    if not found:
        raise SlurmError("no hosts in the inventory" + (f" match --limit {','.join(limit)}" if limit else ""))
    return list(found.values())


def site_config(
    parts: list[Partition],
    reference_dir: str | Path,
    build: dict[str, str],
    scheduler: str = "squeue",
    launcher: str = "local",
    nvcc: str = "nvcc",
    max_jobs: int = 64,
    mpi: bool = False,
) -> dict[str, Any]:
    """The ReFrame configuration: system ``gpuaccept``, one partition per node type on its Slurm partition.
    ``build`` holds the build settings of the extras (blas, mklroot, openblas_inc, openblas_lib, cuda_arch,
    git_revision): ReFrame builds once, where it runs, into a stage directory the nodes must share. ``mpi`` adds
    the ``mpi`` feature that the checks between nodes (multinode suite) need; use an MPI launcher with it."""
    if scheduler not in SCHEDULERS:
        raise SlurmError(f"scheduler {scheduler!r}: use one of {', '.join(SCHEDULERS)}")
    if launcher not in LAUNCHERS:
        raise SlurmError(f"launcher {launcher!r}: use one of {', '.join(LAUNCHERS)}")
    config = rfmconfig.site_configuration("slurm", 0, {}, nvcc)  # its environments and logging
    system = config["systems"][0]
    system["descr"] = "GPU nodes under acceptance test, through Slurm (generated from the inventory)"
    system["partitions"] = []
    for p in parts:
        extras = {
            "node_type": p.node_type,
            "reference_dir": str(reference_dir),
            **({"gpu_count": p.gpu_count} if p.gpu_count is not None else {}),
            "facts_file": "",
            **build,
        }
        part: dict[str, Any] = {
            "name": p.node_type,
            "descr": f"{p.node_type} on Slurm partition {p.slurm_partition}"
            + (f", reservation {p.reservation}" if p.reservation else "")
            + f" ({len(p.hosts)} nodes in the inventory)",
            "scheduler": scheduler,
            "launcher": launcher,
            "access": p.access_options,
            "environs": ["builtin"],
            "max_jobs": max_jobs,
            "features": (["gpu"] if p.gpu_count else []) + (["mpi"] if mpi else []),
            "extras": extras,
        }
        if p.gpu_count:
            part["devices"] = [{"type": "gpu", "num_devices": p.gpu_count}]
        system["partitions"].append(part)
    return config


def write_config(config: dict[str, Any], path: str | Path, source: str) -> Path:
    text = (
        f"# ReFrame configuration generated by `gpuaccept slurm-config` from {source}: do not edit, regenerate.\n"
        f"site_configuration = {pprint.pformat(config, width=110, sort_dicts=False)}\n"
    )
    compile(text, str(path), "exec")
    return write_text_atomic(path, text)


def testcase_nodes(tc: dict[str, Any]) -> list[str]:
    """The nodes a test case ran on: ReFrame's ``$nid`` parameter of a ``--distribute`` run (``%.nid=<node>``
    in the display name), else the job's node list (a multi-node check: every node it spanned)."""
    m = re.search(r"%\.nid=(\S+)", tc.get("display_name") or "")
    if m:
        return [m.group(1)]
    return [n for n in (tc.get("job_nodelist") or []) if n and n != "None"]


def split_report(report: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """ReFrame's report of a ``--distribute`` run, split into one report per node (each keeps the session info
    and only that node's test cases; a multi-node test case goes to each of its nodes). Test cases that name no
    node (a job that never started, a scheduler backend that does not record node lists) are returned by name
    so that the caller can say so."""
    per_node: dict[str, dict[str, Any]] = {}
    orphans: list[str] = []
    for run in report.get("runs", []):
        for tc in run.get("testcases", []):
            if tc.get("fixture"):
                continue
            nodes = testcase_nodes(tc)
            if not nodes:
                orphans.append(tc.get("unique_name") or tc.get("name") or "?")
            for node in nodes:
                doc = per_node.setdefault(node, {**report, "runs": []})
                if not doc["runs"] or doc["runs"][-1].get("runid") != run.get("runid"):
                    doc["runs"].append({**run, "testcases": []})
                doc["runs"][-1]["testcases"].append(tc)
    return per_node, orphans


#: Every drain reason gpuaccept writes starts with this; a drained node whose reason does not is someone else's.
REASON_PREFIX = "gpuaccept:"
HEALTH_CHECK = "health-check"


def _scontrol(argv: list[str]) -> str:
    try:
        res = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SlurmError(f"{' '.join(argv)}: {err}") from None
    if res.returncode != 0:
        raise SlurmError(f"{' '.join(argv)} failed ({res.returncode}): {(res.stderr or res.stdout).strip()}")
    return res.stdout


def drain(node: str, reason: str, dry_run: bool = False) -> list[str]:
    """Drain a node with the reason (scontrol); returns the command. Slurm keeps reasons short: 100 chars here."""
    argv = ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason[:100]}"]
    if not dry_run:
        _scontrol(argv)
    return argv


def node_state(node: str) -> tuple[set[str], str]:
    """(the node's state flags, upper case: {"IDLE", "DRAIN"}, and its reason without Slurm's "[user@time]")."""
    text = _scontrol(["scontrol", "show", "node", node])
    state = re.search(r"\bState=(\S+)", text)
    reason = re.search(r"\bReason=(.*?)(?: \[[^\]]*@[^\]]*\])?\s*$", text, re.MULTILINE)
    flags = set(re.split(r"[+*]", state.group(1).upper())) - {""} if state else set()
    return flags, reason.group(1).strip() if reason else ""


def apply_health(node: str, problem: str | None, source: str, dry_run: bool = False) -> str:
    """The one rule for what gpuaccept does to a node in Slurm after judging it: a problem drains the node with
    ``gpuaccept: <source>: <problem>``; a node that gpuaccept drained and that is healthy again is resumed; a
    node drained for another reason (by anyone else) is never touched. ``source`` is ``health-check`` for the
    passive check, which resumes only what a health check drained (a node a suite rejected waits for a suite that
    accepts it), or a suite's name, whose acceptance resumes any gpuaccept drain. Returns what was done, in words."""
    flags, reason = node_state(node)
    drained = bool(flags & {"DRAIN", "DRAINED", "DRAINING"})
    if drained and not reason.startswith(REASON_PREFIX):
        return f"left alone: drained by someone else ({reason or 'no reason'})"
    if problem is not None:
        if drained:
            return f"already drained by gpuaccept: {reason}"
        text = f"{REASON_PREFIX} {source}: {problem}"[:100]
        drain(node, text, dry_run)
        return f"drained: {text}"
    if not drained:
        return "in service"
    if source == HEALTH_CHECK and not reason.startswith(f"{REASON_PREFIX} {HEALTH_CHECK}:"):
        return f"left drained: a suite drained it ({reason}); a suite that accepts it resumes it"
    if not dry_run:
        _scontrol(["scontrol", "update", f"NodeName={node}", "State=RESUME"])
    return f"resumed (drained by gpuaccept: {reason})"


def judge(
    report: dict[str, Any],
    parts: list[Partition],
    results_dir: str | Path,
    run_id: str,
    suite: str,
    reference_dir: str | Path,
) -> list[verdict.Verdict]:
    """One verdict per inventory node from a distributed run, written as the suite role writes a node's run:
    ``<results_dir>/<node>/<run_id>/`` with the node's share of ReFrame's report, verdict.json and
    gpuaccept.prom. The node's facts must already be there (node-facts.json, from ``gpuaccept facts`` run on
    the node through srun); a node without them, or without a single job in the run, is rejected with the
    reason."""
    check_name(run_id, "run id")  # a directory name under each node's results, never a path
    for p in parts:
        for node in p.hosts:
            check_name(node, "node")
    per_node, orphans = split_report(report)
    known = {h for p in parts for h in p.hosts}
    strangers = sorted(set(per_node) - known)
    if strangers:
        raise SlurmError(f"the report has jobs on {', '.join(strangers)}, which the inventory does not list")
    out = []
    for p in parts:
        for node in p.hosts:
            run_dir = Path(results_dir) / node / run_id
            run_dir.mkdir(parents=True, exist_ok=True)
            mine = per_node.get(node)
            report_error = None
            if mine is None:
                report_error = (
                    f"no job of this run ran on {node} (down, drained, or outside Slurm partition "
                    f"{p.slurm_partition}{' / reservation ' + p.reservation if p.reservation else ''})"
                    + (f"; test cases without a node: {', '.join(orphans)}" if orphans else "")
                )
            else:
                write_text_atomic(run_dir / REPORT_FILE, json.dumps(mine, indent=2) + "\n")
            manifest.write(run_dir)  # the node's files (its documents are in the work directory's manifest)
            # The one judge, as for a node's own run: its facts (gathered on the node through srun; missing
            # facts are a failed input row naming the file), its share of the report, its node type.
            result, _written = summarize.judge_run_dir(
                run_dir, None, reference_dir, p.node_type, suite, expected_gpus=p.gpu_count,
                report_error=report_error, node=node,
            )  # fmt: skip
            out.append(result)
    return out


def drain_reason(result: verdict.Verdict, run_id: str) -> str:
    """What a rejected node's drain reason says after ``gpuaccept: <suite>:`` (apply_health adds them)."""
    return f"{','.join(result.failed_checks()) or 'node'} failed ({run_id})"


def announce(judged: list[verdict.Verdict], run_id: str, pushgateway_url: str | None, drain_rejected: bool) -> None:
    """After a Slurm run is judged (``gpuaccept run --slurm-inventory``, ``gpuaccept slurm-judge``): each node's
    verdict line and file, its push to the Pushgateway, and the drain of a rejected node, as asked."""
    for r in judged:
        print(f"{verdict.headline(r)}  -> {Path(r.run_dir) / VERDICT_FILE}")
        if pushgateway_url:
            from gpuaccept.judge import pushgateway  # noqa: PLC0415

            pushgateway.push(r, pushgateway_url, r.node)
            print(f"  pushed to {redact.url(pushgateway_url)}")
        if drain_rejected:
            print(f"  slurm: {apply_health(r.node, None if r.accepted else drain_reason(r, run_id), r.suite)}")


def load_inventory(path: str | Path) -> dict[str, Any]:
    """``ansible-inventory --list`` output: read from a .json file, or produced now from an inventory path with
    the ansible-inventory beside this Python (the tool environment) or on PATH."""
    path = Path(path)
    if not path.exists():
        raise SlurmError(f"{path}: no such inventory")
    if path.suffix == ".json":
        inventory = textinput.load_json(path, "the inventory JSON", SlurmError, object)
        if not isinstance(inventory, dict):
            raise SlurmError(f"{path}: not ansible-inventory --list JSON (a JSON {type(inventory).__name__}, "
                             "expected an object)")
        return inventory
    local = Path(sys.executable).parent / "ansible-inventory"
    tool = str(local) if local.exists() else (shutil.which("ansible-inventory") or "ansible-inventory")
    try:
        res = subprocess.run([tool, "-i", str(path), "--list"], capture_output=True, text=True, check=False)
    except OSError as err:
        raise SlurmError(f"cannot run ansible-inventory for {path}: {err}") from None
    if res.returncode != 0:
        raise SlurmError(f"ansible-inventory -i {path} --list failed: {res.stderr.strip()[-800:]}")
    return json.loads(res.stdout)
