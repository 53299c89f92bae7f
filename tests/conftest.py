"""Shared paths for the tests. Outputs recorded on the GPU machines are read from their copies under
tests/fixtures (each folder's README names the original under docs/evidence, the machine, the date and every
file's sha256): the evidence is history, not input (issue 26 item 5; tests/test_fixtures_local.py keeps it so)."""

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import inputs as third_party
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_DIR = ROOT / "reference_values"
#: Node types of REFERENCE_DIR that exist and that do not, as every gate must answer:
#: gpuaccept.references.node_type_exists and the playbooks' preflight (tests/test_node_types.py),
#: gpuaccept run (tests/test_run.py) and scripts/accept.sh (tests/test_accept.py).
NODE_TYPE_EXISTS = {
    "h100_sxm5_80gb": True,  # a node type file
    "h100_sxm5_80gb_x2": True,  # a node type file of that name
    "h100_sxm5_80gb_x3": True,  # no file: <sku>_x<count> of a known GPU SKU
    "h200_x1": True,
    "a100_sxm4_80gb_x3": True,
    "nosuch_x3": False,  # no such GPU SKU
    "h100_sxm5_80gb_x0": False,  # no GPU
    "h100_sxm5_80gb_x03": False,
    "h100_sxm5_80gb_x10000": False,
    "h100_sxm5_80gb_x": False,
    "h200_x1_x2": False,  # the SKU would be h200_x1
}



# Third-party inputs (tests/inputs.toml): never in the repository; an operator puts them under $GPUACCEPT_INPUTS
# (default: shared/ beside the clone). A test that needs one calls needs_input(), which checks every file's sha256.
INPUTS = third_party.root(ROOT)
NAMD3_LOGS = third_party.where(third_party.load()["namd3-apoa1-logs"], INPUTS)


def needs_input(name: str, file: str | None = None) -> Path:
    """The third-party input ``name`` of tests/inputs.toml (``file``: one file of it), every file of it checked
    against its sha256. Absent: the test is skipped with a reason naming the input, where it was looked for and
    where to get it (scripts/test.sh's summary counts these). Another file: the test fails saying so."""
    try:
        path, absent = third_party.check(name, INPUTS)
    except third_party.InputError as err:
        pytest.fail(str(err), pytrace=False)
    if absent:
        pytest.skip(absent)
    return path / file if file else path


# One Slurm cluster at a time on this machine: scripts/test.sh runs the modules on several pytest-xdist workers
# (--dist loadfile: each module on one worker), and a module that starts Slurm's daemons holds this lock while
# they run (``pytestmark = pytest.mark.usefixtures("one_slurm_cluster")``).
SLURM_LOCK = Path(tempfile.gettempdir()) / "gpuaccept-slurm-daemons.lock"


