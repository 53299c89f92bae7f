"""Reference values in two layers: per GPU SKU, and per node type.

- ``reference_values/gpus/<sku>.yaml`` (schema ``gpuaccept.gpu/1``): how NVML names the GPU (model names and
  PCI device ids, as DCGM keys its diag thresholds) and its per-GPU figures (copies, GEMM, HPL per GPU,
  power), which hold for each GPU of any node built with it.
- ``reference_values/<node_type>.yaml`` (schema ``gpuaccept.references/2``): names its GPU SKU and count and
  holds only what is particular to the node (peer-to-peer, NUMA x GPU, collectives, host GEMM and HPL, node
  sums, health expectations such as NVLink links).
- A self-contained ``gpuaccept.references/1`` file (both layers in one file) still loads.

Which layer a metric belongs to, and its unit, is its check's declaration (src/gpuaccept/judge/checks.py). A node
of a known SKU with no node type file for its GPU count gets the node type ``<sku>_x<count>``: its per-GPU
figures are judged, its node layer is missing (NodeType.node_layer_missing says why) and the node is not accepted
until a node type file is added. The format is described in docs/reference-values.md; every error names the
file, the line and the key.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from gpuaccept import textinput
from gpuaccept.judge import bounds, link, metric_table

SCHEMA_V1 = "gpuaccept.references/1"  # one file holding both layers
SCHEMA = "gpuaccept.references/2"  # a node type naming its GPU SKU: the node layer only
GPU_SCHEMA = "gpuaccept.gpu/1"  # a GPU SKU: the per-GPU layer
NODE_BASELINE_SCHEMA = "gpuaccept.node_baseline/1"  # one node's own host figures, from its accepted runs
NODE_BASELINE_FILE = "node-baseline.yaml"  # results/<node>/node-baseline.yaml, beside the node's runs
GPU_DIR = "gpus"
SOURCE_KINDS = ("measured", "datasheet", "public", "synthetic")  # synthetic: test fixtures only
UNITS = metric_table.UNITS
MAX_TOLERANCE = 0.5  # a wider tolerance needs 'wide_tolerance: <why>' in its entry
MAX_FILE_BYTES = 1 << 20
# Node types, GPU SKUs and run ids: one pattern, checked everywhere a name becomes a path component.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")  # whole string: check_name uses fullmatch
NODE_TYPE_RE = NAME_RE  # the name it had
_SYNTHETIC_RE = re.compile(r"^(?P<sku>.+)_x(?P<count>[1-9][0-9]{0,3})$")
PASS, FAIL, INFO = "pass", "fail", "info"


class ReferenceError(Exception):
    """A reference file is missing, malformed, or has no entry for what was asked."""


def check_name(value: Any, what: str = "node type") -> str:
    """``value`` if it is a safe name (node type, GPU SKU, run id: letters, digits, '_', '.', '-', not starting
    with '.' or '-', at most 128 characters, so never a path); ReferenceError otherwise."""
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        shown = _show(value)
        raise ReferenceError(
            f"{what} {shown} is not a valid name: letters, digits, '_', '.' and '-', starting with a letter or digit, "
            "at most 128 characters"
        )
    return value


def _show(value: Any, limit: int = 60) -> str:
    """repr() of a value for a message, cut short: a message never carries a huge value."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Mapping(dict):
    """A dict that remembers the line of each key (1-based)."""

    lines: dict[str, int]
    line: int


