"""``gpuaccept overlap-model`` and ``gpuaccept peaks``: figures added to a benchmark document in place, a model's
predictions or each rate's fraction of the GPU's datasheet peak."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gpuaccept import textinput
from gpuaccept.atomic import write_text_atomic
from gpuaccept.cli_common import (
    InputError,
    add_reference_dir,
    load_json,
)
from gpuaccept.layout import BENCH_SCHEMA
from gpuaccept.probe import overlap, peaks


def cmd_overlap_model(args: argparse.Namespace) -> int:
    doc_path = Path(args.document)
    doc = load_json(args.document, "gpuaccept-overlap document")
    if doc.get("schema") != BENCH_SCHEMA:
        raise InputError(f"{doc_path}: not a {BENCH_SCHEMA} document")
    bw_doc = load_json(args.bandwidth, "gpuaccept-bw document") if args.bandwidth else None
    source = f"{args.bandwidth} (gpuaccept-bw's fit)" if args.bandwidth else ""
    try:
        overlap.annotate(doc, bw_doc, source)
    except overlap.OverlapError as err:
        raise InputError(f"{doc_path}: {err}") from None
    write_text_atomic(doc_path, json.dumps(doc, indent=1) + "\n")
    print(overlap.summary(doc))
    return 0


def cmd_peaks(args: argparse.Namespace) -> int:
    path = Path(args.peaks) if args.peaks else Path(args.reference_dir) / peaks.DEFAULT_PATH
    table = peaks.load(path)
    doc_path = Path(args.document)
    doc = textinput.load(doc_path, "benchmark document", textinput.JSON, InputError)
    if not isinstance(doc, dict) or doc.get("schema") != BENCH_SCHEMA:
        raise InputError(f"{doc_path}: not a {BENCH_SCHEMA} document")
    power_doc = None
    if args.power:
        try:
            power_doc = json.loads(Path(args.power).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise InputError(f"{args.power}: cannot read the power sampler's document: {err}") from None
    peaks.annotate(doc, table, path, power_doc)
    write_text_atomic(doc_path, json.dumps(doc, indent=1) + "\n")
    block = doc["peak"]
    for name, f in block["fractions"].items():
        print(f"{name}: {f['fraction']:.3f} of {f['figure']} {f['peak_tflops']:g} TFLOP/s ({block['gpu_model']})")
    for name, why in doc["waived"].items():
        if name.endswith("_peak_fraction"):
            print(f"{name}: waived: {why}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept overlap-model` and `gpuaccept peaks`."""
    sp = sub.add_parser(
        "overlap-model",
        help="add the predictions of van Werkhoven et al. (2014)'s model (sync, streams, mapped, managed) and their "
        "errors to a gpuaccept-overlap document (in place)",
    )
    sp.add_argument("document", help="a gpuaccept-overlap JSON document")
    sp.add_argument("--bandwidth", help="a gpuaccept-bw document of the same node: its fitted PCIe model (L+o, G, g) "
                    "instead of the overlap run's own copies")  # fmt: skip
    sp.set_defaults(func=cmd_overlap_model)

    sp = sub.add_parser(
        "peaks",
        help="add each GEMM/HPL-style rate's fraction of the GPU's datasheet peak to a benchmark document (in place)",
    )
    sp.add_argument("document", help="a gpuaccept-gemm or gpuaccept-hplstyle JSON document")
    add_reference_dir(sp)
    sp.add_argument("--peaks", help="the peaks file (default: <reference-dir>/datasheets/gpu_peaks.yaml)")
    sp.add_argument("--power", help="the power sampler's document of the same run: its clocks go with the fractions")
    sp.set_defaults(func=cmd_peaks)
