"""The Python probes write strict JSON (gpuaccept.probe.document.dumps): a figure that could not be measured (NaN,
infinity) is null, which the judge's strict reader accepts; a bare NaN token would fail the whole document."""

from __future__ import annotations

import json
import math

from gpuaccept import textinput
from gpuaccept.probe import document


def test_non_finite_figures_are_written_as_null(tmp_path):
    doc = {"metrics": {"a": {"value": math.nan}, "b": {"value": math.inf}, "c": {"value": 1.5}},
           "series": [1.0, -math.inf, [math.nan]], "n": 3, "ok": True}
    text = document.dumps(doc, indent=1)
    assert text.endswith("\n") and "NaN" not in text and "Infinity" not in text
    back = json.loads(text)
    assert back["metrics"]["a"]["value"] is None and back["metrics"]["b"]["value"] is None
    assert back["metrics"]["c"]["value"] == 1.5 and back["series"] == [1.0, None, [None]] and back["n"] == 3
    path = tmp_path / "doc.json"
    path.write_text(text)
    assert textinput.parse_json(path.read_text())["metrics"]["c"]["value"] == 1.5
    assert document.dumps({"x": math.nan}) == "{\"x\": null}\n"
