"""Reference values per node type: ``reference_values/<node_type>.yaml``.

A file says how a node of its type is recognised (``match``), where its numbers come from (``sources``), and
per check and metric the value, tolerance and unit that a measurement is judged against. The format is
described in docs/reference-values.md. Every error names the file, the line and the key.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SCHEMA = "gpuaccept.references/1"
SOURCE_KINDS = ("measured", "datasheet", "public", "synthetic")  # synthetic: test fixtures only
UNITS = ("GB/s", "us", "TFLOP/s", "GFLOP/s", "ratio", "W", "J", "s", "C", "count", "GFLOP/s/W")
UNITS += ("ns/day", "s/step", "kJ", "ns/day/kW")  # the molecular-dynamics checks (docs/checks/md.md)
NODE_TYPE_RE = re.compile(r"^[a-z0-9][a-z0-9_]*$")


class ReferenceError(Exception):
    """A reference file is missing, malformed, or has no entry for what was asked."""


class _Mapping(dict):
    """A dict that remembers the line of each key (1-based)."""

    lines: dict[str, int]
    line: int


class _LineLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _Mapping:
    mapping = _Mapping()
    mapping.lines = {}
    mapping.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            raise ReferenceError(f"line {key_node.start_mark.line + 1}: key {key!r} is not a string")
        if key in mapping:
            raise ReferenceError(f"line {key_node.start_mark.line + 1}: key {key!r} appears twice")
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.lines[key] = key_node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@dataclass(frozen=True)
class MetricReference:
    """One metric's reference: judged (value and tolerance) or informational (reported, not judged)."""

    check: str
    metric: str
    unit: str
    value: float | None
    lower: float | None  # fraction below ``value`` that still passes; None: no lower bound
    upper: float | None  # fraction above ``value`` that still passes; None: no upper bound
    source: str
    informational: str | None = None  # the reason it is not judged
    where: str = ""  # "file:line" for messages

    @property
    def judged(self) -> bool:
        return self.informational is None

    @property
    def lower_bound(self) -> float | None:
        if self.value is None or self.lower is None:
            return None
        return self.value * (1.0 - self.lower)

    @property
    def upper_bound(self) -> float | None:
        if self.value is None or self.upper is None:
            return None
        return self.value * (1.0 + self.upper)

    def assess(self, measured: float | None) -> tuple[str, str]:
        """The one place a measured value is judged against its reference: ("pass" | "fail" | "info", reason)."""
        if not self.judged:
            return "info", f"informational: {self.informational}"
        if measured is None or not math.isfinite(measured):
            return "fail", "no value"
        lo, hi = self.lower_bound, self.upper_bound
        if lo is not None and measured < lo:
            return "fail", f"below the reference's tolerance (lowest that passes: {lo:.4g} {self.unit})"
        if hi is not None and measured > hi:
            return "fail", f"above the reference's tolerance (highest that passes: {hi:.4g} {self.unit})"
        return "pass", ""

    def reframe_tuple(self) -> tuple[float, None, None, str]:
        """The ReFrame reference tuple: the value and unit, with no thresholds. ReFrame records the figures next
        to their reference; pass or fail is the judge's alone (``assess``), never decided twice."""
        return (self.value or 0.0, None, None, self.unit)


@dataclass
class NodeType:
    """A parsed ``reference_values/<node_type>.yaml``."""

    name: str
    path: Path
    description: str
    match: dict[str, Any]
    sources: dict[str, dict[str, Any]]
    checks: dict[str, dict[str, MetricReference]]
    extra: dict[str, Any] = field(default_factory=dict)

    def check(self, check: str) -> dict[str, MetricReference]:
        """The references of one check; a node type without them is an error, never an empty dict."""
        try:
            return self.checks[check]
        except KeyError:
            raise ReferenceError(
                f"{self.path}: node type {self.name!r} has no references for check {check!r} "
                f"(it has: {', '.join(sorted(self.checks)) or 'none'}); add a 'checks: {check}:' section "
                "(docs/reference-values.md)"
            ) from None

    def metric(self, check: str, metric: str) -> MetricReference:
        refs = self.check(check)
        try:
            return refs[metric]
        except KeyError:
            raise ReferenceError(
                f"{self.path}: node type {self.name!r} has no reference for metric {metric!r} of check "
                f"{check!r}; add it under 'checks: {check}:' (docs/reference-values.md)"
            ) from None

    def reframe_reference(self, check: str) -> dict[str, dict[str, tuple]]:
        """ReFrame's ``reference`` dictionary for one check, bound to every system ('*')."""
        return {"*": {name: ref.reframe_tuple() for name, ref in self.check(check).items()}}


