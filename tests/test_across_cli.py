"""gpuaccept across end to end without a GPU: the launch command lines built by the pure builder, and the CLI
driving a stand-in ``mpirun`` that the test writes: it reads the mpirun launcher's command line (the hostfile, the
tool's --comm and --output, GPUACCEPT_BOOTSTRAP in its environment) and writes gpuaccept-nccl's multi-process
document in the layout docs/benchmark-json.md gives, its figures from a model of the fleet (the node named in
FAKE_BAD at 0.6 of the bandwidth, 1 % noise)."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap

import pytest
from conftest import H100_RUNS

from gpuaccept import across_launch, across_run, cli
from gpuaccept.layout import REFERENCE_DIR
from gpuaccept.results import across_doc

FAKE_MPIRUN = textwrap.dedent('''\
    #!{python}
    import json, os, random, sys
    argv = sys.argv[1:]
    if "GPUACCEPT_BOOTSTRAP" not in os.environ or argv[argv.index("-x") + 1] != "GPUACCEPT_BOOTSTRAP":
        sys.exit("no GPUACCEPT_BOOTSTRAP for the ranks")
    slots = [line.split() for line in open(argv[argv.index("--hostfile") + 1])]
    rank_host = [h for h, n in slots for _ in range(int(n.split("=")[1]))]
    per_node = len(rank_host) // len(slots)
    comm = argv[argv.index("--comm") + 1]
    out = argv[argv.index("--output") + 1]
    bad = set(os.environ.get("FAKE_BAD", "").split(","))
    bad_rail = int(os.environ.get("FAKE_BAD_RAIL", "-1"))
    rng = random.Random(out)
    if comm == "world":
        groups = [(list(range(len(rank_host))), None)]
    elif comm == "rail":
        groups = [(list(range(k, len(rank_host), per_node)), k) for k in range(per_node)]
    else:
        spans = [tuple(map(int, s.split("-"))) for s in comm.split(":", 1)[1].split(",")]
        groups = [(list(range(lo, hi + 1)), None) for lo, hi in spans]
    docs = []
    for i, (ranks, rail) in enumerate(groups):
        members = [rank_host[r] for r in ranks]
        nodes = len(set(members))
        slow = bad & set(members) or (rail is not None and rail == bad_rail)
        bw = 370.0 * (0.6 if slow else 1.0) * rng.gauss(1.0, 0.01)
        lat = 12.0 * (nodes - 1) * rng.gauss(1.0, 0.01)
        docs.append({{"group": i, "label": "+".join(f"{{r}}@{{rank_host[r]}}" for r in ranks), "ranks": ranks,
                     "hosts": members, "size": len(ranks), "rail": rail,
                     "metrics": {{"allreduce_busbw_gbps_max": {{"value": round(bw, 2), "unit": "GB/s"}},
                                 "allreduce_latency_us": {{"value": round(lat, 2), "unit": "us"}}}}, "waived": {{}}}})
    doc = {{"schema": "gpuaccept.bench/1", "tool": "gpuaccept-nccl", "parameters": {{"mode": "multi_process",
           "comm": comm}}, "results": {{"ranks": [{{"rank": r, "host": h, "hostname": "ci", "errors": []}}
           for r, h in enumerate(rank_host)], "groups": docs}}, "verification": {{"passed": True, "failures": []}},
           "errors": []}}
    with open(out, "w") as f:
        json.dump(doc, f)
''')


def test_launch_commands():
    mpi = across_launch.build("mpirun", [("a", "b"), ("c", "d")], "gpuaccept-nccl", "/w/001-quick.json", "/w", 8)
    assert mpi.argv[:6] == ["mpirun", "--hostfile", "/w/001-quick.hosts", "-np", "32", "--map-by"]
    assert mpi.files == {"/w/001-quick.hosts": "a slots=8\nb slots=8\nc slots=8\nd slots=8\n"}
    assert ["--comm", "groups:0-15,16-31"] == mpi.argv[mpi.argv.index("--comm"):][:2]
    assert mpi.argv[-1] == "--ring" and "--multi-process" in mpi.argv
    srun = across_launch.build("srun", [("n1", "n2")], "t", "/w/002-world.json", "/w", 2, layout="world")
    assert srun.env["SLURM_HOSTFILE"] == "/w/002-world.tasks"
    assert srun.files["/w/002-world.tasks"] == "n1\nn1\nn2\nn2\n"
    assert "--distribution=arbitrary" in srun.argv and "--ntasks=4" in srun.argv and "world" in srun.argv
    assert srun.env["GPUACCEPT_BOOTSTRAP"] == "n1:29517" and mpi.env == {"GPUACCEPT_BOOTSTRAP": "a:29517"}
    emu = across_launch.build("emulate", [("x", "y"), ("z", "w")], "t", "/w/o.json", "/w", 1, gpus=8, python="py")
    assert emu.argv[:9] == ["py", "-m", "gpuaccept.nccl_emulate", "--ranks", "4", "--gpus", "8", "--hosts", "4"]
    assert emu.argv[9:] == ["--", "t", "--comm", "groups:0-1,2-3", "--output", "/w/o.json", "--ring"]
    assert emu.aliases == {"emuhost0": "x", "emuhost1": "y", "emuhost2": "z", "emuhost3": "w"}
    slow = across_launch.build("emulate", [("y", "z"), ("x", "w")], "t", "/w/o.json", "/w", 2, gpus=2, python="py",
                               tool_args=["--max-bytes", "64"], slow_node="x")  # fmt: skip
    assert slow.argv[9:12] == ["--slow-rank", "4", "--"]  # x is the round's third node: its first rank is 4
    assert slow.argv[12:16] == ["t", "--max-bytes", "64", "--comm"]
    with pytest.raises(across_launch.LaunchError, match="emulated only"):
        across_launch.build("mpirun", [("a", "b")], "t", "/w/o.json", "/w", slow_node="a")
    with pytest.raises(across_launch.LaunchError, match="share a node"):
        across_launch.build("mpirun", [("a", "b"), ("b", "c")], "t", "/w/o.json", "/w")
    with pytest.raises(across_launch.LaunchError, match="launcher"):
        across_launch.build("pdsh", [("a", "b")], "t", "/w/o.json", "/w")


@pytest.fixture
def fake_mpirun(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "mpirun"
    script.write_text(FAKE_MPIRUN.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


@pytest.mark.parametrize(("bad", "code"), [("node-03", 1), ("", 0)])
def test_across_names_the_bad_node_end_to_end(fake_mpirun, monkeypatch, capsys, bad, code):
    monkeypatch.setenv("FAKE_BAD", bad)
    hosts = fake_mpirun / "hosts.txt"
    hosts.write_text("# the set\n" + "".join(f"node-{i:02d}\n" for i in range(1, 9)))
    results = fake_mpirun / "results"
    rc = cli.main(["across", "--hosts", str(hosts), "--launcher", "mpirun", "--results", str(results)])
    out = capsys.readouterr().out
    assert rc == code, out
    (work,) = (results / "_across").iterdir()
    summary = json.loads((work / "across.json").read_text())
    assert summary["judgement"]["named"] == ([bad] if bad else [])
    assert all(r["exit_status"] == 0 for r in summary["rounds"])
    assert len(list((work / "raw").glob("*.json"))) == len(summary["rounds"])
    if bad:
        assert "node-03: pair" in out and "% of the best" in out
        assert (work / "across-pairs.png").stat().st_size > 1000 and (work / "across-pairs.svg").exists()
        assert {r["mode"] for r in summary["rounds"]} >= {"world", "quick"}


def test_across_bad_input(tmp_path, capsys):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("a\na\n")
    assert cli.main(["across", "--hosts", str(hosts), "--results", str(tmp_path)]) == 4
    assert "listed twice" in capsys.readouterr().err
    assert cli.main(["across", "--hosts", str(tmp_path / "none"), "--results", str(tmp_path)]) == 4
    capsys.readouterr()
    assert cli.main(["across", "--hosts", str(hosts), "--modes", "world,ring", "--results", str(tmp_path)]) == 4
    assert "--modes world,ring: unknown ring" in capsys.readouterr().err


def test_floors_file(tmp_path):
    shipped = REFERENCE_DIR / "across" / "floors.yaml"
    assert across_run.load_floor(shipped, "h100_sxm5_80gb_x8") is None  # none shipped: held to the best pair
    site = tmp_path / "floors.yaml"
    site.write_text("schema: gpuaccept.across-floors/1\nfloors:\n  h100_x8:\n    value: 300\n    source: site run 12\n")
    floor = across_run.load_floor(site, "h100_x8")
    assert floor is not None and floor.value == 300.0 and floor.source == "site run 12"
    site.write_text("schema: gpuaccept.across-floors/1\nfloors:\n  h100_x8:\n    value: 300\n")
    with pytest.raises(across_run.AcrossError, match="'source' are required"):
        across_run.load_floor(site, "h100_x8")



def test_halving_follows_a_whole_set_under_its_floor(fake_mpirun, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_BAD", "node-11")
    inventory = fake_mpirun / "inventory.json"  # ansible-inventory --list's layout: the node type from the inventory
    inventory.write_text(json.dumps({"_meta": {"hostvars": {f"node-{i:02d}": {"gpuaccept_node_type": "t"}
                                                            for i in range(1, 17)}}}))  # fmt: skip
    floors = fake_mpirun / "floors.yaml"
    floors.write_text("schema: gpuaccept.across-floors/1\nfloors:\n  t:\n    value: 340\n    source: a site's\n")
    results = fake_mpirun / "results"
    rc = cli.main(["across", "--inventory", str(inventory), "--launcher", "mpirun", "--modes", "world",
                   "--floors", str(floors), "--results", str(results)])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 1, out
    (work,) = (results / "_across").iterdir()
    summary = json.loads((work / "across.json").read_text())
    assert summary["judgement"]["named"] == ["node-11"]
    modes = [r["mode"] for r in summary["rounds"]]
    assert modes[0] == "world" and set(modes[1:]) == {"halving"}
    confirmed = [f["nodes"] for f in summary["figures"] if f["mode"] == "confirm"]
    assert any("node-11" in pair for pair in confirmed)
    assert len(summary["rounds"]) <= 1 + across_run.across_schedule.rounds("halving", 16) + 1
    assert "under t's floor 340.0 GB/s (a site's)" in summary["judgement"]["whole_set"]["reason"]


def test_the_report_shows_the_pairs_and_the_named_node(fake_mpirun, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_BAD", "node-05")
    hosts = fake_mpirun / "hosts.txt"
    hosts.write_text("".join(f"node-{i:02d}\n" for i in range(1, 7)))
    results = fake_mpirun / "results"
    assert cli.main(["across", "--hosts", str(hosts), "--launcher", "mpirun", "--results", str(results)]) == 1
    (summary,) = (results / "_across").glob("*/across.json")
    runs = fake_mpirun / "runs"
    runs.mkdir()
    (runs / "cpu_gemm.json").write_text(next(H100_RUNS.rglob("cpu_gemm.json")).read_text())  # a recorded document
    page_path = fake_mpirun / "r.html"
    assert cli.main(["report", "--output", str(page_path), "--across", str(summary), f"h100={runs}"]) == 0
    page = page_path.read_text()
    section = page[page.index("id='across'") : page.index("id='per-gpu'")]
    assert "node-05: pair" in section and "FAIL" in section and "data:image/png;base64," in section
    capsys.readouterr()
    bad = fake_mpirun / "bad.json"
    bad.write_text('{"schema": "x"}')
    assert cli.main(["report", "--output", str(page_path), "--across", str(bad), f"h100={runs}"]) == 4
    assert "not a gpuaccept across summary" in capsys.readouterr().err


def test_the_document_reader_names_what_failed(tmp_path):
    """gpuaccept-nccl's multi-process layout (docs/benchmark-json.md), built here: a rank's error fails its group
    only, an emulated host reads back as its node, and a run that measured nothing fails every group with why."""
    def group(i, hosts, bw):
        return {"group": i, "label": "+".join(f"{r}@{h}" for r, h in enumerate(hosts)), "ranks": [2 * i, 2 * i + 1],
                "hosts": hosts, "rail": None, "waived": {},
                "metrics": {"allreduce_busbw_gbps_max": {"value": bw, "unit": "GB/s"},
                            "allreduce_latency_us": {"value": 20.0, "unit": "us"}}}  # fmt: skip

    doc = {"parameters": {"mode": "multi_process"}, "verification": {"passed": True, "failures": []},
           "results": {"ranks": [{"rank": 3, "hostname": "n4", "errors": ["NCCL error: remote process exited"]}],
                       "groups": [group(0, ["emuhost0", "emuhost1"], 48.0), group(1, ["emuhost2", "emuhost3"], 12.0)]}}
    path = tmp_path / "001-quick.json"
    path.write_text(json.dumps(doc))
    got = across_doc.read(path, [("a", "b"), ("c", "d")], "quick", aliases={f"emuhost{i}": n for i, n in
                                                                           enumerate("abcd")})  # fmt: skip
    assert [f.nodes for f in got] == [("a", "b"), ("c", "d")]
    assert got[0].error == "" and got[0].busbw_gbps == 48.0
    assert got[1].error == "rank 3 (n4): NCCL error: remote process exited"
    path.write_text(json.dumps({**doc, "errors": ["rank 1 (n2): bootstrap: rank 0 never answered"],
                                "results": {"ranks": [], "groups": []}}))
    got = across_doc.read(path, [("a", "b")], "quick")
    assert "no group measured: rank 1 (n2): bootstrap: rank 0 never answered" in got[0].error
    got = across_doc.read(tmp_path / "none.json", [("a", "b")], "quick")
    assert got[0].busbw_gbps is None and "none.json" in got[0].error


def test_a_slow_rail_across_8_gpus_a_node(fake_mpirun, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_BAD_RAIL", "5")
    hosts = fake_mpirun / "hosts.txt"
    hosts.write_text("".join(f"node-{i:02d}\n" for i in range(1, 5)))
    results = fake_mpirun / "results"
    rc = cli.main(["across", "--hosts", str(hosts), "--launcher", "mpirun", "--ranks-per-node", "8", "--modes",
                   "rail,world,quick", "--on-failure", "none", "--results", str(results)])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 1, out
    (summary,) = (results / "_across").glob("*/across.json")
    doc = json.loads(summary.read_text())
    rails = doc["judgement"]["rails"]
    assert [r["subject"] for r in rails] == [f"rail {k}" for k in range(8)]
    assert [r["subject"] for r in rails if r["status"] == "fail"] == ["rail 5"]
    assert doc["judgement"]["named"] == [] and "rail 5 all-reduce bus bandwidth" in out
    assert doc["rounds"][0]["argv"][:5] == ["mpirun", "--hostfile", doc["rounds"][0]["argv"][2], "-np", "32"]
