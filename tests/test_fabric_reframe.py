"""The fabric check through real ReFrame and the judge, on this machine (no HCA, no GPU), reading sysfs trees that
tests/test_fabric.py builds by the kernel's documented layout (not real hardware): a node type that expects 8 NDR
ports fails a node whose port is in Polling, naming it; a node type that judges the fabric only where there is one
sees a node without an HCA as NOT RUN, which rejects nothing (the check is optional)."""

from __future__ import annotations

from pathlib import Path

from rfm_support import run_reframe
from test_fabric import PEERMEM, make_node, make_port

from gpuaccept import rfmconfig
from gpuaccept.judge import verdict

REF = """\
schema: gpuaccept.references/1
node_type: ci_fabric
description: CI host read through a built sysfs tree (synthetic test references)
match: {{gpu_model: NVIDIA Test GPU, gpu_count: 0}}
sources:
  synthetic: {{kind: synthetic, date: 2026-11-28, reference: "tests/test_fabric_reframe.py: plumbing test"}}
{fabric}checks:
  fabric:
    ports_active: {{informational: plumbing test, unit: count, source: synthetic}}
"""
NDR = "fabric: {ports: 8, link_layer: InfiniBand, rate_gbps: 400, width: 4X, source: synthetic}\n"
FACTS = {"hostname": "ci", "gpus": []}


def reframe_run(tmp_path: Path, sysfs: Path, fabric: str) -> dict:
    refs = tmp_path / "refs"
    refs.mkdir(parents=True)
    (refs / "ci_fabric.yaml").write_text(REF.format(fabric=fabric))
    modules = tmp_path / "modules"
    modules.write_text(PEERMEM)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    extras = {"node_type": "ci_fabric", "reference_dir": str(refs), "facts_file": "", "cuda_arch": "",
              "git_revision": "test", "blas": "none"}  # fmt: skip
    config = run_dir / "settings.py"
    config.write_text(rfmconfig.text("localhost", "ci_fabric", 0, extras, "nvcc", "tests/test_fabric_reframe.py"))
    opts = f"--sysfs,{sysfs},--proc-modules,{modules},--no-ib-write-bw"
    proc = run_reframe(config, run_dir, "commission", "-n", "^FabricHealth$", "-S", f"FabricHealth.bench_opts={opts}")
    report = verdict.load_report(run_dir / "reframe-report.json")
    v = verdict.build(report, FACTS, refs, "ci_fabric", "commission", run_dir=run_dir)
    rows = {(r.check, r.metric): r for r in v.rows}
    assert ("fabric", None) in rows, proc.stdout[-3000:] + proc.stderr[-3000:]
    return rows


def test_through_reframe_a_port_in_polling_fails_and_no_hca_is_not_run(tmp_path):
    root = make_node(tmp_path / "sys")
    make_port(root / "class" / "infiniband" / "mlx5_ib2", 1, state="1: DOWN", phys="2: Polling")
    row = reframe_run(tmp_path / "a", root, NDR)[("fabric", None)]
    assert row.status == "fail" and row.expected
    assert "mlx5_ib2 port 1: physical state Polling: the link to the switch is lost" in row.reason

    row = reframe_run(tmp_path / "b", tmp_path / "no-sys", "")[("fabric", None)]
    assert row.status == "not_run" and not row.expected
    assert "no fabric to look at: no " in row.reason and "class/infiniband" in row.reason
