"""gpuaccept show and gpuaccept report read what the project records: a run archive (a call's .tar holding a
results.tar.gz, as docs/evidence keeps them) or an evidence folder of them, and say what they found; a folder with
no judged run says so without speaking of a playbook that did not run."""

import tarfile

from conftest import FIXTURES

from gpuaccept.cli import main
from gpuaccept.results import report

EVIDENCE = FIXTURES / "evidence_h200x2_one_revision"  # the evidence folder's three call archives


def test_show_opens_a_call_archive_two_levels_down(capsys):
    assert main(["show", str(EVIDENCE / "call-000458.tar")]) == 0
    out = capsys.readouterr().out
    assert "ACCEPTED" in out
    assert out.rstrip().endswith("1 judged run found in 3 archives (call-000458.tar, logs.tar.gz, results.tar.gz)")


def test_report_reads_a_results_archive(tmp_path, capsys):
    start1 = FIXTURES / "multigpu_h200x2_one_revision" / "start1-results.tar.gz"
    group = report.load_group(f"x2={start1}")
    assert len(group.verdicts) == 3 and group.label == "x2" and group.archives == ["start1-results.tar.gz"]
    assert main(["report", "--output", str(tmp_path / "r.html"), f"x2={start1}"]) == 0
    assert "x2 (18 documents, 3 verdicts, from 1 archive: start1-results.tar.gz)" in capsys.readouterr().out


def test_show_opens_an_evidence_folder_and_shows_each_run_once(capsys):
    assert main(["show", str(EVIDENCE)]) == 0
    out = capsys.readouterr().out
    runs = [line for line in out.splitlines() if line.startswith("run:")]
    assert len(runs) == 9 and f"run:     {EVIDENCE}: call-000458.tar/results.tar.gz/results/localhost/" in out
    assert out.rstrip().endswith("1 of them kept in more than one archive, shown once")
    assert out.count("ACCEPTED") >= 9


def test_a_folder_without_a_verdict_names_no_playbook(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    assert main(["show", str(tmp_path)]) == 4
    err = capsys.readouterr().err
    assert "no verdict.json under it" in err and "playbook" not in err


def test_a_damaged_archive_is_named(tmp_path, capsys):
    bad = tmp_path / "run.tar.gz"
    bad.write_bytes(b"not a tar")
    assert main(["show", str(bad)]) == 4
    assert f"{bad}: not a readable tar archive" in capsys.readouterr().err
    assert tarfile.is_tarfile(EVIDENCE / "call-000458.tar")


def test_the_report_names_the_node_as_the_operator_names_it(tmp_path):
    out = tmp_path / "r.html"
    start1 = FIXTURES / "multigpu_h200x2_one_revision" / "start1-results.tar.gz"
    assert main(["report", "--output", str(out), "--node-name", "x2=gpu-node-17", f"x2={start1}"]) == 0
    page = out.read_text()
    assert "node <span class='node-name'>gpu-node-17</span>" in page and "ACCEPTED</span> 3 runs of gpu-node-17" in page
    assert main(["report", "--output", str(out), f"x2={start1}"]) == 0  # by default: the host name in the facts
    assert "node <span class='node-name'>vm</span>" in out.read_text()
    assert main(["report", "--output", str(out), "--node-name", "nope=a", f"x2={start1}"]) == 4
