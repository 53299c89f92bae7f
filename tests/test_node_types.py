"""Two-layer references (issue 16): per-GPU figures keyed by GPU SKU, node-level figures per node type. An
8-GPU HGX H100 is judged from recorded 1-GPU documents replicated per GPU; a node of a known SKU and a GPU count
with no node type file gets per-GPU verdicts and NOT RUN node rows."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import (
    H100_ACCEPTED_ALL,
    H100_COMMISSION,
    H100_DEGRADED,
    NODE_TYPE_EXISTS,
    RECORDED,
    REFERENCE_DIR,
    ROOT,
)

from gpuaccept import metric_table, references
from gpuaccept.checks import CHECKS
from gpuaccept.cli import main
from gpuaccept.judge import health_rules, verdict
from gpuaccept.references import ReferenceError
from gpuaccept.results import slurm

H200_FACTS = RECORDED / "2026-11-22-h200-hpl" / "node-facts.json"
SHIPPED = {f"{sku}{suffix}" for sku in ("h100_sxm5_80gb", "h200") for suffix in ("", "_x2", "_x4", "_x8")}


def replica(g: dict, i: int) -> dict:
    """GPU ``g`` as the ``i``-th of identical GPUs: its own index, bus id, serial and UUID (a test input)."""
    return {**g, "index": i, "pci_bus_id": f"00000000:{0x10 + i:02X}:00.0",
            **{key: f"{g[key]}-{i}" for key in ("serial", "uuid") if g.get(key)}}  # fmt: skip


def node_facts(path=H100_ACCEPTED_ALL / "node-facts.json", count=None, **gpu):
    facts = json.loads(path.read_text())
    first = dict(facts["gpus"][0], **gpu)
    facts["gpus"] = [replica(first, i) for i in range(count or len(facts["gpus"]))]
    return facts


def test_shipped_node_types_name_their_sku_and_count():
    loaded = {t.name: t for t in references.load_all(REFERENCE_DIR)}
    assert set(loaded) >= SHIPPED | {"a100_sxm4_80gb"}
    for name in SHIPPED:
        t = loaded[name]
        assert t.sku is not None and t.gpu_count == (int(name.rsplit("_x", 1)[1]) if "_x" in name else 1)
        assert t.node_layer_missing is None
        for check, refs in t.checks.items():
            for ref in refs.values():
                # A figure sits in the file of its layer: per-GPU in gpus/<sku>.yaml, node-level in the node type's.
                home = t.sku.path if ref.layer == metric_table.GPU else t.path
                assert ref.where.startswith(f"{home}:"), (check, ref.metric, ref.where)
    # The multi-GPU types share the measured per-GPU layer and add node-level figures that are public, not
    # measured; their 1-GPU figures ("waived: one GPU") are not carried over.
    one, eight = loaded["h100_sxm5_80gb"], loaded["h100_sxm5_80gb_x8"]
    assert one.metric("gemm", "fp64_tflops_min") == eight.metric("gemm", "fp64_tflops_min")
    node_refs = [r for refs in eight.checks.values() for r in refs.values() if r.layer == "node"]
    assert {r.source_kind for r in node_refs} == {"public", "datasheet"}
    # The datasheet is cited only by the fractions of its peak, which are reported, not judged.
    assert all(r.metric.endswith("_peak_fraction") and not r.judged for r in node_refs if r.source_kind == "datasheet")
    assert "not measured" in eight.description
    allreduce = eight.metric("nccl", "allreduce_busbw_gbps_max")
    assert allreduce.judged and allreduce.unit == "GB/s" and allreduce.lower <= references.MAX_TOLERANCE
    # Waived on 1-GPU types: no collective without a peer (informational, with the reason).
    waived = {r.informational for r in one.checks["nccl"].values()}
    assert waived == {"waived: one GPU: a collective needs two or more GPUs"}
    assert eight.extra["health"]["nvlink_links_up"] == 18


def test_per_gpu_values_were_moved_not_changed():
    # The shipped per-GPU figures are exactly those of the measured 1-GPU files (git: 94edb4d), now in gpus/.
    for sku in ("h100_sxm5_80gb", "h200"):
        sku_file = yaml.safe_load((REFERENCE_DIR / "gpus" / f"{sku}.yaml").read_text())
        node_file = yaml.safe_load((REFERENCE_DIR / f"{sku}.yaml").read_text())
        for check, metrics in sku_file["checks"].items():
            for name, entry in metrics.items():
                assert entry["source"] in sku_file["sources"]
                assert name not in (node_file["checks"].get(check) or {}), (check, name)
        assert sku_file["sources"]["nvidia-" + sku.split("_")[0] + "-datasheet"]["kind"] == "datasheet"


def test_detection_picks_the_sku_from_nvml():
    h100 = node_facts()
    assert references.detect_sku(REFERENCE_DIR, h100).name == "h100_sxm5_80gb"  # by name: no device id recorded
    with_id = node_facts(pci_device_id="0x233010DE")
    assert references.detect(REFERENCE_DIR, with_id).name == "h100_sxm5_80gb"
    for count, name in ((2, "h100_sxm5_80gb_x2"), (4, "h100_sxm5_80gb_x4"), (8, "h100_sxm5_80gb_x8")):
        assert references.detect(REFERENCE_DIR, node_facts(count=count, pci_device_id="0x233010DE")).name == name
    assert references.detect(REFERENCE_DIR, node_facts(H200_FACTS)).name == "h200"
    assert references.detect(REFERENCE_DIR, node_facts(H200_FACTS, count=8)).name == "h200_x8"
    # The PCI device id decides where NVML gives one: an H100 PCIe (0x2331) that called itself an SXM5 is not one.
    with pytest.raises(ReferenceError, match=r"PCI device id 0x233110DE\) is of no known GPU SKU"):
        references.detect(REFERENCE_DIR, node_facts(pci_device_id="0x233110DE"))


def test_a_known_sku_with_an_unknown_count_gets_the_per_gpu_layer_only():
    t = references.detect(REFERENCE_DIR, node_facts(count=3))
    assert t.name == "h100_sxm5_80gb_x3" and t.gpu_count == 3
    assert t.node_layer_missing.startswith("no node-level reference: run gpuaccept baseline")
    assert "reference_values/h100_sxm5_80gb_x3.yaml (gpu: h100_sxm5_80gb, gpu_count: 3" in t.node_layer_missing
    assert {r.layer for refs in t.checks.values() for r in refs.values()} == {"gpu"}
    # Health is judged per GPU from the SKU's expectations; NVLink links are the node type's (not checked here).
    expect = health_rules.expectations(t)
    assert expect["driver_versions"] == ["580"] and expect["ecc"] is True and expect["nvlink_links_up"] == 0
    # The name is understood again later (summarize --node-type), and a SKU nobody knows is still an error.
    assert references.load_node_type(REFERENCE_DIR, "h100_sxm5_80gb_x3").node_layer_missing == t.node_layer_missing
    with pytest.raises(ReferenceError, match="unknown node type 'b300_x3'"):
        references.load_node_type(REFERENCE_DIR, "b300_x3")


def replicated_run(tmp: Path, count: int) -> Path:
    """The accepted 1-GPU commission run as ``count`` identical GPUs would leave it (a test input built from the
    recorded one, never evidence): every document's one device listed ``count`` times, and the health probe's
    one GPU observed ``count`` times on its own bus, with the NVLink links an HGX board has (18 per GPU)."""
    run = tmp / H100_ACCEPTED_ALL.name
    shutil.copytree(H100_ACCEPTED_ALL, run)
    for path in (run / "reframe").rglob("*.json"):
        doc = json.loads(path.read_text())
        if not isinstance(doc, dict) or doc.get("schema") != "gpuaccept.bench/1":
            continue
        if len(doc.get("devices") or []) == 1:
            doc["devices"] = [replica(doc["devices"][0], i) for i in range(count)]
        obs = (doc.get("results") or {}).get("observations")
        if obs and len(obs.get("gpus") or []) == 1:
            g = obs["gpus"][0]
            obs["gpus"] = [{**replica(g, i), "nvlink_links": 18, "nvlink_up": 18} for i in range(count)]
        path.write_text(json.dumps(doc))
    return run


def judge(node_type, count, tmp: Path):
    run = replicated_run(tmp, count)
    report = verdict.load_report(run / "reframe-report.json")
    facts = node_facts(count=count)
    return verdict.build(report, facts, REFERENCE_DIR, node_type, "commission", run_dir=run)


def test_an_8_gpu_hgx_h100_is_judged_from_recorded_documents_replicated_per_gpu(tmp_path):
    # The accepted 1-GPU commission run, as 8 identical GPUs would report it: every per-GPU figure is the
    # minimum (or maximum) over 8 equal GPUs, i.e. the recorded one, and is judged against gpus/h100_sxm5_80gb.yaml.
    v = judge("h100_sxm5_80gb_x8", 8, tmp_path)
    t = references.load_node_type(REFERENCE_DIR, "h100_sxm5_80gb_x8")
    count = next(r for r in v.rows if r.check == "node" and r.metric == "gpu_count")
    assert count.status == "pass" and count.value == 8.0, verdict.table(v)
    per_gpu = [r for r in v.rows if r.metric and r.check in t.checks and r.metric in t.checks[r.check]
               and t.checks[r.check][r.metric].layer == "gpu"]
    judged = [r for r in per_gpu if r.status not in ("info", "waived")]
    # 18 since issue 24: pageable copies and latencies are the host's (reported), the pinned copies the link's.
    assert len(judged) >= 18 and all(r.status == "pass" for r in judged), verdict.table(v)
    # The node layer of this file is public, not measured: reported where no figure is published.
    p2p = next(r for r in v.rows if r.check == "bandwidth" and r.metric == "p2p_read_min")
    assert p2p.status == "waived", verdict.table(v)
    # The recorded run predates the host BLAS rule (blas_optimized_core, the peak fractions), the NCCL check and the
    # memory test: its host GEMM fails for the metrics it could not report, the collectives and the memory test did
    # not run; its node facts (one GPU's, without NVLink) hold no NVLink counter, which an HGX board's health must
    # count; and nothing else fails.
    assert v.failed_checks() == ["cpu_gemm", "health", "memtest", "nccl"], verdict.table(v)
    health = [r.reason for r in v.rows if r.check == "health" and r.metric is None]
    assert all(r.startswith("NVLink error counters not judged: the node facts hold no NVLink reading") for r in health)
    unmeasured = {r.metric for r in v.rows if r.check == "cpu_gemm" and r.status == "fail" and r.metric}
    assert unmeasured == {"blas_optimized_core"}, verdict.table(v)  # the host's rates are reported only


def test_an_unknown_count_is_judged_per_gpu_and_not_accepted(tmp_path):
    v = judge("h100_sxm5_80gb_x3", 3, tmp_path)
    rows = {(r.check, r.metric): r for r in v.rows}
    assert rows[("gemm", "fp64_tflops_min")].status == "pass", verdict.table(v)
    assert rows[("power", "idle_power_max_w")].status == "pass", verdict.table(v)
    # Node-level metrics the run reported: NOT RUN with the reason, never FAIL and never PASS.
    for key in (("cpu_gemm", "dgemm_gflops"), ("hplstyle", "tflops_sum"), ("hplstyle", "power_avg_w")):
        assert rows[key].status == "not_run", (key, verdict.table(v))
        assert rows[key].reason.startswith("no node-level reference: run gpuaccept baseline")
    layer = rows[("references", "node_layer")]
    assert layer.status == "not_run" and layer.expected
    assert not v.accepted and "references" in v.failed_checks(), verdict.table(v)
    assert "no node-level reference" in verdict.table(v)


def test_baseline_writes_each_layer_to_its_file(tmp_path, capsys):
    out = tmp_path / "proposal" / "h100_sxm5_80gb.yaml"
    argv = ["baseline", "--node-type", "h100_sxm5_80gb", "--description", "d", "--machine", "m", "--evidence", "e",
            "--source-id", "s", "--date", "2026-11-23", "--facts", str(H100_COMMISSION / "node-facts.json"),
            "--output", str(out), str(H100_ACCEPTED_ALL)]
    assert main(argv) == 0, capsys.readouterr().err
    node_doc = yaml.safe_load(out.read_text())
    gpu_doc = yaml.safe_load((out.parent / "gpus" / "h100_sxm5_80gb.yaml").read_text())
    assert node_doc["gpu"] == "h100_sxm5_80gb" and node_doc["gpu_count"] == 1
    assert ("fp64_tflops_min" in gpu_doc["checks"]["gemm"] and "gemm" not in node_doc["checks"]) or (
        "fp64_tflops_min" not in node_doc["checks"]["gemm"]
    )
    assert "dgemm_gflops" in node_doc["checks"]["cpu_gemm"] and "cpu_gemm" not in gpu_doc["checks"]
    assert gpu_doc["match"]["names"] == ["NVIDIA H100 80GB HBM3"]
    assert gpu_doc["match"]["pci_device_ids"] == ["0x233010DE"]  # kept from the known SKU
    # The proposal directory is a reference directory: it validates as it is.
    loaded = references.load_node_type(out.parent, "h100_sxm5_80gb")
    assert loaded.metric("gemm", "fp64_tflops_min").layer == "gpu"
    printed = capsys.readouterr().out
    assert f"the proposal against {REFERENCE_DIR / 'gpus' / 'h100_sxm5_80gb.yaml'}" in printed
    assert f"the proposal against {REFERENCE_DIR / 'h100_sxm5_80gb.yaml'}" in printed


def test_baseline_refuses_a_node_type_that_is_a_path(tmp_path, capsys):
    argv = ["baseline", "--node-type", "../../x", "--description", "d", "--machine", "m", "--evidence", "e",
            "--source-id", "s", "--output", str(tmp_path / "p.yaml"), str(H100_ACCEPTED_ALL)]
    assert main(argv) == 4
    assert "--node-type '../../x' is not a valid name" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())



def test_the_tools_documents_and_the_metric_table_agree():
    # Every benchmark document recorded on the GPU machines: each metric is in the table, with the table's unit.
    seen = {}
    for check in CHECKS:
        for path in sorted(RECORDED.rglob(CHECKS[check].result_file)):
            try:
                doc = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if not isinstance(doc, dict) or doc.get("schema") != "gpuaccept.bench/1":
                continue
            assert metric_table.document_problems(check, doc) == [], path
            seen[check] = seen.get(check, 0) + 1
    assert {"bandwidth", "gemm", "cpu_gemm", "hplstyle", "health", "power", "md_apoa1"} <= set(seen), seen
    bad = {"metrics": {"fp64_tflops_min": {"value": 1.0, "unit": "GFLOP/s"}, "fp4_x": {"value": 1.0, "unit": "x"}}}
    assert len(metric_table.document_problems("gemm", bad)) == 2


def test_run_ids_are_checked_against_the_same_pattern(tmp_path):
    with pytest.raises(ReferenceError, match=r"run id '\.\./\.\./etc' is not a valid name"):
        slurm.judge({"runs": []}, [], tmp_path, "../../etc", "commission", REFERENCE_DIR)
    assert not list(tmp_path.iterdir())


def copy_references(tmp_path):
    out = tmp_path / "refs"
    shutil.copytree(REFERENCE_DIR, out)
    return out


def test_a_file_that_switches_judging_off_rejects_the_node_instead(tmp_path):
    # Issue 12's hostile file: lower 0.9999 on the GEMM that the degraded run halved. Judged against it, the
    # degraded node was ACCEPTED; now the file is refused and the node is rejected with the file's line.
    refs = copy_references(tmp_path)
    sku = refs / "gpus" / "h100_sxm5_80gb.yaml"
    text = sku.read_text()
    old = "    fp64_tflops_min:\n      value: 53.1311\n      unit: TFLOP/s\n      lower: 0.0476\n"
    assert old in text
    sku.write_text(text.replace(old, old.replace("lower: 0.0476", "lower: 0.9999")))
    report = verdict.load_report(H100_DEGRADED / "reframe-report.json")
    facts = json.loads((H100_DEGRADED / "node-facts.json").read_text())
    v = verdict.build(report, facts, refs, "h100_sxm5_80gb", "commission", run_dir=H100_DEGRADED)
    row = next(r for r in v.rows if r.check == "references")
    assert row.status == "fail" and f"{sku}:" in row.reason and "lower 0.9999 is over 0.5" in row.reason
    assert not v.accepted


def test_a_figure_in_the_wrong_layer_is_refused(tmp_path):
    refs = copy_references(tmp_path)
    node = refs / "h100_sxm5_80gb.yaml"
    node.write_text(node.read_text().replace(
        "checks:\n", "checks:\n  health:\n    pcie_gen_min: {value: 5, unit: count, lower: 0, source: "
        "h100-device-2026-11-22}\n", 1))
    with pytest.raises(ReferenceError, match=r"checks.health.pcie_gen_min is a gpu-level figure: it belongs in "
                       r"reference_values/gpus/<sku>.yaml"):
        references.load_file(node)
    shutil.copy(REFERENCE_DIR / "h100_sxm5_80gb.yaml", node)
    sku = refs / "gpus" / "h100_sxm5_80gb.yaml"
    sku.write_text(sku.read_text().replace(
        "checks:\n", "checks:\n  cpu_gemm:\n    dgemm_gflops: {value: 1.0, unit: GFLOP/s, lower: 0.1, source: "
        "h100-device-2026-11-22}\n", 1))
    with pytest.raises(ReferenceError, match=r"node-level figure: it belongs in reference_values/<node_type>\.yaml"):
        references.load_file(node)


def test_the_h100_is_recognised_by_the_pci_device_id_nvml_reported():
    # Facts read on the H100 through NVML, with the device id (docs/evidence/2026-11-23-h100-sku).
    facts = json.loads((RECORDED / "2026-11-23-h100-sku" / "out" / "facts.json").read_text())
    assert facts["gpus"][0]["pci_device_id"] == "0x233010DE"
    sku = references.detect_sku(REFERENCE_DIR, facts)
    assert sku.name == "h100_sxm5_80gb" and facts["gpus"][0]["pci_device_id"] in sku.pci_device_ids
    assert references.detect(REFERENCE_DIR, facts).name == "h100_sxm5_80gb"
    # The same GPU under another name is still an H100 SXM5 by its device id; another device id is not.
    renamed = json.loads(json.dumps(facts))
    renamed["gpus"][0]["name"] = "NVIDIA H100 80GB HBM3 (renamed)"
    assert references.detect_sku(REFERENCE_DIR, renamed).name == "h100_sxm5_80gb"
    renamed["gpus"][0]["pci_device_id"] = "0x233510DE"
    assert references.detect_sku(REFERENCE_DIR, renamed).name == "h200"


@pytest.mark.parametrize(("name", "exists"), NODE_TYPE_EXISTS.items())
def test_a_node_type_exists_when_it_has_a_file_or_is_a_known_sku_times_a_count(name, exists):
    assert references.node_type_exists(REFERENCE_DIR, name) is exists
    if exists:
        assert references.load_node_type(REFERENCE_DIR, name).name == name
    else:
        with pytest.raises(ReferenceError, match=rf"unknown node type '{name}': .*known node types: a100_sxm4_80gb, "):
            references.load_node_type(REFERENCE_DIR, name)
    with pytest.raises(ReferenceError, match="is not a valid name"):
        references.node_type_exists(REFERENCE_DIR, "../h200")


PREFLIGHT_PLAY = """---
- name: The playbooks' preflight (tests)
  hosts: all
  gather_facts: false
  tasks:
    - name: Check the node type
      ansible.builtin.import_tasks: {tasks}
