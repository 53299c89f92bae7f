"""HPL.dat (and hpcc's hpccinf.txt) for a node: one rank per GPU (or one per host for hpcc), N from a
memory fraction, NB, and a P x Q grid from the rank count.

HPL reads its input by line position: this writes the layout of HPL 2.x's own example file (the 31 lines
that NVIDIA's xhpl and hpcc read too); hpccinf.txt adds hpcc's PTRANS lines.

    python -m gpuaccept.probe.hpl_dat --ranks 8 --memory-bytes 85520809984 --nb 1024 --output HPL.dat
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

from gpuaccept.atomic import write_text_atomic

__all__ = ["HplDat", "grid", "main", "problem_size", "render", "render_hpccinf"]


def grid(ranks: int) -> tuple[int, int]:
    """P x Q = ranks, as square as possible with P <= Q (HPL's advice for its row broadcasts)."""
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, not {ranks}")
    p = math.isqrt(ranks)
    while ranks % p:
        p -= 1
    return p, ranks // p


def problem_size(memory_bytes: int, ranks: int, fraction: float, nb: int, p: int = 1, q: int = 1) -> int:
    """The largest N whose N x N doubles fit in ``fraction`` of ``ranks`` x ``memory_bytes``, rounded down to a
    multiple of NB x lcm(P, Q) so that every rank holds whole blocks."""
    if not 0 < fraction <= 0.98:
        raise ValueError(f"memory fraction must be in (0, 0.98], not {fraction}")
    if memory_bytes <= 0 or ranks < 1 or nb < 1:
        raise ValueError(f"memory_bytes, ranks and nb must be positive (got {memory_bytes}, {ranks}, {nb})")
    step = nb * math.lcm(p, q)
    n = math.isqrt(int(fraction * memory_bytes * ranks) // 8) // step * step
    if n <= 0:
        raise ValueError(
            f"{fraction:g} of {ranks} x {memory_bytes} bytes holds no matrix of whole {nb}-blocks (step {step})"
        )
    return n


@dataclass(frozen=True)
class HplDat:
    n: int
    nb: int
    p: int
    q: int
    threshold: float = 16.0
    output_file: str = "HPL.out"
    device_out: int = 6  # 6 = stdout
    pfact: int = 2  # right-looking
    nbmin: int = 4
    ndiv: int = 2
    rfact: int = 1  # Crout
    bcast: int = 1  # 1ringM
    depth: int = 1
    swap: int = 2  # mix
    swap_threshold: int = 64
    pmap: int = 0  # row-major

    def __post_init__(self):
        for name in ("n", "nb", "p", "q"):
            if getattr(self, name) < 1:
                raise ValueError(f"HPL.dat: {name} must be >= 1, not {getattr(self, name)}")
        if not self.threshold > 0:
            raise ValueError(
                f"HPL.dat: threshold must be > 0, not {self.threshold} (HPL skips the residual check at 0 or below)"
            )


def render(d: HplDat) -> str:
    """HPL.dat text: HPL's 31 positional lines, one problem, one NB, one grid."""
    rows = [
        ("HPLinpack benchmark input file", None),
        ("written by gpuaccept (gpuaccept.hpl_dat)", None),
        (d.output_file, "output file name (if any)"),
        (d.device_out, "device out (6=stdout,7=stderr,file)"),
        (1, "# of problems sizes (N)"),
        (d.n, "Ns"),
        (1, "# of NBs"),
        (d.nb, "NBs"),
        (d.pmap, "PMAP process mapping (0=Row-,1=Column-major)"),
        (1, "# of process grids (P x Q)"),
        (d.p, "Ps"),
        (d.q, "Qs"),
        (f"{d.threshold:.1f}", "threshold"),
        (1, "# of panel fact"),
        (d.pfact, "PFACTs (0=left, 1=Crout, 2=Right)"),
        (1, "# of recursive stopping criterium"),
        (d.nbmin, "NBMINs (>= 1)"),
        (1, "# of panels in recursion"),
        (d.ndiv, "NDIVs"),
        (1, "# of recursive panel fact."),
        (d.rfact, "RFACTs (0=left, 1=Crout, 2=Right)"),
        (1, "# of broadcast"),
        (d.bcast, "BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)"),
        (1, "# of lookahead depth"),
        (d.depth, "DEPTHs (>=0)"),
        (d.swap, "SWAP (0=bin-exch,1=long,2=mix)"),
        (d.swap_threshold, "swapping threshold"),
        (0, "L1 in (0=transposed,1=no-transposed) form"),
        (0, "U  in (0=transposed,1=no-transposed) form"),
        (1, "Equilibration (0=no,1=yes)"),
        (8, "memory alignment in double (> 0)"),
    ]
    lines = [str(value) if comment is None else f"{value!s:<12} {comment}" for value, comment in rows]
    return "\n".join(lines) + "\n"


def render_hpccinf(d: HplDat) -> str:
    """hpcc's hpccinf.txt: HPL.dat's lines, then the separator line and no extra PTRANS sizes."""
    return (
        render(d)
        + "##### This line (no. 32) is ignored (it serves as a separator). ######\n"
        + "0                        Number of additional problem sizes for PTRANS\n"
        + "1200 10000 30000         values of N\n"
        + "0                        number of additional blocking sizes for PTRANS\n"
        + "40 9 8 13 13 20 16 32 64 values of NB\n"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpuaccept.probe.hpl_dat", description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, required=True, help="MPI ranks: one per GPU (hpcc: one per host)")
    ap.add_argument("--memory-bytes", type=int, help="memory per rank (GPU HBM, or host RAM / ranks)")
    ap.add_argument("--fraction", type=float, default=0.85, help="share of the memory for the matrix (0.85)")
    ap.add_argument("--n", type=int, help="matrix order (instead of --memory-bytes/--fraction)")
    ap.add_argument("--nb", type=int, default=1024, help="block size (1024 for NVIDIA's xhpl, ~200 on CPUs)")
    ap.add_argument("--threshold", type=float, default=16.0)
    ap.add_argument("--format", choices=("hpl", "hpcc"), default="hpl")
    ap.add_argument("--output", help="file to write (atomically); default stdout")
    args = ap.parse_args(argv)
    try:
        p, q = grid(args.ranks)
        if args.n is None:
            if args.memory_bytes is None:
                ap.error("give --n or --memory-bytes")
            n = problem_size(args.memory_bytes, args.ranks, args.fraction, args.nb, p, q)
        else:
            n = args.n
        dat = HplDat(n=n, nb=args.nb, p=p, q=q, threshold=args.threshold)
    except ValueError as err:
        print(f"gpuaccept.probe.hpl_dat: {err}", file=sys.stderr)
        return 2
    text = render_hpccinf(dat) if args.format == "hpcc" else render(dat)
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
