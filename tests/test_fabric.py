"""The fabric check (docs/checks/fabric.md) on sysfs trees this module BUILDS, following the layout the Linux kernel
documents (Documentation/ABI/stable/sysfs-class-infiniband for ports/<n>/{state, phys_state, rate, link_layer,
counters/, hw_counters/}; Documentation/infiniband/sysfs.txt for the per-port pkeys/ table; Documentation/ABI/
testing/sysfs-class-net for carrier_changes). No real HCA is read here: none of the machines lent to this project
has one. The values written are the kernel's formats ("4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", "0x8001").
The ib_write_bw outputs read are real: a published loopback, and Debian's ib_write_bw without a device
(tests/fixtures/fabric/README.md)."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, REFERENCE_DIR

from gpuaccept import references
from gpuaccept.checks import CHECKS, in_suite
from gpuaccept.judge import fabric_expect, fabric_judge, validate
from gpuaccept.judge import rules as document_rules
from gpuaccept.judge.load import Case, Document
from gpuaccept.probe import fabric, fabric_doc, perftest

BW_OUTPUT = FIXTURES / "fabric" / "yandex-cloud-docs_ib_write_bw_loopback.txt"
NO_DEVICE = FIXTURES / "fabric" / "debian-perftest-4.5_no_device.txt"
# The port counters the kernel documents under counters/ (a subset: those the rules and the tests touch, and data).
COUNTERS = ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "port_xmit_discards",
            "port_xmit_data", "port_rcv_data", "excessive_buffer_overrun_errors")  # fmt: skip
HW_COUNTERS = ("out_of_buffer", "out_of_sequence", "packet_seq_err")
PEERMEM = "nvidia_peermem 16384 0 - Live 0x0000000000000000\nnvidia 11214848 1 nvidia_peermem, Live 0x0\n"
NO_PEERMEM = "nvidia 11214848 0 - Live 0x0000000000000000\nmlx5_ib 466944 0 - Live 0x0\n"
NDR = {"ports": 8, "link_layer": "InfiniBand", "rate_gbps": 400, "width": "4X", "pkey": "0x8001",
       "gpudirect": True, "ib_write_bw_floor_gbps": 360, "source": "azure-hpc-health-checks"}  # fmt: skip


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def make_port(hca: Path, n: int, state: str = "4: ACTIVE", phys: str = "5: LinkUp",
              rate: str = "400 Gb/sec (4X NDR)", layer: str = "InfiniBand",
              pkeys: tuple[str, ...] = ("0xffff", "0x8001")) -> None:  # fmt: skip
    port = hca / "ports" / str(n)
    write(port / "state", state)
    write(port / "phys_state", phys)
    write(port / "rate", rate)
    write(port / "link_layer", layer)
    for i in range(4):  # the table's unused entries are 0x0000
        write(port / "pkeys" / str(i), pkeys[i] if i < len(pkeys) else "0x0000")
    for name in COUNTERS:
        write(port / "counters" / name, "123456789" if name.endswith("_data") else "0")
    for name in HW_COUNTERS:
        write(port / "hw_counters" / name, "0")
    write(port / "hw_counters" / "lifespan", "10")


def make_node(root: Path, hcas: int = 8, **port) -> Path:
    """A node of ``hcas`` one-port HCAs (mlx5_ib0...), each with its IPoIB net device ib<i> (dev_port 0)."""
    for i in range(hcas):
        hca = root / "class" / "infiniband" / f"mlx5_ib{i}"
        write(hca / "node_type", "1: CA")
        write(hca / "fw_ver", "28.39.1002")
        write(hca / "device" / "numa_node", str(i // 4))
        write(hca / "device" / "net" / f"ib{i}" / "dev_port", "0")
        write(root / "class" / "net" / f"ib{i}" / "carrier_changes", "2")
        make_port(hca, 1, **port)
    return root


def set_counter(root: Path, hca: int, name: str, value: int, group: str = "counters") -> None:
    write(root / "class" / "infiniband" / f"mlx5_ib{hca}" / "ports" / "1" / group / name, str(value))


@pytest.fixture
def modules(tmp_path: Path) -> Path:
    p = tmp_path / "modules"
    p.write_text(PEERMEM)
    return p


@pytest.fixture(scope="module")
def node_type(tmp_path_factory) -> references.NodeType:
    return fabric_node_type(tmp_path_factory.mktemp("refs"), NDR)


def fabric_node_type(tmp: Path, section: dict | None, checks: bool = True) -> references.NodeType:
    """The shipped 8 x H200 node type with a ``fabric:`` section (Azure's ND H200 v5 figures, their source named)
    and ``checks: fabric:`` added, loaded through the reference reader."""
    refs = tmp / "refs"
    shutil.copytree(REFERENCE_DIR, refs, dirs_exist_ok=True)
    doc = yaml.safe_load((refs / "h200_x8.yaml").read_text())
    doc["sources"]["azure-hpc-health-checks"] = {"kind": "public", "date": "2025",
                                                 "reference": fabric_expect.AZURE_HEALTH_CHECKS}  # fmt: skip
    if section is not None:
        doc["fabric"] = section
    if checks:
        doc["checks"]["fabric"] = {"ib_write_bw_min_gbps": {
            "informational": "each HCA is judged by the fabric rules against fabric.ib_write_bw_floor_gbps",
            "unit": "Gb/s", "source": "azure-hpc-health-checks", "owner": "node"}}  # fmt: skip
    (refs / "h200_x8.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return references.load_node_type(refs, "h200_x8")


def bw_passing() -> dict:
    """Each HCA's loopback as the real published output reads (394.40 Gb/s), through GPU 0-7 and peer memory."""
    figure = perftest.gbps(perftest.parse_bw(BW_OUTPUT.read_text()))
    runs = [{"hca": f"mlx5_ib{i}", "gpu": i, "memory": f"GPU {i} (peer memory)", "gbps": figure, "error": None,
             "client": ["ib_write_bw", f"--use_cuda={i}", "-d", f"mlx5_ib{i}", "127.0.0.1"]} for i in range(8)]
    return {"available": True, "why": None, "cuda": True, "runs": runs}


def document(before: dict, after: dict, bw: dict | None = None) -> dict:
    return {"results": {"before": before, "after": after, "ib_write_bw": bw if bw is not None else bw_passing()}}


def judge(node_type, root: Path, modules: Path, change=None, bw: dict | None = None) -> fabric_judge.Judged:
    """The node read, ``change`` applied to its tree (the suite), read again, and judged."""
    before = fabric.read(root, modules)
    if change:
        change(root)
    after = fabric.read(root, modules)
    return fabric_judge.assess(document(before, after, bw), node_type, None, None)


def rules(j: fabric_judge.Judged) -> list[str]:
    return sorted({f.rule for f in j.findings})


# ------------------------------------------------------------------------------------------------
# The reading


def test_a_good_ndr_node_reads_as_the_kernel_lays_it_out(tmp_path, modules):
    reading = fabric.read(make_node(tmp_path), modules)
    assert reading["root_present"] and len(reading["hcas"]) == 8
    port = reading["hcas"][3]["ports"][0]
    assert (port["state"], port["state_code"], port["phys_state"], port["phys_state_code"]) == ("ACTIVE", 4,
                                                                                               "LinkUp", 5)
    assert (port["rate_gbps"], port["width"], port["speed"]) == (400.0, "4X", "NDR")
    assert port["link_layer"] == "InfiniBand"
    assert port["pkeys"] == ["0xffff", "0x8001"]  # the empty 0x0000 entries left out
    assert port["counters"]["port_xmit_data"] == 123456789 and set(port["counters"]) == set(COUNTERS)
    assert "lifespan" not in port["hw_counters"] and set(port["hw_counters"]) == set(HW_COUNTERS)
    assert (port["netdev"], port["carrier_changes"]) == ("ib3", 2)
    assert reading["hcas"][5]["numa_node"] == 1
    assert reading["gpudirect"]["peermem"] is True and reading["gpudirect"]["peermem_module"] == "nvidia_peermem"


def test_a_roce_port_names_its_net_device_through_its_gid_table(tmp_path, modules):
    root = make_node(tmp_path, hcas=1, layer="Ethernet", rate="200 Gb/sec (4X HDR)")
    port_dir = root / "class" / "infiniband" / "mlx5_ib0" / "ports" / "1"
    write(port_dir / "gid_attrs" / "ndevs" / "0", "eth2")
    write(root / "class" / "net" / "eth2" / "carrier_changes", "7")
    port = fabric.read(root, modules)["hcas"][0]["ports"][0]
    assert (port["link_layer"], port["netdev"], port["carrier_changes"], port["rate_gbps"]) == ("Ethernet", "eth2",
                                                                                              7, 200.0)


def test_an_unreadable_file_is_recorded_not_zero(tmp_path, modules):
    root = make_node(tmp_path, hcas=1)
    set_counter(root, 0, "symbol_error", 0)
    (root / "class" / "infiniband" / "mlx5_ib0" / "ports" / "1" / "counters" / "symbol_error").write_text("N/A\n")
    port = fabric.read(root, modules)["hcas"][0]["ports"][0]
    assert "symbol_error" not in port["counters"]
    assert "not an integer" in port["unreadable"]["counters/symbol_error"]


def test_peermem_absent_is_said_with_why(tmp_path):
    mods = tmp_path / "modules"
    mods.write_text(NO_PEERMEM)
    gd = fabric.gpudirect(mods)
    assert gd["peermem"] is False and "nvidia_peermem" in gd["why"] and gd["dmabuf"] is None


def test_the_snapshot_is_written_atomically_as_json(tmp_path, modules):
    root = make_node(tmp_path / "sys", hcas=2)
    out = tmp_path / "out" / "before.json"
    assert fabric_doc.main(["snapshot", "--output", str(out), "--sysfs", str(root),
                            "--proc-modules", str(modules)]) == 0  # fmt: skip
    doc = json.loads(out.read_text())
    assert doc["schema"] == fabric.SNAPSHOT_SCHEMA and len(doc["hcas"]) == 2
    assert not list(out.parent.glob(".*"))  # no temporary file left beside it


def test_the_probe_command_writes_a_document_the_judge_reads(tmp_path, modules):
    root = make_node(tmp_path / "sys", hcas=2)
    out = tmp_path / "fabric.json"
    assert fabric_doc.main(["probe", "--output", str(out), "--sysfs", str(root), "--proc-modules", str(modules),
                            "--no-ib-write-bw", "--gpus", "0"]) == 0  # fmt: skip
    doc = document_rules.load_document(out)  # the judge's strict reader and the gpuaccept.bench/1 schema
    assert doc["tool"] == "gpuaccept-fabric" and doc["metrics"]["ports_active"] == {"value": 2, "unit": "count",
                                                                                    "better": "higher"}
    assert "not run (--no-ib-write-bw" in doc["waived"]["ib_write_bw_min_gbps"]
    assert [h["name"] for h in doc["results"]["before"]["hcas"]] == ["mlx5_ib0", "mlx5_ib1"]
    assert document_rules.document_problems(doc, out, None) == []


# ------------------------------------------------------------------------------------------------
# The rules


def test_a_good_ndr_node_passes_every_rule(tmp_path, modules, node_type):
    j = judge(node_type, make_node(tmp_path), modules)
    assert j.findings == [] and not j.not_run and not j.cannot_look
    assert j.metrics["fabric_findings"]["value"] == 0 and j.metrics["fabric_error_growth"]["value"] == 0


@pytest.mark.parametrize(
    ("port", "rule", "words"),
    [
        ({"state": "1: DOWN", "phys": "3: Disabled"}, "port_state", "state DOWN"),
        ({"state": "1: DOWN", "phys": "2: Polling"}, "phys_state", "the link to the switch is lost"),
        ({"rate": "200 Gb/sec (4X HDR)"}, "port_rate", "200 Gb/sec (4X HDR)"),
        ({"rate": "200 Gb/sec (2X NDR)"}, "port_width", "width 2X"),
        ({"pkeys": ("0x7fff", "0x0001")}, "pkey", "no full-member partition key"),
        ({"pkeys": ("0xffff",)}, "pkey", "0x8001 not in the table"),
        ({"layer": "Ethernet"}, "port_count", "7 ports of link layer InfiniBand"),
    ],
)
def test_each_port_fault_fails_its_rule(tmp_path, modules, node_type, port, rule, words):
    root = make_node(tmp_path)
    make_port(root / "class" / "infiniband" / "mlx5_ib6", 1, **port)  # one HCA's port faulty
    j = judge(node_type, root, modules)
    assert rule in rules(j)
    assert any(words in f.message for f in j.findings if f.rule == rule), [f.text() for f in j.findings]


def test_a_missing_hca_fails_the_port_count(tmp_path, modules, node_type):
    j = judge(node_type, make_node(tmp_path, hcas=7), modules)
    assert rules(j) == ["port_count"]
    assert "7 ports of link layer InfiniBand, the node type has 8" in j.findings[0].message


def test_no_peermem_fails_gpudirect_where_no_dmabuf_loopback_ran(tmp_path, node_type):
    mods = tmp_path / "modules"
    mods.write_text(NO_PEERMEM)
    root = make_node(tmp_path / "sys")
    assert "gpudirect" in rules(judge(node_type, root, mods))
    bw = bw_passing()
    for r in bw["runs"]:
        r["client"].insert(2, "--use_cuda_dmabuf")
    assert "gpudirect" not in rules(judge(node_type, root, mods, bw=bw))  # DMA-BUF carried the loopback


@pytest.mark.parametrize(
    ("counter", "grown", "fails"),
    [("symbol_error", 1, True), ("link_error_recovery", 1, True), ("link_downed", 1, True),
     ("port_rcv_errors", 100, False), ("port_rcv_errors", 101, True),
     ("port_xmit_discards", 1000, False), ("port_xmit_discards", 1001, True),
     ("port_xmit_data", 10**9, False)],  # data counters grow: never a fault
)  # fmt: skip
def test_counters_rising_over_azures_thresholds_fail(tmp_path, modules, node_type, counter, grown, fails):
    start = 123456789 if counter.endswith("_data") else 0
    j = judge(node_type, make_node(tmp_path), modules, lambda r: set_counter(r, 2, counter, start + grown))
    assert ("port_counters" in rules(j)) is fails
    if fails:
        assert counter in j.findings[0].message and j.findings[0].where == "mlx5_ib2 port 1"


def test_a_counter_that_went_down_is_a_reset_and_fails(tmp_path, modules, node_type):
    j = judge(node_type, make_node(tmp_path), modules, lambda r: set_counter(r, 4, "port_xmit_data", 5))
    assert rules(j) == ["counter_reset"]
    assert "counters/port_xmit_data 123456789 -> 5" in j.findings[0].message


def test_a_hw_counter_that_went_down_is_a_reset_too(tmp_path, modules, node_type):
    root = make_node(tmp_path)
    set_counter(root, 1, "out_of_buffer", 40, "hw_counters")
    j = judge(node_type, root, modules, lambda r: set_counter(r, 1, "out_of_buffer", 0, "hw_counters"))
    assert rules(j) == ["counter_reset"]


def test_a_carrier_change_over_the_suite_is_a_flap(tmp_path, modules, node_type):
    def flap(root: Path) -> None:
        write(root / "class" / "net" / "ib5" / "carrier_changes", "4")

    j = judge(node_type, make_node(tmp_path), modules, flap)
    assert rules(j) == ["link_flap"] and "ib5 changed carrier 2 times" in j.findings[0].message


def test_an_hca_gone_during_the_suite_fails_and_is_never_not_run(tmp_path, modules, node_type):
    def unplug(root: Path) -> None:
        shutil.rmtree(root / "class" / "infiniband" / "mlx5_ib7")

    j = judge(node_type, make_node(tmp_path), modules, unplug)
    assert rules(j) == ["port_count", "port_missing"] and not j.not_run
    assert any(f.where == "mlx5_ib7 port 1" and "not after it" in f.message for f in j.findings)

    def unplug_all(root: Path) -> None:
        shutil.rmtree(root / "class" / "infiniband")

    j = judge(node_type, make_node(tmp_path / "b"), modules, unplug_all)
    assert "port_missing" in rules(j) and not j.not_run


def test_the_window_is_the_node_facts_where_they_hold_a_reading(tmp_path, modules, node_type):
    """The suite's window (node facts before and after) is judged, not the check's own readings."""
    root = make_node(tmp_path)
    before = fabric.read(root, modules)
    set_counter(root, 0, "symbol_error", 3)
    after = fabric.read(root, modules)
    quiet = document(after, after)  # the check itself saw nothing grow
    j = fabric_judge.assess(quiet, node_type, {"fabric": before}, {"fabric": after})
    assert rules(j) == ["port_counters"] and any("the suite (node facts" in n for n in j.notes)


def test_an_hca_below_the_floor_fails_and_one_that_could_not_run_too(tmp_path, modules, node_type):
    bw = bw_passing()
    bw["runs"][3]["gbps"] = 301.2
    bw["runs"][5].update(gbps=None, error=perftest.parse_bw(NO_DEVICE.read_text())["error"])
    j = judge(node_type, make_node(tmp_path), modules, bw=bw)
    assert [f.where for f in j.findings] == ["mlx5_ib3", "mlx5_ib5"] and rules(j) == ["ib_write_bw"]
    assert "301.2 Gb/s" in j.findings[0].message and "below the floor 360 Gb/s" in j.findings[0].message


def test_no_perftest_where_a_floor_is_set_cannot_look(tmp_path, modules, node_type):
    bw = {"available": False, "why": "ib_write_bw not found on PATH (Debian's perftest package)", "runs": []}
    j = judge(node_type, make_node(tmp_path), modules, bw=bw)
    assert j.findings == [] and "ib_write_bw not found" in j.cannot_look


def test_no_hca_at_all_is_not_run_never_passed(tmp_path, modules):
    node_type = fabric_node_type(tmp_path, {"link_layer": "InfiniBand", "source": "azure-hpc-health-checks"})
    j = judge(node_type, tmp_path / "empty-sys", modules)
    assert j.findings == [] and j.metrics == {}
    assert j.not_run.startswith("no fabric to look at: no ") and "class/infiniband" in j.not_run


def test_no_hca_fails_where_the_node_type_expects_ports(tmp_path, modules, node_type):
    j = judge(node_type, tmp_path / "empty-sys", modules)
    assert rules(j) == ["no_fabric"] and not j.not_run and "expects 8 ports" in j.findings[0].message


# ------------------------------------------------------------------------------------------------
# Through the judge's validate stage (what the verdict reads)


def case_of(tmp_path: Path, doc: dict) -> Case:
    full = {"schema": "gpuaccept.bench/1", "tool": fabric_doc.TOOL, "metrics": {}, "waived": {},
            "verification": {"passed": True, "failures": []}, "errors": [], **doc}  # fmt: skip
    path = tmp_path / "fabric.json"
    path.write_text(json.dumps(full))
    return Case("fabric", {"result": "pass"}, document=Document(path, full))


def test_validate_gives_not_run_without_an_hca_and_problems_with_a_fault(tmp_path, modules):
    loose = fabric_node_type(tmp_path / "a", {"source": "azure-hpc-health-checks"})
    empty = fabric_doc.probe([], tmp_path / "none", modules, run_bw=False, gpus=8, size=8)
    found = validate.validate_case(case_of(tmp_path, empty), {"gpus": []}, loose, None)
    assert found.not_run.startswith("no fabric to look at") and not found.problems and not found.metrics

    root = make_node(tmp_path / "sys")
    make_port(root / "class" / "infiniband" / "mlx5_ib1", 1, phys="2: Polling", state="1: DOWN")
    doc = fabric_doc.probe([], root, modules, run_bw=False, gpus=8, size=8)
    found = validate.validate_case(case_of(tmp_path, doc), {"gpus": []}, loose, None)
    assert not found.not_run and any("mlx5_ib1 port 1: physical state Polling" in p.text() for p in found.problems)
    assert found.metrics["ports_active"]["value"] == 7 and found.metrics["fabric_findings"]["value"] == 2


# ------------------------------------------------------------------------------------------------
# The node type's section and the declaration


@pytest.mark.parametrize(
    ("section", "words"),
    [({**NDR, "pkey": "0x0001"}, "fabric.pkey must be a full-member P_Key"),
     ({**NDR, "speed": "NDR"}, "unknown key 'speed'"),
     ({**NDR, "ports": 0}, "fabric.ports must be an integer >= 1"),
     ({**NDR, "link_layer": "RoCE"}, "fabric.link_layer must be one of InfiniBand, Ethernet"),
     ({**NDR, "source": "nowhere"}, "fabric.source must name an entry of 'sources'")],
)  # fmt: skip
def test_a_bad_fabric_section_is_refused_naming_file_and_line(tmp_path, section, words):
    nt = fabric_node_type(tmp_path, section)
    with pytest.raises(references.ReferenceError, match=r"h200_x8\.yaml:\d+: ") as err:
        fabric_expect.expectations(nt)
    assert words in str(err.value)


def test_a_fabric_section_without_the_checks_entry_is_refused(tmp_path):
    nt = fabric_node_type(tmp_path, NDR, checks=False)
    with pytest.raises(references.ReferenceError, match="no 'checks: fabric:'"):
        fabric_expect.expectations(nt)


def test_the_check_is_declared_optional_in_commission_and_multinode():
    check = CHECKS["fabric"]
    assert check.optional and check.rules == ("fabric",) and check.doc == "fabric.md"
    assert check in in_suite("commission") and check in in_suite("multinode") and check not in in_suite("nightly")


def test_no_shipped_node_type_expects_the_fabric():
    """The shipped types describe GPU boards, not a site's network: none lists the check, so none is newly
    rejected (the ReFrame check skips itself as not expected on them)."""
    for nt in references.load_all(REFERENCE_DIR):
        assert "fabric" not in nt.checks and fabric_expect.expectations(nt) is None


# ------------------------------------------------------------------------------------------------
# ib_write_bw: the command and the output


def test_the_real_published_output_parses():
    parsed = perftest.parse_bw(BW_OUTPUT.read_text())
    assert parsed["unit"] == "Gb/sec" and parsed["error"] is None
    assert parsed["rows"] == [{"bytes": 33554432, "iterations": 10000, "bw_peak": 394.58, "bw_average": 394.40,
                               "msg_rate_mpps": 0.001469}]  # fmt: skip
    assert perftest.gbps(parsed) == 394.40


def test_an_output_without_a_table_is_an_error_not_a_figure():
    parsed = perftest.parse_bw(NO_DEVICE.read_text())
    assert parsed["rows"] == [] and parsed["error"].startswith("no result table in ib_write_bw's output (")
    assert "Unable to find the Infiniband/RoCE device" in parsed["error"] and perftest.gbps(parsed) is None


@pytest.mark.skipif(not shutil.which("ib_write_bw"), reason="perftest not installed (scripts/deps.sh installs it)")
def test_the_runner_against_the_real_ib_write_bw_without_a_device(tmp_path, modules, monkeypatch):
    """Debian's ib_write_bw run for an HCA this machine does not have (a built tree names it): the run's error
    carries what perftest said, and no figure."""
    if Path("/sys/class/infiniband/mlx5_ib0").exists():
        pytest.skip("this machine has an mlx5_ib0: the loopback would really run")
    monkeypatch.setattr(perftest, "SERVER_START_S", 0.2)
    bw = perftest.run_all(fabric.read(make_node(tmp_path / "sys", hcas=1), modules), gpus=8)
    run = bw["runs"][0]
    assert bw["available"] and run["gbps"] is None and "Infiniband/RoCE device" in run["error"]
    if not bw["cuda"]:  # Debian's build has no CUDA: host memory, said so
        assert run["memory"] == "host (this perftest has no CUDA)" and not any("--use_cuda" in a for a in run["client"])


def test_the_command_is_azures_loopback_with_what_differs_recorded():
    server, client = perftest.command("mlx5_ib3", 3, "InfiniBand", 1, 3, dmabuf=False, numactl="/usr/bin/numactl")
    assert server == ["/usr/bin/numactl", "-N", "1", "-m", "1", "ib_write_bw", "-p", "18513", "-s", "8388608", "-x",
                      "0", "-F", "--report_gbits", "--perform_warm_up", "--use_cuda=3", "-d", "mlx5_ib3"]  # fmt: skip
    assert client == [*server, "127.0.0.1"]
    roce, _ = perftest.command("mlx5_0", 0, "Ethernet", None, None, dmabuf=False)
    assert "-x" not in roce and not any(a.startswith("--use_cuda") for a in roce) and roce[0] == "ib_write_bw"
    dmabuf, _ = perftest.command("mlx5_0", 0, "InfiniBand", 0, 0, dmabuf=True)
    assert "--use_cuda_dmabuf" in dmabuf


def test_the_runner_runs_server_and_client_and_reads_the_client(tmp_path, modules, monkeypatch):
    """A stand-in ib_write_bw (perftest is not installed here and there is no HCA): it answers --help as a CUDA build
    does, waits as a server, and as the client prints the real published output."""
    exe = tmp_path / "ib_write_bw"
    exe.write_text("#!/bin/sh\ncase \" $* \" in *' --help '*) echo '  --use_cuda=<cuda device id>'; exit 0;; esac\n"
                   f"for a in \"$@\"; do last=$a; done\nif [ \"$last\" = 127.0.0.1 ]; then cat '{BW_OUTPUT}'; "
                   "else sleep 0.2; fi\n")  # fmt: skip
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(perftest, "SERVER_START_S", 0.05)
    reading = fabric.read(make_node(tmp_path / "sys", hcas=2), modules)
    bw = perftest.run_all(reading, gpus=8, exe=str(exe))
    assert bw["available"] and bw["cuda"] and [r["gbps"] for r in bw["runs"]] == [394.40, 394.40]
    assert [r["memory"] for r in bw["runs"]] == ["GPU 0 (peer memory)", "GPU 1 (peer memory)"]
    assert "--use_cuda=1" in bw["runs"][1]["client"] and "--use_cuda_dmabuf" not in bw["runs"][1]["client"]


def test_without_perftest_the_runner_says_so(tmp_path, modules, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    bw = perftest.run_all(fabric.read(make_node(tmp_path / "sys", hcas=1), modules), gpus=0)
    assert bw == {"available": False, "why": "ib_write_bw not found on PATH (Debian's perftest package)", "runs": []}
