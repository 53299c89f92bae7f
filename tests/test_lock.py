"""Hash-pinned installs: requirements/*.txt pin every requirement with its sha256 (scripts/lock.sh), and an install
from a wheelhouse holding a tampered wheel fails before anything of it is installed."""

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME, VERSION = "gpuaccept_tamper_probe", "1.0"


def make_wheel(directory: Path) -> Path:
    """A minimal but valid pure-Python wheel, built here (no download)."""
    files = {
        f"{NAME}/__init__.py": b"VALUE = 1\n",
        f"{NAME}-{VERSION}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n".encode(),
        f"{NAME}-{VERSION}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{NAME}-{VERSION}.dist-info/RECORD,,")
    files[f"{NAME}-{VERSION}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = directory / f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in files.items():
            z.writestr(zipfile.ZipInfo(name, (2026, 11, 23, 0, 0, 0)), data)
    return wheel


def venv_sh(tmp_path: Path, wheelhouse: Path, pinned: str) -> subprocess.CompletedProcess:
    """scripts/venv.sh in a copy of the project that requires only the probe wheel, installing from wheelhouse."""
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True, exist_ok=True)
    (project / "requirements").mkdir(exist_ok=True)
    shutil.copy(ROOT / "scripts" / "venv.sh", project / "scripts" / "venv.sh")
    (project / "requirements" / "tools.txt").write_text(f"{NAME}=={VERSION} \\\n    --hash=sha256:{pinned}\n")
    env = {**os.environ, "WHEELHOUSE": str(wheelhouse), "VENV": str(tmp_path / "venv"), "PYTHON": sys.executable}
    env.pop("PIP_FIND_LINKS", None)
    return subprocess.run(
        ["bash", str(project / "scripts" / "venv.sh")], capture_output=True, text=True, env=env, check=False
    )


def installed(tmp_path: Path) -> bool:
    return any((tmp_path / "venv" / "lib").glob(f"python3*/site-packages/{NAME}/__init__.py"))


def test_the_requirement_files_are_complete_and_hash_pinned():
    res = subprocess.run(
        [str(ROOT / "scripts" / "lock.sh"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_lock_check_names_an_unhashed_or_stale_pin(tmp_path):
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "a.in").write_text("pyyaml==6.0.3\nrequests==2.34.2\n")
    (tmp_path / "requirements" / "a.txt").write_text(
        "pyyaml==6.0.3 \\\n    --hash=sha256:" + "0" * 64 + "\nrequests==2.34.1\n"
    )
    res = subprocess.run(
        [str(tmp_path / "scripts" / "lock.sh"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert res.returncode != 0
    assert "requirements/a.txt:3: requests==2.34.1 has no --hash" in res.stderr
    assert "requirements/a.in:2: requests==2.34.2, but requirements/a.txt pins 2.34.1" in res.stderr


def test_an_install_with_a_tampered_wheel_fails(tmp_path):
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    wheel = make_wheel(wheelhouse)
    pinned = hashlib.sha256(wheel.read_bytes()).hexdigest()
    # The pinned wheel itself installs (the step after it, gpuaccept's own editable install, has no project here).
    res = venv_sh(tmp_path, wheelhouse, pinned)
    assert "DO NOT MATCH THE HASHES" not in res.stderr and installed(tmp_path), res.stderr
    # The same wheel with one file changed: refused before anything of it is installed.
    shutil.rmtree(tmp_path / "venv")
    data = {}
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            data[info.filename] = z.read(info)
    data[f"{NAME}/__init__.py"] = b"import os; VALUE = os.system('true')\n"
    wheel.unlink()
    with zipfile.ZipFile(wheel, "w") as z:
        for name, content in data.items():
            z.writestr(name, content)
    res = venv_sh(tmp_path, wheelhouse, pinned)
    assert res.returncode != 0
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in res.stderr and NAME in res.stderr.lower().replace("-", "_")
    assert not installed(tmp_path)
    # And the wheelhouse check of scripts/wheelhouse.sh refuses it: its sha256 is in no requirements/*.txt.
    res = subprocess.run(
        [str(ROOT / "scripts" / "lock.sh"), "--check-wheels", str(wheelhouse)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert res.returncode != 0 and f"{NAME}-{VERSION}-py3-none-any.whl" in res.stderr
