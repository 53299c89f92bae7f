"""One input file read and parsed, with errors that name the file: what could not be read, or which line of
it is not valid JSON or YAML. The command line's benchmark documents and the datasheet peaks file use it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class Format:
    """How a file's text is parsed, and what is said (after ``<path>: ``) when it does not parse."""

    parse: Callable[[str], Any]
    errors: tuple[type[Exception], ...]
    invalid: Callable[[Any], str]


JSON = Format(json.loads, (json.JSONDecodeError,), lambda err: f"not JSON: line {err.lineno}: {err.msg}")
YAML = Format(yaml.safe_load, (yaml.YAMLError,), lambda err: f"not valid YAML: {err}")


def load(path: Path, what: str, fmt: Format, error: type[Exception]) -> Any:
    """The parsed content of the UTF-8 file ``path`` (the ``what``, e.g. "peaks file"); ``error`` naming the file
    when it cannot be read or does not parse."""
    try:
        return fmt.parse(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise error(f"{path}: cannot read the {what}: {err.strerror}") from None
    except fmt.errors as err:
        raise error(f"{path}: {fmt.invalid(err)}") from None
