"""Run archives as the project keeps them: a ``.tar`` or ``.tar.gz`` of a ``results/`` folder, or a call's ``.tar``
that holds a ``results.tar.gz`` (docs/evidence/*/call-*.tar), or a folder of them (an evidence folder). Readers
(``gpuaccept show``, ``gpuaccept report``) unpack each into a temporary folder, archives inside archives too, and say
what they found."""

from __future__ import annotations

import atexit
import shutil
import tarfile
import tempfile
from pathlib import Path

SUFFIXES = (".tar", ".tar.gz", ".tgz")
DEPTH = 3  # archives inside archives, at most this deep


class ArchiveError(ValueError):
    """An archive that cannot be read; the message names it."""


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.endswith(SUFFIXES)


def _unpack(archive: Path, into: Path, depth: int, found: list[str]) -> None:
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
    except (OSError, tarfile.TarError) as err:
        raise ArchiveError(f"{archive}: not a readable tar archive ({err})") from None
    found.append(archive.name)
    if depth < DEPTH:
        for inner in sorted(p for p in into.rglob("*") if is_archive(p)):
            # unpacked into a folder named as the archive was: a run reads as call.tar/results.tar.gz/results/...
            staging = inner.with_name(inner.name + ".unpacking")
            _unpack(inner, staging, depth + 1, found)
            inner.unlink()
            staging.rename(inner)


def expand(path: Path) -> tuple[list[Path], list[str]]:
    """The folders to read for ``path``: itself, and each archive in it (or it, an archive) unpacked into a
    temporary folder removed at exit; and the archives unpacked, by name."""
    if is_archive(path):
        archives = [path]
    else:
        archives = sorted(p for p in path.rglob("*") if is_archive(p)) if path.is_dir() else []
    if not archives:
        return [path], []
    top = Path(tempfile.mkdtemp(prefix="gpuaccept-archive-"))
    atexit.register(shutil.rmtree, top, True)
    found: list[str] = []
    for n, archive in enumerate(archives):
        name = archive.name if not (top / archive.name).exists() else f"{n}-{archive.name}"
        _unpack(archive, top / name, 1, found)
    return ([top] if is_archive(path) else [path, top]), found
