"""``gpuaccept annotate KIND DOCUMENT``: the one runner of the annotators, which add their analysis to a benchmark's
document after the benchmark exits (docs/benchmark-json.md says what each adds):

- ``fft``: gpuaccept-fft's crossovers against the host's FFT (gpuaccept.probe.fft);
- ``offload``: gpuaccept-xgemm's crossovers against the host's BLAS, from gpuaccept-cpugemm documents (``--host``),
  or waived with the reason (``--no-host``) (gpuaccept.probe.offload);
- ``overlap``: the predictions of van Werkhoven et al. (2014)'s model and their errors, from the run's own copies or
  a gpuaccept-bw document's fit (``--bandwidth``) (gpuaccept.probe.overlap);
- ``peaks``: each GEMM or HPL-style rate's fraction of the GPU's datasheet peak (``--reference-dir``, ``--peaks``),
  with the power sampler's clocks (``--power``) (gpuaccept.probe.peaks).

Every input is read strictly (gpuaccept.textinput) and must be a ``gpuaccept.bench/1`` document; the annotated
document replaces the input atomically (gpuaccept.atomic), or goes to ``--output``; the annotator's summary is
printed. Exit status: 0 written; 1 written, but the document holds nothing to analyse (a run without a GPU: ``fft``,
``offload``); 4 an input is wrong (one line on stderr names the file and what is wrong), nothing written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuaccept import textinput
from gpuaccept.atomic import OutputError, write_text_atomic
from gpuaccept.cli_common import default_reference_dir
from gpuaccept.layout import BENCH_SCHEMA
from gpuaccept.probe import document, fft, offload, overlap, peaks

EXIT_NOTHING = 1
EXIT_INPUT = 4


class AnnotateError(Exception):
    """An input of an annotator is missing or not what it must be; the message names the file."""


def read_document(path: str | Path, what: str) -> dict[str, Any]:
    """A ``gpuaccept.bench/1`` document read strictly (gpuaccept.textinput); AnnotateError naming the file."""
    doc = textinput.load_json(Path(path), what, AnnotateError)
    if doc.get("schema") != BENCH_SCHEMA:
        raise AnnotateError(f"{path}: {what} is not a {BENCH_SCHEMA} document (schema {doc.get('schema')!r})")
    return doc


@dataclass(frozen=True)
class Annotator:
    """One kind: its help, its own options, and ``annotate(doc, args)``, which adds the analysis to ``doc`` and
    returns the summary to print and whether the document held anything to analyse."""

    help: str
    tool: str
    options: Callable[[argparse.ArgumentParser, Path], None]
    annotate: Callable[[dict[str, Any], argparse.Namespace], tuple[str, bool]]


def _fft(doc: dict[str, Any], args: argparse.Namespace) -> tuple[str, bool]:
    fft.annotate(doc, args.document)
    return fft.summary(doc), bool(doc["results"]["crossover"]["per_case"])


def _offload_options(sp: argparse.ArgumentParser, _reference_dir: Path) -> None:
    host = sp.add_mutually_exclusive_group(required=True)
    host.add_argument("--host", nargs="+", help="gpuaccept-cpugemm documents of the same node (e.g. one per --size)")
    host.add_argument("--no-host", metavar="REASON", help="why the host was not timed: every crossover is waived "
                      "with this reason")  # fmt: skip


def _offload(doc: dict[str, Any], args: argparse.Namespace) -> tuple[str, bool]:
    hosts = args.host or []
    rates = offload.host_rates((p, read_document(p, "the gpuaccept-cpugemm document")) for p in hosts)
    offload.annotate(doc, rates, ", ".join(hosts), args.document, args.no_host or "")
    return offload.summary(doc), bool(doc["results"]["crossover"]["per_precision"])


def _overlap_options(sp: argparse.ArgumentParser, _reference_dir: Path) -> None:
    sp.add_argument("--bandwidth", help="a gpuaccept-bw document of the same node: its fitted PCIe model (L+o, G, g) "
                    "instead of the overlap run's own copies")  # fmt: skip


def _overlap(doc: dict[str, Any], args: argparse.Namespace) -> tuple[str, bool]:
    bw_doc = read_document(args.bandwidth, "the gpuaccept-bw document") if args.bandwidth else None
    source = f"{args.bandwidth} (gpuaccept-bw's fit)" if args.bandwidth else ""
    try:
        overlap.annotate(doc, bw_doc, source)
    except overlap.OverlapError as err:
        raise AnnotateError(f"{args.document}: {err}") from None
    return overlap.summary(doc), True


def _peaks_options(sp: argparse.ArgumentParser, reference_dir: Path) -> None:
    sp.add_argument("--reference-dir", default=reference_dir, help="directory of the reference files (default: "
                    "%(default)s)")  # fmt: skip
    sp.add_argument("--peaks", help=f"the peaks file (default: <reference-dir>/{peaks.DEFAULT_PATH})")
    sp.add_argument("--power", help="the power sampler's document of the same run: its clocks go with the fractions")


def _peaks(doc: dict[str, Any], args: argparse.Namespace) -> tuple[str, bool]:
    path = Path(args.peaks) if args.peaks else Path(args.reference_dir) / peaks.DEFAULT_PATH
    table = peaks.load(path)
    power_doc = read_document(args.power, "the power sampler's document") if args.power else None
    peaks.annotate(doc, table, path, power_doc)
    block = doc["peak"]
    lines = [f"{name}: {f['fraction']:.3f} of {f['figure']} {f['peak_tflops']:g} TFLOP/s ({block['gpu_model']})"
             for name, f in block["fractions"].items()]  # fmt: skip
    lines += [f"{name}: waived: {why}" for name, why in doc["waived"].items() if name.endswith("_peak_fraction")]
    return "\n".join(lines), True


def _no_options(_sp: argparse.ArgumentParser, _reference_dir: Path) -> None:
    return None


ANNOTATORS = {
    "fft": Annotator("add the crossover sizes of the GPU with its copies against the host's FFT",
                     "gpuaccept-fft", _no_options, _fft),
    "offload": Annotator("add the crossover sizes of the GEMM offload against the host's BLAS",
                         "gpuaccept-xgemm", _offload_options, _offload),
    "overlap": Annotator("add the predictions of van Werkhoven et al. (2014)'s model (sync, streams, mapped, managed) "
                         "and their errors", "gpuaccept-overlap", _overlap_options, _overlap),
    "peaks": Annotator("add each GEMM or HPL-style rate's fraction of the GPU's datasheet peak",
                       "gpuaccept-gemm or gpuaccept-hplstyle", _peaks_options, _peaks),
}  # fmt: skip


def run(args: argparse.Namespace, kind: str | None = None) -> int:
    """One annotation (``kind``, default ``args.kind``) of ``args.document``, written to ``args.output`` (default:
    the document itself); the exit status of the module's docstring."""
    kind = kind or args.kind
    prog = f"gpuaccept annotate {kind}"
    try:
        doc = read_document(args.document, f"the {ANNOTATORS[kind].tool} document")
        summary, found = ANNOTATORS[kind].annotate(doc, args)
        write_text_atomic(getattr(args, "output", None) or args.document, document.dumps(doc, indent=1))
    except (AnnotateError, OutputError, offload.OffloadError, peaks.PeaksError) as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return EXIT_INPUT
    if summary:
        print(summary)
    return 0 if found else EXIT_NOTHING


def add_parser(sub: Any) -> None:
    """``gpuaccept annotate``, registered by gpuaccept.cli: one sub-command per kind, each with its own options."""
    reference_dir = default_reference_dir()
    sp = sub.add_parser("annotate", help="add an annotator's analysis to a benchmark's document (in place)",
                        description=__doc__.split("\n\n")[0].replace("``", ""))  # fmt: skip
    kinds = sp.add_subparsers(dest="kind", required=True, metavar="KIND",
                             help=f"the annotator: {', '.join(ANNOTATORS)}")
    for name, annotator in ANNOTATORS.items():
        kp = kinds.add_parser(name, help=annotator.help)
        kp.add_argument("document", help=f"a {annotator.tool} JSON document")
        kp.add_argument("--output", help="where to write the annotated document (default: the document itself, "
                        "rewritten atomically)")  # fmt: skip
        annotator.options(kp, reference_dir)
    sp.set_defaults(func=run)
