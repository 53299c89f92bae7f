"""The one reader of gpuaccept's input files: text, JSON and YAML, with errors that name the file and, where the
parser knows it, the line.

The API is five functions: :func:`read_text` (a file's text), :func:`load_json` and :func:`load_yaml` (a file
read and parsed), :func:`parse_json` and :func:`parse_yaml` (text already in hand, e.g. a reference file's
reviewed text). Every other module reads its JSON and YAML files through them (tests/test_one_reader.py fails on
a ``json.load`` or ``yaml.*load`` elsewhere, a tool's standard output excepted by name).

:func:`read_text` reads only a regular file (never through a symbolic link, never a FIFO or device), not empty, at
most ``max_bytes``, as UTF-8, and, given ``within``, only one inside that directory. JSON is parsed strictly: a key
twice in one object (a reader that keeps the last one would pass a document whose failing value comes first),
``NaN`` or ``Infinity``, a number out of range (``1e999``, an integer of hundreds of digits), nesting deeper than
``MAX_DEPTH`` (checked before parsing, so it never ends in a RecursionError) are each an error. YAML is parsed by
the safe loader (no arbitrary objects) with the same refusals: a key twice in one mapping, an alias (expanding
aliases, a "billion laughs" file, costs minutes and gigabytes before anything can be said about the file), nesting
deeper than ``MAX_DEPTH``.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from itertools import accumulate
from pathlib import Path
from typing import Any

import yaml

#: The deepest nesting of arrays and objects a JSON input may have: the deepest document a tool writes is 7 levels.
MAX_DEPTH = 64
#: The largest integer a JSON input may hold (a byte count or a time in nanoseconds is far below it).
MAX_INTEGER = 2**64
#: The largest file read by default: the largest document a tool writes is a few MB (the bandwidth sweep).
MAX_BYTES = 256 << 20


class JsonError(ValueError):
    """Text that is not strict JSON; the message says where and what (the caller adds the file)."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise JsonError(f"key {key!r} appears twice in one object (which one counts is not defined)")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise JsonError(f"{name} is not a JSON number (a figure must be finite)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonError(f"number {text[:40]} is out of range (not a finite double)")
    return value


def _integer(text: str) -> int:
    if len(text) > 24:  # more digits than MAX_INTEGER has: out of range before it is converted
        raise JsonError(f"integer {text[:24]}... ({len(text)} digits) is out of range")
    value = int(text)
    if abs(value) > MAX_INTEGER:
        raise JsonError(f"integer {text} is out of range (beyond 2**64)")
    return value


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def nesting(text: str) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings do not count)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return 0
    return max(accumulate(1 if c in "[{" else -1 for c in brackets))


def parse_json(text: str) -> Any:
    """JSON text parsed strictly (the module's docstring); JsonError says what is wrong and, where the parser
    knows it, on which line."""
    depth = nesting(text)
    if depth > MAX_DEPTH:
        raise JsonError(f"arrays and objects nested {depth} deep, more than the {MAX_DEPTH} allowed")
    try:
        return json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_finite,
            parse_int=_integer,
        )
    except json.JSONDecodeError as err:
        raise JsonError(f"line {err.lineno}: {err.msg}") from None
    except RecursionError:  # nesting() counts what the parser nests: a guard only
        raise JsonError(f"arrays and objects nested more than the {MAX_DEPTH} allowed") from None


