"""A suite's progress as an operator watches it: one line as each check starts and one as it ends (check k of N,
its time, the time elapsed, the expected time left), and a line a minute while a long check (the burn-in) runs.

Read from ReFrame's own output as ReFrame writes it (``[ RUN      ] Name /hash ...`` and ``[       OK ] (k/N) Name
/hash ...``): nothing is asked of the checks. The expected time of a check is what it took in the newest earlier run
of the same suite on the same node (its ``reframe-report.json``: each test case's ``time_total``); a check never
timed on this node has no estimate, and the line says how many such checks are left rather than guessing. The
burn-in's expected time is its asked length. Progress informs; it decides nothing: a check's end is said in
ReFrame's terms put plainly (``ran``, ``skipped``, ``failed to run``), never in the verdict's words (PASS, NOT
RUN), which only the judge gives once the suite has ended (a check that ran may still be NOT RUN, for instance
DCGM's diagnostic where dcgmi is not installed).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpuaccept import textinput

RUNNING = re.compile(r"^\[=+\] Running (\d+) check\(s\)")
START = re.compile(r"^\[ RUN\s*\] (?P<name>.+?) /[0-9a-f]{8}\b")
END = re.compile(r"^\[\s*(?P<status>[A-Z]+)\s*\] \(\s*(?P<k>\d+)/(?P<n>\d+)\) (?P<name>.+?) /[0-9a-f]{8}\b")
HEARTBEAT_S = 60.0
#: ReFrame's end-of-check statuses as the progress lines say them (any other is lower-cased).
ENDED = {"OK": "ran", "SKIP": "skipped", "FAIL": "failed to run", "ERROR": "failed to run"}


def clock(seconds: float) -> str:
    """A duration as an operator reads it: ``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    s = round(max(seconds, 0))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class _Unreadable(Exception):
    pass


def earlier_times(run_dir: Path, suite: str, report_name: str = "reframe-report.json") -> dict[str, float]:
    """Each test case's ``time_total`` (s) in the newest earlier run of ``suite`` beside ``run_dir`` (the node's
    results folder holds ``<UTC time>-<suite>`` run directories) whose ReFrame report can be read; {} where none."""
    earlier = sorted((d for d in run_dir.parent.glob(f"*-{suite}") if d.is_dir() and d.name < run_dir.name),
                     reverse=True)  # fmt: skip
    for d in earlier:
        try:
            report = textinput.load_json(d / report_name, "an earlier run's ReFrame report", _Unreadable)
        except _Unreadable:
            continue
        times: dict[str, float] = {}
        for run in report.get("runs") or []:
            for tc in run.get("testcases") or [] if isinstance(run, dict) else []:
                name, t = (tc.get("display_name"), tc.get("time_total")) if isinstance(tc, dict) else (None, None)
                if isinstance(name, str) and isinstance(t, int | float) and t >= 0:
                    times[name] = float(t)
        if times:
            return times
    return {}


@dataclass
class Progress:
    """Turns ReFrame's output lines into progress lines (``emit``); ``tick`` adds the minute's line of a long check.
    ``expected``: seconds per test case display name; ``fixed``: the same for names known in advance (the burn-in)."""

    emit: Callable[[str], None]
    expected: dict[str, float] = field(default_factory=dict)
    now: Callable[[], float] = time.monotonic
    total: int = 0
    started: int = 0
    current: str = ""
    current_since: float = 0.0
    last_line: float = 0.0
    done: set[str] = field(default_factory=set)
    seen: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.t0 = self.now()

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        if m := RUNNING.match(line):
            self.total = int(m.group(1))
        elif m := START.match(line):
            self.started += 1
            self.current, self.current_since = m.group("name"), self.now()
            self.seen.append(self.current)
            self._say(f"{self.current} started")
        elif m := END.match(line):
            name = m.group("name")
            self.total = int(m.group("n")) or self.total
            took = self.now() - self.current_since if name == self.current else None
            self.done.add(name)
            if name == self.current:
                self.current = ""
            status = ENDED.get(m.group("status"), m.group("status").lower())
            self._say(f"{name} {status}" + (f" in {clock(took)}" if took is not None else ""), k=int(m.group("k")))

    def tick(self) -> None:
        """A line a minute while one check runs long."""
        if self.current and self.now() - self.last_line >= HEARTBEAT_S:
            self._say(f"{self.current} running for {clock(self.now() - self.current_since)}")

    def left(self) -> str:
        """The expected time left: the running check's rest and every check not started yet, where timed."""
        rest, unknown = 0.0, 0
        if self.current:
            if self.current in self.expected:
                rest += max(self.expected[self.current] - (self.now() - self.current_since), 0.0)
            else:
                unknown += 1
        later = [n for n in self.expected if n not in self.done and n != self.current and n not in self.seen]
        rest += sum(self.expected[n] for n in later)
        unknown += max(self.total - len(self.done) - (1 if self.current else 0) - len(later), 0)
        if not self.expected:
            return "no earlier run of this suite here to tell the time left"
        if unknown:
            return f"about {clock(rest)} left, and {unknown} check(s) never timed here"
        return f"about {clock(rest)} left"

    def _say(self, what: str, k: int | None = None) -> None:
        self.last_line = self.now()
        where = f"[{k if k is not None else self.started}/{self.total or '?'}]"
        self.emit(f"gpuaccept: {where} {what}; {clock(self.now() - self.t0)} elapsed, {self.left()}")


def follow(path: Path, progress: Progress, stop: threading.Event, poll_s: float = 0.5) -> None:
    """Feed ``progress`` every line written to ``path`` until ``stop`` is set and nothing more is there."""
    while not path.exists() and not stop.is_set():
        time.sleep(poll_s)
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except OSError:
        return
    with fh:
        pending = ""
        while True:
            chunk = fh.readline()
            if chunk:
                pending += chunk
                if pending.endswith("\n"):
                    progress.feed(pending)
                    pending = ""
                continue
            if stop.is_set():
                return
            progress.tick()
            time.sleep(poll_s)


class Watcher:
    """Follows a ReFrame output file in a thread while ReFrame runs; each progress line goes to ``emit`` and is
    appended to ``log`` (the run directory's progress.log, which ``make accept`` shows as it grows)."""

    def __init__(self, output: Path, log: Path, expected: dict[str, float], emit: Callable[[str], None]):
        self.log = log

        def both(line: str) -> None:
            emit(line)
            with open(self.log, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")

        self.progress = Progress(both, expected)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=follow, args=(output, self.progress, self.stop), daemon=True)

    def __enter__(self) -> Watcher:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
