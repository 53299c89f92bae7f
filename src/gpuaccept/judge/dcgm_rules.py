"""The judge's rules for DCGM's diagnostic (docs/checks/dcgm.md): every result the ``dcgm_diag`` document
(gpuaccept.probe.dcgm) records as Fail or Warn fails the check, with the test, the GPU and DCGM's own message and
error code; a result of a status gpuaccept does not know fails too (it cannot be read as a pass). Skipped tests
are the document's waived rows, with DCGM's reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuaccept.judge.rules.finding import Finding

FAILING = ("fail", "warn")


def _message(r: dict[str, Any]) -> str:
    parts = []
    for m in r.get("messages") or []:
        text = str(m.get("text") or "").strip()
        code = f" (DCGM error {m['error_id']})" if m.get("error_id") is not None else ""
        if text or code:
            parts.append(text + code)
    return "; ".join(parts) or "DCGM gave no message"


def findings(doc: dict[str, Any], path: Path) -> list[Finding]:
    """One finding per failing result, naming the level, the test (``key``), its category and the GPU (``gpu``; or
    the entity)."""
    results = doc.get("results") if isinstance(doc.get("results"), dict) else {}
    level = (doc.get("parameters") or {}).get("level")
    out = []
    for r in results.get("tests") or []:
        if not isinstance(r, dict):
            continue
        status = str(r.get("status"))
        if status in ("pass", "skip", "not_run"):
            continue
        who = f"GPU {r['gpu']}" if r.get("gpu") is not None else (
            f"{r['entity_group']} {r.get('entity_id')}" if r.get("entity_group") else "the whole test")
        what = {"fail": "failed", "warn": "warned (a warning fails: DCGM 4's JSON reports it as Fail)"}.get(
            status, f"has a status gpuaccept does not know ({r.get('dcgm_status')!r})")
        message = (f"{path.name}: DCGM diag level {level}: {r.get('test')} ({r.get('category')}) {what} on {who}: "
                   f"{_message(r)}; run dcgmi diag -r {level} -v on the node for the details")  # fmt: skip
        gpu = r.get("gpu") if isinstance(r.get("gpu"), int) and not isinstance(r.get("gpu"), bool) else None
        out.append(Finding("dcgm", message, gpu=gpu, file=path.name, key=str(r.get("test") or "")))
    return out


def problems(doc: dict[str, Any], path: Path) -> list[str]:
    """``findings`` as the lines the verdict shows."""
    return [f.text() for f in findings(doc, path)]
