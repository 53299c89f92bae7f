"""The reference files' JSON schemas (one per ``schema:`` a file names) and the error a file that breaks its
schema gets: the file, the line and the key, in words (docs/reference-values.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema

from gpuaccept import metric_table, textinput
from gpuaccept.references.model import (
    GPU_SCHEMA,
    NODE_BASELINE_SCHEMA,
    SCHEMA,
    SCHEMA_V1,
    SOURCE_KINDS,
    ReferenceError,
    _show,
)

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
        if isinstance(node, textinput.Lines) and key in node:
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