"""


@pytest.mark.parametrize("name", ["h100_sxm5_80gb_x3", "nosuch_x3", "h100_sxm5_80gb_x0", "h100_sxm5_80gb"])
def test_the_playbooks_preflight_accepts_the_node_types_that_exist(tmp_path, name):
    """playbooks/tasks/preflight.yml, run with ansible-playbook (host checks alone: no GPU probe): the node types
    it lets through are those node_type_exists says exist; a refusal names the type and lists what exists."""
    playbook = tmp_path / "preflight.yml"
    playbook.write_text(PREFLIGHT_PLAY.format(tasks=ROOT / "playbooks" / "tasks" / "preflight.yml"))
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ, LC_ALL="C.UTF-8", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "at"))  # fmt: skip
    env.pop("ANSIBLE_INVENTORY", None)
    proc = subprocess.run(
        [str(bin_dir / "ansible-playbook"), "-i", str(ROOT / "inventories" / "local"), str(playbook),
         "-e", f"gpuaccept_node_type={name}", "-e", "gpuaccept_host_only=true",
         "-e", f"gpuaccept_reframe_reference_dir={REFERENCE_DIR}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert (proc.returncode == 0) is NODE_TYPE_EXISTS[name], out[-3000:]
    if proc.returncode:
        assert f"unknown node type '{name}': no {REFERENCE_DIR}/{name}.yaml; known node types: a100_sxm4_80gb, " in out
        assert "<sku>_x<count> for the known GPU SKUs: a100_sxm4_80gb, h100_sxm5_80gb, h200 (or auto" in out
