"""Judge every recorded run directory under a checkout again and write, per run, its verdict.json (less the
gpuaccept version), its terminal table and its Prometheus text, so that two source trees can be compared byte for
byte (the rules in one shape were to change no verdict).

Usage: PYTHONPATH=<tree>/src python rejudge_all.py <checkout holding the recorded runs> <output folder>
A run directory is any folder with a verdict.json and ReFrame's report beside it; it is judged against the
checkout's reference_values with the node type and suite it was judged with (gpuaccept.judge.summarize.rejudge).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpuaccept.judge import exporter, summarize, verdict
from gpuaccept.layout import REPORT_FILE


def main() -> int:
    root, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for vf in sorted(root.rglob("verdict.json")):
        run_dir = vf.parent
        if not (run_dir / REPORT_FILE).exists():
            continue
        try:
            _, v = summarize.rejudge(run_dir, root / "reference_values")
            doc = v.to_json()
            doc.pop("gpuaccept_version", None)
            text = f"{json.dumps(doc, indent=1)}\n===\n{verdict.table(v)}\n===\n{exporter.render(v)}"
        except Exception as err:  # a run that cannot be judged is written as such, and compared
            text = f"ERROR {type(err).__name__}: {err}"
        (out / (str(run_dir.relative_to(root)).replace("/", "__") + ".txt")).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
