"""NVIDIA's own diagnostic, DCGM's ``dcgmi diag``, where the site has it (docs/checks/dcgm.md).

``gpuaccept dcgm-diag --level N --output dcgm_diag.json`` runs ``dcgmi diag -r N -j`` and folds every test DCGM
reports, per GPU where it gives one, into one gpuaccept.bench/1 document: ``results.tests`` (one record per test
and entity: its category, status, and DCGM's own messages and error codes), the counts per status as metrics
(and per GPU under ``gpu_metrics``), and each skipped test as a waived row with DCGM's reason. Whether the node
passes is the judge's (gpuaccept.judge.dcgm_rules): any Fail (or Warn) fails the check, naming the test and GPU.

Without ``dcgmi`` on PATH, or when it cannot reach nv-hostengine, the document says ``not_run`` with the reason
and the fix, and the check is NOT RUN: the site has not installed DCGM, which is not a pass.

The output read: DCGM 4's (``{"DCGM Diagnostic": {"test_categories": [{"category", "tests": [{"name",
"results": [{"entity_group", "entity_id", "status", "warnings": [{"warning", "error_id", ...}]}],
"test_summary": {"status", ...}}]}]}, "entity_groups": [...], "metadata": {...}}``, as NVIDIA's DCGM repository
describes it in testing/python3/dcgm_diag_schema.json and dcgmi/Diag.cpp writes it), and DCGM 3's (``"DCGM GPU
Diagnostic"``, each result for ``gpu_ids``/``gpu_id`` with its ``status``, its ``warnings`` and ``info`` each one
string; the deployment tests name no GPU). DCGM 4 writes a warning as ``Fail``
in its JSON (dcgmi/Diag.cpp shows ``Warn`` only in its text table).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gpuaccept.atomic import write_text_atomic
from gpuaccept.probe import document

TOOL = "gpuaccept-dcgm-diag"
#: The diagnostic level each suite runs (docs/checks/dcgm.md): NVIDIA's dcgmi diag reference gives level 1 as
#: seconds, 2 about two minutes, 3 about 15 minutes, 4 longer still.
SUITE_LEVELS = {"commission": 3, "evaluation": 2, "burnin": 3}
DEFAULT_LEVEL = 2
#: How long each level may run before the probe stops dcgmi (the ReFrame check's own limit is longer).
TIMEOUT_S = {1: 300, 2: 1200, 3: 2700, 4: 4 * 3600}
STATUSES = {"pass": "pass", "fail": "fail", "skip": "skip", "warn": "warn", "not run": "not_run"}
NOT_INSTALLED = "dcgmi not installed"
FIX_INSTALL = (
    "install datacenter-gpu-manager (NVIDIA's DCGM packages for the node's CUDA major version) and start "
    "nv-hostengine (systemctl enable --now nvidia-dcgm)"
)
FIX_HOSTENGINE = "start nv-hostengine (systemctl enable --now nvidia-dcgm, or run nv-hostengine as root) and rerun"
# What dcgmi prints, whatever -j says, when it cannot reach the host engine (dcgmi/Command.cpp).
_NO_HOSTENGINE = re.compile(r"unable to (?:connect to host engine|establish a connection to the specified host)", re.I)


class DcgmOutputError(ValueError):
    """dcgmi's output is not the diagnostic's JSON; the message says what was found instead."""


@dataclass
class Diag:
    """One ``dcgmi diag -j`` output, read: every test result, DCGM's versions and entities, or its runtime error."""

    schema: str = ""  # "DCGM Diagnostic" (DCGM 4) or "DCGM GPU Diagnostic" (DCGM 3)
    version: str | None = None
    driver: str | None = None
    runtime_error: str | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    gpus: list[dict[str, Any]] = field(default_factory=list)  # the GPUs DCGM ran on: index, device id, serial


def test_key(name: str) -> str:
    """A test's name as a metric name part: ``Targeted Stress`` -> ``targeted_stress``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "unnamed"


def _status(text: Any) -> str:
    return STATUSES.get(str(text).strip().lower(), f"unknown ({text})")


def _listed(value: Any) -> list[Any]:
    """A field DCGM 4 writes as a list and DCGM 2/3's dcgmi as one value (``"info"``, ``"warnings"``), as a list."""
    if value is None or value == "":
        return []
    return list(value) if isinstance(value, list) else [value]


