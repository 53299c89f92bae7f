"""Every subcommand, given a missing file, a directory where a file belongs (or a file where a directory
belongs), and garbage: exit status 4 (bad input; `gpuaccept sample` 127, a command that cannot start), one line
on stderr that names the path, and no traceback. Also: every option has help text."""

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import H100_COMMISSION, REFERENCE_DIR

from gpuaccept import cli

ROOT = Path(__file__).resolve().parents[1]
MISSING, DIRECTORY, GARBAGE, NOT_AN_OBJECT, GARBAGE_TREE = (
    "missing", "directory", "garbage", "not-an-object", "garbage-tree")


@pytest.fixture(scope="module")
def bad(tmp_path_factory) -> dict[str, Path]:
    """One path of each kind: missing, an empty directory, binary garbage, JSON that is not an object, and a
    results tree whose verdict.json and benchmark document are garbage."""
    tmp = tmp_path_factory.mktemp("bad")
    (tmp / "dir").mkdir()
    (tmp / "garbage").write_bytes(b"\x00\xff\xfegarbage{[\n")
    (tmp / "list.json").write_text("[1, 2]\n")
    run = tmp / "tree" / "n1" / "20261123T000000Z-nightly"
    run.mkdir(parents=True)
    (run / "verdict.json").write_bytes(b"\x00\xffnot json")
    (run / "gemm.json").write_bytes(b"\x00\xffnot json")
    (tmp / "hosts.txt").write_text("node-01\nnode-02\n")
    return {MISSING: tmp / "missing.json", DIRECTORY: tmp / "dir", GARBAGE: tmp / "garbage",
            NOT_AN_OBJECT: tmp / "list.json", GARBAGE_TREE: tmp / "tree", "out": tmp / "out",
            "hosts": tmp / "hosts.txt"}


FILE_KINDS = (MISSING, DIRECTORY, GARBAGE, NOT_AN_OBJECT)
DIR_KINDS = (MISSING, GARBAGE, GARBAGE_TREE)
BASELINE = ["baseline", "--node-type", "x", "--description", "x", "--machine", "x", "--evidence", "x",
            "--source-id", "x"]
# (subcommand and arguments with {bad} for the path under test, the kinds it is tried with, exit status)
CASES = [
    (["detect", "--facts", "{bad}", "--reference-dir", str(REFERENCE_DIR)], FILE_KINDS, 4),
    (["detect", "--reference-dir", "{bad}", "--expect", "h100_sxm5_80gb",
      "--facts", str(H100_COMMISSION / "node-facts.json")], (MISSING, GARBAGE), 4),
    (["references", "--reference-dir", "{bad}"], (MISSING, GARBAGE, DIRECTORY), 4),
    (["summarize", "--run-dir", "{bad}", "--node-type", "h100_sxm5_80gb", "--suite", "nightly",
      "--facts", str(H100_COMMISSION / "node-facts.json")], (MISSING, GARBAGE), 4),
    (["show", "{bad}"], (*FILE_KINDS, GARBAGE_TREE), 4),
    (["show", "{tree}", "--newer-than", "{bad}"], (MISSING,), 4),
    ([*BASELINE, "{bad}"], (MISSING, GARBAGE, DIRECTORY, GARBAGE_TREE), 4),
    (["compare", "{bad}"], (*FILE_KINDS, GARBAGE_TREE), 4),
    (["report", "--output", "{out}/r.html", "{bad}"], (MISSING, GARBAGE, DIRECTORY), 4),
    (["fleet", "{bad}"], (MISSING, GARBAGE, GARBAGE_TREE), 4),
    (["fleet", "{dir}", "--inventory", "{bad}"], FILE_KINDS, 4),
    (["slurm-config", "--inventory", "{bad}", "--output", "{out}/c.py"], FILE_KINDS, 4),
    (["slurm-judge", "--inventory", str(ROOT / "inventories/example"), "--report", "{bad}", "--results", "{out}",
      "--run-id", "r1", "--suite", "nightly"], FILE_KINDS, 4),
    (["crosscheck", "--bw", "{bad}"], FILE_KINDS, 4),
    (["health", "--node-type", "h100_sxm5_80gb", "--output", "{out}/h.json", "--reference-dir", "{bad}"],
     (MISSING, GARBAGE), 4),
    (["powercheck", "--gemm", "{bad}", "--output", "{out}/p.json"], (MISSING, DIRECTORY, GARBAGE), 4),
    (["facts", "--output", "{bad}"], (DIRECTORY,), 4),
    (["sample", "--output", "{out}/s.json", "--", "{bad}"], (MISSING, DIRECTORY, GARBAGE), 127),
    (["across", "--hosts", "{bad}", "--results", "{out}"], FILE_KINDS, 4),
    (["across", "--hosts", "{hosts}", "--node-type", "h100_sxm5_80gb_x8",
      "--floors", "{bad}", "--results", "{out}"], FILE_KINDS, 4),
]
PARAMS = [pytest.param(argv, kind, rc, id=f"{argv[0]}-{argv[1 if argv[0] != 'baseline' else -1]}-{kind}")
          for argv, kinds, rc in CASES for kind in kinds]


