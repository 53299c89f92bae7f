"""Push a verdict's metrics to a Prometheus Pushgateway, for nodes without node_exporter (or a Slurm fleet
judged on the login node). The same series as the textfile (docs/metrics.md), grouped by job ``gpuaccept``,
``instance`` (the node) and ``suite``: each push replaces that node's previous push for the suite. Prometheus
scrapes the Pushgateway with ``honor_labels: true`` so that ``instance`` stays the node's name."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import push_to_gateway
from prometheus_client.parser import text_string_to_metric_families

from gpuaccept.judge import exporter
from gpuaccept.judge.verdict import Verdict

JOB = "gpuaccept"


class _Families:
    """A collector that yields the families of the rendered textfile: one rendering, two ways out."""

    def __init__(self, text: str):
        self._families = list(text_string_to_metric_families(text))

    def collect(self):
        return self._families


class PushError(ValueError):
    """The Pushgateway refused the push or could not be reached; the message names the URL."""


def push(verdict: Verdict, url: str, node: str | None = None, timeout_s: float = 30) -> dict[str, str]:
    registry = CollectorRegistry()
    registry.register(_Families(exporter.render(verdict)))
    grouping = {"instance": node or verdict.node, "suite": verdict.suite}
    try:
        push_to_gateway(url, job=JOB, registry=registry, grouping_key=grouping, timeout=timeout_s)
    except OSError as err:  # urllib's URLError and HTTPError are OSErrors
        raise PushError(f"could not push to the Pushgateway at {url}: {err}") from None
    return grouping
