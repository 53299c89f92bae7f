"""HPL.dat (and hpcc's hpccinf.txt) for a node: one rank per GPU (or one per host for hpcc), N from a
memory fraction, NB, and a P x Q grid from the rank count.

HPL reads its input by line position: this writes the layout of HPL 2.x's own example file (the 31 lines
that NVIDIA's xhpl and hpcc read too); hpccinf.txt adds hpcc's PTRANS lines.

    python -m gpuaccept.probe.hpl_dat --ranks 8 --memory-bytes 85520809984 --nb 1024 --output HPL.dat

HPL-CUDA picks NB and the look-ahead depth from a short sweep (:func:`render_sweep`, then :func:`choose` on its
output, ``--sweep HPL.sweep.out``): the fastest setting at a small N, written into the full run's HPL.dat.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from gpuaccept.atomic import write_text_atomic
from gpuaccept.probe import hpl

__all__ = [
    "GPU_GRIDS",
    "HplDat",
    "choose",
    "gpu_grid",
    "grid",
    "main",
    "problem_size",
    "render",
    "render_hpccinf",
    "render_sweep",
    "timed_problem_size",
]


def grid(ranks: int) -> tuple[int, int]:
    """P x Q = ranks, as square as possible with P <= Q (HPL's advice for its row broadcasts)."""
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, not {ranks}")
    p = math.isqrt(ranks)
    while ranks % p:
        p -= 1
    return p, ranks // p


#: HPL-CUDA's grid choices (GpuHplCuda's ``grid``).
GPU_GRIDS = ("auto", "1xQ", "PxQ")


def gpu_grid(ranks: int, choice: str = "auto") -> tuple[int, int]:
    """HPL-CUDA's P x Q for ``ranks`` GPUs: ``1xQ`` (every rank holds all rows of its columns), ``PxQ`` (as square as
    possible with P <= Q, :func:`grid`), or ``auto``, which is 1 x Q on any number of GPUs: on the GPUs of one node
    P > 1 adds the row exchanges between process rows, the broadcast of U down the process columns and the gathering of
    each panel to every step, and saves nothing in return (the panel is factored on one GPU either way, and the DGEMM
    per GPU is the same), so 1 x Q is the faster (docs/checks/hpl.md)."""
    if choice not in GPU_GRIDS:
        raise ValueError(f"HPL-CUDA's grid must be one of {', '.join(GPU_GRIDS)}, not {choice!r}")
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, not {ranks}")
    return grid(ranks) if choice == "PxQ" else (1, ranks)


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


def reservable_bytes(overcommit_mode: int, meminfo: str, ranks: int) -> int | None:
    """What one of ``ranks`` processes may reserve (malloc without touching) under the kernel's overcommit policy
    (``/proc/sys/vm/overcommit_memory`` and ``/proc/meminfo``'s text): None without a limit (mode 1); RAM plus
    swap for any one allocation (mode 0, the heuristic refuses only larger ones); an equal share of what the
    commit limit leaves (mode 2, every reservation counts).

    HPL_pdtest reserves each rank's share of the matrix in host memory; gpuaccept's GPU HPL never fills it, so
    this, not free RAM, bounds N on the host side."""
    fields = {}
    for line in meminfo.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            fields[name.strip()] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, not {ranks}")
    if overcommit_mode == 1:
        return None
    need = ("MemTotal", "SwapTotal") if overcommit_mode == 0 else ("CommitLimit", "Committed_AS")
    missing = [n for n in need if n not in fields]
    if overcommit_mode not in (0, 2) or missing:
        raise ValueError(f"overcommit mode {overcommit_mode} with /proc/meminfo lacking {missing or need}")
    if overcommit_mode == 0:
        return fields["MemTotal"] + fields["SwapTotal"]
    return max(0, fields["CommitLimit"] - fields["Committed_AS"]) // ranks


def host_reservable_bytes(ranks: int, root: str = "/proc") -> int | None:
    """:func:`reservable_bytes` for this host."""
    with open(f"{root}/sys/vm/overcommit_memory", encoding="ascii") as handle:
        mode = int(handle.read().strip())
    with open(f"{root}/meminfo", encoding="ascii") as handle:
        return reservable_bytes(mode, handle.read(), ranks)


def timed_problem_size(
    memory_bytes: int, fraction: float, gflops: float, seconds: float, nb: int, p: int = 1, q: int = 1
) -> int:
    """N for an HPL whose matrix lives in host memory (the host HPL, HPL-CUDA): the largest N that fits in
    ``fraction`` of ``memory_bytes`` (:func:`problem_size`), capped so that HPL's 2/3 N^3 flops take about
    ``seconds`` at ``gflops`` (the expected rate: cores x a per-core DGEMM rate, or GPUs x a per-GPU rate), and
    rounded down to whole NB x lcm(P, Q) blocks. An acceptance run wants minutes, not the hours a full-memory
    host HPL takes."""
    if not gflops > 0 or not seconds > 0:
        raise ValueError(f"expected rate and run time must be positive (got {gflops} GFLOP/s, {seconds} s)")
    by_memory = problem_size(memory_bytes, 1, fraction, nb, p, q)
    step = nb * math.lcm(p, q)
    by_time = int((1.5 * seconds * gflops * 1e9) ** (1.0 / 3.0)) // step * step
    n = min(by_memory, by_time)
    if n <= 0:
        raise ValueError(f"{seconds:g} s at {gflops:g} GFLOP/s is less than one {step}-block matrix")
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
        if not self.threshold <= 16.0:  # NaN and inf too: any residual would pass
            raise ValueError(f"HPL.dat: threshold must be at most 16 (HPL's own), not {self.threshold}")


def render(d: HplDat) -> str:
    """HPL.dat text: HPL's 31 positional lines, one problem, one NB, one grid."""
    return _render(d, (d.nb,), (d.depth,), f"{d.threshold:.1f}")


def render_sweep(n: int, nbs: Sequence[int], depths: Sequence[int], p: int = 1, q: int = 1) -> str:
    """HPL.dat for the short sweep that ranks NB and look-ahead depth settings on the run's P x Q grid: every NB
    with every depth at order ``n``, with a threshold of -1, so that HPL times each setting and skips its residual
    check. The sweep only ranks settings; the run whose figure counts is a separate, checked one (:func:`choose`)."""
    if not nbs or not depths or len(nbs) > 20 or len(depths) > 20:
        raise ValueError(f"HPL.dat sweep: 1 to 20 NBs and depths each (got {list(nbs)}, {list(depths)})")
    if any(d < 0 for d in depths):
        raise ValueError(f"HPL.dat sweep: depths must be >= 0, not {list(depths)}")
    return _render(HplDat(n=n, nb=max(nbs), p=p, q=q), tuple(nbs), tuple(depths), "-1.0")


def choose(sweep_output: str, source: str = "<sweep>") -> tuple[int, int, list[dict]]:
    """The fastest (NB, depth) of a sweep's HPL output (:func:`render_sweep`) and every row as
    ``{"nb", "depth", "gflops", "seconds"}``; the depth is the digit after ``WR``/``WC`` in HPL's T/V code."""
    out = hpl.parse(sweep_output, source)
    rows = []
    for run in out.runs:
        if len(run.tv) < 3 or not run.tv[2].isdigit():
            raise ValueError(f"{source}:{run.line}: T/V {run.tv!r} carries no look-ahead depth")
        rows.append({"nb": run.nb, "depth": int(run.tv[2]), "gflops": run.gflops, "seconds": run.seconds})
    if not rows:
        raise ValueError(f"{source}: no HPL result row: the sweep did not run (see its output)")
    best = max(rows, key=lambda r: r["gflops"])
    return best["nb"], best["depth"], rows


def _render(d: HplDat, nbs: tuple[int, ...], depths: tuple[int, ...], threshold: str) -> str:
    rows = [
        ("HPLinpack benchmark input file", None),
        ("written by gpuaccept (gpuaccept.hpl_dat)", None),
        (d.output_file, "output file name (if any)"),
        (d.device_out, "device out (6=stdout,7=stderr,file)"),
        (1, "# of problems sizes (N)"),
        (d.n, "Ns"),
        (len(nbs), "# of NBs"),
        (" ".join(map(str, nbs)), "NBs"),
        (d.pmap, "PMAP process mapping (0=Row-,1=Column-major)"),
        (1, "# of process grids (P x Q)"),
        (d.p, "Ps"),
        (d.q, "Qs"),
        (threshold, "threshold"),
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
        (len(depths), "# of lookahead depth"),
        (" ".join(map(str, depths)), "DEPTHs (>=0)"),
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
    ap.add_argument("--grid", choices=("square", "columns"), default="square",
                    help="P x Q: as square as possible (HPL's own), or 1 x ranks (gpuaccept's GPU HPL)")
    ap.add_argument("--memory-bytes", type=int, help="memory per rank (GPU HBM, or host RAM / ranks)")
    ap.add_argument("--fraction", type=float, default=0.85, help="share of the memory for the matrix (0.85)")
    ap.add_argument("--n", type=int, help="matrix order (instead of --memory-bytes/--fraction)")
    ap.add_argument("--nb", type=int, default=1024, help="block size (1024 for NVIDIA's xhpl, ~200 on CPUs)")
    ap.add_argument("--threshold", type=float, default=16.0)
    ap.add_argument("--format", choices=("hpl", "hpcc"), default="hpl")
    ap.add_argument("--depth", type=int, default=1, help="look-ahead depth (1)")
    ap.add_argument("--sweep", metavar="HPL_OUTPUT",
                    help="take NB and the depth from the fastest row of this sweep output (render_sweep's HPL.dat)")
    ap.add_argument("--output", help="file to write (atomically); default stdout")
    args = ap.parse_args(argv)
    try:
        if args.sweep:
            with open(args.sweep, encoding="utf-8") as handle:
                args.nb, args.depth, _ = choose(handle.read(), args.sweep)
        p, q = grid(args.ranks) if args.grid == "square" else (1, args.ranks)
        if args.n is None:
            if args.memory_bytes is None:
                ap.error("give --n or --memory-bytes")
            n = problem_size(args.memory_bytes, args.ranks, args.fraction, args.nb, p, q)
        else:
            n = args.n
        dat = HplDat(n=n, nb=args.nb, p=p, q=q, threshold=args.threshold, depth=args.depth)
    except (OSError, ValueError) as err:
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
