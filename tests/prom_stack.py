"""Debian's real node_exporter and Prometheus on free localhost ports, in temporary directories (no systemd)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

NEED_TOOLS = "CI installs Debian's prometheus and prometheus-node-exporter (.ci/run)"


def tool(name: str) -> str:
    path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if path is None:
        pytest.fail(f"{name} not found: {NEED_TOOLS}")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 5) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read()


class Stack:
    """Processes started here, stopped by their own handles at the end."""

    def __init__(self, base: Path):
        self.base = base
        self.procs: list[subprocess.Popen] = []

    def start(self, argv: list[str], url: str, what: str) -> None:
        log = open(self.base / f"{what}.log", "w+")  # closed in stop()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, text=True)
        proc.stderr = log  # read back on failure
        self.procs.append(proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                raise AssertionError(f"{what} exited with {proc.returncode}: {log.read()[-3000:]}")
            try:
                get(url, timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"{what} did not answer on {url} within 30 s")

    def node_exporter(self, textfile_dir: Path) -> str:
        port = free_port()
        self.start(
            [
                tool("prometheus-node-exporter"),
                f"--web.listen-address=127.0.0.1:{port}",
                "--collector.disable-defaults",
                "--collector.textfile",
                f"--collector.textfile.directory={textfile_dir}",
            ],
            f"http://127.0.0.1:{port}/metrics",
            f"node_exporter-{port}",
        )
        return f"127.0.0.1:{port}"

    def prometheus(self, targets: list[str], rule_files: list[Path], extra_jobs: list[dict] | None = None) -> str:
        port = free_port()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(p) for p in rule_files],
            "scrape_configs": [{"job_name": "node", "static_configs": [{"targets": targets}]}, *(extra_jobs or [])],
        }
        cfg = self.base / "prometheus.yml"
        cfg.write_text(json.dumps(config))  # JSON is YAML
        self.start(
            [
                tool("prometheus"),
                f"--config.file={cfg}",
                f"--storage.tsdb.path={self.base / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            f"http://127.0.0.1:{port}/-/ready",
            "prometheus",
        )
        return f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stderr.close()


def api(base: str, path: str, **params: str) -> dict:
    url = f"{base}/api/v1/{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    try:
        doc = json.loads(get(url))
    except urllib.error.HTTPError as err:
        doc = json.loads(err.read() or b"{}")
    return doc


def wait_for(fn, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"{what}: not seen within {timeout} s (last: {last!r})")
