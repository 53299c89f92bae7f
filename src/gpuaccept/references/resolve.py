"""The node type of a run, resolved once: ``gpuaccept run`` resolves it (:func:`resolve`: the node type the operator
names, or the one the node's facts match) and writes what it found to the run directory's ``node-type.json``
(:func:`write`): its name, the reference files it comes from with their sha256, and, where none could be
resolved, why. The ReFrame checks (gpuaccept.rfm, through ``$GPUACCEPT_NODE_TYPE_FILE``) and the judge
(gpuaccept.judge.summarize) read that file (:func:`read`) instead of resolving it again; a check loads the node type
from the files it names, once per process, and refuses them if one changed since (:meth:`Resolved.load`).

A run recorded before ``node-type.json`` existed has none: its node type is the name its caller gives, as before.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuaccept import manifest, textinput
from gpuaccept.atomic import write_text_atomic
from gpuaccept.layout import NODE_TYPE_FILE
from gpuaccept.references.detect import detect, mismatches
from gpuaccept.references.model import NodeType, ReferenceError, check_name
from gpuaccept.references.node_types import load_all, load_node_type

SCHEMA = "gpuaccept.node_type/1"
#: The environment variable through which gpuaccept run tells the ReFrame checks where its node-type.json is.
FILE_ENV = "GPUACCEPT_NODE_TYPE_FILE"
MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Resolved:
    """A run's node type as resolved: ``name`` ('' when none could be) and ``error`` (why not; None when it was),
    ``files`` the reference files it was loaded from, each with its sha256, under ``reference_dir``."""

    name: str
    error: str | None = None
    requested: str = "auto"
    reference_dir: str = ""
    files: tuple[tuple[str, str], ...] = ()
    warning: str = ""  # the node does not match the node type the operator named (judged as it all the same)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "name": self.name,
            "error": self.error,
            "requested": self.requested,
            "reference_dir": self.reference_dir,
            "files": [{"path": path, "sha256": sha} for path, sha in self.files],
        }

    def load(self) -> NodeType:
        """The node type, loaded again from the files it was resolved from: an error when none was resolved (its
        reason) or when one of its files changed since (the run is judged against what was resolved)."""
        if self.error or not self.name:
            raise ReferenceError(f"no node type for this node: {self.error or 'none resolved'}")
        for path, sha in self.files:
            try:
                now = manifest.file_sha256(Path(path))
            except OSError as err:
                raise ReferenceError(f"{path}: cannot read the reference file node type {self.name} was resolved "
                                     f"from: {err.strerror}") from None  # fmt: skip
            if now != sha:
                raise ReferenceError(f"{path}: changed since the run resolved node type {self.name} from it (sha256 "
                                     f"{sha[:12]}..., now {now[:12]}...): run the suite again")  # fmt: skip
        # Cached only where the sha256 above vouch for the files (the partition's node type has none to check).
        return _load_once(self.reference_dir, self.name, self.files) if self.files else load_node_type(
            self.reference_dir, self.name
        )


@functools.lru_cache(maxsize=8)
def _load_once(reference_dir: str, name: str, files: tuple[tuple[str, str], ...]) -> NodeType:
    """A node type parsed once per process for the files (and their sha256) it was resolved from: ReFrame runs every
    check of a suite in one process, and each binds the same node type (read-only: nothing changes a NodeType in
    place, binding makes new ones)."""
    return load_node_type(reference_dir, name)


def files_of(node_type: NodeType) -> tuple[tuple[str, str], ...]:
    """The reference files a node type is loaded from (its own file and its GPU SKU's), each with its sha256."""
    paths = dict.fromkeys([node_type.path, *([node_type.sku.path] if node_type.sku is not None else [])])
    return tuple((str(Path(p).resolve()), manifest.file_sha256(Path(p))) for p in paths)


def _known_types(reference_dir: Path) -> str:
    try:
        types = load_all(reference_dir)
    except ReferenceError as err:
        return f"the reference files cannot be read ({err})"
    if not types:
        return f"no node type has a reference file in {reference_dir}"
    expects = [f"{t.name} ({', '.join(f'{k} {v!r}' for k, v in t.match.items())})" for t in types]
    return "known node types and what each expects: " + "; ".join(expects)


def resolve(requested: str, reference_dir: str | Path, facts: dict[str, Any]) -> Resolved:
    """``auto`` (or ''): the node type whose match rules fit the facts; a name: that node type's reference file.
    Never raises for a node that fits none: the error goes to the verdict, and the run goes on with what can run."""
    reference_dir = Path(reference_dir)
    where = str(reference_dir.resolve())
    node = facts.get("hostname") or "this node"
    try:
        if requested in ("auto", ""):
            found = detect(reference_dir, facts)
            return Resolved(found.name, None, requested, where, files_of(found))
        loaded = load_node_type(reference_dir, requested)
    except ReferenceError as err:
        why = str(err)
        if requested in ("auto", ""):
            why = f"no reference file for this node: {why}"
        error = f"{why}. {_known_types(reference_dir)} (the node type row says how to make one)"
        return Resolved("", error, requested, where)
    mismatch = mismatches(loaded, facts)
    warning = ""
    if mismatch:
        warning = (f"{node} does not match node type {loaded.name} as {loaded.path} describes it: "
                   f"{'; '.join(mismatch)} (judged as {loaded.name} all the same)")  # fmt: skip
    return Resolved(loaded.name, None, requested, where, files_of(loaded), warning)


def write(run_dir: str | Path, resolved: Resolved) -> Path:
    """The run directory's node-type.json, written atomically; returns its path."""
    return write_text_atomic(Path(run_dir) / NODE_TYPE_FILE, json.dumps(resolved.to_json(), indent=2) + "\n")


def _text(doc: dict[str, Any], key: str, path: Path, none: bool = False) -> Any:
    value = doc.get(key)
    if (value is None and none) or isinstance(value, str):
        return value
    raise ReferenceError(f"{path}: '{key}' must be a string{' or null' if none else ''}, not {type(value).__name__}")


def read(path: str | Path, within: Path | None = None) -> Resolved:
    """A node-type.json, read strictly (gpuaccept.textinput.load_json): ReferenceError names the file and what is
    wrong with it."""
    path = Path(path)
    doc = textinput.load_json(path, "the run's node type file", ReferenceError, max_bytes=MAX_BYTES, within=within)
    if doc.get("schema") != SCHEMA:
        raise ReferenceError(f"{path}: 'schema' must be {SCHEMA!r}")
    name, error = _text(doc, "name", path), _text(doc, "error", path, none=True)
    if name:
        check_name(name)
    elif not error:
        raise ReferenceError(f"{path}: no node type and no error saying why")
    files = doc.get("files")
    if not isinstance(files, list) or not all(
        isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("sha256"), str) for f in files
    ):
        raise ReferenceError(f"{path}: 'files' must be a list of {{path, sha256}}")
    return Resolved(name, error, _text(doc, "requested", path), _text(doc, "reference_dir", path),
                    tuple((f["path"], f["sha256"]) for f in files))  # fmt: skip


