"""Atomic result files: a temporary file in the target directory, then os.replace."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


class OutputError(Exception):
    """A result file or directory cannot be written; the message names the path."""


def write_text_atomic(path: str | os.PathLike[str], text: str, mode: int = 0o644) -> Path:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half of one."""
    target = Path(path)
    directory = target.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as err:
        raise OutputError(f"cannot write {target}: directory {directory} is not writable ({err.strerror})") from err
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise OutputError(f"cannot write {target}: {err.strerror}") from err
    return target
