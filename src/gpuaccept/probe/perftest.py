"""``ib_write_bw`` (perftest) as a loopback on each HCA, and a reader of its output (docs/checks/fabric.md).

The command is the one Azure's HPC health checks (Azure/azurehpc-health-checks, ``azure_ib_write_bw_gdr.nhc``) run
per HCA: a server and a client of ``ib_write_bw -s 8388608 -x 0 -F --report_gbits --perform_warm_up
--use_cuda=<gpu> -d <hca>`` on the same HCA, each under ``numactl`` on the HCA's NUMA node, on TCP port 18510 + the
HCA's index. Differences, each recorded in the run's entry: the HCAs are measured one at a time (Azure runs all at
once); ``-x 0`` (GID index 0) is given on InfiniBand ports only (a RoCE port's GID index is perftest's choice); GPU
memory (``--use_cuda``) where this perftest was built with CUDA (its ``--help`` lists the option), host memory
otherwise; ``--use_cuda_dmabuf`` where no peer-memory module is loaded (GPUDirect through DMA-BUF). The HCA's GPU
is the one of the same index, as Azure pairs them.

With ``--report_gbits`` perftest ends with a table whose header names the unit::

     #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
     8388608    5000             392.38             392.34             0.005847

:func:`parse_bw` reads it (a line perftest prints between the header and the row, such as its CPU frequency
warning, is passed over); the figure judged is the average.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from typing import Any

TOOL = "ib_write_bw"
MESSAGE_BYTES = 8388608
BASE_PORT = 18510
SERVER_START_S = 2.0
TIMEOUT_S = 120.0
_HEADER_RE = re.compile(r"#bytes\s+#iterations\s+BW peak\[(?P<unit>[^\]]+)\]\s+BW average\[[^\]]+\]")
_ROW_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s*$")
_FIELD_RE = re.compile(r"^\s*([A-Za-z][A-Za-z .*/]+?)\s*:\s*(\S[^\t]*?)\s*(?:\t|$)")


def parse_bw(text: str) -> dict[str, Any]:
    """perftest's bandwidth output -> ``{"unit", "rows": [{"bytes", "iterations", "bw_peak", "bw_average",
    "msg_rate_mpps"}], "fields": {"Device": ..., "Link type": ...}, "error"}``; ``error`` set (and no rows) where
    the output has no result table."""
    unit, rows, fields = None, [], {}
    for line in text.splitlines():
        if m := _HEADER_RE.search(line):
            unit = m.group("unit")
            continue
        if unit is None:
            for part in line.split("\t"):
                if f := _FIELD_RE.match(part):
                    fields.setdefault(f.group(1).strip(), f.group(2).strip())
            continue
        if r := _ROW_RE.match(line):
            rows.append({"bytes": int(r.group(1)), "iterations": int(r.group(2)), "bw_peak": float(r.group(3)),
                         "bw_average": float(r.group(4)), "msg_rate_mpps": float(r.group(5))})  # fmt: skip
    error = None
    if unit is None:
        tail = " | ".join(line.strip() for line in text.strip().splitlines()[-3:]) or "no output"
        error = f"no result table in {TOOL}'s output ({tail[:300]})"
    elif not rows:
        error = f"{TOOL} printed its table header but no result row"
    return {"unit": unit, "rows": rows, "fields": fields, "error": error}


def gbps(parsed: dict[str, Any]) -> float | None:
    """The average bandwidth of the largest message size in Gb/s (None where the unit is not Gb/sec)."""
    if parsed.get("error") or parsed.get("unit") != "Gb/sec" or not parsed.get("rows"):
        return None
    return max(parsed["rows"], key=lambda r: r["bytes"])["bw_average"]


def cuda_capable(exe: str) -> bool:
    """Whether this ib_write_bw was built with CUDA: its ``--help`` lists ``--use_cuda``."""
    try:
        out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=20, check=False,
                             env={**os.environ, "LC_ALL": "C"})  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--use_cuda" in out.stdout + out.stderr


def command(
    hca: str, index: int, link_layer: str | None, numa_node: int | None, gpu: int | None, dmabuf: bool,
    size: int = MESSAGE_BYTES, exe: str = TOOL, numactl: str | None = None,
) -> tuple[list[str], list[str]]:
    """The server's and the client's command lines for one HCA's loopback (the module's docstring)."""
    args = [exe, "-p", str(BASE_PORT + index), "-s", str(size)]
    if link_layer == "InfiniBand":
        args += ["-x", "0"]
    args += ["-F", "--report_gbits", "--perform_warm_up"]
    if gpu is not None:
        args.append(f"--use_cuda={gpu}")
        if dmabuf:
            args.append("--use_cuda_dmabuf")
    args += ["-d", hca]
    if numactl and numa_node is not None and numa_node >= 0:
        args = [numactl, "-N", str(numa_node), "-m", str(numa_node), *args]
    return args, [*args, "127.0.0.1"]


def _stop(proc: subprocess.Popen) -> str:
    """The server's output; it is ended (it is this module's own child) when it did not exit by itself."""
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


def run_one(server: list[str], client: list[str], timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    """Runs one loopback: the server, then the client against it; the client's output parsed."""
    env = {**os.environ, "LC_ALL": "C"}
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(server, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    except OSError as err:
        return {"error": f"{server[0]}: {err.strerror or err}", "gbps": None}
    time.sleep(SERVER_START_S)
    try:
        out = subprocess.run(client, capture_output=True, text=True, timeout=timeout_s, check=False, env=env)
        text, rc = out.stdout + out.stderr, out.returncode
    except subprocess.TimeoutExpired:
        text, rc = f"the client did not finish within {timeout_s:g} s", None
    server_out = _stop(proc)
    parsed = parse_bw(text)
    error = parsed["error"] or (f"{TOOL} exited {rc}" if rc not in (0, None) else None)
    if not error and gbps(parsed) is None:
        error = f"{TOOL} reported {parsed['unit']}, not Gb/sec (--report_gbits)"
    if error and server_out.strip():
        error += f"; server: {' | '.join(server_out.strip().splitlines()[-2:])[:300]}"
    return {"gbps": None if error else gbps(parsed), "error": error, "rows": parsed["rows"],
            "link_type": parsed["fields"].get("Link type"), "seconds": round(time.monotonic() - t0, 1)}  # fmt: skip


def run_all(reading: dict[str, Any], gpus: int, size: int = MESSAGE_BYTES, exe: str | None = None) -> dict[str, Any]:
    """Every HCA's loopback (its first port's link layer decides ``-x 0``): ``{"available", "why", "memory",
    "runs": [{"hca", "gpu", "memory", "server", "client", "gbps", "error", ...}]}``. ``gpus``: the node's GPU
    count (0: host memory)."""
    exe = exe or shutil.which(TOOL)
    if not exe:
        return {"available": False, "why": f"{TOOL} not found on PATH (Debian's perftest package)", "runs": []}
    cuda = cuda_capable(exe)
    peermem = bool((reading.get("gpudirect") or {}).get("peermem"))
    runs = []
    for i, hca in enumerate(reading.get("hcas") or []):
        first = (hca.get("ports") or [{}])[0]
        gpu = i % gpus if cuda and gpus else None
        memory = f"GPU {gpu} ({'peer memory' if peermem else 'DMA-BUF'})" if gpu is not None else (
            "host (this perftest has no CUDA)" if gpus else "host (no GPU)")  # fmt: skip
        server, client = command(hca["name"], i, first.get("link_layer"), hca.get("numa_node"), gpu,
                                 dmabuf=gpu is not None and not peermem, size=size, exe=exe,
                                 numactl=shutil.which("numactl"))  # fmt: skip
        runs.append({"hca": hca["name"], "gpu": gpu, "memory": memory, "server": server, "client": client,
                     **run_one(server, client)})  # fmt: skip
    return {"available": True, "why": None, "cuda": cuda, "runs": runs}
