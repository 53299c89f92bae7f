"""scripts/accept.sh (`make accept`): one exit-status contract with gpuaccept run (docs/exit-status.md): 0 accepted,
1 rejected, 3 cannot judge, 4 bad input, and a closing line that says which, the last line of `make accept` too
(which exits 0 after it), naming the log file that holds Ansible's output. Run on a
copy of the script with stand-ins: scripts/venv.sh, ansible-playbook (it leaves what gpuaccept run would leave,
as tmp_path/play says) and gpuaccept show."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import NODE_TYPE_EXISTS, REFERENCE_DIR, ROOT

NO_GPU = ("no NVIDIA GPU/driver on localhost: nvidia-smi not found (no NVIDIA kernel module): install the driver "
          "with playbooks/provision.yml, or run on a GPU node")  # fmt: skip


@pytest.fixture
def tree(tmp_path):
    for d in ("scripts", ".venv/bin", "playbooks", "inventories/local", "reference_values", "results"):
        (tmp_path / d).mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "accept.sh", tmp_path / "scripts" / "accept.sh")
    for suite in ("commission", "nightly", "evaluation"):
        (tmp_path / "playbooks" / f"{suite}.yml").write_text("---\n")
    for name in ("h100_sxm5_80gb", "h200", "gpus/h100_sxm5_80gb"):
        (tmp_path / "reference_values" / f"{name}.yaml").parent.mkdir(exist_ok=True)
        (tmp_path / "reference_values" / f"{name}.yaml").write_text("node_type: x\n")

    def script(path: str, body: str) -> None:
        (tmp_path / path).write_text(f"#!/bin/bash\n{body}\n")
        (tmp_path / path).chmod(0o755)

    script("scripts/venv.sh", "exit 0")
    # The play: tmp_path/play holds "<exit-status or -> <playbook rc> [a line to print]".
    script(".venv/bin/ansible-playbook", f"""echo "ansible-playbook $*" >> {tmp_path}/calls
read status rc line < {tmp_path}/play
[ -n "$line" ] && echo "fatal: [localhost]: FAILED! => msg: '$line'"
if [ "$status" != - ]; then
  mkdir -p results/localhost/20261125T000000Z-commission
  echo "$status word" > results/localhost/20261125T000000Z-commission/exit-status
