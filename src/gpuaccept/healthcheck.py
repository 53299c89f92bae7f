"""``gpuaccept health-check``: the passive check a scheduler runs every few minutes (docs/checks/health.md, "The
passive health check"; docs/fleet.md, "The node's lifecycle in Slurm"). No load on the GPUs, seconds long:

1. read every GPU once (NVML, else ``nvidia-smi -q``; ``--from-smi-q`` reads a recorded output instead), with its
   PCIe link at idle, ECC and row remapping, NVLink links and counters, PCIe replay and AER counters, configuration,
   utilization and power; the kernel log's XID and SXID lines since the last check;
2. judge it (gpuaccept.judge.healthcheck_rules: the suite's health rules, the counters' growth since the last
   check, a hang);
3. print one line and exit as node-problem-detector's custom plugin contract expects (0 ok, 1 problem, 2 unknown),
   write the JSON record (atomically) and keep the state the next check compares against;
4. with ``--slurm``: drain the node on a problem, resume it when a health check had drained it and it is healthy
   again, never touch a node drained for another reason (gpuaccept.results.slurm.apply_health).

An XID whose catalogue action takes the node out of service (reset the GPU, reboot, hardware inspection, or an
XID the table does not list) stays a problem on later checks until the node has rebooted since it, or until an
operator who acted on it runs ``gpuaccept health-check --clear-xids``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gpuaccept import atomic, references, textinput
from gpuaccept.cli_common import default_reference_dir
from gpuaccept.judge import healthcheck_rules, xid_actions
from gpuaccept.probe import document, health
from gpuaccept.results import slurm

SCHEMA = "gpuaccept.health-check/1"
STATE_SCHEMA = "gpuaccept.health-check-state/1"
PASSIVE = {"ran": False, "passive": True, "error": None, "seconds": 0}
KEPT = ("index", "uuid", "pci_bus_id", "serial", "nvlink", "pcie_counters")


def observe(from_smi_q: str | None) -> tuple[dict[str, Any] | None, list[str]]:
    """One passive reading: NVML without a load, else ``nvidia-smi -q`` (or the recorded output given)."""
    why: list[str] = []
    if from_smi_q:
        try:
            text = Path(from_smi_q).read_text(encoding="utf-8", errors="replace")
        except OSError as err:
            return None, [f"--from-smi-q {from_smi_q}: {err.strerror}"]
        return {**health.observe_smi_q(text, None), "pcie_load": dict(PASSIVE)}, why
    try:
        return {**health.observe_nvml(0.0), "pcie_load": dict(PASSIVE)}, why
    except Exception as err:  # NVML raises its own types; ImportError/OSError without a driver
        why.append(f"NVML: {err}")
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None, [*why, "nvidia-smi: not found on PATH"]
    out = subprocess.run([smi, "-q"], capture_output=True, text=True, timeout=60, check=False,
                         env={**os.environ, "LC_ALL": "C"})  # fmt: skip
    if out.returncode != 0:
        return None, [*why, f"nvidia-smi -q exited {out.returncode}: {(out.stderr or out.stdout).strip()[:200]}"]
    return {**health.observe_smi_q(out.stdout, None), "pcie_load": dict(PASSIVE)}, why


def load_state(path: Path) -> dict[str, Any] | None:
    """The last check's state; None for the first check (or a state file that is not one: it is replaced)."""
    try:
        state = textinput.load_json(path, "the last check's state", ValueError)
    except ValueError:
        return None
    return state if state.get("schema") == STATE_SCHEMA else None


def kernel_events(since: float, boot: float, previous: dict[str, Any] | None, clear: bool) -> dict[str, Any]:
    """The kernel log's XID and SXID events since ``since``, with the XIDs still open from earlier checks (those
    whose catalogue action takes the node out of service, logged since the last boot, not cleared)."""
    log, how, why = health.read_kernel_log(since)
    if log is None:
        return {"read_with": None, "xid_events": None, "sxid_events": None, "unreadable": "; ".join(why),
                "fix": health.KERNEL_LOG_FIX, "since_unix": since}  # fmt: skip
    new = health.parse_xids(log, since, boot)
    still_open = [] if clear or previous is None else [
        e for e in previous.get("open_xids") or [] if e.get("time_unix") is None or e["time_unix"] >= boot
    ]  # fmt: skip
    def key(e: dict[str, Any]) -> tuple:
        return e.get("time_unix"), e.get("pci"), e.get("xid")

    seen = {key(e) for e in new}
    carried = [{**e, "carried": True} for e in still_open if key(e) not in seen]
    return {"read_with": how, "xid_events": carried + new, "sxid_events": health.parse_sxids(log, since, boot),
            "since_unix": since}  # fmt: skip


def build(args: argparse.Namespace, previous: dict[str, Any] | None, now: float) -> dict[str, Any]:
    """The observation document the judge reads (the health probe's form, passive)."""
    boot = health.boot_time()
    if previous is not None and isinstance(previous.get("checked_unix"), (int, float)):
        since = float(previous["checked_unix"])
    else:
        since = health.parse_since(args.first_since, now=now)
    obs, why = observe(args.from_smi_q)
    errors = [] if obs is not None else ["cannot read the GPUs (" + "; ".join(why) + ")"]
    gpus = (obs or {}).get("gpus") or []
    return {
        "tool": "gpuaccept-health-check",
        "devices": [{k: g.get(k) for k in ("index", "name", "pci_bus_id", "uuid", "serial")} for g in gpus],
        "results": {"observations": obs, "kernel_log": kernel_events(since, boot, previous, args.clear_xids)},
        "errors": errors,
        "boot_unix": boot,
    }


