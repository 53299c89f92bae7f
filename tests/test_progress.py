"""The progress an operator watches (gpuaccept.progress): read from ReFrame's real output of recorded runs on 2 x H200,
with the expected times of the node's earlier run of the same suite."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from judge_support import unpack_results

from gpuaccept import progress

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    return unpack_results(tmp_path_factory.mktemp("x2"),
                          FIXTURES / "multigpu_h200x2_one_revision" / "start2-results.tar.gz")  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def replay(run: Path, expected: dict[str, float]) -> list[str]:
    """Feed a recorded run's ReFrame output, the fake clock advancing by each test case's recorded time."""
    report = json.loads((run / "reframe-report.json").read_text())
    times = {tc["display_name"]: tc["time_total"] for tc in report["runs"][0]["testcases"]}
    lines: list[str] = []
    clock = Clock()
    p = progress.Progress(lines.append, expected, now=clock)
    for line in (run / "reframe.out").read_text().splitlines():
        end = progress.END.match(line)
        if end:
            clock.t += times.get(end.group("name"), 0.0)
        p.feed(line + "\n")
    return lines


def test_one_line_as_each_check_starts_and_ends(runs: Path) -> None:
    nightlies = sorted(runs.glob("*-nightly"))
    run = nightlies[-1]
    expected = progress.earlier_times(run, "nightly")
    assert expected, "the earlier nightly run's report gives each check's time"
    lines = replay(run, expected)
    assert len(lines) == 2 * 5  # five test cases (four checks and the benchmarks' build)
    assert lines[0].startswith("gpuaccept: [1/5] GpuHealth started; 0 s elapsed, about ")
    assert lines[1].startswith("gpuaccept: [1/5] GpuHealth ran in ")
    gemm_end = next(line for line in lines if "GpuGemm ran" in line)
    assert gemm_end.startswith("gpuaccept: [4/5] GpuGemm ran in 3")  # about half a minute on an H200
    assert lines[-1].endswith("about 0 s left")
    # the time left shrinks as checks end
    lefts = [line.rsplit("about ", 1)[1] for line in lines]
    assert lefts[0] != lefts[-1]


def test_skipped_checks_and_the_commission_count(runs: Path) -> None:
    run = next(runs.glob("*-commission"))
    lines = replay(run, {})
    assert len(lines) == 2 * 17
    assert any("[5/17] GpuHplNvidia skipped" in line for line in lines)
    assert all("no earlier run of this suite here to tell the time left" in line for line in lines)


def test_earlier_times_take_the_newest_earlier_run_of_the_suite(runs: Path, tmp_path: Path) -> None:
    nightlies = sorted(runs.glob("*-nightly"))
    report = json.loads((nightlies[-2] / "reframe-report.json").read_text())
    want = {tc["display_name"]: tc["time_total"] for tc in report["runs"][0]["testcases"]}
    assert progress.earlier_times(nightlies[-1], "nightly") == pytest.approx(want)
    assert progress.earlier_times(nightlies[0], "nightly") == {}  # the first nightly of this start
    assert progress.earlier_times(nightlies[-1], "burnin") == {}
    # an unreadable newer report is passed over for the next one
    host = tmp_path / "node"
    for name, body in (("20260101T000000Z-nightly", json.dumps(report)), ("20260102T000000Z-nightly", "{not json")):
        (host / name).mkdir(parents=True)
        (host / name / "reframe-report.json").write_text(body)
    assert progress.earlier_times(host / "20260103T000000Z-nightly", "nightly") == pytest.approx(want)


def test_a_long_check_says_so_each_minute_with_the_burn_in_time_left() -> None:
    lines: list[str] = []
    clock = Clock()
    p = progress.Progress(lines.append, {"GpuHealth": 3.0, "GpuBurnin": 1800.0}, now=clock)
    p.feed("[==========] Running 2 check(s)\n")
    p.feed("[ RUN      ] GpuHealth /74cd6b8e @gpuaccept:node+builtin\n")
    clock.t += 3
    p.feed("[       OK ] (1/2) GpuHealth /74cd6b8e @gpuaccept:node+builtin\n")
    p.feed("[ RUN      ] GpuBurnin /12345678 @gpuaccept:node+builtin\n")
    assert lines[-1] == "gpuaccept: [2/2] GpuBurnin started; 3 s elapsed, about 30 min 00 s left"
    clock.t += 30
    p.tick()
    assert len(lines) == 3  # not yet a minute since the last line
    clock.t += 570
    p.tick()
    assert lines[-1] == ("gpuaccept: [2/2] GpuBurnin running for 10 min 00 s; 10 min 03 s elapsed, "
                         "about 20 min 00 s left")
    p.feed("[ RUN      ] Unknown /87654321 @x\n")
    assert "never timed here" in p.left()


def test_the_watcher_follows_the_output_as_it_is_written(tmp_path: Path) -> None:
    out, log = tmp_path / "reframe.out", tmp_path / "progress.log"
    shown: list[str] = []
    with progress.Watcher(out, log, {"GpuHealth": 2.0}, shown.append):
        with open(out, "w", encoding="utf-8") as fh:
            for line in ("[==========] Running 1 check(s)\n", "[ RUN      ] GpuHealth /74cd6b8e @p\n",
                         "[       OK ] (1/1) GpuHealth /74cd6b8e @p\n"):  # fmt: skip
                fh.write(line)
                fh.flush()
                time.sleep(0.2)
        deadline = time.monotonic() + 5
        while len(shown) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    assert [line.split(";")[0] for line in shown] == ["gpuaccept: [1/1] GpuHealth started",
                                                       "gpuaccept: [1/1] GpuHealth ran in 0 s"]  # fmt: skip
    assert log.read_text().splitlines() == shown
    assert not any(t.name == "Thread-follow" for t in threading.enumerate())


@pytest.mark.parametrize(("seconds", "text"), [(0.4, "0 s"), (59.6, "1 min 00 s"), (61, "1 min 01 s"),
                                               (3725, "1 h 02 min")])  # fmt: skip
def test_clock(seconds: float, text: str) -> None:
    assert progress.clock(seconds) == text
