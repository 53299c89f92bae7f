"""Reading a reference file: a regular file, not too big, YAML without aliases or a key twice (read by
gpuaccept.textinput, with the line of every key), then its schema (gpuaccept.references.schema), then the meaning
of each entry (its metric's unit, layer and owner, its source, its bounds); every error names the file, the line
and the key."""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from gpuaccept import metric_table, textinput
from gpuaccept.references import bounds
from gpuaccept.references.model import (
    GPU_DIR,
    GPU_SCHEMA,
    MAX_FILE_BYTES,
    MAX_TOLERANCE,
    SCHEMA,
    SCHEMA_V1,
    GpuSku,
    MetricReference,
    NodeType,
    ReferenceError,
    _merge,
    _show,
    check_name,
)
from gpuaccept.references.schema import SCHEMAS, _schema_errors


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
        return textinput.parse_yaml(text, lines=True)
    except textinput.YamlError as err:
        where = f"{path}:{err.line}" if err.line else str(path)
        raise ReferenceError(f"{where}: {err.message}") from None
    except yaml.YAMLError as err:
        raise ReferenceError(f"{path}: not valid YAML: {_show(str(err), 300)}") from None


def _fail(path: Path, mapping: Any, key: str | None, message: str) -> ReferenceError:
    line = None
    if isinstance(mapping, textinput.Lines):
        line = mapping.lines.get(key, mapping.line) if key is not None else mapping.line
    where = f"{path}:{line}" if line else str(path)
    return ReferenceError(f"{where}: {message}")


def _finite(path: Path, entry: textinput.Lines, key: str, context: str) -> float | None:
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
    entry: textinput.Lines,
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
            "(its declaration in src/gpuaccept/checks.py)",
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


def _bounded(path: Path, entry: textinput.Lines, context: str, value: float | None, why: str | None) -> None:
    """A reference value out of bounds (gpuaccept.references.bounds) refused, naming the file, the line and the key."""
    if value is not None and why:
        raise _fail(path, entry, "value", f"{context}.value {value:g} cannot be a reference: {why}")


def _limits(path: Path, reference_dir: Path, names: list[str], pci_device_ids: list[str], gpus: int) -> bounds.Limits:
    """The physical bounds of a file's values: its GPU model's datasheet and GPU count (gpuaccept.references.bounds)."""
    try:
        return bounds.model_limits(reference_dir, names, pci_device_ids, gpus)
    except bounds.BoundsError as err:
        raise ReferenceError(f"{path}: cannot bound its values: {err}") from None


def _parse_checks(
    path: Path,
    doc: textinput.Lines,
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


def _load_doc(path: Path, schemas: tuple[str, ...]) -> textinput.Lines:
    doc = _read_yaml(path)
    if not isinstance(doc, textinput.Lines):
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


def _validate_match(path: Path, match: textinput.Lines) -> None:
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
    match = doc.get("match") or textinput.Lines()
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