def _fail(path: Path, mapping: Any, key: str | None, message: str) -> ReferenceError:
    line = None
    if isinstance(mapping, _Mapping):
        line = mapping.lines.get(key, mapping.line) if key is not None else mapping.line
    where = f"{path}:{line}" if line else str(path)
    return ReferenceError(f"{where}: {message}")


def _require(path: Path, mapping: Any, key: str, kind: type | tuple[type, ...], context: str) -> Any:
    if not isinstance(mapping, dict):
        raise _fail(path, mapping, None, f"{context} must be a mapping")
    if key not in mapping:
        raise _fail(path, mapping, None, f"{context}: required key {key!r} is missing")
    value = mapping[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in ((int, float), float, int)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _fail(path, mapping, key, f"{context}.{key} must be {names}, not {value!r}")
    return value


def _fraction(path: Path, mapping: _Mapping, key: str, context: str) -> float | None:
    if key not in mapping or mapping[key] is None:
        return None
    value = mapping[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value:
        raise _fail(path, mapping, key, f"{context}.{key} must be a fraction >= 0 (0.05 = 5%), not {value!r}")
    if key == "lower" and value >= 1:
        raise _fail(path, mapping, key, f"{context}.lower must be below 1 (a fraction of the value)")
    return float(value)


_METRIC_KEYS = {"value", "unit", "lower", "upper", "source", "informational", "note"}
_TOP_KEYS = {"schema", "node_type", "description", "match", "sources", "checks", "health", "power"}
_MATCH_KEYS = {"gpu_model", "gpu_count", "pcie_gen", "pcie_width", "cpu_model"}


def _parse_metric(path: Path, check: str, name: str, entry: Any, sources: dict) -> MetricReference:
    context = f"checks.{check}.{name}"
    if not isinstance(entry, _Mapping):
        raise _fail(path, entry, None, f"{context} must be a mapping with value, unit, lower/upper, source")
    unknown = set(entry) - _METRIC_KEYS
    if unknown:
        raise _fail(path, entry, sorted(unknown)[0], f"{context}: unknown key {sorted(unknown)[0]!r}")
    unit = _require(path, entry, "unit", str, context)
    if unit not in UNITS:
        raise _fail(path, entry, "unit", f"{context}.unit {unit!r} is not one of {', '.join(UNITS)}")
    source = _require(path, entry, "source", str, context)
    if source not in sources:
        raise _fail(path, entry, "source", f"{context}.source {source!r} is not defined under 'sources'")
    where = f"{path}:{entry.lines.get('value', entry.line)}"
    informational = entry.get("informational")
    if informational is not None:
        if not isinstance(informational, str) or not informational.strip():
            raise _fail(path, entry, "informational", f"{context}.informational must say why it is not judged")
        value = entry.get("value")
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise _fail(path, entry, "value", f"{context}.value must be a number")
        return MetricReference(
            check, name, unit, None if value is None else float(value), None, None, source, informational, where
        )
    value = _require(path, entry, "value", (int, float), context)
    if not math.isfinite(value) or value <= 0:
        raise _fail(path, entry, "value", f"{context}.value must be a positive number, not {value!r}")
    lower = _fraction(path, entry, "lower", context)
    upper = _fraction(path, entry, "upper", context)
    if lower is None and upper is None:
        raise _fail(path, entry, None, f"{context}: give a tolerance, 'lower' and/or 'upper' (fractions)")
    return MetricReference(check, name, unit, float(value), lower, upper, source, None, where)


def load_file(path: str | Path) -> NodeType:
    """Parse and validate one reference file; raise ReferenceError naming file, line and key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReferenceError(f"{path}: reference file not found") from None
    except OSError as err:
        raise ReferenceError(f"{path}: cannot read reference file: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise ReferenceError(
            f"{path}: not a reference file: not UTF-8 text ({err.reason} at byte {err.start})"
        ) from None
    try:
        doc = yaml.load(text, Loader=_LineLoader)
    except ReferenceError as err:
        raise ReferenceError(f"{path}: {err}") from None
    except yaml.YAMLError as err:
        raise ReferenceError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(doc, _Mapping):
        raise ReferenceError(f"{path}: a reference file is a YAML mapping (see docs/reference-values.md)")
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise _fail(path, doc, key, f"unknown top-level key {key!r}")
    schema = _require(path, doc, "schema", str, "file")
    if schema != SCHEMA:
        raise _fail(path, doc, "schema", f"schema must be {SCHEMA!r}, not {schema!r}")
    name = _require(path, doc, "node_type", str, "file")
    if name != path.stem:
        raise _fail(path, doc, "node_type", f"node_type {name!r} must equal the file name {path.stem!r}")
    if not NODE_TYPE_RE.match(name):
        raise _fail(path, doc, "node_type", f"node_type {name!r} must be lower-case letters, digits and _")
    description = _require(path, doc, "description", str, "file")

    match = _require(path, doc, "match", dict, "file")
    unknown = set(match) - _MATCH_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise _fail(path, match, key, f"match: unknown key {key!r} (known: {', '.join(sorted(_MATCH_KEYS))})")
    count = _require(path, match, "gpu_count", int, "match")
    if count < 0:
        raise _fail(path, match, "gpu_count", "match.gpu_count must be >= 0")
    if count > 0:
        _require(path, match, "gpu_model", str, "match")
    for key in ("pcie_gen", "pcie_width"):
        if key in match and (not isinstance(match[key], int) or isinstance(match[key], bool)):
            raise _fail(path, match, key, f"match.{key} must be an integer")
    if "cpu_model" in match:
        try:
            re.compile(_require(path, match, "cpu_model", str, "match"))
        except re.error as err:
            raise _fail(path, match, "cpu_model", f"match.cpu_model is not a valid regular expression: {err}") from None

    sources = _require(path, doc, "sources", dict, "file")
    for sid, src in sources.items():
        context = f"sources.{sid}"
        kind = _require(path, src, "kind", str, context)
        if kind not in SOURCE_KINDS:
            raise _fail(path, src, "kind", f"{context}.kind must be one of {', '.join(SOURCE_KINDS)}")
        if not isinstance(src, dict) or src.get("date") in (None, ""):
            raise _fail(path, src, None, f"{context}: required key 'date' is missing")
        if kind == "measured":
            for key, typ in (("machine", str), ("runs", int), ("statistic", str), ("evidence", str)):
                _require(path, src, key, typ, context)
            if src["runs"] < 1:
                raise _fail(path, src, "runs", f"{context}.runs must be at least 1")
        else:
            _require(path, src, "reference", str, context)

    checks_doc = _require(path, doc, "checks", dict, "file")
    if not checks_doc:
        raise _fail(path, checks_doc, None, "checks: no check has references")
    checks: dict[str, dict[str, MetricReference]] = {}
    for check, metrics in checks_doc.items():
        if not isinstance(metrics, _Mapping) or not metrics:
            raise _fail(path, checks_doc, check, f"checks.{check} must be a non-empty mapping of metrics")
        checks[check] = {name: _parse_metric(path, check, name, entry, sources) for name, entry in metrics.items()}
    extra = {key: doc[key] for key in ("health", "power") if key in doc}
    return NodeType(name, path, description, dict(match), dict(sources), checks, extra)


def reference_file(reference_dir: str | Path, node_type: str) -> Path:
    return Path(reference_dir) / f"{node_type}.yaml"


def load_node_type(reference_dir: str | Path, node_type: str) -> NodeType:
    """The references of one node type; an unknown node type is an error listing the known ones."""
    if not node_type or node_type == "auto":
        raise ReferenceError("no node type given: set gpuaccept_node_type or let 'gpuaccept detect' find one")
    if not NODE_TYPE_RE.match(node_type):
        raise ReferenceError(f"node type {node_type!r} is not a valid name (lower-case letters, digits and _)")
    if not Path(reference_dir).is_dir():
        what = "no such directory" if not Path(reference_dir).exists() else "not a directory"
        raise ReferenceError(f"{reference_dir}: {what} (the reference directory holds <node_type>.yaml files)")
    path = reference_file(reference_dir, node_type)
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in Path(reference_dir).glob("*.yaml"))) or "none"
        raise ReferenceError(
            f"{path}: unknown node type {node_type!r}: no such reference file (known node types: {known}); "
            "add one as docs/reference-values.md describes"
        )
    return load_file(path)


def load_all(reference_dir: str | Path) -> list[NodeType]:
    """Every reference file of a directory; the first bad one raises."""
    if not Path(reference_dir).is_dir():
        what = "no such directory" if not Path(reference_dir).exists() else "not a directory"
        raise ReferenceError(f"{reference_dir}: {what} (the reference directory holds <node_type>.yaml files)")
    files = sorted(Path(reference_dir).glob("*.yaml"))
    if not files:
        raise ReferenceError(f"{reference_dir}: no reference files (*.yaml) found")
    return [load_file(p) for p in files]


# ------------------------------------------------------------------------------------------------
# Recognising a node from its facts (gpuaccept.facts).


def mismatches(node_type: NodeType, facts: dict[str, Any]) -> list[str]:
    """Why ``facts`` do not describe a node of ``node_type``; empty when they do."""
    m = node_type.match
    gpus = facts.get("gpus") or []
    reasons = []
    if len(gpus) != m["gpu_count"]:
        reasons.append(f"{len(gpus)} GPUs found, {node_type.name} has {m['gpu_count']}")
    if m.get("gpu_model"):
        names = sorted({g.get("name") for g in gpus})
        if names and names != [m["gpu_model"]]:
            reasons.append(f"GPU model {', '.join(map(str, names))}, {node_type.name} has {m['gpu_model']}")
    for key, fact in (("pcie_gen", "pcie_gen_max"), ("pcie_width", "pcie_width_max")):
        if key in m:
            seen = sorted({g.get(fact) for g in gpus if g.get(fact) is not None})
            if seen and seen != [m[key]]:
                reasons.append(f"{key} {', '.join(map(str, seen))}, {node_type.name} has {m[key]}")
    if "cpu_model" in m and not re.search(m["cpu_model"], facts.get("cpu_model") or ""):
        reasons.append(f"CPU {facts.get('cpu_model')!r} does not match {m['cpu_model']!r}")
    return reasons


def detect(reference_dir: str | Path, facts: dict[str, Any]) -> NodeType:
    """The one node type whose ``match`` fits the facts; otherwise an error saying what was seen."""
    types = load_all(reference_dir)
    fits = [t for t in types if not mismatches(t, facts)]
    if len(fits) == 1:
        return fits[0]
    gpus = facts.get("gpus") or []
    seen = f"{len(gpus)} x {gpus[0].get('name')}" if gpus else f"no GPU ({facts.get('gpu_error') or 'none found'})"
    if not fits:
        detail = "; ".join(f"{t.name}: {', '.join(mismatches(t, facts))}" for t in types)
        raise ReferenceError(
            f"no reference file in {reference_dir} matches this node ({seen}, CPU {facts.get('cpu_model')!r}): "
            f"{detail}. Add reference_values/<node_type>.yaml (docs/reference-values.md) or set "
            "gpuaccept_node_type"
        )
    raise ReferenceError(
        f"several node types match this node ({seen}): {', '.join(t.name for t in fits)}; "
        "make their match rules exclusive or set gpuaccept_node_type"
    )
