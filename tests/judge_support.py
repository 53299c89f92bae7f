"""Helpers for the judge's tests: the references a recorded verdict was judged against, rebuilt from its rows."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tarfile
import tempfile
from pathlib import Path

import yaml
from conftest import RECORDED, REFERENCE_DIR

from gpuaccept import layout, metric_table
from gpuaccept.judge import summarize, verdict
from gpuaccept.references import SCHEMA_V1, MetricReference, load_node_type

DERIVED = verdict.DERIVED_METRICS

# Where ReFrame leaves each check's output in a run directory.
OUT = Path("reframe") / "output" / "gpuaccept" / "node" / "builtin"
# The H100's accepted evaluation run with every workload (docs/evidence/2026-11-23-h100-evaluation), and each check's
# document in it: what the rule-by-rule tests copy and change one thing of.
ACCEPTED_EVALUATION = RECORDED / "2026-11-23-h100-evaluation" / "accept" / "results" / "20261123T174108Z-evaluation"
DOC = {
    "bandwidth": OUT / "GpuBandwidth" / "bandwidth.json",
    "gemm": OUT / "GpuGemm" / "gemm.json",
    "health": OUT / "GpuHealth" / "health.json",
    "power": OUT / "GpuPower" / "power_check.json",
    "hplstyle": OUT / "GpuHplStyle" / "hplstyle.json",
    "hplstyle_power": OUT / "GpuHplStyle" / "power.json",
    "hpl_host": OUT / "HostHpl" / "hpl_host.json",
    "md_apoa1": OUT / "MdApoa1_79c8e77b" / "md_apoa1.json",
}


def make_retry(run_dir: Path, k: int, checks: list[str]) -> Path:
    """A retry directory as gpuaccept run leaves it: the recorded run's report and documents copied, and the list
    of the checks measured again (written here)."""
    d = run_dir / f"{layout.RETRY_PREFIX}{k}"
    d.mkdir()
    shutil.copytree(run_dir / "reframe", d / "reframe")
    shutil.copy(run_dir / "reframe-report.json", d / "reframe-report.json")
    (d / layout.RETRIED_FILE).write_text(json.dumps(checks))
    return d


def edit(path: Path, change) -> None:
    """A JSON document changed in place: ``change`` edits the parsed document, which is written back."""
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


# Checks that no longer exist: their rows in recorded verdicts cannot be judged again (md_openmm, the water box,
# was retired by issue 14 for md_apoa1; its runs stay in docs/evidence/2026-11-22-h100-openmm as recorded).
RETIRED_CHECKS = {"md_openmm"}


# Checks that today's shipped references expect and that came after the runs recorded under docs/evidence: those
# runs never ran them, so today's references find them NOT RUN there. A test that asks whether a recorded run passes
# everything it ran judges it against references_before_later_checks().
LATER_CHECKS = ("memtest",)


@functools.cache
def references_before_later_checks() -> Path:
    """A copy of the shipped reference directory without the references of LATER_CHECKS (made once per session)."""
    out = Path(tempfile.mkdtemp(prefix="gpuaccept-refs-")) / REFERENCE_DIR.name
    atexit.register(shutil.rmtree, out.parent, True)
    shutil.copytree(REFERENCE_DIR, out)
    for path in [*sorted(out.glob("*.yaml")), *sorted((out / "gpus").glob("*.yaml"))]:
        doc = yaml.safe_load(path.read_text())
        checks = doc.get("checks") or {}
        if any(check in checks for check in LATER_CHECKS):
            for check in LATER_CHECKS:
                checks.pop(check, None)
            path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def recorded_runs() -> list[Path]:
    """Every recorded run directory under docs/evidence that has a verdict and ReFrame's report, except those
    whose verdict rests on a retired check that ran (its rows are then the verdict)."""
    out = []
    for p in sorted(RECORDED.rglob("verdict.json")):
        if not (p.parent / "reframe-report.json").exists():
            continue
        rows = json.loads(p.read_text())["rows"]
        if any(r["check"] in RETIRED_CHECKS and r["status"] not in ("not_run",) for r in rows):
            continue
        out.append(p.parent)
    return out


def references_of_verdict(recorded: dict, out_dir: Path) -> Path:
    """A reference directory holding the node type exactly as the recorded verdict shows it was judged: each
    metric row's reference value and bounds (informational rows informational), today's match, health and
    sources otherwise."""
    name = recorded["node_type"]
    today = load_node_type(REFERENCE_DIR, name)  # both layers, merged: match, sources and health as today
    doc = {"schema": SCHEMA_V1, "node_type": name, "description": today.description, "match": today.match,
           "sources": today.sources, **today.extra}  # fmt: skip
    source = next(iter(doc["sources"]))
    # The day's judged values as they were, host and link figures among them (judged against one machine's
    # figures before issue 24): a synthetic source, which the loader allows to judge them.
    doc["sources"] = {**doc["sources"], "as-recorded": {
        "kind": "synthetic", "date": "2026-11-25", "reference": "the references the recorded verdict shows"}}
    checks: dict = {}
    def unit(r: dict) -> str:  # the metric's declared unit (a row without a value may carry another)
        try:
            return metric_table.lookup(r["check"], r["metric"])[0]
        except metric_table.UnknownMetric:
            return r["unit"]

    for r in recorded["rows"]:
        skipped = ("node", "references", "inputs", "suite", "siblings", "fleet", "baseline", *RETIRED_CHECKS)
        if not r["metric"] or r["check"] in skipped or r["metric"] in DERIVED:
            continue
        if r["status"] == "info" and r["reason"].startswith("informational: "):
            entry = {"unit": unit(r), "source": source, "informational": r["reason"].removeprefix("informational: ")}
            if r["reference"] is not None:
                entry["value"] = r["reference"]
        elif r["reference"] is None or (r["lower_bound"] is None and r["upper_bound"] is None):
            continue
        else:
            ref = r["reference"]
            entry = {"value": ref, "unit": unit(r), "source": "as-recorded"}
            if r["lower_bound"] is not None:
                entry["lower"] = round(1 - r["lower_bound"] / ref, 9)
            if r["upper_bound"] is not None:
                entry["upper"] = round(r["upper_bound"] / ref - 1, 9)
        checks.setdefault(r["check"], {})[r["metric"]] = entry
    # A check that ran where its node type had no references (an optional backend not yet measured): its metric
    # rows say so, and it stays out of the rebuilt file as it was out of the day's.
    unreferenced = {r["check"] for r in recorded["rows"] if r["reason"] == "no reference value for this metric"}
    for r in recorded["rows"]:  # checks judged with no metric reference of their own (health rules only, say)
        if r["check"] in unreferenced:
            continue
        if r["metric"] is None and r["check"] in today.checks and r["check"] not in checks and r["expected"]:
            checks[r["check"]] = {m: ref_entry(ref) for m, ref in today.checks[r["check"]].items()}
    doc["checks"] = checks
    out_dir.mkdir(parents=True, exist_ok=True)
    plain = json.loads(json.dumps(doc))  # the loader's line-keeping mappings as plain data
    (out_dir / f"{name}.yaml").write_text(yaml.safe_dump(plain, sort_keys=False))
    if (REFERENCE_DIR / "deviation").is_dir() and not (out_dir / "deviation").exists():  # the deviation rules' as today
        shutil.copytree(REFERENCE_DIR / "deviation", out_dir / "deviation")
    return out_dir


def ref_entry(ref: MetricReference) -> dict:
    """A reference as a file writes it."""
    entry: dict = {"unit": ref.unit, "source": ref.source}
    if ref.value is not None:
        entry["value"] = ref.value
    if ref.informational is not None:
        entry["informational"] = ref.informational
    for key in ("lower", "upper", "link_fraction"):
        if getattr(ref, key) is not None:
            entry[key] = getattr(ref, key)
    return entry


def unpack_results(into: Path, *archives: Path) -> Path:
    """A recorded ``results.tar.gz`` (or several, one per machine start) unpacked into ``into``: the folder of its
    run directories (``results/localhost``)."""
    for archive in archives:
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
    return into / "results" / "localhost"


def rejudge_today(run: Path) -> verdict.Verdict:
    """A recorded run directory judged again against today's shipped references."""
    _, v = summarize.rejudge(run, REFERENCE_DIR)
    return v


def judged_node_figures(v: verdict.Verdict) -> set[tuple[str, str]]:
    """(check, metric) of every node-level figure the verdict judged and passed: rows with no GPU, not informational."""
    return {(r.check, r.metric) for r in v.rows if r.metric and r.status == verdict.PASS and r.gpu is None}
