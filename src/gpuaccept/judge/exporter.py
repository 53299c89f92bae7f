"""The verdict as a Prometheus textfile for node_exporter's textfile collector.

A dedicated registry; base units in the names (values converted from the benchmarks' GB/s, us, TFLOP/s);
no timestamps inside the file (node_exporter rejects them); labels bounded to suite, node type, check and
metric, and, in a verdict with per-GPU rows, the GPU's index (``gpu``: the node facts' index; empty, which
Prometheus stores as no label, on the node's own series). Written atomically so node_exporter never reads half a
file.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge, generate_latest

from gpuaccept import __version__
from gpuaccept.atomic import OutputError, clean_stale_temps, locked, write_text_atomic
from gpuaccept.judge import deviation
from gpuaccept.judge.row import Row
from gpuaccept.judge.status import FAIL, INFO, NOT_RUN, PASS, WAIVED
from gpuaccept.judge.verdict import Verdict, decide
from gpuaccept.layout import METRICS_FILE

# benchmark unit -> (Prometheus base-unit suffix, factor to that unit)
UNITS: dict[str, tuple[str, float]] = {
    "GB/s": ("bytes_per_second", 1e9),
    "Gb/s": ("bytes_per_second", 1e9 / 8),  # a network rate in gigabits (perftest's --report_gbits: the fabric check)
    "us": ("seconds", 1e-6),
    "s": ("seconds", 1.0),
    "TFLOP/s": ("flops", 1e12),
    "GFLOP/s": ("flops", 1e9),
    "ratio": ("ratio", 1.0),
    "W": ("watts", 1.0),
    "J": ("joules", 1.0),
    "C": ("celsius", 1.0),
    "GFLOP/s/W": ("flops_per_watt", 1e9),
    # molecular dynamics (docs/checks/md.md): simulated time per wall-clock day has no base unit; ns/day is the field's
    "ns/day": ("ns_per_day", 1.0),
    "ns/day/kW": ("ns_per_day_per_watt", 1e-3),
    "s/step": ("seconds_per_step", 1.0),
    "kJ": ("joules", 1e3),
    "GiB": ("bytes", 2.0**30),  # GPU memory in use (md_apoa1)
    "n": ("number", 1.0),  # a square matrix's order (offload_gemm's crossover size)
    "points": ("points", 1.0),  # an FFT's size in complex points (fft_offload's crossover)
    "": ("number", 1.0),  # the GPU count; "_count" is reserved for histograms and summaries
}
STATUSES = (PASS, FAIL, NOT_RUN)
LABELS = ("suite", "node_type", "check", "metric")


def textfile_name(suite: str) -> str:
    """One file per suite, so a nightly run does not replace the commissioning figures."""
    return f"gpuaccept_{suite}.prom"


def render(verdict: Verdict) -> str:
    """The verdict's series (see the module) as the text node_exporter's textfile collector reads."""
    reg = CollectorRegistry()
    base = {"suite": verdict.suite, "node_type": verdict.node_type}
    run_series(reg, base, verdict)
    check_series(reg, base, verdict.rows)
    findings_series(reg, base, verdict.rows)
    metric_series(reg, base, verdict.rows)
    burnin_series(reg, base, verdict.rows)
    deviation_series(reg, base, verdict.rows)
    return generate_latest(reg).decode("utf-8")


def run_series(reg: CollectorRegistry, base: dict[str, str], verdict: Verdict) -> None:
    """The run as a whole: versions, when it finished and how long it took, whether the node passed, its GPUs and
    whether the manifest vouched for every input."""
    facts = verdict.facts or {}
    gpus = facts.get("gpus") or []
    info = Gauge(
        "gpuaccept_info",
        "gpuaccept run: versions and the node type it judged",
        ["suite", "node_type", "version", "reframe_version", "driver_version", "gpu_model"],
        registry=reg,
    )
    info.labels(
        **base,
        version=__version__,
        reframe_version=verdict.reframe_version or "",
        driver_version=facts.get("driver_version") or "",
        gpu_model=gpus[0].get("name", "") if gpus else "",
    ).set(1)

    def node_gauge(name: str, documentation: str, value: float | None) -> None:
        """A series of the run as a whole (labels suite and node_type); none where the value is unknown."""
        if value is not None:
            Gauge(name, documentation, ["suite", "node_type"], registry=reg).labels(**base).set(value)

    finished = verdict.finished_unix
    node_gauge("gpuaccept_last_run_timestamp_seconds", "When the last run of this suite finished (Unix time)", finished)
    node_gauge("gpuaccept_run_duration_seconds", "Wall time of the last run of this suite", verdict.duration_s)
    accepted = 1 if verdict.node_type and decide(verdict.rows) else 0  # by its rows, as the judge decides
    node_gauge("gpuaccept_node_accepted", "1 when the node passed every check of the suite, else 0", accepted)
    node_gauge("gpuaccept_gpus", "NVIDIA GPUs seen on the node", len(gpus))
    # 0 where the verdict has a row about its inputs: no manifest, a file changed since the run, facts unreadable.
    vouched = 0 if any(r.check == "inputs" for r in verdict.rows) else 1
    node_gauge("gpuaccept_inputs_vouched", "1 when the run's manifest holds every file the verdict was judged from, "
               "unchanged, else 0 (the verdict's inputs rows say why)", vouched)  # fmt: skip


def check_series(reg: CollectorRegistry, base: dict[str, str], rows: list[Row]) -> None:
    """Each check's status (one series per state) and how many times it was measured."""
    status = Gauge(
        "gpuaccept_check_status",
        "Verdict of each check: 1 for the state it is in (pass, fail, not_run), 0 for the others",
        ["suite", "node_type", "check", "status"],
        registry=reg,
    )
    for row in rows:
        # An optional backend the node type does not list (e.g. xhpl without its artifact) is not one of the
        # node's checks: verdict.json names it as not run, Prometheus gets no series (and no alert) for it.
        if row.metric is None and (row.expected or row.status != NOT_RUN):
            for state in STATUSES:
                status.labels(**base, check=row.check, status=state).set(1 if row.status == state else 0)

    attempts = Gauge(
        "gpuaccept_check_attempts",
        "How many times the check was measured: above 1 when a figure fell outside its band and the check ran "
        "again (gpuaccept run --retries); a pass with attempts > 1 is a flaky node worth a look",
        ["suite", "node_type", "check"],
        registry=reg,
    )
    for row in rows:
        if row.metric is None and row.expected:
            attempts.labels(**base, check=row.check).set(row.attempts)


