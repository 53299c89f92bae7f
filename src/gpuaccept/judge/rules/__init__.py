"""The judge's rules: a benchmark document's own (``document``), the one form every rule reports in (``finding``:
``Finding``), the rules a check names by key (``registry``: the names and the function table; ``table``: the
functions).

The document's names (``load_document``, ``DocumentError``, ``hpl_problems``...) are read here as attributes of
the package, imported from ``document`` on first use: the checks table imports ``registry`` when it loads, and the
document's module imports modules that import the checks table."""

from __future__ import annotations

from typing import Any

#: The names of gpuaccept.judge.rules.document its callers read from the package.
DOCUMENT_NAMES = (
    "DOCUMENT_SCHEMA", "FAULT_REASONS", "HPL_THRESHOLD_MAX", "MAX_DOCUMENT_BYTES", "MEMTEST_FIX",
    "MEMTEST_GRANULARITY_BYTES", "MEMTEST_TIME_FRACTION", "DocumentError", "combine", "document_problems",
    "hpl_problems", "load_document", "load_json_input", "memtest_coverage", "memtest_problems", "read_text_input",
    "schema_problem", "throttle_problems",
)  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in DOCUMENT_NAMES:
        from gpuaccept.judge.rules import document  # noqa: PLC0415 (see the module's docstring)

        return getattr(document, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *DOCUMENT_NAMES])
