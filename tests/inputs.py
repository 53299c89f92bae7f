"""Third-party inputs of the tests (tests/inputs.toml): where they are looked for, whether each file is the one
the tests were written for (sha256), the reason a test gives when it is skipped for want of one, and the lines
scripts/test.sh prints about what was skipped. Standard library only: scripts/test.sh runs it after pytest.

    python3 tests/inputs.py check                      # each input: found, absent, or another file
    python3 tests/inputs.py summary build/pytest.xml   # one line per absent input that skipped tests
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

MANIFEST = Path(__file__).resolve().with_name("inputs.toml")
REPO = MANIFEST.parents[1]
#: The one place the operator names: a folder holding the inputs at their manifest paths.
ENV = "GPUACCEPT_INPUTS"
#: Every skip for want of an input starts so, naming the input: the summary counts skips by it.
SKIP_PREFIX = "third-party input"


@dataclass(frozen=True)
class Input:
    name: str
    path: str  # under the inputs folder: a file, or a folder of ``files``
    files: dict[str, str]  # name under ``path`` (empty: ``path`` itself) -> sha256
    what: str
    get: str


class InputError(Exception):
    """The manifest is malformed, or an input is another file than the manifest's; the message names it."""


def load(manifest: Path = MANIFEST) -> dict[str, Input]:
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{manifest}: {err}") from None
    out: dict[str, Input] = {}
    for n, entry in enumerate(data.get("input") or []):
        where = f"{manifest}: input #{n + 1}"
        missing = [k for k in ("name", "path", "what", "get") if not isinstance(entry.get(k), str) or not entry[k]]
        if missing:
            raise InputError(f"{where}: needs {', '.join(missing)}")
        files = entry.get("files") or ({"": entry["sha256"]} if entry.get("sha256") else {})
        if not files or not all(isinstance(s, str) and len(s) == 64 for s in files.values()):
            raise InputError(f"{where} ({entry['name']}): 'sha256' (one file) or 'files' (name = sha256) required")
        out[entry["name"]] = Input(entry["name"], entry["path"], dict(files), entry["what"], entry["get"])
    if not out:
        raise InputError(f"{manifest}: no [[input]] entries")
    return out


def root(repo: Path = REPO) -> Path:
    """$GPUACCEPT_INPUTS, else shared/ beside the repository's clone, else (a git worktree) shared/ beside the
    main checkout."""
    named = os.environ.get(ENV)
    if named:
        return Path(named)
    here = repo.parent / "shared"
    if here.is_dir():
        return here
    try:
        proc = subprocess.run(["git", "-C", str(repo), "rev-parse", "--path-format=absolute", "--git-common-dir"],
                              capture_output=True, text=True, check=False)  # fmt: skip
    except OSError:  # no git: not a worktree that could share a checkout's inputs
        return here
    common = proc.stdout.strip() if proc.returncode == 0 else ""
    return Path(common).parent.parent / "shared" if common else here


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def where(inp: Input, base: Path) -> Path:
    return base / inp.path


def skip_reason(inp: Input, base: Path, absent: Path) -> str:
    """Why a test is skipped: the input, what was looked for, the variable, where to get it."""
    return (
        f"{SKIP_PREFIX} {inp.name} absent: {absent} not found (the inputs folder: ${ENV}, default shared/ beside "
        f"the clone); it is {inp.what}; get {inp.get} (tests/inputs.toml)"
    )


@functools.cache
def check(name: str, base: Path, manifest: Path = MANIFEST) -> tuple[Path, str | None]:
    """(path of the input, None) when every file is there with its sha256; (path, skip reason) when a file is
    absent. InputError when a file is there with another sha256: another file than the tests were written for."""
    inp = load(manifest)[name]
    top = where(inp, base)
    for rel, sha in inp.files.items():
        path = top / rel if rel else top
        if not path.is_file():
            return top, skip_reason(inp, base, path)
        got = _sha256(path)
        if got != sha:
            raise InputError(
                f"{path}: sha256 {got}, but tests/inputs.toml pins {sha} for {inp.name} ({inp.what}): another file "
                f"than the tests were written for; get {inp.get}"
            )
    return top, None


def skipped_by_input(junit: Path) -> dict[str, Counter]:
    """{input: Counter(test module: tests skipped for want of it)} from pytest's JUnit XML."""
    out: dict[str, Counter] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        skipped = case.find("skipped")
        message = (skipped.get("message") or "") if skipped is not None else ""
        if SKIP_PREFIX not in message:
            continue
        name = message.split(SKIP_PREFIX, 1)[1].split()[0]
        module = (case.get("classname") or "?").split(".")[-1]
        out.setdefault(name, Counter())[f"{module}.py"] += 1
    return out


def summary(junit: Path, base: Path, manifest: Path = MANIFEST) -> list[str]:
    """One line per input that skipped tests: how many and where, where it was looked for, where to get it."""
    found = skipped_by_input(junit)
    known = load(manifest)
    lines = []
    for name, modules in sorted(found.items()):
        inp = known.get(name)
        tests = ", ".join(f"{m} {n}" for m, n in sorted(modules.items()))
        total = sum(modules.values())
        if inp is None:
            lines.append(f"input {name}: {total} tests skipped ({tests}); not in tests/inputs.toml")
            continue
        lines.append(
            f"input {name} absent: {total} tests skipped ({tests}); put it at {where(inp, base)} ({ENV} names the "
            f"folder); get {inp.get}"
        )
    return lines


def main(argv: list[str]) -> int:
    base = root()
    if argv[:1] == ["summary"] and len(argv) == 2:
        junit = Path(argv[1])
        if junit.is_file():
            print("\n".join(summary(junit, base)))
        return 0
    if argv == ["check"]:
        status = 0
        for name in load():
            try:
                path, absent = check(name, base)
            except InputError as err:
                print(f"{name}: ANOTHER FILE: {err}")
                status = 1
                continue
            print(f"{name}: {'absent: ' + absent if absent else f'found at {path}, sha256 as pinned'}")
        return status
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