@pytest.fixture(scope="module")
def one_slurm_cluster():
    with open(SLURM_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        yield


FIXTURES = ROOT / "tests" / "fixtures"
# Copies of the outputs recorded on the GPU machines that the tests read, at their paths below docs/evidence
# (tests/fixtures/README.md; each folder's README names its origin; docs/evidence/README.md says how each was made).
RECORDED = FIXTURES / "recorded"
H100_SMOKE = RECORDED / "2026-11-22-h100-smoke"
H100_RUNS = RECORDED / "2026-11-22-h100-accept" / "results"
# The merged harness's commission runs on fresh H100 VMs (the H100 references' runs 6 and 7).
H100_INTEGRATED = [
    run
    for part in ("first", "second")
    for run in sorted((RECORDED / "2026-11-22-h100-integrated" / part).glob("results/localhost/*-commission"))
]
# The merged harness's commission run that was accepted (not among the references' runs).
H100_ACCEPTED_ALL = next((RECORDED / "2026-11-22-h100-integrated" / "fourth").glob("results/localhost/*-commission"))
H100_COMMISSION = H100_RUNS / "20261122T052346Z-commission"
H100_DEGRADED = RECORDED / "2026-11-22-h100-degraded" / "20261122T053501Z-commission"
H200_RUNS = RECORDED / "2026-11-22-h200" / "runs"
H200X2 = RECORDED / "2026-11-22-h200x2"


# The checks of the runs recorded for the foundation (H100 and H200 accept/evaluation, the degraded H100).
RECORDED_CHECKS = ("bandwidth", "gemm", "cpu_gemm")
# Checks whose references have since been derived from another setup than the recorded runs': the host GEMM's
# from Intel MKL (issue 15), where those runs had Debian's OpenBLAS. Judging a recorded run as a whole reports
# them unjudged (tests/test_recorded_outputs.py judges those runs' host GEMM against today's MKL figures on purpose).
REDERIVED_CHECKS = ("cpu_gemm",)


def references_as_recorded(tmp_path: Path, checks=RECORDED_CHECKS) -> Path:
    """A copy of reference_values with only the checks that existed when a recorded run was made (later checks,
    e.g. 'hplstyle', 'health', 'power', have their own evidence and tests), for tests that judge such a run as a
    whole: judged against today's files, it would be rejected for the checks it could not have run. The metrics
    of checks whose references were re-derived from another setup since (REDERIVED_CHECKS) are informational. Both
    layers are copied: the node type files and the GPU SKU files under gpus/."""
    out = tmp_path / "references-as-recorded"
    (out / "gpus").mkdir(parents=True, exist_ok=True)
    for path in [*REFERENCE_DIR.glob("*.yaml"), *REFERENCE_DIR.glob("gpus/*.yaml")]:
        doc = yaml.safe_load(path.read_text())
        doc["checks"] = {k: v for k, v in doc.get("checks", {}).items() if k in checks}
        for check in set(doc["checks"]) & set(REDERIVED_CHECKS):
            doc["checks"][check] = {
                name: {"informational": "re-derived since from another setup (tests/conftest.py)",
                       "unit": entry["unit"], "source": entry["source"]}
                for name, entry in doc["checks"][check].items()
            }  # fmt: skip
        used = {m.get("source") for c in doc["checks"].values() for m in c.values()}
        used.add((doc.get("health") or {}).get("source"))
        doc["sources"] = {k: v for k, v in doc.get("sources", {}).items() if k in used}
        (out / path.relative_to(REFERENCE_DIR)).write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def shipped(node_type: str) -> dict:
    """A shipped node type as YAML, with its GPU SKU's layer (reference_values/gpus/<sku>.yaml) merged in:
    ``checks`` and ``sources`` of both files, for tests that compare raw entries."""
    doc = yaml.safe_load((REFERENCE_DIR / f"{node_type}.yaml").read_text())
    if "gpu" not in doc:
        return doc
    gpu = yaml.safe_load((REFERENCE_DIR / "gpus" / f"{doc['gpu']}.yaml").read_text())
    checks = {check: dict(metrics) for check, metrics in gpu["checks"].items()}
    for check, metrics in (doc.get("checks") or {}).items():
        checks.setdefault(check, {}).update(metrics)
    return {**doc, "checks": checks, "sources": {**gpu["sources"], **doc["sources"]}}


def hpl_judged(out, expected_runs: int | None = None) -> list[str]:
    """What the judge says of an HPL output: the probe's document of it (gpuaccept.probe.hpl.to_document) through
    the judge's document and HPL rules, the one place that decides."""
    from gpuaccept.judge import rules  # noqa: PLC0415
    from gpuaccept.probe import hpl  # noqa: PLC0415

    doc = hpl.to_document(out, "hpl", 1, expected_runs=expected_runs)
    path = Path(out.source or "hpl.out")
    return rules.document_problems(doc, path, None) + rules.hpl_problems(doc, path)


def agrees(derived: dict, shipped_entry: dict, rel: float = 0.0) -> list[str]:
    """How a proposal's entry (gpuaccept baseline) disagrees with a shipped one: owner, unit, source, whether it is
    judged and how (a value with a tolerance, a link fraction, informational), and a judged value within ``rel``
    (the shipped GPU bands rest on more runs than one proposal, docs/evidence/2026-11-25-bands). Empty: agrees."""
    problems = []
    for key in ("owner", "unit", "source", "link_fraction"):
        if derived.get(key) != shipped_entry.get(key):
            problems.append(f"{key}: {derived.get(key)!r} != {shipped_entry.get(key)!r}")
    if ("informational" in derived) != ("informational" in shipped_entry):
        problems.append("judged in one, informational in the other")
    if "value" in shipped_entry and "informational" not in shipped_entry:
        v, s = derived.get("value"), shipped_entry["value"]
        if v is None or abs(v - s) > rel * abs(s) + 1e-12:
            problems.append(f"value {v} != {s} (within {rel:.1%})")
    return problems


def band_holds(entry: dict, values: list[float], loss: float = 0.10) -> list[str]:
    """Whether a judged shipped entry passes each healthy run and, where its band says it catches a loss, fails
    each run made ``loss`` worse. Empty: it holds."""
    value, problems = entry["value"], []
    if "lower" in entry:
        floor = value * (1 - entry["lower"])
        problems += [f"healthy {x:.6g} below the floor {floor:.6g}" for x in values if x < floor]
        if "fails each" in entry.get("band", ""):
            problems += [f"{x:.6g} x {1 - loss:g} passes the floor {floor:.6g}" for x in values
                         if x * (1 - loss) >= floor]  # fmt: skip
    else:
        ceil = value * (1 + entry["upper"])
        problems += [f"healthy {x:.6g} above the ceiling {ceil:.6g}" for x in values if x > ceil]
        if "fails each" in entry.get("band", ""):
            problems += [f"{x:.6g} x {1 + loss:g} passes the ceiling {ceil:.6g}" for x in values
                         if x * (1 + loss) <= ceil]  # fmt: skip
    return problems


def suite_bench_opts(suite: str, check: str) -> list[str]:
    """The benchmark options ``gpuaccept run`` gives ``check`` in ``suite`` (run.SUITE_OPTIONS' ``-S
    <check>.bench_opts=...``), split at its commas as ReFrame splits a list variable."""
    from gpuaccept import run  # noqa: PLC0415

    (opts,) = [v for v in run.SUITE_OPTIONS[suite] if v.startswith(f"{check}.bench_opts=")]
    return opts.partition("=")[2].split(",")


NVCC_PATH = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


@pytest.fixture(scope="module")
def nccl_tool(tmp_path_factory) -> Path:
    """gpuaccept-nccl built with CI's nvcc (sm_90), once per test module that asks for it."""
    if not Path(NVCC_PATH).exists():
        pytest.fail("nvcc not found: CI's machine has the CUDA toolkit; install it to run these tests")
    build = tmp_path_factory.mktemp("nccl")
    env = {**os.environ, "PATH": f"{Path(NVCC_PATH).parent}:{os.environ['PATH']}"}
    res = subprocess.run(["make", "-C", str(ROOT / "reframe_checks" / "src"), f"BUILD_DIR={build}", "GIT_REV=test",
                          "CUDA_ARCH=-gencode=arch=compute_90,code=sm_90", f"{build}/gpuaccept-nccl"],
                         capture_output=True, text=True, check=False, timeout=600, env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return build / "gpuaccept-nccl"