fi
exit $rc""")
    script(".venv/bin/gpuaccept", 'echo "TABLE $*"')
    return tmp_path


def accept(tree: Path, play: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    (tree / "play").write_text(play + "\n")
    return subprocess.run([str(tree / "scripts" / "accept.sh"), *args], capture_output=True, text=True,
                          env={**os.environ, **env}, check=False, timeout=60)  # fmt: skip


@pytest.mark.parametrize(
    ("play", "status", "last"),
    [
        ("0 0", 0, "accept: exit 0 (accepted)"),
        ("1 2", 1, "accept: exit 1 (rejected)"),
        ("3 2", 3, "accept: exit 3 (cannot judge)"),
        (f"- 2 {NO_GPU}", 3, f"accept: exit 3 (cannot judge): {NO_GPU}"),
        ("- 2", 3, "accept: exit 3 (cannot judge): the playbook stopped before a verdict (exit 2)"),
        ("0 2", 3, "accept: exit 3 (cannot judge): the playbook failed after the verdict (exit 2)"),
    ],
)
def test_the_exit_status_and_the_closing_line(tree, play, status, last):
    res = accept(tree, play)
    assert res.returncode == status, res.stdout + res.stderr
    log = r"results/accept-\d{8}T\d{6}Z-commission\.log"
    closing = re.fullmatch(rf"{re.escape(last)} \(details: ({log})\)", res.stdout.splitlines()[-1])
    assert closing, res.stdout
    # Ansible's output in the log it names, not on the terminal
    assert "ansible-playbook" not in res.stdout and "fatal:" not in res.stdout
    if play.startswith("- 2 "):
        assert f"msg: '{NO_GPU}'" in (tree / closing.group(1)).read_text()
    # The table once, from gpuaccept show, when there is a verdict; without one, one line
    assert res.stdout.count("TABLE show") == (0 if play.startswith("-") else 1)
    if play.startswith("-"):
        assert len(res.stdout.splitlines()) == 1, res.stdout


def test_make_accept_ends_with_the_accept_line_and_exits_0(tree):
    """make's own exit status can say only 0 or 2: the line says which status it was, and nothing follows it."""
    shutil.copy(ROOT / "Makefile", tree / "Makefile")
    (tree / "play").write_text(f"- 2 {NO_GPU}\n")
    res = subprocess.run(["make", "-s", "accept"], cwd=tree, capture_output=True, text=True, check=False, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines()[-1].startswith(f"accept: exit 3 (cannot judge): {NO_GPU} (details: ")
    assert len(res.stdout.splitlines()) == 1 and "Error" not in res.stdout + res.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nightlly"], "unknown suite 'nightlly': the suites are commission nightly evaluation"),
        (["commission", "inventories/nope"], "no inventory inventories/nope"),
        (["commission", "inventories/local", "-e", "gpuaccept_node_type=h100_pcie"],
         "unknown node type 'h100_pcie': no reference_values/h100_pcie.yaml; known node types: h100_sxm5_80gb, h200"),
        (["commission", "inventories/local", "-egpuaccept_node_type=H100 gpuaccept_serial=2"],
         "unknown node type 'H100'"),
        (["commission", "inventories/local", "-e", "gpuaccept_node_type=nosuch_x3"],
         "unknown node type 'nosuch_x3': no reference_values/nosuch_x3.yaml; known node types: h100_sxm5_80gb, h200; "
         "<sku>_x<count> for the known GPU SKUs: h100_sxm5_80gb (or auto)"),
        (["commission", "inventories/local", "-e", "gpuaccept_node_type=h100_sxm5_80gb_x0"],
         "unknown node type 'h100_sxm5_80gb_x0'"),
        (["commission", "inventories/local", "-e", "gpuaccept_node_type=../reference_values/h200"],
         "unknown node type '../reference_values/h200'"),
    ],
)
def test_bad_input_stops_before_anything_runs(tree, args, says):
    res = accept(tree, "0 0", *args)
    assert res.returncode == 4 and f"accept: exit 4 (bad input): {says}" in res.stdout, res.stdout + res.stderr
    assert not (tree / "calls").exists()


def test_a_known_node_type_reaches_the_playbook(tree):
    res = accept(tree, "0 0", "commission", "inventories/local", "-e", "gpuaccept_node_type=h200")
    assert res.returncode == 0, res.stdout + res.stderr
    call = (tree / "calls").read_text()
    assert "-e gpuaccept_node_type=h200" in call and "host_only" not in call


@pytest.mark.parametrize(("name", "exists"), NODE_TYPE_EXISTS.items())
def test_the_node_types_it_takes_are_those_that_exist(tree, name, exists):
    """The same answer as gpuaccept.references.node_type_exists, on the shipped reference files' names."""
    refs = tree / "reference_values"
    shutil.rmtree(refs)
    (refs / "gpus").mkdir(parents=True)
    for path in [*REFERENCE_DIR.glob("*.yaml"), *REFERENCE_DIR.glob("gpus/*.yaml")]:
        (refs / path.relative_to(REFERENCE_DIR)).write_text("node_type: x\n")
    res = accept(tree, "0 0", "commission", "inventories/local", "-e", f"gpuaccept_node_type={name}")
    assert res.returncode == (0 if exists else 4), res.stdout + res.stderr
    assert (tree / "calls").exists() is exists


