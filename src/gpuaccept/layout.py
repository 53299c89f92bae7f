"""Facts of gpuaccept's layout, each named once: where the project is, the name of its benchmark documents'
schema, and the names of the files in a run directory (docs/results.md). Every other module imports them
from here; tests may spell the names out where they assert on what is on disk."""

from __future__ import annotations

from pathlib import Path

#: The project's root: the checkout (or the node's copy of it) that holds src/, reframe_checks/, roles/ and
#: reference_values/ (gpuaccept runs from its sources: an editable install, or PYTHONPATH=src).
PROJECT_ROOT = Path(__file__).resolve().parents[2]

#: The references shipped with gpuaccept (docs/reference-values.md): node types, GPU SKUs, datasheets.
REFERENCE_DIR = PROJECT_ROOT / "reference_values"

#: The schema every benchmark document names (docs/benchmark-json.md); the native tools write it too
#: (reframe_checks/src/common/bench_common.h).
BENCH_SCHEMA = "gpuaccept.bench/1"

# The files of a run directory (results/<node>/<run id>/)
VERDICT_FILE = "verdict.json"  # the verdict, per check and metric
REPORT_FILE = "reframe-report.json"  # ReFrame's run report
FACTS_FILE = "node-facts.json"  # the node's facts (gpuaccept facts), gathered before the suite
FACTS_END_FILE = "node-facts-end.json"  # the same, gathered after the suite (NVLink counters' growth)
NODE_TYPE_FILE = "node-type.json"  # the node type gpuaccept run resolved, once: the checks and the judge read it
METRICS_FILE = "gpuaccept.prom"  # the Prometheus textfile of the verdict
CONFIG_FILE = "reframe_settings.py"  # the ReFrame configuration gpuaccept run writes when none is given
REFRAME_LOG = "reframe.log"  # ReFrame's debug log (the configuration's file handler)
REFRAME_OUT = "reframe.out"  # ReFrame's console output (stdout and stderr) of the run
PROGRESS_FILE = "progress.log"  # a line as each check starts and ends (gpuaccept.progress), as ReFrame runs
RETRIED_FILE = "retried.json"  # in <run>/retry-<k>/: the checks measured again there
RETRY_PREFIX = "retry-"  # <run>/retry-<k>/: attempt k+1 of the checks that failed on figures out of band
MANIFEST_FILE = "manifest.json"  # the sha256 of every file the run wrote (gpuaccept.manifest)
EXIT_STATUS_FILE = "exit-status"  # gpuaccept run's exit status, beside its verdict ("3 cannot judge")
LOCK_FILE = ".gpuaccept.lock"  # one judge at a time per run directory
#: A Slurm run's work directory is <results>/_slurm/<run id>: ReFrame writes every node's documents there.
SLURM_DIR = "_slurm"
#: The power sampler's document, beside a sampled check's own in its stage directory.
POWER_FILE = "power.json"
