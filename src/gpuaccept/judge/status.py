"""The statuses a verdict row takes (docs/verdicts.md): one closed set, a ``str`` enum whose values are the words
verdict.json, the Prometheus labels and the reports write (``pass``, ``fail``, ``not_run``, ``waived``, ``info``),
so a status read back from verdict.json compares equal to its member."""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    PASS = "pass"  # judged and within its band (a check: every rule and judged metric passed)
    FAIL = "fail"  # judged and outside its band, or a rule found a problem
    NOT_RUN = "not_run"  # could not look: skipped, no document, the tool said why; never a pass
    WAIVED = "waived"  # the tool says why the metric does not apply here
    INFO = "info"  # shown, not judged (no reference, or a reference that is informational)


PASS, FAIL, NOT_RUN, WAIVED, INFO = Status.PASS, Status.FAIL, Status.NOT_RUN, Status.WAIVED, Status.INFO
