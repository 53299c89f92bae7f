"""The statuses of a verdict row (gpuaccept.judge.status): a closed str enum whose members serialize as the words
verdict.json and the Prometheus labels have always held, and the low module that verdict and deviation share."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict

from gpuaccept.judge.row import Row
from gpuaccept.judge.status import FAIL, NOT_RUN, Status


def test_a_status_serializes_as_its_word():
    assert [str(s) for s in Status] == ["pass", "fail", "not_run", "waived", "info"]
    row = Row("gemm", None, NOT_RUN, reason="skipped")
    assert json.dumps(asdict(row)).startswith('{"check": "gemm", "metric": null, "status": "not_run", ')
    assert f"{FAIL}" == "fail" and FAIL.upper() == "FAIL"


def test_a_status_read_back_from_json_equals_its_member():
    assert json.loads(json.dumps({"status": FAIL}))["status"] == Status.FAIL
    assert "not_run" in (Status.FAIL, Status.NOT_RUN)


def test_deviation_imports_no_verdict():
    # The deviation rules read rows and statuses from the low modules; verdict imports deviation, not back.
    code = "import sys, gpuaccept.judge.deviation; print('gpuaccept.judge.verdict' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
