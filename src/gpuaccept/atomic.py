"""Atomic result files: a temporary file in the target directory, then os.replace."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
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
        fsync_directory(directory)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise OutputError(f"cannot write {target}: {err.strerror}") from err
    return target


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a crash after os.replace could otherwise lose it)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def clean_stale_temps(directory: str | os.PathLike[str], name: str) -> list[Path]:
    """Remove what a killed ``write_text_atomic`` of ``name`` left in ``directory`` (``.<name>.*.tmp``); call it
    under the lock of that file, so no live writer's temporary file is taken."""
    removed = []
    for tmp in Path(directory).glob(f".{name}.*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed.append(tmp)
    return removed


@contextlib.contextmanager
def locked(lock_file: str | os.PathLike[str]) -> Iterator[None]:
    """An exclusive lock (flock) on ``lock_file`` for the block: one writer per run directory or textfile, so two
    judges of one run cannot leave verdict.json saying one thing and the metrics another."""
    path = Path(lock_file)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise OutputError(f"cannot lock {path}: {err.strerror}") from err
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
