"""A real ib_write_bw loopback over Soft-RoCE (the kernel's ``rdma_rxe``), read by the fabric probe and its parser,
where this machine can give one: root, the kernel's RDMA core with rdma_rxe, iproute2's ``rdma`` and perftest's
``ib_write_bw`` (Debian's iproute2, rdma-core, ibverbs-providers and perftest packages). It makes a veth pair,
binds an rxe device to one end, runs the loopback, reads the device through gpuaccept.probe.fabric from /sys, and
removes both.

Where any of these is missing the test skips, saying which. On the development machine of 2026-11-28 the kernel has
no RDMA core: ``rdma link show`` answers "Failed to open NETLINK_RDMA socket", and there is no ``/proc/modules``,
no ``/lib/modules`` and no ``modprobe``, so rdma_rxe cannot be loaded there and this test skips.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuaccept.probe import fabric, perftest

RXE, VETH, PEER = "gpuacceptrxe0", "gpafab0", "gpafab1"


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False,
                          env={**os.environ, "LC_ALL": "C"})  # fmt: skip


def _why_not() -> str | None:
    """Why Soft-RoCE cannot be used here, or None."""
    if os.geteuid() != 0:
        return "not root: creating a veth pair and an rxe device needs CAP_NET_ADMIN"
    for tool, package in (("ip", "iproute2"), ("rdma", "iproute2")):
        if not shutil.which(tool):
            return f"{tool} not installed (Debian's {package} package)"
    shown = _run("rdma", "link", "show")
    if shown.returncode != 0:
        return f"the kernel has no RDMA netlink (rdma link show: {(shown.stderr or shown.stdout).strip()[:200]})"
    if not Path("/sys/module/rdma_rxe").is_dir():
        if not shutil.which("modprobe"):
            return "rdma_rxe is not loaded and there is no modprobe to load it"
        loaded = _run("modprobe", "rdma_rxe")
        if loaded.returncode != 0:
            return f"modprobe rdma_rxe failed: {(loaded.stderr or loaded.stdout).strip()[:200]}"
    if not shutil.which("ib_write_bw"):
        return "ib_write_bw not installed (Debian's perftest package)"
    return None


def test_a_soft_roce_loopback_is_read_by_the_probe_and_the_parser():
    why = _why_not()
    if why:
        pytest.skip(f"Soft-RoCE cannot be used on this machine: {why}")
    try:
        for argv in (("ip", "link", "add", VETH, "type", "veth", "peer", "name", PEER),
                     ("ip", "link", "set", VETH, "up"), ("ip", "link", "set", PEER, "up"),
                     ("rdma", "link", "add", RXE, "type", "rxe", "netdev", VETH)):  # fmt: skip
            done = _run(*argv)
            assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr.strip()}"
        reading = fabric.read()
        hca = next(h for h in reading["hcas"] if h["name"] == RXE)
        port = hca["ports"][0]
        assert port["link_layer"] == "Ethernet" and port["netdev"] == VETH
        assert isinstance(port["carrier_changes"], int) and port["counters"] is not None
        server, client = perftest.command(RXE, 0, port["link_layer"], None, None, dmabuf=False, size=65536)
        run = perftest.run_one(server, client, timeout_s=60)
        assert run["error"] is None and run["gbps"] > 0, run
    finally:
        _run("rdma", "link", "delete", RXE)
        _run("ip", "link", "delete", VETH)