def _messages(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """DCGM's warnings: DCGM 4's objects (``warning``, ``error_id``, ``error_category``, ``error_severity``), or
    DCGM 2/3's one string (its dcgmi writes the message alone, with no error code)."""
    out = []
    for w in _listed(entry.get("warnings")):
        if isinstance(w, dict):
            codes = {k: w.get(k) for k in ("error_id", "error_category", "error_severity")}
            out.append({"text": str(w.get("warning") or ""), **codes})
        else:
            out.append({"text": str(w), "error_id": None, "error_category": None, "error_severity": None})
    return out


def _value(text: Any) -> Any:
    """A string DCGM fills with one of its blank values (``<<<NOT_SUPPORTED>>>``, ``<<<NOT_FOUND>>>``,
    ``<<<NULL>>>``, ``<<<NOT_PERM>>>``: DCGM_STR_* in dcgm_structs.h) as None: a GB10 has no serial to report."""
    if isinstance(text, str) and text.startswith("<<<") and text.endswith(">>>"):
        return None
    return text


def _record(category: str, test: str, entry: dict[str, Any], group: str | None, eid: int | None) -> dict[str, Any]:
    return {
        "category": category,
        "test": test,
        "test_key": test_key(test),
        "entity_group": group,
        "entity_id": eid,
        "gpu": eid if group == "GPU" else None,
        "status": _status(entry.get("status")),
        "dcgm_status": entry.get("status"),
        "messages": _messages(entry),
        "info": [str(i) for i in _listed(entry.get("info"))],
    }


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _test_records(category: str, test: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per entity a test reports (DCGM 4: entity_group/entity_id; DCGM 3: gpu_ids/gpu_id), and one
    for its summary where the summary failed for a reason no entity carries (an error of the whole test)."""
    name = str(test.get("name") or "unnamed")
    records = []
    for entry in test.get("results") or []:
        if not isinstance(entry, dict):
            continue
        if "entity_group" in entry or "entity_id" in entry:
            records.append(_record(category, name, entry, entry.get("entity_group"), _int(entry.get("entity_id"))))
            continue
        ids = str(entry.get("gpu_ids", entry.get("gpu_id", ""))).split(",")
        ids = [i for i in (_int(x) for x in ids) if i is not None]
        per_gpu = [_record(category, name, entry, "GPU", i) for i in ids]
        records += per_gpu or [_record(category, name, entry, None, None)]
    summary = test.get("test_summary")
    if isinstance(summary, dict):
        status = _status(summary.get("status"))
        failing = status in ("fail", "warn")
        if not records or (failing and not any(r["status"] in ("fail", "warn") for r in records)):
            records.append(_record(category, name, summary, None, None))
    return records


def parse(text: str) -> Diag:
    """``dcgmi diag -j``'s standard output (a JSON object; text around it, as some versions print, is skipped)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise DcgmOutputError(f"no JSON object in dcgmi's output: {' '.join(text.split())[:300] or '(empty)'}")
    try:
        doc = json.loads(text[start : end + 1])
    except json.JSONDecodeError as err:
        raise DcgmOutputError(f"dcgmi's output is not valid JSON: {err}") from None
    return parse_doc(doc)


def parse_doc(doc: Any) -> Diag:
    """A parsed ``dcgmi diag -j`` object (DCGM 4 or 3)."""
    if not isinstance(doc, dict):
        raise DcgmOutputError(f"dcgmi's output is a JSON {type(doc).__name__}, not an object")
    schema = next((k for k in ("DCGM Diagnostic", "DCGM GPU Diagnostic") if isinstance(doc.get(k), dict)), "")
    if not schema:
        keys = ", ".join(sorted(doc)) or "none"
        raise DcgmOutputError(f"no 'DCGM Diagnostic' object in dcgmi's output (keys: {keys})")
    body = doc[schema]
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    diag = Diag(
        schema=schema,
        version=meta.get("version") or body.get("version"),
        driver=meta.get("Driver Version Detected") or body.get("Driver Version Detected"),
        runtime_error=body.get("runtime_error"),
    )
    for cat in body.get("test_categories") or []:
        if isinstance(cat, dict):
            for test in cat.get("tests") or []:
                if isinstance(test, dict):
                    diag.results += _test_records(str(cat.get("category") or ""), test)
    for group in doc.get("entity_groups") or []:
        if isinstance(group, dict) and group.get("entity_group") == "GPU":
            for e in group.get("entities") or []:
                if isinstance(e, dict):
                    diag.gpus.append({"index": _int(e.get("entity_id")), "device_id": _value(e.get("device_id")),
                                      "serial": _value(e.get("serial_num"))})  # fmt: skip
    if not diag.gpus:  # DCGM 3 lists no entities: the GPUs its results name
        diag.gpus = [{"index": i, "device_id": None, "serial": None}
                     for i in sorted({r["gpu"] for r in diag.results if r["gpu"] is not None})]  # fmt: skip
    return diag


def _waived_name(r: dict[str, Any]) -> str:
    if r["entity_group"] is None:
        return f"dcgm_{r['test_key']}"
    who = "gpu" if r["entity_group"] == "GPU" else test_key(str(r["entity_group"]))
    return f"dcgm_{r['test_key']}_{who}{r['entity_id']}"


def _counts(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    c = Counter(r["status"] for r in records)
    return {
        "dcgm_passed": {"value": c["pass"], "unit": "count", "better": "higher",
                        "description": "DCGM diagnostic results (test x entity) that passed"},
        "dcgm_failed": {"value": c["fail"], "unit": "count", "better": "lower",
                        "description": "DCGM diagnostic results that failed (each fails the check)"},
        "dcgm_warned": {"value": c["warn"], "unit": "count", "better": "lower",
                        "description": "DCGM diagnostic results that warned (each fails the check)"},
        "dcgm_skipped": {"value": c["skip"] + c["not_run"], "unit": "count", "better": "lower",
                         "description": "DCGM diagnostic results DCGM skipped or did not run (shown waived)"},
    }  # fmt: skip


def build_document(
    diag: Diag | None,
    level: int,
    argv: list[str],
    started: str,
    elapsed_s: float,
    not_run: dict[str, str] | None = None,
    errors: list[str] | None = None,
    command: list[str] | None = None,
) -> dict[str, Any]:
    """The gpuaccept.bench/1 document of one diagnostic run (``diag`` None: it did not run or was not read)."""
    errors = list(errors or [])
    if diag is not None and diag.runtime_error:
        errors.append(f"DCGM: {diag.runtime_error}")
    records = diag.results if diag is not None else []
    doc: dict[str, Any] = {
        **document.header(TOOL, argv, started, f"one dcgmi diag -r {level} run", elapsed_s),
        "cuda": {"driver_version": None, "runtime_version": None, "driver_release": diag.driver if diag else None},
        "devices": [
            {"index": g["index"], "name": None, "device_id": g["device_id"], "serial": g["serial"]}
            for g in (diag.gpus if diag else [])
        ],
        "parameters": {"level": level, "command": command},
        "results": {
            "dcgm_version": diag.version if diag else None,
            "schema": diag.schema if diag else None,
            "tests": records,
        },
        "metrics": _counts(records) if diag is not None and not not_run else {},
        "waived": {
            _waived_name(r): f"{'skipped' if r['status'] == 'skip' else 'not run'} by DCGM diag level {level}: "
            + ("; ".join(m["text"] for m in r["messages"] if m["text"]) or "DCGM gave no reason")
            for r in records
            if r["status"] in ("skip", "not_run")
        },
        "verification": {"passed": diag is not None and not errors, "checked": len(records), "failures": errors[:]},
        "errors": errors,
    }
    gpus = sorted({r["gpu"] for r in records if r["gpu"] is not None})
    if gpus:
        doc["gpu_metrics"] = [
            {"gpu": g, "metrics": {k: {kk: vv for kk, vv in v.items() if kk != "description"}
                                   for k, v in _counts([r for r in records if r["gpu"] == g]).items()}}
            for g in gpus
        ]  # fmt: skip
    if not_run:
        doc["not_run"] = not_run
    return doc


def run_dcgmi(level: int, timeout_s: float, dcgmi: str) -> tuple[Diag | None, dict[str, str] | None, list[str]]:
    """Run ``dcgmi diag -r LEVEL -j``: (the diagnostic read, why it could not run, errors)."""
    command = [dcgmi, "diag", "-r", str(level), "-j"]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False,
                             env={**os.environ, "LC_ALL": "C"})  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, None, [f"dcgmi diag -r {level} did not finish within {timeout_s:g} s (a hung GPU or diagnostic: "
                            "look at nv-hostengine's log and the kernel log)"]  # fmt: skip
    except OSError as err:
        return None, {"reason": f"{NOT_INSTALLED}: {dcgmi}: {err.strerror}", "fix": FIX_INSTALL}, []
    text = out.stdout + "\n" + out.stderr
    line = _NO_HOSTENGINE.search(text)
    if line:
        said = next((ln.strip() for ln in text.splitlines() if _NO_HOSTENGINE.search(ln)), line.group(0))
        return None, {"reason": f"nv-hostengine cannot be reached: dcgmi said {said!r}", "fix": FIX_HOSTENGINE}, []
    try:
        return parse(out.stdout), None, []
    except DcgmOutputError as err:
        return None, None, [f"dcgmi exited {out.returncode}: {err}"]


def level_for(args: argparse.Namespace) -> int:
    level = 1 if args.quick else args.level
    if level not in TIMEOUT_S:
        raise ValueError(f"--level {level}: DCGM's diagnostic levels are 1, 2, 3 and 4")
    return level


def run(args: argparse.Namespace, argv: list[str]) -> tuple[dict[str, Any], int]:
    """``gpuaccept dcgm-diag``: run, write the document; exit 0 whenever the document was written (the judge
    decides), 4 bad command line."""
    level = level_for(args)
    timeout_s = args.timeout_s or TIMEOUT_S[level]
    started, t0 = document.utc_iso(), time.monotonic()
    dcgmi = args.dcgmi or shutil.which("dcgmi")
    command = [dcgmi or "dcgmi", "diag", "-r", str(level), "-j"]
    if not dcgmi:
        diag, not_run, errors = None, {"reason": f"{NOT_INSTALLED} (not on PATH)", "fix": FIX_INSTALL}, []
    else:
        diag, not_run, errors = run_dcgmi(level, timeout_s, dcgmi)
    doc = build_document(diag, level, argv, started, time.monotonic() - t0, not_run, errors, command)
    write_text_atomic(args.output, document.dumps(doc, indent=1))
    if not_run:
        print(f"NOT RUN: {not_run['reason']}; fix: {not_run['fix']}")
    for e in doc["errors"]:
        print(f"error: {e}")
    for r in doc["results"]["tests"]:
        if r["status"] in ("fail", "warn"):
            who = f"GPU {r['gpu']}" if r["gpu"] is not None else (r["entity_group"] or "the node")
            said = "; ".join(m["text"] for m in r["messages"] if m["text"]) or "no message"
            print(f"{r['status'].upper()}: {r['test']} on {who}: {said}")
    counts = doc["metrics"]
    if counts:
        said = ", ".join(f"{v['value']} {k.removeprefix('dcgm_')}" for k, v in counts.items())
        print(f"{TOOL}: level {level}: {said} -> {args.output}")
    return doc, 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept dcgm-diag` (gpuaccept.cli_common says how subcommands are added)."""
    sp = sub.add_parser("dcgm-diag", help="run DCGM's dcgmi diag at a level and write its results as a document; "
                        "NOT RUN where dcgmi or nv-hostengine is missing")  # fmt: skip
    sp.add_argument("--output", required=True, help="the gpuaccept.bench/1 document to write (atomically)")
    sp.add_argument("--level", type=int, default=DEFAULT_LEVEL, help="dcgmi diag -r LEVEL, 1-4 (default %(default)s)")
    sp.add_argument("--quick", action="store_true", help="level 1 (seconds): the deployment checks alone")
    sp.add_argument("--timeout-s", type=float, help="stop dcgmi after this long (default per level: "
                    + ", ".join(f"{k}: {v} s" for k, v in TIMEOUT_S.items()) + ")")  # fmt: skip
    sp.add_argument("--dcgmi", help="the dcgmi command (default: dcgmi on PATH)")
    sp.set_defaults(func=cmd_dcgm_diag)


def cmd_dcgm_diag(args: argparse.Namespace) -> int:
    return run(args, ["gpuaccept", *sys.argv[1:]])[1]
