"""The pair matrix between nodes as a heat map (docs/checks/across-nodes.md): each pair's all-reduce bus bandwidth
(the last measured), the nodes the judge named marked in red; PNG and SVG through matplotlib's Agg backend, and
an HTML fragment the evaluation report can embed (``html_section``)."""

from __future__ import annotations

import base64
import html
import io
import math
import sys
from pathlib import Path
from typing import Any

from gpuaccept import textinput
from gpuaccept.atomic import finish, make_dirs

SCHEMA = "gpuaccept.across/1"  # the summary gpuaccept across writes


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


def pyplot() -> Any:
    """matplotlib's pyplot (requirements/report.txt), on the Agg backend unless a caller chose one already (the
    HTML report draws SVG)."""
    import matplotlib  # noqa: PLC0415 (optional: the report's requirements)

    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def figure(summary: dict[str, Any]) -> Any:
    plt = pyplot()
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
    plt = pyplot()
    out = []
    for ext in ("png", "svg"):
        target = Path(directory) / f"across-pairs.{ext}"
        make_dirs(target.parent)
        tmp = target.with_name(f".{target.name}.tmp")
        fig.savefig(tmp, format=ext, dpi=120)
        out.append(finish(tmp, target))
    plt.close(fig)
    return out


def load(path: Path) -> dict[str, Any]:
    """A ``gpuaccept across`` summary (across.json), read strictly; ValueError naming the file otherwise."""
    doc = textinput.load_json(Path(path), "gpuaccept across summary", ValueError)
    if doc.get("schema") != SCHEMA or not isinstance(doc.get("hosts"), list):
        raise ValueError(f"{path}: not a gpuaccept across summary (schema {doc.get('schema')!r}, expected {SCHEMA!r})")
    return doc


def html_section(summary: dict[str, Any], source: str = "") -> str:
    """The judgement's rows and the heat map (an inline PNG) as a <section> of the HTML report."""
    judgement = summary.get("judgement") or {}
    rows = [*(judgement.get("nodes") or []), *(judgement.get("rails") or []),
            *([judgement["whole_set"]] if judgement.get("whole_set") else [])]  # fmt: skip
    body = "".join(f"<tr class='{html.escape(str(r.get('status')))}'><td>{html.escape(str(r.get('subject')))}</td>"
                   f"<td>{html.escape(str(r.get('status')).upper())}</td><td>{html.escape(str(r.get('reason')))}</td>"
                   "</tr>" for r in rows)  # fmt: skip
    parts = [f"<section class='across'><p class='note'>{len(summary.get('hosts') or [])} nodes, launcher "
             f"{html.escape(str(summary.get('launcher')))}{', ' + html.escape(source) if source else ''} "
             "(docs/checks/across-nodes.md)</p>",
             f"<table><thead><tr><th>node</th><th>verdict</th><th>reason</th></tr></thead><tbody>{body}</tbody>"
             "</table>"]  # fmt: skip
    _hosts, m = matrix(summary)
    if not all(math.isnan(v) for row in m for v in row):
        fig = figure(summary)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        pyplot().close(fig)
        data = base64.b64encode(buf.getvalue()).decode()
        parts.append(f'<img alt="pair bus bandwidth between nodes" src="data:image/png;base64,{data}">')
    return "".join(parts) + "</section>"