def findings_series(reg: CollectorRegistry, base: dict[str, str], rows: list[Row]) -> None:
    """A failed check's findings counted by rule and GPU (gpu "" for the node, a port or the document), read from
    its row's ``findings``: an alert or a dashboard names the GPU and the rule without parsing the reason. No series
    (nor its HELP lines) where no check failed on a finding."""
    counts = Counter((row.check, str(f.get("rule") or ""), "" if f.get("gpu") is None else str(f["gpu"]))
                     for row in rows if row.metric is None and row.expected for f in row.findings)  # fmt: skip
    if not counts:
        return
    gauge = Gauge(
        "gpuaccept_check_findings",
        "Findings of a failed check by rule and GPU (gpu empty: the node, a port or the document); the check's "
        "reason in verdict.json gives each one's line and fix",
        ["suite", "node_type", "check", "rule", "gpu"],
        registry=reg,
    )
    for (check, rule, gpu), n in sorted(counts.items()):
        gauge.labels(**base, check=check, rule=rule, gpu=gpu).set(n)


def metric_series(reg: CollectorRegistry, base: dict[str, str], rows: list[Row]) -> None:
    """Each metric's value, reference and bounds in base units, and whether it passed (judged metrics)."""
    # Per-GPU rows (a document with gpu_metrics): one series per GPU, told apart by a bounded gpu label.
    per_gpu = any(row.gpu is not None for row in rows)
    labelnames = [*LABELS, "gpu"] if per_gpu else list(LABELS)
    passed = Gauge(
        "gpuaccept_metric_passed",
        "1 when the metric is within its reference's tolerance, else 0 (judged metrics only)",
        labelnames,
        registry=reg,
    )
    families: dict[str, dict[str, Gauge]] = {}

    def family(suffix: str) -> dict[str, Gauge]:
        if suffix not in families:
            families[suffix] = {
                "value": Gauge(f"gpuaccept_result_{suffix}", f"Measured value ({suffix})", labelnames, registry=reg),
                "reference": Gauge(
                    f"gpuaccept_reference_{suffix}", f"Reference value ({suffix})", labelnames, registry=reg
                ),
                "lower": Gauge(
                    f"gpuaccept_reference_lower_bound_{suffix}",
                    f"Lowest value that passes ({suffix})",
                    labelnames,
                    registry=reg,
                ),
                "upper": Gauge(
                    f"gpuaccept_reference_upper_bound_{suffix}",
                    f"Highest value that passes ({suffix})",
                    labelnames,
                    registry=reg,
                ),
            }
        return families[suffix]

    for row in rows:
        if row.metric is None or row.status in (WAIVED,) or deviation.is_figure_row(row):
            continue
        suffix, factor = UNITS.get(row.unit, ("number", 1.0))
        labels = {**base, "check": row.check, "metric": row.metric}
        if per_gpu:
            labels["gpu"] = "" if row.gpu is None else str(row.gpu)
        fam = family(suffix)
        for key, value in (
            ("value", row.value),
            ("reference", row.reference),
            ("lower", row.lower_bound),
            ("upper", row.upper_bound),
        ):
            if value is not None:
                fam[key].labels(**labels).set(value * factor)
        if row.status != INFO:
            passed.labels(**labels).set(1 if row.status == PASS else 0)


