"""Every metric gpuaccept judges: its unit and its layer, in one table.

The unit is the one the tool writes in its benchmark document (docs/benchmark-json.md) and the one a reference
file must give; the layer says where its reference lives (docs/reference-values.md):

- ``gpu``: a figure of one GPU, the same for every GPU of a SKU whatever the node (copies to and from the host,
  GEMM, HPL per GPU, power and health per GPU, an application on one GPU). Kept in
  ``reference_values/gpus/<sku>.yaml``.
- ``node``: a figure of the node as built (GPU count, peer-to-peer, NUMA x GPU, collectives, host GEMM and
  host HPL, node sums, applications on all GPUs or on the host). Kept in ``reference_values/<node_type>.yaml``.

Each metric also has an **owner**, what the figure is a property of, and so what it may be judged against
(docs/verdicts.md):

- ``gpu``: the GPU model guarantees it (GEMM per precision, device memory bandwidth, power and efficiency under
  load, HPL and MD on the GPU, the link's trained width and generation): judged against the GPU model's figures,
  with a band that catches a 10 % loss.
- ``link``: the PCIe link carries it (pinned host<->GPU copies): judged as a fraction of the rate of the link
  NVML reports (``link_fraction``, gpuaccept.references.link), whatever machine the GPU sits in.
- ``host``: the host, the VM and the moment give it (pageable copies, latencies, the PCIe model's fixed cost,
  host BLAS and host HPL, CPU-only baselines, copies inside a transfer-inclusive rate): never judged against
  another machine's figures; informational in shipped reference files, judged only against the node's own
  baseline (``gpuaccept baseline --node-baseline``).
- ``node``: the node as built (GPU count, peers, collectives, every GPU at once, node sums): judged against
  the node type's figures.

The table is built from the checks' declarations (gpuaccept.checks: each ``Check``'s ``metrics``, then the
power sampler's, ``SAMPLER``); patterns are ``fnmatch`` patterns, and the first that matches a metric name wins.
Add a metric to its check's declaration when a tool learns it, and the references and the judge follow.
"""

from __future__ import annotations

import fnmatch

from gpuaccept.checks import CHECKS, GPU, HOST, LAYERS, LINK, NODE, OWNERS, SAMPLER

__all__ = ["GPU", "HOST", "LAYERS", "LINK", "METRICS", "NODE", "OWNERS", "UNITS", "UnknownMetric"]

# check -> ((metric pattern, unit, layer), ...): the check's own metrics, then the power sampler's.
METRICS: dict[str, tuple[tuple[str, str, str], ...]] = {
    key: tuple((m.pattern, m.unit, m.layer) for m in (*check.metrics, *SAMPLER)) for key, check in CHECKS.items()
}
# check -> (owner, ...): each row's owner, in the order of its METRICS rows.
_OWNERS: dict[str, tuple[str, ...]] = {
    key: tuple(check.owner_of(m) for m in (*check.metrics, *SAMPLER)) for key, check in CHECKS.items()
}
# check -> (gated, ...): whether a node type must reference the row's metrics (gpuaccept.checks.Metric).
_GATED: dict[str, tuple[bool, ...]] = {
    key: tuple(m.gated for m in (*check.metrics, *SAMPLER)) for key, check in CHECKS.items()
}

UNITS = tuple(sorted({unit for rows in METRICS.values() for _, unit, _ in rows}))


class UnknownMetric(KeyError):
    """A check or metric the table does not know."""

    def __str__(self) -> str:
        return str(self.args[0])


def _row(check: str, metric: str) -> int:
    """The index of the first of the check's rows that matches the metric; UnknownMetric when none does."""
    rows = METRICS.get(check)
    if rows is None:
        raise UnknownMetric(f"unknown check {check!r} (known: {', '.join(sorted(METRICS))})")
    for i, (pattern, _unit, _layer) in enumerate(rows):
        if fnmatch.fnmatchcase(metric, pattern):
            return i
    raise UnknownMetric(
        f"check {check!r} has no metric {metric!r} (src/gpuaccept/checks.py declares the metrics of each check)"
    )


def lookup(check: str, metric: str) -> tuple[str, str]:
    """(unit, layer) of one metric; UnknownMetric when the table has no row for it."""
    _pattern, unit, layer = METRICS[check][_row(check, metric)]
    return unit, layer


def unit(check: str, metric: str) -> str:
    return lookup(check, metric)[0]


def layer(check: str, metric: str) -> str:
    return lookup(check, metric)[1]


def owner(check: str, metric: str) -> str:
    """What owns the figure: ``gpu``, ``link``, ``host`` or ``node`` (module docstring); UnknownMetric when the
    table does not know the metric."""
    return _OWNERS[check][_row(check, metric)]


def gated(check: str, metric: str) -> bool:
    """Whether a node type must hold a reference for the metric (a gated metric fails without one; a reported one
    is shown); UnknownMetric when the table does not know the metric."""
    return _GATED[check][_row(check, metric)]


def document_problems(check: str, doc: dict) -> list[str]:
    """What in a benchmark document (docs/benchmark-json.md) disagrees with this table: a metric it does not know,
    a unit other than the metric's, or a per-GPU figure (``gpu_metrics``) of a node-level metric. Empty when the
    document and the table agree."""
    problems = []
    for name, metric in (doc.get("metrics") or {}).items():
        try:
            want = unit(check, name)
        except UnknownMetric as err:
            problems.append(str(err))
            continue
        got = metric.get("unit") if isinstance(metric, dict) else None
        if got != want:
            problems.append(f"{check}.{name}: unit {got!r}, the metric's unit is {want!r}")
    for name in doc.get("waived") or {}:
        try:
            lookup(check, name)
        except UnknownMetric as err:
            problems.append(str(err))
    for entry in doc.get("gpu_metrics") or []:  # each GPU's figures: per-GPU metrics, in their units
        for name, metric in (entry.get("metrics") or {}).items():
            try:
                want, where = lookup(check, name)
            except UnknownMetric as err:
                problems.append(str(err))
                continue
            got, gpu = (metric.get("unit") if isinstance(metric, dict) else None), entry.get("gpu")
            if where != GPU:
                problems.append(f"{check}.{name}: a node-level metric, with a figure of GPU {gpu}")
            elif got != want:
                problems.append(f"{check}.{name} of GPU {gpu}: unit {got!r}, the metric's unit is {want!r}")
    return problems