def next_state(doc: dict[str, Any], now: float) -> dict[str, Any]:
    """What the next check compares against: the counters read now and the XIDs that stay open."""
    obs = doc["results"]["observations"] or {}
    xids = doc["results"]["kernel_log"].get("xid_events") or []
    keep = [e for e in xids if e.get("action", xid_actions.UNKNOWN) not in xid_actions.WARN_ONLY]
    return {"schema": STATE_SCHEMA, "checked_unix": now, "boot_unix": doc["boot_unix"],
            "gpus": [{k: g.get(k) for k in KEPT} for g in obs.get("gpus") or []],
            "open_xids": [{k: e.get(k) for k in ("time_unix", "pci", "xid", "text", "action")}
                          for e in keep]}  # fmt: skip


def line(out: healthcheck_rules.Outcome, doc: dict[str, Any], node_type: str) -> str:
    """The one line node-problem-detector shows (its custom plugin's message)."""
    gpus = len(doc["devices"])
    if out.status == "problem":
        return f"gpuaccept health-check: PROBLEM: {healthcheck_rules.reason(out, 400)}"
    if out.status == "unknown":
        return f"gpuaccept health-check: UNKNOWN: {'; '.join(out.not_run)[:400]}"
    return f"gpuaccept health-check: OK: {gpus} GPUs healthy (node type {node_type})"


def run(args: argparse.Namespace) -> int:
    """``gpuaccept health-check`` (see the module); returns the exit status."""
    node_type = references.load_node_type(args.reference_dir, args.node_type)
    state_dir = Path(args.state_dir)
    state_path = state_dir / "state.json"
    output = Path(args.output) if args.output else state_dir / "health-check.json"
    atomic.make_dirs(state_dir)
    with atomic.locked(state_dir / "health-check.lock"):
        previous = load_state(state_path)
        now = round(time.time(), 3)
        doc = build(args, previous, now)
        state = next_state(doc, now) if doc["results"]["observations"] is not None else None
        out = healthcheck_rules.assess(doc, node_type, args.expected_gpus, previous, state or {"gpus": []})
        if state is not None:  # the actions the judge gave the XIDs decide which stay open
            state = next_state(doc, now)
            atomic.write_text_atomic(state_path, json.dumps(state, indent=1) + "\n")
    text = line(out, doc, node_type.name)
    record = {
        "schema": SCHEMA, "node": args.slurm_node or socket.gethostname().split(".")[0], "node_type": node_type.name,
        "checked_utc": document.utc_iso(now), "status": out.status, "exit_status": out.exit_status, "line": text,
        "findings": [f.record() for f in out.findings], "warnings": out.warnings, "not_run": out.not_run,
        "sxid": out.sxid,
        "xid_catalogue": xid_actions.source_line(), "slurm": None, "observations": doc,
    }  # fmt: skip
    if args.slurm:
        record["slurm"] = slurm_step(record["node"], out)
        print(f"slurm: {record['slurm']}", file=sys.stderr)
    atomic.write_text_atomic(output, document.dumps(record, indent=1))
    print(text)
    return out.exit_status


def slurm_step(node: str, out: healthcheck_rules.Outcome) -> str:
    """Drain, resume or leave the node (gpuaccept.results.slurm.apply_health); an unknown outcome changes nothing."""
    if out.status == "unknown":
        return "unchanged: the check could not look (" + "; ".join(out.not_run)[:200] + ")"
    problem = healthcheck_rules.reason(out, 80) if out.status == "problem" else None
    try:
        return slurm.apply_health(node, problem, slurm.HEALTH_CHECK)
    except slurm.SlurmError as err:
        return f"failed: {err}"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept health-check` (gpuaccept.cli_common says how subcommands are added)."""
    sp = sub.add_parser(
        "health-check",
        help="the passive health check a scheduler runs every few minutes (no GPU load): one line, exit 0 ok, "
        "1 problem, 2 unknown (node-problem-detector's contract); --slurm drains and resumes the node",
    )
    sp.add_argument("--reference-dir", default=default_reference_dir(), help="reference files (default: %(default)s)")
    sp.add_argument("--node-type", required=True, help="the node type whose health expectations apply")
    sp.add_argument("--expected-gpus", type=int, help="GPUs the inventory says this node has")
    sp.add_argument("--state-dir", default="/var/lib/gpuaccept/health-check",
                    help="where the last check's counters and open XIDs are kept (default: %(default)s)")
    sp.add_argument("--output", help="the JSON record (default: STATE_DIR/health-check.json), written atomically")
    sp.add_argument("--first-since", default="boot",
                    help="XIDs looked at by the first check: since boot (default), 24h, ... (later: since the last)")
    sp.add_argument("--clear-xids", action="store_true",
                    help="forget the XIDs kept open (after the GPU reset or the repair their action asked for)")
    sp.add_argument("--slurm", action="store_true",
                    help="drain the node on a problem, resume it when a health check drained it and it is healthy")
    sp.add_argument("--slurm-node", default=os.environ.get("SLURMD_NODENAME"),
                    help="the Slurm node name (default: $SLURMD_NODENAME, else the short host name)")
    sp.add_argument("--from-smi-q", help="judge a recorded `nvidia-smi -q` output instead of reading the GPUs")
    sp.set_defaults(func=run)