def test_a_known_sku_times_a_count_reaches_the_playbook(tree):
    """``<sku>_x<count>`` of a known GPU SKU is a node type (gpuaccept.references.node_type_exists)."""
    res = accept(tree, "0 0", "commission", "inventories/local", "-e", "gpuaccept_node_type=h100_sxm5_80gb_x3")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "-e gpuaccept_node_type=h100_sxm5_80gb_x3" in (tree / "calls").read_text()


def test_the_burnin_suite_and_its_length_reach_the_playbook(tree):
    (tree / "playbooks" / "burnin.yml").write_text("---\n")
    res = accept(tree, "0 0", "burnin", GPUACCEPT_BURNIN_MINUTES="2")
    assert res.returncode == 0, res.stdout + res.stderr
    call = (tree / "calls").read_text()
    assert "playbooks/burnin.yml" in call and "-e gpuaccept_burnin_minutes=2" in call


def test_the_repeat_count_reaches_the_playbook_and_a_bad_one_is_refused(tree):
    """GPUACCEPT_REPEAT=1 make accept SUITE=evaluation: the quick evaluation (one pass instead of the playbook's 5)."""
    (tree / "playbooks" / "evaluation.yml").write_text("---\n")
    res = accept(tree, "0 0", "evaluation", GPUACCEPT_REPEAT="1")
    assert res.returncode == 0, res.stdout + res.stderr
    call = (tree / "calls").read_text()
    assert "playbooks/evaluation.yml" in call and "-e gpuaccept_suite_repeat=1" in call
    (tree / "calls").unlink()
    res = accept(tree, "0 0", "evaluation", GPUACCEPT_REPEAT="once")
    assert res.returncode == 4, res.stdout + res.stderr
    assert "GPUACCEPT_REPEAT='once': give how many times to run the suite, 1 to 99" in res.stdout
    assert not (tree / "calls").exists()


def test_the_checks_progress_is_shown_as_the_play_runs(tree):
    """gpuaccept run's progress.log, printed while the play still runs (the play itself prints nothing then)."""
    run = tree / "results" / "localhost" / "20261125T000000Z-nightly"
    play = tree / ".venv" / "bin" / "ansible-playbook"
    play.write_text(f"""#!/bin/bash
mkdir -p {run}
echo "gpuaccept: [1/2] GpuHealth started; 0 s elapsed" >> {run}/progress.log
sleep 3
echo "PLAY STILL RUNNING"
echo "gpuaccept: [1/2] GpuHealth OK in 3 s; 3 s elapsed" >> {run}/progress.log
echo "0 accepted" > {run}/exit-status
exit 0
""")
    res = accept(tree, "0 0", "nightly")
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout.splitlines()
    started = out.index("gpuaccept: [1/2] GpuHealth started; 0 s elapsed")
    assert started < out.index("gpuaccept: [1/2] GpuHealth OK in 3 s; 3 s elapsed")
    # the play's own output goes to the log the closing line names, not to the terminal
    closing = re.fullmatch(r"accept: exit 0 \(accepted\) \(details: (\S+)\)", out[-1])
    assert closing and "PLAY STILL RUNNING" not in out
    assert "PLAY STILL RUNNING" in (tree / closing.group(1)).read_text()


def test_the_tool_environments_output_goes_to_the_log_too(tree):
    """A first run makes the tool environment: its output goes to the same log, and a failure there is one line."""
    (tree / "scripts" / "venv.sh").write_text("#!/bin/bash\necho 'Creating the tool environment'\necho 'pip: no' >&2\n"
                                              "exit 2\n")  # fmt: skip
    res = accept(tree, "0 0")
    assert res.returncode == 3 and len(res.stdout.splitlines()) == 1, res.stdout
    closing = re.fullmatch(r"accept: exit 3 \(cannot judge\): the tool environment could not be made "
                           r"\(scripts/venv\.sh\) \(details: (\S+)\)", res.stdout.strip())  # fmt: skip
    assert closing, res.stdout
    assert (tree / closing.group(1)).read_text() == "Creating the tool environment\npip: no\n"
    assert not (tree / "calls").exists()