class _LineLoader(textinput.DepthLimitedLoader):
    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        # Aliases are refused, never expanded: reference files need none, and expanding them (a "billion laughs"
        # file) costs minutes and gigabytes before anything can be said about the file.
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise ReferenceError(
                f"line {event.start_mark.line + 1}: YAML alias *{event.anchor} is not allowed in reference files "
                "(write the value out)"
            )
        return super().compose_node(parent, index)


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _Mapping:
    mapping = _Mapping()
    mapping.lines = {}
    mapping.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            raise ReferenceError(f"line {key_node.start_mark.line + 1}: key {_show(key)} is not a string")
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
    layer: str = metric_table.GPU  # 'gpu': from the GPU SKU's file; 'node': from the node type's
    source_kind: str = ""  # the kind of its source: measured, datasheet, public, synthetic
    owner: str = metric_table.GPU  # what the figure is a property of: gpu, link, host, node (metric_table)
    band: str = ""  # why the band is what it is (the reference file's 'band', or how a link gate was formed)
    link_fraction: float | None = None  # a link figure: the fraction of the link's rate that must be reached

    @property
    def needs_link(self) -> bool:
        """A link gate not yet bound to a node's link (``for_link``): it cannot judge a value by itself."""
        return self.link_fraction is not None and self.value is None

    @property
    def judged(self) -> bool:
        return self.informational is None

    @property
    def provenance(self) -> str:
        """Where the figure comes from, for a verdict row: 'source id (kind), file:line'."""
        kind = f" ({self.source_kind})" if self.source_kind else ""
        return f"{self.source}{kind}, {self.where}" if self.where else f"{self.source}{kind}"

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

    def assess(self, measured: Any) -> tuple[str, str, tuple[float | None, float | None]]:
        """(status, reason, (lower bound, upper bound)) of a measured value against this reference: the one place
        where pass or fail of a value is decided. Status is 'pass', 'fail' or 'info' (informational: reported,
        not judged); the reason is empty on a pass."""
        bounds = (self.lower_bound, self.upper_bound)
        if not self.judged:
            return INFO, f"informational: {self.informational}", (None, None)
        if self.needs_link:
            return FAIL, "a link gate not bound to the node's PCIe link (the judge binds it from the facts)", bounds
        if measured is None:
            return FAIL, "no value", bounds
        if isinstance(measured, bool) or not isinstance(measured, (int, float)) or not math.isfinite(measured):
            return FAIL, f"not a finite number: {_show(measured)}", bounds
        lo, hi = bounds
        tol = f"{self.value:.6g} {self.unit}"
        if lo is not None and measured < lo and self.link_fraction is not None:
            return FAIL, f"below {lo:.6g} {self.unit}: {self.band} ({self.provenance})", bounds
        if lo is not None and measured < lo:
            return FAIL, f"below {lo:.6g} {self.unit} (reference {tol} -{self.lower:.0%}, {self.provenance})", bounds
        if hi is not None and measured > hi:
            return FAIL, f"above {hi:.6g} {self.unit} (reference {tol} +{self.upper:.0%}, {self.provenance})", bounds
        return PASS, "", bounds

    def for_link(self, rate_gbps: float, link: str) -> MetricReference:
        """A link gate bound to the node's link: the floor is ``link_fraction`` of the link's rate per direction
        (a bidirectional figure moves both directions at once: twice the rate)."""
        assert self.link_fraction is not None
        rate = rate_gbps * (2.0 if self.metric.startswith("bidir") else 1.0)
        floor = self.link_fraction * rate
        both = ", both directions" if rate != rate_gbps else ""
        band = f"at least {self.link_fraction:g} of the link ({link}{both})"
        return dataclasses.replace(self, value=floor, lower=0.0, upper=None, band=band)

    def judge(self, measured: float | None) -> bool | None:
        """True/False for a judged metric, None for an informational one (``assess`` decides)."""
        status = self.assess(measured)[0]
        return None if status == INFO else status == PASS

    def reframe_tuple(self) -> tuple[float, None, None, str]:
        """The ReFrame reference tuple: the value and unit, with no thresholds. ReFrame records the figures next
        to their reference; pass or fail is the judge's alone (``assess``), never decided twice."""
        return (self.value or 0.0, None, None, self.unit)


@dataclass
class GpuSku:
    """A parsed ``reference_values/gpus/<sku>.yaml``: how NVML names the GPU, and its per-GPU figures."""

    name: str
    path: Path
    description: str
    names: list[str]  # NVML's nvmlDeviceGetName
    pci_device_ids: list[str]  # NVML's pciDeviceId, "0x233010DE" (device id << 16 | vendor id 10DE)
    sources: dict[str, dict[str, Any]]
    checks: dict[str, dict[str, MetricReference]]
    health: dict[str, Any] | None = None  # per-GPU health expectations, for a node type without a file

    def fits(self, gpu: dict[str, Any]) -> bool:
        """Whether a GPU of the node facts is of this SKU: by PCI device id where the facts have one (the
        name alone where they do not: facts recorded before device ids were read)."""
        device = gpu.get("pci_device_id")
        if device and self.pci_device_ids:
            return str(device).upper() in {d.upper() for d in self.pci_device_ids}
        return gpu.get("name") in self.names