# The burn-in's summary series (docs/checks/burnin.md): metric -> series name. Label gpu: the GPU's index for a
# GPU's own figure, "all" for the node's (min, max or sum over the GPUs, as the metric's name says).
BURNIN_SERIES = {
    "tflops_last_over_first_min": "gpuaccept_burnin_last_over_first_window_ratio",
    "gpu_temp_max_c": "gpuaccept_burnin_gpu_temperature_max_celsius",
    "memory_temp_max_c": "gpuaccept_burnin_memory_temperature_max_celsius",
    "throttle_other_samples": "gpuaccept_burnin_throttle_other_samples",
    "xid_events": "gpuaccept_burnin_xid_events",
    "ecc_uncorrectable_new": "gpuaccept_burnin_ecc_uncorrectable_new",
}
_BURNIN_HELP = {
    "tflops_last_over_first_min": "Burn-in: the last GEMM window's median rate over the first's",
    "gpu_temp_max_c": "Burn-in: the hottest GPU temperature sampled",
    "memory_temp_max_c": "Burn-in: the hottest memory (HBM) temperature sampled",
    "throttle_other_samples": "Burn-in: samples with a clock-event reason other than the power cap or idle",
    "xid_events": "Burn-in: XID events",
    "ecc_uncorrectable_new": "Burn-in: uncorrectable ECC errors counted during the burn-in",
}


def burnin_series(reg: CollectorRegistry, base: dict[str, str], rows: list) -> None:
    """The burnin check's summary series, one per GPU (rows with a ``gpu``) and one for the node (gpu="all")."""
    gauges: dict[str, Gauge] = {}
    for row in rows:
        name = BURNIN_SERIES.get(row.metric or "") if row.check == "burnin" else None
        if name is None or row.value is None:
            continue
        if name not in gauges:
            gauges[name] = Gauge(name, _BURNIN_HELP[row.metric], ["suite", "node_type", "gpu"], registry=reg)
        gpu = getattr(row, "gpu", None)
        gauges[name].labels(**base, gpu="all" if gpu is None else str(gpu)).set(row.value)


DEVIATION_HELP = ("A figure over its reference (siblings' median, fleet median or the node's commissioning run): 1 is "
                  "equal, 0.95 is 5 % below")
LIMIT_HELP = "The deviation rule's bound on the worse side (1 - threshold for a rate, 1 + threshold for a power)"


def deviation_series(reg: CollectorRegistry, base: dict[str, str], rows: list) -> None:
    """The deviation rules' figures (gpuaccept.judge.deviation): each figure over its reference (the median of its
    siblings, the fleet median, its own commissioning run), labels bounded to node type, suite, check, metric,
    GPU index ("" for the node's figure) and reference (siblings, fleet, baseline): a trend can be alerted on."""
    ratio = limit = None
    for row in rows:
        if not deviation.is_figure_row(row) or row.value is None:
            continue
        if ratio is None:
            names = ["suite", "node_type", "check", "metric", "gpu", "reference"]
            ratio = Gauge("gpuaccept_deviation_ratio", DEVIATION_HELP, names, registry=reg)
            limit = Gauge("gpuaccept_deviation_limit_ratio", LIMIT_HELP, names, registry=reg)
        check, _, metric = str(row.metric).partition(".")
        labels = {**base, "check": check, "metric": metric, "gpu": "" if row.gpu is None else str(row.gpu),
                  "reference": row.check}  # fmt: skip
        ratio.labels(**labels).set(row.value)
        bound = row.lower_bound if row.lower_bound is not None else row.upper_bound
        if bound is not None and limit is not None:
            limit.labels(**labels).set(bound)


def write(verdict: Verdict, run_dir: str | Path, textfile_dir: str | Path | None = None) -> list[Path]:
    """Write the run's ``gpuaccept.prom`` and, if asked, the copy node_exporter reads."""
    text = render(verdict)
    written = [write_text_atomic(Path(run_dir) / METRICS_FILE, text)]
    if textfile_dir:
        directory, name = Path(textfile_dir), textfile_name(verdict.suite)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise OutputError(f"cannot write {directory / name}: {err.strerror}") from err
        # node_exporter reads *.prom only: the lock file beside it is not collected.
        with locked(directory / f".{name}.lock"):
            clean_stale_temps(directory, name)
            written.append(write_text_atomic(directory / name, text))
    return written
