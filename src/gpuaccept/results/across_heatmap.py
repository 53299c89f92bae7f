"""The pair matrix between nodes as a heat map (docs/checks/across-nodes.md): each pair's all-reduce bus bandwidth
(the last measured), the nodes the judge named marked in red; PNG and SVG through matplotlib's Agg backend, and
an HTML fragment the evaluation report can embed (``html_section``)."""

from __future__ import annotations

import base64
import io
import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from gpuaccept.atomic import finish, make_dirs


def matrix(summary: dict[str, Any]) -> tuple[list[str], list[list[float]]]:
    """The hosts and their pair matrix (NaN where a pair was not measured or failed to run)."""
    hosts = list(summary["hosts"])
    index = {h: i for i, h in enumerate(hosts)}
    m = [[math.nan] * len(hosts) for _ in hosts]
    for f in summary.get("figures") or []:
        nodes, bw = f.get("nodes") or [], f.get("busbw_gbps")
        if len(nodes) == 2 and f.get("rail") is None and isinstance(bw, (int, float)) and not f.get("error"):
            a, b = index[nodes[0]], index[nodes[1]]
            m[a][b] = m[b][a] = float(bw)
    return hosts, m


def figure(summary: dict[str, Any]):  # type: ignore[no-untyped-def]
    hosts, m = matrix(summary)
    named = set((summary.get("judgement") or {}).get("named") or [])
    size = max(4.0, 0.3 * len(hosts) + 2)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    image = ax.imshow(m, cmap="viridis")
    fig.colorbar(image, ax=ax, label="all-reduce bus bandwidth (GB/s)")
    ax.set_xticks(range(len(hosts)), hosts, rotation=90, fontsize=7)
    ax.set_yticks(range(len(hosts)), hosts, fontsize=7)
    for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
        for label in labels:
            if label.get_text() in named:
                label.set_color("red")
                label.set_fontweight("bold")
    for node in named:
        i = hosts.index(node)
        for xy, w, h in (((-0.5, i - 0.5), len(hosts), 1), ((i - 0.5, -0.5), 1, len(hosts))):  # its row and column
            ax.add_patch(plt.Rectangle(xy, w, h, fill=False, edgecolor="red", linewidth=1.5))
    ax.set_title("pairs between nodes" + (f"; named: {', '.join(sorted(named))}" if named else ""))
    fig.tight_layout()
    return fig


def write(summary: dict[str, Any], directory: Path) -> list[Path]:
    """across-pairs.png and .svg in ``directory``, each written atomically; none where no pair was measured."""
    _hosts, m = matrix(summary)
    if all(math.isnan(v) for row in m for v in row):
        return []
    fig = figure(summary)
    out = []
    for ext in ("png", "svg"):
        target = Path(directory) / f"across-pairs.{ext}"
        make_dirs(target.parent)
        tmp = target.with_name(f".{target.name}.tmp")
        fig.savefig(tmp, format=ext, dpi=120)
        out.append(finish(tmp, target))
    plt.close(fig)
    return out


def html_section(summary: dict[str, Any]) -> str:
    """The heat map as an inline PNG in a <section>, for the HTML report; "" where no pair was measured."""
    _hosts, m = matrix(summary)
    if all(math.isnan(v) for row in m for v in row):
        return ""
    fig = figure(summary)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode()
    return ('<section class="across"><h2>Pairs between nodes</h2>'
            f'<img alt="pair bus bandwidth between nodes" src="data:image/png;base64,{data}"></section>')
