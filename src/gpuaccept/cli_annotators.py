"""``gpuaccept overlap-model`` and ``gpuaccept peaks``, the older names of ``gpuaccept annotate overlap`` and
``gpuaccept annotate peaks`` (gpuaccept.annotate, the one runner): figures added to a benchmark document in place,
a model's predictions or each rate's fraction of the GPU's datasheet peak."""

from __future__ import annotations

import argparse

from gpuaccept import annotate
from gpuaccept.cli_common import add_reference_dir


def cmd_overlap_model(args: argparse.Namespace) -> int:
    return annotate.run(args, "overlap")  # the same runner as `gpuaccept annotate overlap`


def cmd_peaks(args: argparse.Namespace) -> int:
    return annotate.run(args, "peaks")  # the same runner as `gpuaccept annotate peaks`


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
