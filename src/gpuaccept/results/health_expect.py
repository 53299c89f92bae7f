"""A node type's ``health:`` section from a good node's facts (docs/checks/health.md, "Deriving the
expectations"): ``gpuaccept health-expectations --facts node-facts.json --source-id ID`` prints what that node
shows (its driver and CUDA, ECC and persistence mode, the NVLink links up per GPU and their slowest speed, and
each GPU's VBIOS, InfoROM, power limit and MIG mode as pins) as YAML, with a ``measured`` source entry naming
the facts. A reviewer reads it, drops the pins the site does not want, and puts it in the node type's file.

This is how the NVLink expectation of a 2- or 4-GPU board, which no datasheet gives, becomes a judged one.
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

import yaml

from gpuaccept import textinput
from gpuaccept.judge import config_drift
from gpuaccept.probe import nvlink


class HealthExpectError(ValueError):
    """Facts that cannot give a health section; the message names the file and what is missing."""


def _common(values: list[Any]) -> Any:
    """The value every GPU has, else None."""
    return values[0] if values and all(v == values[0] for v in values) and values[0] is not None else None


def derive(facts: dict[str, Any], source_id: str) -> dict[str, Any]:
    """The ``health:`` section the facts show (see the module), its source and pins naming ``source_id``."""
    gpus = [g for g in facts.get("gpus") or [] if isinstance(g, dict)]
    if not gpus:
        raise HealthExpectError(f"no GPU in the facts ({facts.get('gpu_error') or 'gpus is empty'})")
    configs = [g.get("config") if isinstance(g.get("config"), dict) else {} for g in gpus]
    section: dict[str, Any] = {
        "driver_versions": [facts.get("driver_version")] if facts.get("driver_version") else [],
        "cuda_versions": [facts.get("cuda_driver_version")] if facts.get("cuda_driver_version") else [],
        "ecc": all(c.get("ecc_mode_current") == "enabled" for c in configs),
        "persistence_mode": _common([c.get("persistence_mode") for c in configs]) or "any",
    }
    readings = [g.get("nvlink") for g in gpus]
    if all(isinstance(r, dict) and r.get("supported") for r in readings):
        section["nvlink_links_up"] = min(nvlink.summary(r)[1] or 0 for r in readings)
        speeds = [ln.get("speed_mbps") for r in readings for ln in r["links"] if ln.get("state") == "up"]
        if speeds and all(isinstance(s, int) for s in speeds):
            section["nvlink_speed_mbps"] = min(speeds)
    else:
        section["nvlink_links_up"] = 0
    pins: dict[str, Any] = {}
    for key, fieldname in config_drift.VERSION_PINS.items():
        values = sorted({c.get(fieldname) for c in configs if c.get(fieldname)})
        if values:
            pins[key] = values
    power = _common([config_drift.power_limit(c) for c in configs])
    if power is not None:
        pins["power_limit_w"] = power
    mig = _common([c.get("mig_mode_current") for c in configs])
    if mig is not None:
        pins["mig_mode"] = mig
    section.update(pins)
    section["source"] = source_id
    if pins:
        section["pins_source"] = source_id
    return section


def describe(facts: dict[str, Any]) -> str:
    gpus = facts.get("gpus") or []
    names = sorted({str(g.get("name")) for g in gpus})
    return (f"{facts.get('hostname') or 'unknown host'}: {len(gpus)} x {', '.join(names)}, driver "
            f"{facts.get('driver_version')}, CUDA {facts.get('cuda_driver_version')}")  # fmt: skip


def render(facts: dict[str, Any], facts_path: str, source_id: str) -> str:
    """The YAML a reviewer copies: the source entry and the health section."""
    when = facts.get("gathered_unix")
    date = dt.datetime.fromtimestamp(when, dt.UTC).strftime("%Y-%m-%d") if when else dt.date.today().isoformat()
    source = {
        source_id: {
            "kind": "measured",
            "machine": describe(facts),
            "date": date,
            "runs": 1,
            "statistic": "one node's facts (gpuaccept facts): NVLink links up, the minimum over GPUs; pins as read",
            "evidence": facts_path,
        }
    }
    head = (
        f"# Derived by gpuaccept health-expectations from {facts_path}.\n"
        "# Review it: keep only the pins the site qualifies (vbios_versions, inforom_image_versions, power_limit_w,\n"
        "# mig_mode), then put the source under 'sources:' and the section as 'health:' in the node type's file.\n"
    )
    body = yaml.safe_dump({"sources": source, "health": derive(facts, source_id)}, sort_keys=False, width=100)
    return head + body


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept health-expectations` (gpuaccept.cli_common says how subcommands are added)."""
    sp = sub.add_parser("health-expectations", help="print the health: section (NVLink links, pins) a good node's "
                        "facts show, for its node type's reference file")  # fmt: skip
    sp.add_argument("--facts", required=True, help="the node's facts (node-facts.json of a run, or gpuaccept facts)")
    sp.add_argument("--source-id", required=True, help="the id of the source entry to write (e.g. h200x2-2026-11-27)")
    sp.set_defaults(func=cmd_health_expectations)


def cmd_health_expectations(args: argparse.Namespace) -> int:
    path = Path(args.facts)
    facts = textinput.load_json(path, "the node facts", HealthExpectError)
    try:
        print(render(facts, str(path), args.source_id), end="")
    except HealthExpectError as err:
        raise HealthExpectError(f"{path}: {err}") from None
    return 0