@pytest.mark.parametrize(("argv", "kind", "status"), PARAMS)
def test_bad_path_is_named_in_one_line(bad, argv, kind, status, capsys):
    path = str(bad[kind])
    args = [a.format(bad=path, out=bad["out"], dir=bad[DIRECTORY], tree=bad[GARBAGE_TREE], hosts=bad["hosts"])
            for a in argv]
    assert cli.main(args) == status
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    named = path if kind != GARBAGE_TREE else str(bad[GARBAGE_TREE])
    assert named in lines[0], err
    assert lines[0].startswith(f"gpuaccept {argv[0]}: " if argv[0] != "sample" else "gpuaccept-sample: "), err


def test_show_newer_than_a_missing_file_has_no_traceback(tmp_path):
    """The issue's example, as a user runs it: `gpuaccept show --newer-than x results`."""
    res = subprocess.run([sys.executable, "-m", "gpuaccept", "show", "--newer-than", str(tmp_path / "x"),
                          str(tmp_path)], capture_output=True, text=True, check=False)
    assert res.returncode == 4
    assert res.stderr == f"gpuaccept show: --newer-than {tmp_path / 'x'}: No such file or directory\n"


def test_a_mistyped_option_is_a_usage_error_without_traceback():
    res = subprocess.run([sys.executable, "-m", "gpuaccept", "show", "--newer-then", "x", "results"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 2
    assert "unrecognized arguments: --newer-then" in res.stderr and "Traceback" not in res.stderr


def subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_option_and_argument_has_help():
    missing = []
    for name, sp in subparsers(cli.parser()).items():
        for action in sp._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not action.help:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, f"options without --help text: {', '.join(missing)}"


def test_every_subcommand_has_help():
    p = cli.parser()
    action = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    described = {c.dest for c in action._choices_actions if c.help}
    assert described == set(subparsers(p)), set(subparsers(p)) - described


def test_help_runs_for_every_subcommand(capsys):
    for name in subparsers(cli.parser()):
        with pytest.raises(SystemExit) as exit_:
            cli.main([name, "--help"])
        assert exit_.value.code == 0
        assert f"usage: gpuaccept {name}" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["compare", "--top", "-3", "{tree}"], "--top -3: give how many to list"),
    (["sample", "--interval", "-1", "--output", "{out}/s.json", "--", "true"], "--interval -1.0: must be between"),
    (["detect", "--expect", "../x", "--facts", str(H100_COMMISSION / "node-facts.json")], "is not a valid name"),
])
def test_bad_values_are_named(bad, argv, message, capsys):
    args = [a.format(out=bad["out"], tree=bad[GARBAGE_TREE]) for a in argv]
    assert cli.main(args) == 4
    err = capsys.readouterr().err
    assert err.startswith(f"gpuaccept {argv[0]}: ") and message in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("kind", FILE_KINDS)
def test_summarize_with_bad_facts_writes_a_rejected_verdict_naming_them(bad, kind, tmp_path, capsys):
    """An input error of a run that exists is the node's verdict (REJECTED, the file named), not a crash."""
    run = tmp_path / "run"
    run.mkdir()
    args = ["summarize", "--run-dir", str(run), "--node-type", "h100_sxm5_80gb", "--suite", "nightly",
            "--facts", str(bad[kind])]
    assert cli.main(args) == 1
    out = capsys.readouterr().out
    assert "REJECTED" in out and str(bad[kind]) in out
    assert '"verdict": "fail"' in (run / "verdict.json").read_text() and (run / "gpuaccept.prom").exists()