class DepthLimitedLoader(yaml.SafeLoader):
    """YAML's safe loader that refuses sequences and mappings nested deeper than MAX_DEPTH while it composes them
    (before anything recurses deeper: a file nested thousands deep is a clear error, never a RecursionError). The
    strict loader below it also refuses aliases and keys twice: it is the one every YAML input is read with."""

    _depth = 0

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(
                    None, None, f"sequences and mappings nested more than the {MAX_DEPTH} allowed", mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class YamlError(yaml.YAMLError):
    """YAML that the strict loader refuses (an alias, a key twice, a key that is not a string where lines are
    kept); ``line`` (1-based) is where, ``message`` what. A yaml.YAMLError, so that its callers catch it with the
    parser's own errors."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message, self.line = message, line

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


class Lines(dict):
    """A mapping that remembers where it was written: ``line`` its own (1-based), ``lines`` each key's."""

    lines: dict[str, int]
    line: int


class _StrictYamlLoader(DepthLimitedLoader):
    """YAML's safe loader that refuses an alias (never expanded: a "billion laughs" file costs minutes and
    gigabytes before anything can be said about it; the files read here need none) and a key twice in one mapping
    (as :func:`parse_json` does)."""

    keep_lines = False  # mappings as Lines, their keys strings

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise YamlError(f"YAML alias *{event.anchor} is not allowed (write the value out)",
                            event.start_mark.line + 1)  # fmt: skip
        return super().compose_node(parent, index)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping: dict[Any, Any] = Lines() if self.keep_lines else {}
        lines: dict[Any, int] = {}
        self.flatten_mapping(node)  # merge keys (<<) need an alias or a mapping written out: no alias gets here
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if self.keep_lines and not isinstance(key, str):
                raise YamlError(f"key {_short(key)} is not a string", line)
            try:
                seen = key in mapping
            except TypeError:  # an unhashable key (a list): the safe loader's own message
                return super().construct_mapping(node, deep=deep)
            if seen:
                raise YamlError(f"key {key!r} appears twice in one mapping", line)
            mapping[key] = self.construct_object(value_node, deep=True)
            lines[key] = line
        if isinstance(mapping, Lines):
            mapping.lines, mapping.line = lines, node.start_mark.line + 1
        return mapping


class _LineYamlLoader(_StrictYamlLoader):
    keep_lines = True


def _construct_mapping(loader: _StrictYamlLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    return loader.construct_mapping(node, deep=True)


_StrictYamlLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_yaml(text: str, lines: bool = False) -> Any:
    """YAML text parsed safely (no arbitrary objects): no alias, no key twice in one mapping, nested at most
    MAX_DEPTH deep (YamlError, or yaml.YAMLError for what the parser itself refuses). ``lines``: every mapping a
    :class:`Lines` that says on which line it and each of its keys were written (its keys must be strings)."""
    return yaml.load(text, Loader=_LineYamlLoader if lines else _StrictYamlLoader)


def yaml_problem(err: yaml.YAMLError) -> str:
    """A YAML error in one line: ``line N: what`` where the parser knows the line."""
    if not isinstance(err, yaml.MarkedYAMLError):
        return str(err)
    what = "; ".join(str(p) for p in (err.context, err.problem) if p)
    mark = err.problem_mark or err.context_mark
    return f"line {mark.line + 1}: {what}" if mark is not None else what


def inside(path: Path, directory: Path) -> bool:
    """Whether ``path``, every symbolic link on its way resolved, lies in ``directory`` (resolved too)."""
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(directory))
    except (OSError, ValueError):
        return False


def read_text(
    path: Path,
    what: str,
    error: type[Exception],
    max_bytes: int = MAX_BYTES,
    within: Path | tuple[Path, ...] | None = None,
) -> str:
    """A file's text: a regular file opened without following a symbolic link (a FIFO or device would hang or
    never end, a link may lead anywhere), at most ``max_bytes``, UTF-8, and, with ``within``, inside one of those
    directories; every problem raises ``error`` naming the file (``what`` says what it is)."""
    path = Path(path)
    if within is not None:
        roots = (within,) if isinstance(within, Path) else within
        if not any(inside(path, root) for root in roots) and os.path.lexists(path):
            shown = " or ".join(map(str, roots))
            raise error(f"{path}: {what} lies outside the run directory ({shown}) by a symbolic link on its way: "
                        "the judge reads only what the run wrote there")  # fmt: skip
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise error(f"{path}: {what} is missing") from None
    except OSError as err:
        if os.path.islink(path):
            raise error(f"{path}: {what} is a symbolic link (to {os.readlink(path)}): the judge reads only regular "
                        "files the run wrote") from None  # fmt: skip
        raise error(f"{path}: cannot open {what}: {err.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path}: {what} is not a regular file")
        if info.st_size == 0:
            raise error(f"{path}: {what} is empty (the tool was stopped or could not write it)")
        if info.st_size > max_bytes:
            raise error(f"{path}: {what} is {info.st_size} bytes, more than the {max_bytes} allowed")
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            data = handle.read(max_bytes + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise error(f"{path}: {what} is not UTF-8 text (byte {err.start})") from None


def load_json(
    path: Path,
    what: str,
    error: type[Exception],
    kind: type = dict,
    max_bytes: int = MAX_BYTES,
    within: Path | tuple[Path, ...] | None = None,
) -> Any:
    """A JSON input read as :func:`read_text` reads it, parsed strictly (:func:`parse_json`), and of the JSON type
    ``kind``; ``error`` names the file and what is wrong."""
    text = read_text(path, what, error, max_bytes, within)
    try:
        doc = parse_json(text)
    except JsonError as err:
        raise error(f"{path}: {what} is not valid JSON: {err}") from None
    if not isinstance(doc, kind):
        expected = "an object" if kind is dict else f"a JSON {'array' if kind is list else kind.__name__}"
        raise error(f"{path}: {what} is a JSON {type(doc).__name__}, expected {expected}")
    return doc


def load_yaml(
    path: Path,
    what: str,
    error: type[Exception],
    kind: type = dict,
    max_bytes: int = MAX_BYTES,
    within: Path | tuple[Path, ...] | None = None,
) -> Any:
    """A YAML input read as :func:`read_text` reads it, parsed strictly (:func:`parse_yaml`), and of the type
    ``kind`` (a mapping by default); ``error`` names the file, the line and what is wrong."""
    text = read_text(path, what, error, max_bytes, within)
    try:
        doc = parse_yaml(text)
    except yaml.YAMLError as err:
        raise error(f"{path}: {what} is not valid YAML: {yaml_problem(err)}") from None
    if not isinstance(doc, kind):
        expected = "a mapping" if kind is dict else f"a YAML {'sequence' if kind is list else kind.__name__}"
        raise error(f"{path}: {what} is a YAML {type(doc).__name__}, expected {expected}")
    return doc
