"""Atomic result files: a temporary file in the target directory, then os.replace.

Every result file gpuaccept writes goes through here, with one policy for who may read it: files 0640 and the
directories this module creates 0750 (whatever the umask), owned by the writing user and, when
``GPUACCEPT_RESULTS_GROUP`` names a group (the one node_exporter runs in: the nightly unit sets it), by that
group, so node_exporter reads the textfile and nobody else on the node reads the results. ``GPUACCEPT_FILE_MODE``
(octal, e.g. 0644) overrides the file mode for a site that wants its results world-readable."""

from __future__ import annotations

import contextlib
import fcntl
import grp
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

FILE_MODE = 0o640
DIR_MODE = 0o750
GROUP_ENV = "GPUACCEPT_RESULTS_GROUP"
MODE_ENV = "GPUACCEPT_FILE_MODE"


class OutputError(Exception):
    """A result file or directory cannot be written; the message names the path."""


def file_mode() -> int:
    """The mode of result files: ``GPUACCEPT_FILE_MODE`` (octal) or 0640."""
    text = os.environ.get(MODE_ENV, "").strip()
    if not text:
        return FILE_MODE
    try:
        mode = int(text, 8)
    except ValueError:
        raise OutputError(f"{MODE_ENV}={text!r} is not an octal file mode (e.g. 0640)") from None
    if not 0 <= mode <= 0o777 or mode & 0o600 != 0o600:
        raise OutputError(f"{MODE_ENV}={text!r}: a file mode from 0600 to 0777 (the owner reads and writes) expected")
    return mode


def results_gid() -> int | None:
    """The group of result files and directories from ``GPUACCEPT_RESULTS_GROUP`` (a name or a number), or None."""
    name = os.environ.get(GROUP_ENV, "").strip()
    if not name:
        return None
    if name.isdigit():
        return int(name)
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        raise OutputError(f"{GROUP_ENV}={name!r}: no such group on this host") from None


def _own(path: str | os.PathLike[str], gid: int | None, mode: int) -> None:
    if gid is not None and os.stat(path).st_gid != gid:
        os.chown(path, -1, gid)  # the owner must be in the group (or privileged): a clear OSError otherwise
    os.chmod(path, mode)


def make_dirs(directory: str | os.PathLike[str], for_file: str | os.PathLike[str] | None = None) -> Path:
    """Create ``directory`` and its missing parents 0750 (with the results group); existing ones are left alone.
    The error names ``for_file`` when given (the result that could not be written)."""
    target = Path(directory)
    missing = []
    for d in [target, *target.parents]:
        if d.is_dir():
            break
        missing.append(d)
    gid = results_gid()
    try:
        for d in reversed(missing):
            try:
                d.mkdir(mode=DIR_MODE)
            except FileExistsError:
                if not d.is_dir():
                    raise
                continue
            _own(d, gid, DIR_MODE)
    except OSError as err:
        what = f"cannot write {for_file}: " if for_file is not None else ""
        where = err.filename or target
        raise OutputError(f"{what}directory {where} is not writable (cannot create it: {err.strerror})") from err
    return target


def finish(tmp: str | os.PathLike[str], target: str | os.PathLike[str], mode: int | None = None) -> Path:
    """Give a complete temporary file the result mode and group, then move it to ``target`` (same directory)."""
    _own(tmp, results_gid(), file_mode() if mode is None else mode)
    os.replace(tmp, target)
    return Path(target)


def write_text_atomic(path: str | os.PathLike[str], text: str, mode: int | None = None) -> Path:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half of one; the file gets
    :func:`file_mode` (or ``mode``) and the results group."""
    target = Path(path)
    directory = target.parent
    make_dirs(directory, target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as err:
        raise OutputError(f"cannot write {target}: directory {directory} is not writable ({err.strerror})") from err
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        finish(tmp, target, mode)
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
        fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    except OSError as err:
        raise OutputError(f"cannot lock {path}: {err.strerror}") from err
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