def of_run(run_dir: str | Path) -> Resolved | None:
    """The node type a run resolved (its node-type.json), or None where it wrote none (a run recorded before)."""
    path = Path(run_dir) / NODE_TYPE_FILE
    return read(path, within=Path(run_dir)) if path.exists() or path.is_symlink() else None


def for_check(extras: dict[str, Any]) -> Resolved:
    """The node type a ReFrame check runs for: the run's node-type.json where gpuaccept run names one
    (``$GPUACCEPT_NODE_TYPE_FILE``), else the one the partition's extras name (resolved when the ReFrame configuration
    was written: the gpuaccept_reframe role, gpuaccept reframe-config; '' where none fits the node)."""
    path = os.environ.get(FILE_ENV)
    if path:
        return read(path)
    name = extras.get("node_type")
    reference_dir = str(extras.get("reference_dir", "reference_values"))
    if not isinstance(name, str) or name == "auto":
        raise ReferenceError(
            "the partition has no extras.node_type: generate the ReFrame configuration with the gpuaccept_reframe role "
            "or gpuaccept reframe-config (they resolve the node type)"
        )
    if not name:
        why = "no node type fits this node (the ReFrame configuration names none; gpuaccept detect says why)"
        return Resolved("", why, "", reference_dir)
    return Resolved(name, None, name, reference_dir)
