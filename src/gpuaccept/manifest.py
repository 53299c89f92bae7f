"""A run directory's manifest (``manifest.json``): the sha256 of every file the run wrote, so that judging the run
again judges what the run measured.

``gpuaccept run`` writes it after ReFrame's run and again after each retry (:func:`write`), before it judges; so
does a Slurm run, for its work directory and for each node's run directory. Judging again (``gpuaccept summarize``,
``gpuaccept compare``, ``gpuaccept sensitivity``) checks it first (:func:`verify`): a file changed, added or
missing since the run is a failed input naming the file, and the node is not accepted.

What the judge writes after the manifest (``verdict.json``, ``gpuaccept.prom``, ``exit-status``, the lock file and
their temporary files) is not in it. A symbolic link is recorded with where it points, anything else that is not a
regular file by its kind: neither is a document the judge reads.

A run directory recorded before manifests existed has none: it is judged all the same, with a row saying its files
cannot be shown unchanged (docs/judge.md, "Re-judging"). A manifest is no signature: whoever can rewrite a document
can rewrite the manifest too. It catches a document edited, swapped or lost after the run; to hold a vendor to its
runs, keep each manifest's sha256 where the vendor cannot change it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from gpuaccept import __version__, textinput
from gpuaccept.atomic import write_text_atomic
from gpuaccept.layout import (
    EXIT_STATUS_FILE,
    FACTS_FILE,
    LOCK_FILE,
    MANIFEST_FILE,
    METRICS_FILE,
    REPORT_FILE,
    VERDICT_FILE,
)

SCHEMA = "gpuaccept.manifest/1"
#: The files the judge (and gpuaccept run after it) writes in a run directory: never in its manifest.
JUDGE_OUTPUTS = (VERDICT_FILE, METRICS_FILE, EXIT_STATUS_FILE, MANIFEST_FILE)
#: The most differences listed one by one; the rest are counted.
MAX_LISTED = 20


class ManifestError(ValueError):
    """A manifest that cannot be read, or is not what :func:`write` writes; the message names the file."""


def _judge_output(name: str) -> bool:
    """Whether a file at the top of a run directory is one the judge writes (or a temporary file of one)."""
    if name in JUDGE_OUTPUTS or name == LOCK_FILE:
        return True
    return any(name.startswith(f".{out}.") and name.endswith(".tmp") for out in JUDGE_OUTPUTS)


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, in hex, read 1 MiB at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def entries(run_dir: Path) -> dict[str, str]:
    """Every file under ``run_dir`` but the judge's outputs, by its path relative to it: ``sha256:<hex>`` for a
    regular file, ``link:<target>`` for a symbolic link, ``other:<kind>`` for anything else. Links to folders
    are not followed."""
    out: dict[str, str] = {}
    for top, dirs, files in os.walk(run_dir, followlinks=False):
        here = Path(top)
        for name in sorted(dirs):
            if (here / name).is_symlink():
                out[str((here / name).relative_to(run_dir))] = f"link:{os.readlink(here / name)}"
        for name in sorted(files):
            path = here / name
            rel = str(path.relative_to(run_dir))
            if here == run_dir and _judge_output(name):
                continue
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                out[rel] = f"link:{os.readlink(path)}"
            elif stat.S_ISREG(mode):
                out[rel] = "sha256:" + file_sha256(path)
            else:
                out[rel] = f"other:{stat.filemode(mode)[0]}"
    return dict(sorted(out.items()))


def write(run_dir: str | Path) -> Path:
    """Write the run directory's manifest (atomically) from what is in it now; returns its path."""
    run_dir = Path(run_dir)
    doc = {"schema": SCHEMA, "written_by": f"gpuaccept {__version__}", "files": entries(run_dir)}
    return write_text_atomic(run_dir / MANIFEST_FILE, json.dumps(doc, indent=1) + "\n")


def read(path: Path) -> dict[str, str]:
    """The files a manifest lists (path -> entry); ManifestError naming the file."""
    doc = textinput.load_json(path, "the run's manifest", ManifestError)
    files = doc.get("files")
    if doc.get("schema") != SCHEMA:
        raise ManifestError(f"{path}: not a run manifest (schema {doc.get('schema')!r}, expected {SCHEMA!r})")
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise ManifestError(f"{path}: 'files' is not an object of path -> sha256 (not what gpuaccept run writes)")
    return files


def verify(run_dir: str | Path) -> tuple[list[str], str]:
    """(problems, warning) of a run directory against its manifest: each file changed, added or missing since the
    run was recorded, named (a failed input each); or, without a manifest, why its files cannot be shown
    unchanged (a warning)."""
    run_dir = Path(run_dir)
    path = run_dir / MANIFEST_FILE
    if not os.path.lexists(path):
        return [], (
            f"no manifest ({path}): a run recorded before gpuaccept wrote manifests, or one whose manifest was "
            "removed; its documents cannot be shown unchanged since the run"
        )
    try:
        recorded = read(path)
    except ManifestError as err:
        return [f"{err}: the run's documents cannot be checked against it"], ""
    now = entries(run_dir)
    # The node facts and ReFrame's report are what every verdict is judged from: a manifest that does not hold
    # them where the run has them vouches for nothing the judge reads first.
    problems = [f"{name}: not in the manifest" for name in COVERED if os.path.lexists(run_dir / name)
                and name not in recorded]  # fmt: skip
    for rel in sorted(set(recorded) | set(now)):
        if rel in COVERED and rel not in recorded:
            continue  # said above
        was, is_ = recorded.get(rel), now.get(rel)
        if was == is_:
            continue
        if was is None:
            problems.append(f"{rel}: added since the run")
        elif is_ is None:
            problems.append(f"{rel}: missing since the run")
        else:
            problems.append(f"{rel}: changed since the run ({_short(was)} then, {_short(is_)} now)")
    if not problems:
        return [], ""
    listed = problems[:MAX_LISTED]
    more = len(problems) - len(listed)
    return [f"{path}: {p}: judging again refuses a run whose files differ from what it wrote" for p in listed] + (
        [f"{path}: and {more} more files differ from what the run wrote"] if more else []
    ), ""


#: Files a manifest must hold where the run directory has them (:func:`verify`).
COVERED = (FACTS_FILE, REPORT_FILE)


def unvouched(run_dir: str | Path) -> str:
    """What a reader of a run's verdict must say it cannot vouch for ("" when nothing): the run has no manifest,
    or its manifest cannot be read or does not hold the node facts and ReFrame's report. The documents are not
    compared here (judging again does that); this is what ``show``, ``fleet``, ``report`` and the metrics flag."""
    run_dir = Path(run_dir)
    path = run_dir / MANIFEST_FILE
    if not os.path.lexists(path):
        return f"no manifest ({path}): its documents cannot be shown unchanged since the run"
    try:
        recorded = read(path)
    except ManifestError as err:
        return f"{err}: its documents cannot be shown unchanged since the run"
    missing = [name for name in COVERED if name not in recorded]
    if missing:
        return f"{path} does not hold {' or '.join(missing)}: what the verdict was judged from is not vouched for"
    return ""


def _short(entry: Any) -> str:
    return str(entry)[:19] + "..." if str(entry).startswith("sha256:") else str(entry)
