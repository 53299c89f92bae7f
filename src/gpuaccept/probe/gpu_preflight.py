"""Is there a usable NVIDIA GPU and driver here? A probe of a few seconds that runs before anything slow, so that
a node without one stops at once with one line saying what is missing and what to do, instead of running the
host benchmarks for minutes and then rejecting the node.

Used by ``gpuaccept run`` (on the facts it gathered), by ``scripts/accept.sh`` and by the playbooks
(``playbooks/tasks/preflight.yml`` runs this file with the node's own python3: standard library only).

    python3 gpu_preflight.py [--node NAME] [--timeout-s S]

prints ``ok: N NVIDIA GPU(s) on NAME (driver D)`` and exits 0, or prints the one line of :func:`no_gpu_line`
and exits 3 (the node cannot be judged).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_NO_GPU = 0, 3
TIMEOUT_S = 15.0
DRIVER_VERSION_FILE = Path("/proc/driver/nvidia/version")
FIX = "install the driver with playbooks/provision.yml, or run on a GPU node"


def no_gpu_line(node: str, why: str) -> str:
    """The one line an operator reads when the node has no usable GPU or driver."""
    return f"no NVIDIA GPU/driver on {node}: {why}: {FIX}"


def probe(timeout_s: float = TIMEOUT_S, smi: str | None = None) -> tuple[int, str]:
    """(GPUs seen, what was seen or why none): ``nvidia-smi -L`` under a time limit (a hung driver must not hang
    the run), with the kernel module's presence named when nvidia-smi is missing."""
    smi = smi or shutil.which("nvidia-smi")
    if not smi:
        module = "the NVIDIA kernel module is loaded" if DRIVER_VERSION_FILE.exists() else "no NVIDIA kernel module"
        return 0, f"nvidia-smi not found ({module})"
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=timeout_s, check=False,
                             env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})  # fmt: skip
    except subprocess.TimeoutExpired:
        return 0, f"nvidia-smi -L did not answer within {timeout_s:g} s (a hung driver or GPU)"
    except OSError as err:
        return 0, f"nvidia-smi cannot run ({err.strerror})"
    gpus = [line for line in out.stdout.splitlines() if line.startswith("GPU ")]
    if out.returncode != 0:
        said = (out.stderr or out.stdout).strip().splitlines()
        return 0, f"nvidia-smi -L exited {out.returncode}" + (f" ({said[0]})" if said else "")
    if not gpus:
        return 0, "nvidia-smi -L lists no GPU"
    return len(gpus), f"{len(gpus)} NVIDIA GPU(s): {gpus[0]}" + (" ..." if len(gpus) > 1 else "")


def from_facts(facts: dict[str, Any]) -> str | None:
    """Why the node's facts (gpuaccept facts) show no usable GPU, or None when they show one."""
    if facts.get("gpus"):
        return None
    return str(facts.get("gpu_error") or "no NVIDIA GPU found")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="gpu_preflight", description="Is there a usable NVIDIA GPU and driver here?")
    ap.add_argument("--node", default=socket.gethostname().split(".")[0], help="the node's name in the message")
    ap.add_argument("--timeout-s", type=float, default=TIMEOUT_S, help="nvidia-smi's time limit (%(default)s s)")
    args = ap.parse_args(argv)
    count, said = probe(args.timeout_s)
    if not count:
        print(no_gpu_line(args.node, said))
        return EXIT_NO_GPU
    print(f"ok: {said} on {args.node}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
