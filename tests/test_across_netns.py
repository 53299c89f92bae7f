"""The mpirun launcher of ``gpuaccept across`` for real, across two "hosts" that are network namespaces on this
machine: Open MPI (Debian's 4.1) starts its daemons through an rsh agent (``--mca plm_rsh_agent``) that runs each in
its namespace, in a UTS namespace of its own named after the host, so no sshd is needed. The namespaces hang off a
bridge in this namespace (10.77.x.254), where mpirun listens for its daemons.

What it proves: the command line gpuaccept.across_launch builds (hostfile, slots, rank order) reaches both hosts,
each rank sees its own host name and address, and gpuaccept-mpi's ping-pong (reframe_checks/src, ``make mpi``) runs
between them over TCP with every message verified. Needs root (namespaces, links) and mpirun; skipped otherwise,
saying which is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT

from gpuaccept import across_launch

HOSTS = ("n1", "n2")
AGENT = textwrap.dedent("""\
    #!/bin/sh
    # Open MPI's rsh agent: "agent HOST COMMAND..." runs COMMAND in namespace {prefix}HOST with hostname HOST.
    host=$1; shift
    exec ip netns exec "{prefix}$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
""")
# The stand-in for gpuaccept-nccl: each rank writes its host name, address and rank beside the document's path.
WHOAMI = textwrap.dedent("""\
    #!/bin/sh
    args="$*" out=""
    while [ $# -gt 0 ]; do [ "$1" = --output ] && out=$2; shift; done
    addr=$(ip -4 -o addr show eth0 | awk '{print $4}')
    echo "$(hostname) $addr $GPUACCEPT_BOOTSTRAP $args" > "$out.rank$OMPI_COMM_WORLD_RANK"
""")
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def namespaces(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root (ip netns add): run the tests as root")
    for tool in ("ip", "mpirun", "unshare"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} not found: Debian's iproute2, openmpi-bin and util-linux provide them")
    tag = str(os.getpid() % 100000)
    prefix, bridge, subnet = f"gpa{tag}", f"gpabr{tag}", f"10.77.{os.getpid() % 250}"
    try:
        _ip("link", "add", bridge, "type", "bridge")
    except subprocess.CalledProcessError as err:
        pytest.skip(f"cannot create a bridge here ({err.stderr.strip()}): no network namespaces test")
    try:
        _ip("addr", "add", f"{subnet}.254/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for i, host in enumerate(HOSTS, 1):
            ns, veth = f"{prefix}{host}", f"gpav{tag}{host}"
            _ip("netns", "add", ns)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("link", "set", veth, "master", bridge, "up")
            _ip("-n", ns, "addr", "add", f"{subnet}.{i}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        work = tmp_path_factory.mktemp("netns")
        agent = work / "agent.sh"
        agent.write_text(AGENT.format(prefix=prefix))
        agent.chmod(0o755)
        mca = ["--mca", "plm_rsh_agent", str(agent), "--mca", "oob_tcp_if_include", f"{subnet}.0/24",
               "--mca", "btl_tcp_if_include", f"{subnet}.0/24", "--mca", "btl", "self,tcp"]  # fmt: skip
        yield work, subnet, mca
    finally:
        for host in HOSTS:
            subprocess.run(["ip", "netns", "del", f"{prefix}{host}"], check=False, capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], check=False, capture_output=True)


def _launch(launch: across_launch.Launch, timeout: int = 60) -> subprocess.CompletedProcess:
    for name, text in launch.files.items():
        Path(name).write_text(text)
    return subprocess.run(launch.argv, env={**os.environ, **ROOT_ENV, **launch.env}, capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip


def test_mpirun_launch_reaches_both_namespaces(namespaces):
    work, subnet, mca = namespaces
    tool = work / "whoami.sh"
    tool.write_text(WHOAMI)
    tool.chmod(0o755)
    out = work / "001-quick.json"
    launch = across_launch.build("mpirun", [HOSTS], str(tool), out, work, ranks_per_node=2, launcher_args=mca)
    res = _launch(launch)
    assert res.returncode == 0, res.stderr
    seen = [(work / f"{out.name}.rank{r}").read_text().split() for r in range(4)]
    # ranks 0-1 on n1, 2-3 on n2 (the hostfile's order and slots), each with its namespace's own name and address
    assert [s[0] for s in seen] == ["n1", "n1", "n2", "n2"]
    assert [s[1] for s in seen] == [f"{subnet}.1/24"] * 2 + [f"{subnet}.2/24"] * 2
    # every rank is told where rank 0 listens (mpirun -x), and gets the tool's arguments
    assert {s[2] for s in seen} == {f"n1:{across_launch.BOOTSTRAP_PORT}"}
    assert all("groups:0-3" in s and "--multi-process" in s for s in seen)


def test_mpi_ping_pong_between_the_namespaces(namespaces):
    work, _subnet, mca = namespaces
    build = work / "build"
    make = subprocess.run(["make", "-s", "-C", str(ROOT / "reframe_checks" / "src"), "mpi", f"BUILD_DIR={build}"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if make.returncode != 0:
        pytest.skip(f"gpuaccept-mpi does not build here (mpicxx): {make.stderr.strip()[-300:]}")
    doc_path = work / "mpi.json"
    argv = ["mpirun", "--host", ",".join(HOSTS), "-np", "2", *mca, str(build / "gpuaccept-mpi"), "--output",
            str(doc_path), "--samples", "3", "--lat-iters", "50", "--window", "4", "--size", "65536"]  # fmt: skip
    res = subprocess.run(argv, env={**os.environ, **ROOT_ENV}, capture_output=True, text=True, timeout=120,
                         check=False)  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(doc_path.read_text())
    assert doc["results"]["rank_hosts"] == list(HOSTS)
    assert doc["verification"]["passed"] and doc["results"]["host_pairs"][0]["checked"] > 0
    assert doc["metrics"]["host_bw_min"]["value"] > 0
