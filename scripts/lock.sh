#!/usr/bin/env bash
# The hash-pinned requirement files. requirements/*.in hold the pins a person edits; requirements/*.txt are
# generated from them by pip-compile (pip-tools) with every distribution's sha256 as the package index lists it
# (--generate-hashes), so that pip installs them with --require-hashes and refuses any wheel whose sha256 is not
# in this repository (scripts/venv.sh, scripts/wheelhouse.sh, the gpuaccept_toolenv and gpuaccept_mkl roles).
#
# Usage: scripts/lock.sh            on a connected machine with Python 3.11: regenerate every requirements/*.txt
#        scripts/lock.sh --check    offline: every .txt pins each requirement of its .in at the same version, and
#                                   every requirement line carries --hash (what CI runs; the installs with
#                                   --require-hashes then check that the with-dependencies files are complete)
#        scripts/lock.sh --check-wheels DIR   offline: every wheel in DIR has a sha256 listed in requirements/*.txt
#
# tools.txt and mkl.txt are installed --no-deps (their .in lists are complete): polars, which reframe-hpc declares
# but gpuaccept never imports (requirements/tools.in says why), is kept out with --unsafe-package.
set -euo pipefail
cd "$(dirname "$0")/.."

check() {
  "${PYTHON:-python3}" - "$@" <<'PY'
import hashlib, re, sys
from pathlib import Path

def reqs(path: Path) -> dict[str, tuple[str, int, list[str]]]:
    """name -> (version, line number, hashes) of a requirements file, continuation lines joined."""
    out: dict[str, tuple[str, int, list[str]]] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        start = i
        line = lines[i].split(" #")[0] if not lines[i].startswith("#") else ""
        while line.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line.rstrip()[:-1] + " " + lines[i].split(" #")[0]
        i += 1
        text = line.strip()
        if not text or text.startswith("-"):
            continue
        m = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*([^\s;\\]+)", text)
        if not m:
            sys.exit(f"{path}:{start + 1}: '{text[:60]}' is not pinned with == (every requirement is)")
        name = re.sub(r"[-_.]+", "-", m.group(1)).lower()
        out[name] = (m.group(3), start + 1, re.findall(r"--hash=sha256:([0-9a-f]{64})", text))
    return out

if sys.argv[1] == "--check-wheels":
    listed = {h for txt in Path("requirements").glob("*.txt") for _, _, hs in reqs(txt).values() for h in hs}
    wheels = sorted(Path(sys.argv[2]).glob("*.whl"))
    if not wheels:
        sys.exit(f"lock.sh: no wheels in {sys.argv[2]}")
    bad = [w.name for w in wheels if hashlib.sha256(w.read_bytes()).hexdigest() not in listed]
    if bad:
        sys.exit(f"lock.sh: {len(bad)} wheel(s) in {sys.argv[2]} have a sha256 that no requirements/*.txt lists "
                 f"(changed, or not from the pinned release): {', '.join(bad[:10])}")
    print(f"lock.sh: all {len(wheels)} wheels in {sys.argv[2]} match a sha256 in requirements/*.txt")
    sys.exit(0)

errors = []
for src in sorted(Path("requirements").glob("*.in")):
    txt = src.with_suffix(".txt")
    if not txt.is_file():
        errors.append(f"{txt} is missing: run scripts/lock.sh")
        continue
    locked = reqs(txt)
    for name, (version, line, hashes) in locked.items():
        if not hashes:
            errors.append(f"{txt}:{line}: {name}=={version} has no --hash: run scripts/lock.sh")
    for name, (version, line, _) in reqs(src).items():
        if name not in locked:
            errors.append(f"{src}:{line}: {name} is not in {txt}: run scripts/lock.sh")
        elif locked[name][0] != version:
            errors.append(f"{src}:{line}: {name}=={version}, but {txt} pins {locked[name][0]}: run scripts/lock.sh")
if errors:
    sys.exit("\n".join(errors))
print("lock.sh: every requirements/*.txt matches its .in and pins each requirement with --hash")
PY
}

case "${1:-}" in
  --check) check --check; exit ;;
  --check-wheels) check --check-wheels "${2:?usage: $0 --check-wheels DIR}"; exit ;;
  "") ;;
  *) echo "usage: $0 [--check | --check-wheels DIR]" >&2; exit 2 ;;
esac

PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || { echo "lock.sh: run it with Python 3.11 (PYTHON=...): the lowest Python gpuaccept supports" >&2; exit 2; }
tools=build/lock-venv
if [ ! -x "$tools/bin/pip-compile" ]; then
  "$PYTHON" -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check pip-tools==7.6.2
fi
# Only the package index: no local wheel directory (PIP_FIND_LINKS) may contribute a hash.
compile() {
  local name=$1; shift
  echo "== requirements/$name.txt"
  (cd requirements && env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL CUSTOM_COMPILE_COMMAND=scripts/lock.sh "../$tools/bin/pip-compile" \
    --quiet --generate-hashes --strip-extras --no-emit-index-url --no-emit-find-links \
    --output-file "$name.txt" "$@" "$name.in")
}
# Unsafe packages are left out, the others (pip, setuptools too) pinned.
compile tools --unsafe-package polars --unsafe-package polars-runtime-32
compile mkl --allow-unsafe
compile report --allow-unsafe
compile test --allow-unsafe
compile md --allow-unsafe
check --check
