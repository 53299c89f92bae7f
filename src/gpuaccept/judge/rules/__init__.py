"""The judge's rules: the benchmark document's own (gpuaccept.judge.rules.document), imported here by the names
its callers use."""

from gpuaccept.judge.rules.document import (
    DOCUMENT_SCHEMA,
    FAULT_REASONS,
    HPL_THRESHOLD_MAX,
    MAX_DOCUMENT_BYTES,
    MEMTEST_FIX,
    MEMTEST_GRANULARITY_BYTES,
    MEMTEST_TIME_FRACTION,
    DocumentError,
    combine,
    document_problems,
    hpl_problems,
    load_document,
    load_json_input,
    memtest_coverage,
    memtest_problems,
    read_text_input,
    schema_problem,
    throttle_problems,
)

__all__ = [
    "DOCUMENT_SCHEMA",
    "FAULT_REASONS",
    "HPL_THRESHOLD_MAX",
    "MAX_DOCUMENT_BYTES",
    "MEMTEST_FIX",
    "MEMTEST_GRANULARITY_BYTES",
    "MEMTEST_TIME_FRACTION",
    "DocumentError",
    "combine",
    "document_problems",
    "hpl_problems",
    "load_document",
    "load_json_input",
    "memtest_coverage",
    "memtest_problems",
    "read_text_input",
    "schema_problem",
    "throttle_problems",
]