@dataclass
class NodeType:
    """A node type: its GPU SKU's per-GPU references and its own node-level ones, merged per check."""

    name: str
    path: Path
    description: str
    match: dict[str, Any]  # gpu_count, gpu_model (the SKU's first name), and pcie_gen, pcie_width, cpu_model
    sources: dict[str, dict[str, Any]]
    checks: dict[str, dict[str, MetricReference]]
    extra: dict[str, Any] = field(default_factory=dict)
    sku: GpuSku | None = None  # None: a self-contained gpuaccept.references/1 file
    # Why the node layer is missing (a known SKU, no node type file for this GPU count); None when present.
    node_layer_missing: str | None = None

    @property
    def gpu_count(self) -> int:
        return int(self.match["gpu_count"])

    def check(self, check: str) -> dict[str, MetricReference]:
        """The references of one check; a node type without them is an error, never an empty dict."""
        try:
            return self.checks[check]
        except KeyError:
            raise ReferenceError(
                f"{self.path}: node type {self.name!r} has no references for check {check!r} "
                f"(it has: {', '.join(sorted(self.checks)) or 'none'}); add a 'checks: {check}:' section "
                "(docs/reference-values.md)"
                + (f"; {self.node_layer_missing}" if self.node_layer_missing else "")
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

    def missing_reason(self, check: str, metric: str) -> str | None:
        """Why a metric has no reference when that is the node layer's absence (NOT RUN, not FAIL); else None."""
        if self.node_layer_missing is None:
            return None
        try:
            layer = metric_table.layer(check, metric)
        except metric_table.UnknownMetric:
            return None
        return self.node_layer_missing if layer == metric_table.NODE else None

    def reframe_reference(self, check: str) -> dict[str, dict[str, tuple]]:
        """ReFrame's ``reference`` dictionary for one check, bound to every system ('*')."""
        return {"*": {name: ref.reframe_tuple() for name, ref in self.check(check).items()}}


# ------------------------------------------------------------------------------------------------
# Reading a file: a regular file, not too big, YAML without aliases, then the schema, then the meaning.


def _read_yaml(path: Path) -> Any:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ReferenceError(f"{path}: reference file not found") from None
    except OSError as err:
        raise ReferenceError(f"{path}: cannot read reference file: {err.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ReferenceError(f"{path}: not a regular file (a reference file is a plain YAML file)")
    if st.st_size > MAX_FILE_BYTES:
        raise ReferenceError(f"{path}: {st.st_size} bytes: a reference file is at most {MAX_FILE_BYTES} bytes")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ReferenceError(f"{path}: not a regular file (a reference file is a plain YAML file)")
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise ReferenceError(f"{path}: cannot read reference file: {err.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ReferenceError(f"{path}: a reference file is at most {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ReferenceError(f"{path}: not UTF-8 text (byte {err.start})") from None
    try:
        return yaml.load(text, Loader=_LineLoader)
    except ReferenceError as err:
        raise ReferenceError(f"{path}:{str(err).removeprefix('line ')}") from None
    except yaml.YAMLError as err:
        raise ReferenceError(f"{path}: not valid YAML: {_show(str(err), 300)}") from None


_NUMBER = {"type": "number"}
_TEXT = {"type": "string", "minLength": 1}
_SOURCE = {
    "type": "object",
    "required": ["kind", "date"],
    "properties": {"kind": {"enum": list(SOURCE_KINDS)}},
    "allOf": [
        {
            "if": {"properties": {"kind": {"const": "measured"}}},
            "then": {
                "required": ["machine", "runs", "statistic", "evidence"],
                "properties": {
                    "machine": _TEXT,
                    "runs": {"type": "integer", "minimum": 1},
                    "statistic": _TEXT,
                    "evidence": _TEXT,
                },
            },
            "else": {"required": ["reference"], "properties": {"reference": _TEXT}},
        }
    ],
}
_METRIC = {
    "type": "object",
    "required": ["unit", "source"],
    "additionalProperties": False,
    "properties": {
        "value": _NUMBER,
        "unit": {"type": "string"},
        "lower": {**_NUMBER, "minimum": 0, "exclusiveMaximum": 1},
        "upper": {**_NUMBER, "minimum": 0},
        "link_fraction": {**_NUMBER, "exclusiveMinimum": 0, "maximum": 1},
        "source": {"type": "string"},
        "informational": _TEXT,
        "wide_tolerance": _TEXT,
        "owner": {"enum": list(metric_table.OWNERS)},
        "band": _TEXT,
        "note": {"type": "string"},
    },
    "oneOf": [
        {
            "required": ["informational"],
            "not": {"anyOf": [{"required": ["lower"]}, {"required": ["upper"]}, {"required": ["link_fraction"]}]},
        },
        {
            "required": ["value"],
            "not": {"anyOf": [{"required": ["informational"]}, {"required": ["link_fraction"]}]},
            "anyOf": [{"required": ["lower"]}, {"required": ["upper"]}],
        },
        {
            "required": ["link_fraction"],
            "not": {"anyOf": [{"required": k} for k in (["informational"], ["value"], ["lower"], ["upper"])]},
        },
    ],
}
_CHECKS = {
    "type": "object",
    "additionalProperties": {"type": "object", "minProperties": 1, "additionalProperties": _METRIC},
}
_MATCH = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "gpu_model": {"type": "string"},
        "gpu_count": {"type": "integer", "minimum": 0},
        "pcie_gen": {"type": "integer", "minimum": 1},
        "pcie_width": {"type": "integer", "minimum": 1},
        "cpu_model": {"type": "string"},
    },
}
_EXTRA = {"health": {"type": "object"}, "power": {"type": "object"}, "fabric": {"type": "object"}}
_STRING = {"type": "string"}
_SOURCES = {"type": "object", "additionalProperties": _SOURCE}
_SOME_CHECKS = {**_CHECKS, "minProperties": 1}


def _file_schema(schema: str, **properties: Any) -> dict[str, Any]:
    """A reference file's JSON schema: an object with these keys and no others, ``schema`` naming it; every key is
    required but ``match`` (where ``gpu`` and ``gpu_count`` stand instead), ``health``, ``power`` and ``fabric``."""
    optional = ("health", "power", "fabric") if "gpu" not in properties else ("match", "health", "power", "fabric")
    return {
        "type": "object",
        "required": ["schema", *(key for key in properties if key not in optional)],
        "additionalProperties": False,
        "properties": {"schema": {"const": schema}, **properties},
    }


SCHEMAS: dict[str, dict[str, Any]] = {
    SCHEMA_V1: _file_schema(
        SCHEMA_V1,
        node_type=_STRING,
        description=_STRING,
        match={**_MATCH, "required": ["gpu_count"]},
        sources=_SOURCES,
        checks=_SOME_CHECKS,
        **_EXTRA,
    ),
    SCHEMA: _file_schema(
        SCHEMA,
        node_type=_STRING,
        description=_STRING,
        gpu=_STRING,
        gpu_count={"type": "integer", "minimum": 1},
        match={**_MATCH, "properties": {k: v for k, v in _MATCH["properties"].items()
                                        if k not in ("gpu_model", "gpu_count")}},
        sources=_SOURCES,
        checks=_CHECKS,
        **_EXTRA,
    ),
    GPU_SCHEMA: _file_schema(
        GPU_SCHEMA,
        sku=_STRING,
        description=_STRING,
        match={
            "type": "object",
            "required": ["names"],
            "additionalProperties": False,
            "properties": {
                "names": {"type": "array", "minItems": 1, "items": _TEXT},
                "pci_device_ids": {
                    "type": "array",
                    "items": {"type": "string", "pattern": "^0x[0-9A-Fa-f]{8}$"},
                },
            },
        },
        sources=_SOURCES,
        checks=_SOME_CHECKS,
        # Per-GPU health expectations (no NVLink links: those are the node type's), for <sku>_x<count>.
        health={"type": "object", "not": {"required": ["nvlink_links_up"]}},
    ),
    NODE_BASELINE_SCHEMA: _file_schema(
        NODE_BASELINE_SCHEMA,
        node=_STRING,
        node_type=_STRING,
        description=_STRING,
        sources=_SOURCES,
        checks=_SOME_CHECKS,
    ),
}

def _line_of(doc: Any, path: list[Any]) -> int | None:
    """The line of the deepest key on ``path`` that the document remembers."""
    line, node = getattr(doc, "line", None), doc
    for key in path:
        if isinstance(node, _Mapping) and key in node:
            line = node.lines.get(key, line)
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            break
    return line


def _schema_errors(path: Path, doc: Any, schema: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return
    err = jsonschema.exceptions.best_match(errors) if len(errors) > 1 else errors[0]
    # A metric is judged or informational (oneOf): name the problem of the form it was meant to have.
    while err.context and err.validator != "anyOf":
        if err.validator == "oneOf" and isinstance(err.instance, dict):
            branch = 0 if "informational" in err.instance else 1
            mine = [e for e in err.context if e.schema_path and e.schema_path[0] == branch]
            if not mine:
                break
            err = mine[0]
        else:
            err = min(err.context, key=lambda e: (-len(e.absolute_path), len(e.message)))
    keys = list(err.absolute_path)
    line = _line_of(doc, keys)
    where = ".".join(map(str, keys)) or "file"
    if err.validator == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        key = extra[0] if extra else "?"
        line = _line_of(doc, [*keys, key]) or line
        what = "top-level key" if not keys else "key"
        message = f"{where}: unknown {what} {key!r} (see docs/reference-values.md)"
    elif err.validator == "required":
        message = f"{where}: required key {err.message.split(' is a required')[0][:80]} is missing"
    elif err.validator == "oneOf":
        message = f"{where}: a metric is either judged (value and 'lower' and/or 'upper', fractions) or "
        message += "informational (a reason, no tolerance)"
    elif err.validator == "not":
        message = f"{where}: give either 'informational' or a value with a tolerance, not both"
    elif err.validator == "anyOf":
        message = f"{where}: give a tolerance, 'lower' and/or 'upper' (fractions)"
    else:
        message = f"{where}: {_show(err.instance)} {_reason(err)}"
    raise ReferenceError(f"{path}:{line}: {message}" if line else f"{path}: {message}")


def _reason(err: jsonschema.ValidationError) -> str:
    v, expected = err.validator, err.validator_value
    if v == "type":
        return f"must be of type {expected}"
    if v in ("minimum", "exclusiveMinimum"):
        return f"must be {'>=' if v == 'minimum' else '>'} {expected}"
    if v in ("maximum", "exclusiveMaximum"):
        return f"must be {'<=' if v == 'maximum' else 'below'} {expected}"
    if v == "const":
        return f"must be {expected!r}"
    if v == "enum":
        return f"must be one of {', '.join(map(str, expected))}"
    if v == "minLength":
        return "must not be empty (say why)"
    if v in ("minProperties", "minItems"):
        return "must not be empty"
    if v == "pattern":
        return f"must match {expected}"
    return _show(err.message, 200)


def _fail(path: Path, mapping: Any, key: str | None, message: str) -> ReferenceError:
    line = None
    if isinstance(mapping, _Mapping):
        line = mapping.lines.get(key, mapping.line) if key is not None else mapping.line
    where = f"{path}:{line}" if line else str(path)
    return ReferenceError(f"{where}: {message}")


def _finite(path: Path, entry: _Mapping, key: str, context: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if not math.isfinite(value):
        raise _fail(path, entry, key, f"{context}.{key} must be a finite number, not {_show(value)}")
    return float(value)


def _parse_metric(
    path: Path,
    check: str,
    name: str,
    entry: _Mapping,
    sources: dict,
    layers: tuple[str, ...],
    host_baseline: bool = False,
    limits: bounds.Limits | None = None,
) -> MetricReference:
    context = f"checks.{check}.{name}"
    try:
        unit, layer = metric_table.lookup(check, name)
        owner = metric_table.owner(check, name)
    except metric_table.UnknownMetric as err:
        raise _fail(path, entry, None, f"{context}: {err}") from None
    if entry["unit"] != unit:
        raise _fail(path, entry, "unit", f"{context}.unit {_show(entry['unit'])} is not the metric's unit {unit!r}")
    if "owner" in entry and entry["owner"] != owner:
        raise _fail(
            path, entry, "owner",
            f"{context}.owner {_show(entry['owner'])}: the metric is owned by {owner!r} "
            "(its declaration in src/gpuaccept/judge/checks.py)",
        )
    if host_baseline:
        if owner != metric_table.HOST:
            raise _fail(path, entry, None, f"{context} is a {owner} figure: a node baseline holds host figures only")
    elif layer not in layers:
        home = f"{GPU_DIR}/<sku>.yaml" if layer == metric_table.GPU else "<node_type>.yaml"
        raise _fail(
            path, entry, None, f"{context} is a {layer}-level figure: it belongs in reference_values/{home}"
        )
    source = entry["source"]
    if source not in sources:
        raise _fail(path, entry, "source", f"{context}.source {_show(source)} is not defined under 'sources'")
    kind = sources[source]["kind"]
    where = f"{path}:{entry.lines.get('value', entry.line)}"
    value = _finite(path, entry, "value", context)
    lower = _finite(path, entry, "lower", context)
    upper = _finite(path, entry, "upper", context)
    link_fraction = _finite(path, entry, "link_fraction", context)
    band = str(entry.get("band") or "")
    informational = entry.get("informational")
    common = {"where": where, "layer": layer, "source_kind": kind, "owner": owner, "band": band}
    if informational is not None:
        _bounded(path, entry, context, value, bounds.problem(check, name, value, limits or bounds.Limits()))
        return MetricReference(check, name, unit, value, None, None, source, informational, **common)
    if link_fraction is not None:
        if owner != metric_table.LINK:
            raise _fail(path, entry, "link_fraction", f"{context}.link_fraction: only link figures are judged against "
                        f"the link, and this one is owned by {owner!r}")  # fmt: skip
        return MetricReference(check, name, unit, None, None, None, source, None, link_fraction=link_fraction,
                               **common)  # fmt: skip
    if owner == metric_table.HOST and not host_baseline and kind != "synthetic":
        raise _fail(
            path, entry, "value",
            f"{context} is a host figure (the host, the VM and the moment give it): it is judged only against the "
            "node's own baseline (gpuaccept baseline --node-baseline); here make it 'informational: <why>'",
        )
    if owner == metric_table.LINK and kind != "synthetic":
        raise _fail(path, entry, "value", f"{context} is a link figure: give 'link_fraction' (of the rate of the "
                    "link NVML reports), not a value measured on another machine's link")  # fmt: skip
    if value is None or value <= 0:
        raise _fail(path, entry, "value", f"{context}.value must be a positive number, not {_show(value)}")
    # Out of the metric's physical bounds (above the GPU model's datasheet), or too small to judge anything.
    _bounded(path, entry, context, value,
             bounds.reference_problem(check, name, value, lower is not None, limits or bounds.Limits()))  # fmt: skip
    if "wide_tolerance" not in entry:
        for key, tol in (("lower", lower), ("upper", upper)):
            if tol is not None and tol > MAX_TOLERANCE:
                raise _fail(
                    path, entry, key,
                    f"{context}.{key} {tol:g} is over {MAX_TOLERANCE:g}: a tolerance that wide hardly judges; "
                    "if it must be, say why in 'wide_tolerance' (docs/reference-values.md)",
                )
    return MetricReference(check, name, unit, value, lower, upper, source, None, **common)


def _bounded(path: Path, entry: _Mapping, context: str, value: float | None, why: str | None) -> None:
    """A reference value out of bounds (gpuaccept.judge.bounds) refused, naming the file, the line and the key."""
    if value is not None and why:
        raise _fail(path, entry, "value", f"{context}.value {value:g} cannot be a reference: {why}")


def _limits(path: Path, reference_dir: Path, names: list[str], pci_device_ids: list[str], gpus: int) -> bounds.Limits:
    """The physical bounds of a file's values: its GPU model's datasheet and GPU count (gpuaccept.judge.bounds)."""
    try:
        return bounds.model_limits(reference_dir, names, pci_device_ids, gpus)
    except bounds.BoundsError as err:
        raise ReferenceError(f"{path}: cannot bound its values: {err}") from None


def _parse_checks(
    path: Path,
    doc: _Mapping,
    sources: dict,
    layers: tuple[str, ...],
    host_baseline: bool = False,
    limits: bounds.Limits | None = None,
) -> dict[str, dict[str, MetricReference]]:
    checks: dict[str, dict[str, MetricReference]] = {}
    for check, metrics in doc["checks"].items():
        if check not in metric_table.METRICS:
            raise _fail(
                path, doc["checks"], check,
                f"checks: unknown check {check!r} (known: {', '.join(sorted(metric_table.METRICS))})",
            )
        checks[check] = {
            name: _parse_metric(path, check, name, entry, sources, layers, host_baseline, limits)
            for name, entry in metrics.items()
        }
    return checks


def _load_doc(path: Path, schemas: tuple[str, ...]) -> _Mapping:
    doc = _read_yaml(path)
    if not isinstance(doc, _Mapping):
        raise ReferenceError(f"{path}: a reference file is a YAML mapping (see docs/reference-values.md)")
    schema = doc.get("schema")
    if schema not in schemas:
        raise _fail(path, doc, "schema", f"schema must be {' or '.join(map(repr, schemas))}, not {_show(schema)}")
    _schema_errors(path, doc, SCHEMAS[schema])
    return doc


def load_gpu(path: str | Path) -> GpuSku:
    """Parse and validate one GPU SKU file (``reference_values/gpus/<sku>.yaml``)."""
    path = Path(path)
    doc = _load_doc(path, (GPU_SCHEMA,))
    name = doc["sku"]
    if name != path.stem:
        raise _fail(path, doc, "sku", f"sku {_show(name)} must equal the file name {path.stem!r}")
    try:
        check_name(name, "sku")
    except ReferenceError as err:
        raise _fail(path, doc, "sku", str(err)) from None
    sources = {k: dict(v) for k, v in doc["sources"].items()}
    match = doc["match"]
    limits = _limits(path, path.parent.parent, list(match["names"]), list(match.get("pci_device_ids") or []), 1)
    checks = _parse_checks(path, doc, sources, (metric_table.GPU,), limits=limits)
    health = doc.get("health")
    if health is not None and health.get("source") not in sources:
        key = "source" if "source" in health else None
        raise _fail(path, health, key, "health.source must name an entry of 'sources'")
    return GpuSku(
        name, path, doc["description"], list(match["names"]), list(match.get("pci_device_ids") or []), sources, checks,
        health,
    )


def _validate_match(path: Path, match: _Mapping) -> None:
    if "cpu_model" in match:
        try:
            re.compile(match["cpu_model"])
        except re.error as err:
            raise _fail(path, match, "cpu_model", f"match.cpu_model is not a valid regular expression: {err}") from None


def load_file(path: str | Path) -> NodeType:
    """Parse and validate one node type file (and, for a two-layer one, its GPU SKU's file); raise
    ReferenceError naming file, line and key."""
    path = Path(path)
    doc = _load_doc(path, (SCHEMA, SCHEMA_V1))
    name = doc["node_type"]
    if name != path.stem:
        raise _fail(path, doc, "node_type", f"node_type {_show(name)} must equal the file name {path.stem!r}")
    try:
        check_name(name)
    except ReferenceError as err:
        raise _fail(path, doc, "node_type", str(err)) from None
    match = doc.get("match") or _Mapping()
    _validate_match(path, match)
    sources = {k: dict(v) for k, v in doc["sources"].items()}
    extra = {key: doc[key] for key in ("health", "power", "fabric") if key in doc}
    if doc["schema"] == SCHEMA_V1:
        if match["gpu_count"] > 0 and "gpu_model" not in match:
            raise _fail(path, match, None, "match: required key 'gpu_model' is missing")
        models = [match["gpu_model"]] if match.get("gpu_model") else []
        limits = _limits(path, path.parent, models, [], match["gpu_count"])
        checks = _parse_checks(path, doc, sources, metric_table.LAYERS, limits=limits)
        return NodeType(name, path, doc["description"], dict(match), sources, checks, extra)

    try:
        sku_name = check_name(doc["gpu"], "gpu")
    except ReferenceError as err:
        raise _fail(path, doc, "gpu", str(err)) from None
    sku_path = path.parent / GPU_DIR / f"{sku_name}.yaml"
    if not sku_path.exists():
        known = ", ".join(sorted(p.stem for p in (path.parent / GPU_DIR).glob("*.yaml"))) or "none"
        raise _fail(path, doc, "gpu", f"gpu {sku_name!r}: no GPU SKU file {sku_path} (known SKUs: {known})")
    sku = load_gpu(sku_path)
    limits = _limits(path, path.parent, sku.names, sku.pci_device_ids, doc["gpu_count"])
    node_checks = _parse_checks(path, doc, sources, (metric_table.NODE,), limits=limits)
    for sid, src in sku.sources.items():
        if sid in sources and sources[sid] != src:
            raise _fail(path, doc["sources"], sid, f"source {sid!r} differs from the one of the same id in {sku_path}")
    merged_sources = {**sku.sources, **sources}
    full_match = {"gpu_model": sku.names[0], "gpu_count": doc["gpu_count"], **match}
    return NodeType(
        name, path, doc["description"], full_match, merged_sources, _merge(sku.checks, node_checks), extra, sku
    )


def _merge(*layers: dict[str, dict[str, MetricReference]]) -> dict[str, dict[str, MetricReference]]:
    out: dict[str, dict[str, MetricReference]] = {}
    for layer in layers:
        for check, refs in layer.items():
            out.setdefault(check, {}).update(refs)
    return out


@dataclass
class NodeBaseline:
    """A parsed ``results/<node>/node-baseline.yaml``: one node's host figures from its own accepted runs."""

    node: str
    node_type: str
    path: Path
    checks: dict[str, dict[str, MetricReference]]


def load_node_baseline(path: str | Path) -> NodeBaseline:
    """Parse and validate a node baseline (host figures only, each judged); ReferenceError names file and line."""
    path = Path(path)
    doc = _load_doc(path, (NODE_BASELINE_SCHEMA,))
    for key, what in (("node", "node"), ("node_type", "node type")):
        try:
            check_name(doc[key], what)
        except ReferenceError as err:
            raise _fail(path, doc, key, str(err)) from None
    sources = {k: dict(v) for k, v in doc["sources"].items()}
    checks = _parse_checks(path, doc, sources, metric_table.LAYERS, host_baseline=True)
    for check, refs in checks.items():
        for name, ref in refs.items():
            if not ref.judged:
                raise _fail(path, doc["checks"][check], name, f"checks.{check}.{name}: a node baseline judges what "
                            "it holds; leave a figure out rather than make it informational")  # fmt: skip
    return NodeBaseline(doc["node"], doc["node_type"], path, checks)


def with_node_baseline(node_type: NodeType, baseline: NodeBaseline) -> NodeType:
    """The node type's references with the node's own host figures judged (they replace the informational host
    entries); an error when the baseline was recorded for another node type."""
    if baseline.node_type != node_type.name:
        raise ReferenceError(
            f"{baseline.path}: node baseline of node type {baseline.node_type!r}, this node is judged as "
            f"{node_type.name!r}: record it again (gpuaccept baseline --node-baseline) or remove it"
        )
    return dataclasses.replace(node_type, checks=_merge(node_type.checks, baseline.checks))


def bind_link(node_type: NodeType, facts: dict[str, Any]) -> NodeType:
    """The node type with its link gates bound to the node's slowest PCIe link as the facts report it
    (gpuaccept.judge.link); where NVML reported no link, the gates stay unbound and say why (NOT RUN)."""
    rate, label = link.node_link(facts)
    checks: dict[str, dict[str, MetricReference]] = {}
    for check, refs in node_type.checks.items():
        checks[check] = {}
        for name, ref in refs.items():
            bound = ref
            if ref.needs_link:
                why = f"cannot judge against the PCIe link: {label}"
                bound = ref.for_link(rate, label) if rate else dataclasses.replace(ref, band=why)
            checks[check][name] = bound
    return dataclasses.replace(node_type, checks=checks)


def reference_file(reference_dir: str | Path, node_type: str) -> Path:
    return Path(reference_dir) / f"{check_name(node_type)}.yaml"


def load_gpus(reference_dir: str | Path) -> list[GpuSku]:
    """Every GPU SKU file of a reference directory."""
    return [load_gpu(p) for p in sorted((Path(reference_dir) / GPU_DIR).glob("*.yaml"))]


def sku_only(sku: GpuSku, count: int) -> NodeType:
    """The node type of ``count`` GPUs of a known SKU that has no node type file: per-GPU references only; the
    node layer is missing, so the node is not accepted until a node type file is added."""
    name = f"{sku.name}_x{count}"
    why = (
        f"no node-level reference: run gpuaccept baseline on this node's runs and add reference_values/{name}.yaml "
        f"(gpu: {sku.name}, gpu_count: {count}; docs/reference-values.md)"
    )
    desc = f"{count} x {sku.description} (per-GPU references only: no node type file for {count} GPUs)"
    match = {"gpu_model": sku.names[0], "gpu_count": count}
    extra = {"health": sku.health} if sku.health is not None else {}
    return NodeType(name, sku.path, desc, match, dict(sku.sources), _merge(sku.checks), extra, sku, why)


def _sku_only(reference_dir: str | Path, node_type: str) -> tuple[Path, int] | None:
    """The GPU SKU file and GPU count of a node type named ``<sku>_x<count>`` (count 1 to 9999) of a known SKU;
    None for any other name."""
    synthetic = _SYNTHETIC_RE.match(node_type)
    if not synthetic:
        return None
    sku_path = Path(reference_dir) / GPU_DIR / f"{synthetic['sku']}.yaml"
    return (sku_path, int(synthetic["count"])) if sku_path.exists() else None


def node_type_exists(reference_dir: str | Path, node_type: str) -> bool:
    """Whether a node type can be loaded (:func:`load_node_type`): its file ``<reference_dir>/<node_type>.yaml``
    exists, or it is ``<sku>_x<count>`` of a known GPU SKU (``gpus/<sku>.yaml``) with a count of 1 or more. The
    one answer to "is there such a node type"; scripts/accept.sh and playbooks/tasks/preflight.yml apply the same
    rule, and tests/test_node_types.py holds them to it. An invalid name is a ReferenceError."""
    return reference_file(reference_dir, node_type).exists() or _sku_only(reference_dir, node_type) is not None


def unknown_node_type(reference_dir: str | Path, node_type: str) -> str:
    """What to say of a node type that does not exist (:func:`node_type_exists`): its name, and what exists."""
    known = ", ".join(sorted(p.stem for p in Path(reference_dir).glob("*.yaml"))) or "none"
    skus = ", ".join(sorted(p.stem for p in (Path(reference_dir) / GPU_DIR).glob("*.yaml"))) or "none"
    return (
        f"unknown node type {node_type!r}: no such reference file (known node types: {known}; <sku>_x<count> for "
        f"the known GPU SKUs: {skus})"
    )


def load_node_type(reference_dir: str | Path, node_type: str) -> NodeType:
    """The references of one node type; ``<sku>_x<count>`` of a known SKU without a file of its own gives the
    per-GPU layer alone (:func:`sku_only`); an unknown node type is an error listing the known ones."""
    if not node_type or node_type == "auto":
        raise ReferenceError("no node type given: set gpuaccept_node_type or let 'gpuaccept detect' find one")
    path = reference_file(reference_dir, node_type)
    if not node_type_exists(reference_dir, node_type):
        raise ReferenceError(
            f"{path}: {unknown_node_type(reference_dir, node_type)}; add one as docs/reference-values.md describes"
        )
    synthetic = None if path.exists() else _sku_only(reference_dir, node_type)
    return load_file(path) if synthetic is None else sku_only(load_gpu(synthetic[0]), synthetic[1])


def load_all(reference_dir: str | Path) -> list[NodeType]:
    """Every node type file of a directory (and so every GPU SKU file they name); the first bad one raises.
    GPU SKU files no node type names are validated too."""
    files = sorted(Path(reference_dir).glob("*.yaml"))
    if not files:
        raise ReferenceError(f"{reference_dir}: no reference files (*.yaml) found")
    load_gpus(reference_dir)
    return [load_file(p) for p in files]


# ------------------------------------------------------------------------------------------------
# Recognising a node from its facts (gpuaccept.facts).


def _gpu_label(gpu: dict[str, Any]) -> str:
    device = gpu.get("pci_device_id")
    return f"{gpu.get('name')}" + (f" (PCI device id {device})" if device else "")


def mismatches(node_type: NodeType, facts: dict[str, Any]) -> list[str]:
    """Why ``facts`` do not describe a node of ``node_type``; empty when they do."""
    m = node_type.match
    gpus = facts.get("gpus") or []
    reasons = []
    if len(gpus) != m["gpu_count"]:
        reasons.append(f"{len(gpus)} GPUs found, {node_type.name} has {m['gpu_count']}")
    if node_type.sku is not None:
        others = sorted({_gpu_label(g) for g in gpus if not node_type.sku.fits(g)})
        if others:
            reasons.append(f"GPU {', '.join(others)} is not a {node_type.sku.name} ({node_type.sku.path})")
    elif m.get("gpu_model"):
        names = sorted({str(g.get("name")) for g in gpus})
        if names and names != [m["gpu_model"]]:
            reasons.append(f"GPU model {', '.join(names)}, {node_type.name} has {m['gpu_model']}")
    for key, fact in (("pcie_gen", "pcie_gen_max"), ("pcie_width", "pcie_width_max")):
        if key in m:
            seen = sorted({g.get(fact) for g in gpus if g.get(fact) is not None})
            if seen and seen != [m[key]]:
                reasons.append(f"{key} {', '.join(map(str, seen))}, {node_type.name} has {m[key]}")
    if "cpu_model" in m and not re.search(m["cpu_model"], facts.get("cpu_model") or ""):
        reasons.append(f"CPU {facts.get('cpu_model')!r} does not match {m['cpu_model']!r}")
    return reasons


def wrong_gpus(node_type: NodeType, facts: dict[str, Any]) -> str:
    """What is wrong with the node's GPUs for its node type ("" when each is of the GPU model the node type names):
    a GPU whose PCI device id is not the model's (where both say one) or whose name is not among the model's
    names, or that has neither to tell it by. The reason says what was expected and what was found."""
    if node_type.sku is not None:
        names, ids, where = list(node_type.sku.names), list(node_type.sku.pci_device_ids), node_type.sku.path
    else:  # a self-contained gpuaccept.references/1 file names the model by NVML's name alone
        names, ids, where = [str(node_type.match.get("gpu_model"))], [], node_type.path
    wanted = {i.upper() for i in ids}
    gpus = [g for g in facts.get("gpus") or [] if isinstance(g, dict)]
    wrong = []
    for g in gpus:
        name, device = g.get("name"), g.get("pci_device_id")
        by_id = bool(device) and bool(wanted)
        if (by_id and str(device).upper() not in wanted) or (name is not None and name not in names) or (
            name is None and not by_id
        ):
            wrong.append(g)
    if not wrong:
        return ""
    ordered = f"{names[0]} (" + (f"PCI device id {', '.join(ids)}; " if ids else "") + f"{where})"
    found: dict[str, list[str]] = {}
    for g in wrong:
        found.setdefault(_gpu_label(g), []).append(str(g.get("index")))
    seen = "; ".join(f"GPU {', '.join(idx)}: {label}" for label, idx in sorted(found.items()))
    return (
        f"node type {node_type.name} is {node_type.gpu_count} x {ordered}; the node has {seen}: it was "
        "built with other GPUs than its node type names. Judge it as the node type of its GPUs (gpuaccept detect), "
        "or have it built as ordered"
    )


def detect_sku(reference_dir: str | Path, facts: dict[str, Any]) -> GpuSku:
    """The GPU SKU of every GPU of the node, from NVML's PCI device id (or name); an error when the GPUs are
    of no known SKU or of several."""
    gpus = facts.get("gpus") or []
    if not gpus:
        raise ReferenceError(f"no GPU SKU: no GPU found ({facts.get('gpu_error') or 'none found'})")
    skus = load_gpus(reference_dir)
    found: dict[str, GpuSku] = {}
    for gpu in gpus:
        fits = [s for s in skus if s.fits(gpu)]
        if len(fits) != 1:
            listed = ", ".join(s.name for s in (fits or skus)) or "none"
            raise ReferenceError(
                f"GPU {gpu.get('index')}: {_gpu_label(gpu)} is "
                + ("of several SKUs: " if fits else "of no known GPU SKU (known: ")
                + listed
                + ("" if fits else f"); add {Path(reference_dir) / GPU_DIR}/<sku>.yaml (docs/reference-values.md)")
            )
        found[fits[0].name] = fits[0]
    if len(found) > 1:
        raise ReferenceError(
            f"the node's GPUs are of several SKUs ({', '.join(sorted(found))}): no node type mixes them"
        )
    return next(iter(found.values()))


def detect(reference_dir: str | Path, facts: dict[str, Any]) -> NodeType:
    """The node type of this node: the one node type file whose SKU, GPU count and match fit the facts. A
    known SKU with no node type file for its GPU count gives ``<sku>_x<count>`` (per-GPU layer only)."""
    types = load_all(reference_dir)
    fits = [t for t in types if not mismatches(t, facts)]
    if len(fits) == 1:
        return fits[0]
    gpus = facts.get("gpus") or []
    seen = f"{len(gpus)} x {_gpu_label(gpus[0])}" if gpus else f"no GPU ({facts.get('gpu_error') or 'none found'})"
    if fits:
        raise ReferenceError(
            f"several node types match this node ({seen}): {', '.join(t.name for t in fits)}; "
            "make their match rules exclusive or set gpuaccept_node_type"
        )
    if gpus and (Path(reference_dir) / GPU_DIR).is_dir():
        sku = detect_sku(reference_dir, facts)
        same = [t for t in types if t.sku is not None and t.sku.name == sku.name and t.gpu_count == len(gpus)]
        if not same:
            return sku_only(sku, len(gpus))
        types = same  # files for this SKU and count exist but do not fit: say why, do not guess
    detail = "; ".join(f"{t.name}: {', '.join(mismatches(t, facts))}" for t in types)
    raise ReferenceError(
        f"no reference file in {reference_dir} matches this node ({seen}, CPU {facts.get('cpu_model')!r}): "
        f"{detail}. Add reference_values/<node_type>.yaml (docs/reference-values.md) or set "
        "gpuaccept_node_type"
    )
