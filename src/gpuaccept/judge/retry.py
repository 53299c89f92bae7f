"""Which figures a retry may measure again: performance figures only. A retry is for noise (a moment's dip of a
rate, a copy, a power draw); a fault is not noise. A failed verification (a wrong GEMM, an HPL residual, an FFT or
an overlap run that computed garbage, a memory test's errors), a tool's error, a health finding or an XID, a figure
no hardware can measure (references/bounds.py), a count (XID events, health findings, a link trained down, a BLAS on
generic kernels), a residual or an energy difference (a wrong answer) rejects the node at once and is never
measured again (docs/verdicts.md, "A figure outside its band is measured again").

``retryable`` is the rule for one metric; the judge marks a check as out of band (verdict.Row.out_of_band) only
when every metric it failed on is retryable and failed its band alone, and ``verdict.merge_retry`` lets a retry
replace only such a check's earlier attempt.
"""

from __future__ import annotations

import fnmatch

from gpuaccept import metric_table

#: Units of the figures that move with the moment (clocks under the power cap, the host, traffic on the link):
#: rates, copies, times, latencies, power and energy.
PERFORMANCE_UNITS = frozenset(
    {"TFLOP/s", "GFLOP/s", "GB/s", "GFLOP/s/W", "ns/day", "ns/day/kW", "us", "s", "s/step", "W", "J", "kJ"}
)
#: Ratios that are performance figures too: a fraction of a peak, a scaling efficiency, a speed-up, an overlap,
#: a copy's cost over the kernel's, the host's NUMA affinity. Every other ratio (a residual, an energy
#: difference, a model's error) says whether an answer is right.
PERFORMANCE_RATIOS = ("*peak_fraction", "*scaling_efficiency", "*speedup*", "*overlap*", "*_over_kernel_ratio",
                      "affinity_*")  # fmt: skip


def retryable(check: str, metric: str | None) -> bool:
    """Whether a figure of ``check`` that failed its band alone may be measured again: a performance figure
    (``PERFORMANCE_UNITS``, ``PERFORMANCE_RATIOS``); never a count, a residual, a metric the table does not know."""
    if metric is None:
        return False
    try:
        unit = metric_table.unit(check, metric)
    except metric_table.UnknownMetric:
        return False
    if unit in PERFORMANCE_UNITS:
        return True
    return unit == "ratio" and any(fnmatch.fnmatchcase(metric, p) for p in PERFORMANCE_RATIOS)
