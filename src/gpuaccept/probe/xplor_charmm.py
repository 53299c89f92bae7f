"""X-PLOR parameter files (the format of NAMD's APOA1 input set) converted to CHARMM parameter text, the format
OpenMM's ``CharmmParameterSet`` reads.

What is read (case-insensitive keywords, one statement a line; ``!`` comments, ``{ ... }`` blocks and
``REMARKS`` skipped; a ``MULTIPLE= n`` dihedral continues on the next n-1 lines that hold only ``k n delta``):

- ``BOND t1 t2 kb b0`` and ``ANGLE t1 t2 t3 ktheta theta0 [UB kub s0]``: copied (same units, kcal/mol/A^2, deg);
- ``DIHEDRAL t1..t4 [MULTIPLE= n] k n delta`` (one or n terms) and ``IMPROPER t1..t4 k n delta``: copied;
- ``NONBONDED t eps sigma eps14 sigma14`` (X-PLOR: epsilon > 0, sigma in A) becomes CHARMM's
  ``t 0.0 -eps rmin/2 0.0 -eps14 rmin14/2`` with rmin = 2^(1/6) sigma;
- ``NBFIX t1 t2 A B A14 B14`` (E = A/r^12 - B/r^6) becomes ``t1 t2 -emin rmin -emin14 rmin14`` with
  emin = B^2/(4A), rmin = (2A/B)^(1/6);
- ``NBONDS ... END``, ``HBONDS ... END``, ``SET ... END`` and lone option lines (``REXP= 6 ...``: run
  options, not parameters) and ``HBON`` hydrogen-bond terms (zero in CHARMM22, unused by NAMD): skipped.

Anything else is an error naming the file and line. The converted text holds no MASS section: OpenMM takes the
masses from the psf.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

SIXTH_ROOT_2 = 2.0 ** (1.0 / 6.0)


class XplorError(ValueError):
    """A line of an X-PLOR parameter file could not be read; the message names the file and line."""


@dataclass
class XplorParameters:
    """Parameters read from one or more X-PLOR files, in file order (a later definition overrides)."""

    bonds: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    angles: dict[tuple[str, str, str], tuple[float, float, float | None, float | None]] = field(default_factory=dict)
    dihedrals: dict[tuple[str, str, str, str], list[tuple[float, int, float]]] = field(default_factory=dict)
    impropers: dict[tuple[str, str, str, str], tuple[float, int, float]] = field(default_factory=dict)
    nonbonded: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    nbfix: dict[tuple[str, str], tuple[float, float, float, float]] = field(default_factory=dict)


def _strip_comment(line: str) -> str:
    return line.split("!", 1)[0].strip()


def _floats(words: list[str], where: str, what: str) -> list[float]:
    try:
        return [float(w) for w in words]
    except ValueError:
        raise XplorError(f"{where}: {what}: expected numbers, got {' '.join(words)!r}") from None


def _drop_braces(text: str, in_brace: bool) -> tuple[str, bool]:
    """One line without its X-PLOR comments in braces, which may span lines: (the text left, whether the line
    ends inside a comment); ``in_brace``: whether it starts inside one."""
    out, i = [], 0
    while i < len(text):
        if in_brace:
            j = text.find("}", i)
            if j < 0:
                i = len(text)
            else:
                in_brace, i = False, j + 1
        else:
            j = text.find("{", i)
            if j < 0:
                out.append(text[i:])
                i = len(text)
            else:
                out.append(text[i:j])
                in_brace, i = True, j + 1
    return "".join(out), in_brace


def _dihedral(params: XplorParameters, key: str, words: list[str],
              where: str) -> tuple[tuple[str, str, str, str], int, str] | None:
    """A DIHEDRAL or IMPROPER statement into ``params``; for a MULTIPLE dihedral, (its types, the terms still to
    read on the next lines, where it started), else None."""
    types = tuple(words[1:5])
    rest = words[5:]
    if len(types) != 4:
        raise XplorError(f"{where}: {key} needs four types")
    mult = 1
    if rest and rest[0].upper().startswith("MULT"):
        m = re.match(r"MULT\w*=?(\d*)", rest[0].upper())
        tail = m.group(1) if m else ""
        rest = rest[1:]
        if not tail:
            if not rest:
                raise XplorError(f"{where}: MULTIPLE= without a count")
            tail, rest = rest[0], rest[1:]
        try:
            mult = int(tail)
        except ValueError:
            raise XplorError(f"{where}: MULTIPLE= {tail!r} is not a count") from None
    nums = _floats(rest, where, f"{key} k n delta")
    if len(nums) != 3:
        raise XplorError(f"{where}: {key} needs k n delta after the four types")
    term = (nums[0], int(nums[1]), nums[2])
    if key.startswith("IMPR"):
        if mult != 1:
            raise XplorError(f"{where}: a MULTIPLE improper is not supported")
        params.impropers[types] = term  # type: ignore[index]
    else:
        params.dihedrals[types] = [term]  # type: ignore[index]
        if mult > 1:
            return (types, mult - 1, where)  # type: ignore[return-value]
    return None


def read_xplor(path: str | Path, into: XplorParameters | None = None) -> XplorParameters:
    """Reads one X-PLOR parameter file into ``into`` (or a new set)."""
    params = into if into is not None else XplorParameters()
    path = Path(path)
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as err:
        raise XplorError(f"{path}: cannot read: {err.strerror}") from None
    skip_block = ""  # NBONDS/HBONDS/SET ... END
    in_brace = False
    pending: tuple[tuple[str, str, str, str], int, str] | None = None  # dihedral key, terms left, where
    for number, raw in enumerate(lines, 1):
        where = f"{path}:{number}"
        text = raw
        if in_brace or "{" in text:
            text, in_brace = _drop_braces(text, in_brace)
        line = _strip_comment(text)
        if not line:
            continue
        words = line.split()
        key = words[0].upper()
        if pending is not None:
            dkey, left, started = pending
            nums = _floats(words, where, f"term of the MULTIPLE dihedral started at {started}")
            if len(nums) != 3:
                raise XplorError(f"{where}: a term of the MULTIPLE dihedral started at {started} needs k n delta")
            params.dihedrals[dkey].append((nums[0], int(nums[1]), nums[2]))
            pending = (dkey, left - 1, started) if left > 1 else None
            continue
        if skip_block:
            if key == "END":
                skip_block = ""
            continue
        if key.startswith("REMARK"):
            continue
        if key.startswith("HBON") and key not in ("HBONDS",):
            continue  # hydrogen-bond terms: CHARMM22 sets them all to zero and NAMD does not use them
        if key.endswith("="):
            continue  # a stray run option (``REXP=  6 AEXP=  4 ...``), not a parameter
        if key in ("SET", "NBONDS", "HBONDS"):
            if not any(w.upper() == "END" for w in words[1:]):
                skip_block = key
            continue
        if key == "BOND":
            nums = _floats(words[3:5], where, "BOND kb b0")
            if len(words) < 5:
                raise XplorError(f"{where}: BOND needs two types, kb and b0")
            params.bonds[tuple(sorted(words[1:3]))] = (nums[0], nums[1])  # type: ignore[index]
        elif key == "ANGLE":
            if len(words) not in (6, 9) or (len(words) == 9 and words[6].upper() != "UB"):
                raise XplorError(f"{where}: ANGLE needs three types, ktheta, theta0 and optionally UB kub s0")
            k, t0 = _floats(words[4:6], where, "ANGLE ktheta theta0")
            ub = _floats(words[7:9], where, "ANGLE UB kub s0") if len(words) == 9 else [None, None]
            a = words[1:4]
            params.angles[(a[0], a[1], a[2]) if a[0] <= a[2] else (a[2], a[1], a[0])] = (k, t0, ub[0], ub[1])
        elif key in ("DIHEDRAL", "DIHE", "IMPROPER", "IMPR"):
            pending = _dihedral(params, key, words, where)
        elif key == "NONBONDED":
            if len(words) != 6:
                raise XplorError(f"{where}: NONBONDED needs a type, eps, sigma, eps14, sigma14")
            params.nonbonded[words[1]] = tuple(_floats(words[2:6], where, "NONBONDED values"))  # type: ignore[assignment]
        elif key == "NBFIX":
            if len(words) != 7:
                raise XplorError(f"{where}: NBFIX needs two types, A, B, A14, B14")
            vals = _floats(words[3:7], where, "NBFIX values")
            params.nbfix[tuple(sorted(words[1:3]))] = tuple(vals)  # type: ignore[index,assignment]
        else:
            raise XplorError(f"{where}: unknown X-PLOR parameter statement {words[0]!r}")
    if pending is not None:
        raise XplorError(f"{path}: the file ends inside the MULTIPLE dihedral started at {pending[2]}")
    if skip_block:
        raise XplorError(f"{path}: the file ends inside a {skip_block} block (no END)")
    return params


def _lj_from_ab(a: float, b: float, where: str) -> tuple[float, float]:
    """(emin, rmin) of E = A/r^12 - B/r^6."""
    if a <= 0 or b <= 0:
        raise XplorError(f"{where}: A and B must be positive, got {a:g} {b:g}")
    return b * b / (4.0 * a), (2.0 * a / b) ** (1.0 / 6.0)


def to_charmm(params: XplorParameters, title: str = "converted from X-PLOR by gpuaccept") -> str:
    """CHARMM parameter text (BONDS, ANGLES, DIHEDRALS, IMPROPER, NONBONDED, NBFIX) of ``params``."""
    out = [f"* {title}", "*", "", "BONDS"]
    out += [f"{a:<6} {b:<6} {kb:12.6f} {b0:10.6f}" for (a, b), (kb, b0) in params.bonds.items()]
    out += ["", "ANGLES"]
    for (a, b, c), (k, t0, kub, s0) in params.angles.items():
        ub = f" {kub:12.6f} {s0:10.6f}" if kub is not None else ""
        out.append(f"{a:<6} {b:<6} {c:<6} {k:12.6f} {t0:10.4f}{ub}")
    out += ["", "DIHEDRALS"]
    for (a, b, c, d), terms in params.dihedrals.items():
        out += [f"{a:<6} {b:<6} {c:<6} {d:<6} {k:12.6f} {n:d} {delta:10.4f}" for k, n, delta in terms]
    out += ["", "IMPROPER"]
    for (a, b, c, d), (k, n, delta) in params.impropers.items():
        out.append(f"{a:<6} {b:<6} {c:<6} {d:<6} {k:12.6f} {n:d} {delta:10.4f}")
    out += [
        "",
        "NONBONDED nbxmod  5 atom cdiel shift vatom vdistance vswitch -",
        "cutnb 13.0 ctofnb 12.0 ctonnb 10.0 eps 1.0 e14fac 1.0 wmin 1.5",
    ]
    for t, (eps, sigma, eps14, sigma14) in params.nonbonded.items():
        out.append(
            f"{t:<6} 0.0 {-eps:.8f} {SIXTH_ROOT_2 * sigma / 2.0:.8f} 0.0 {-eps14:.8f} "
            f"{SIXTH_ROOT_2 * sigma14 / 2.0:.8f}"
        )
    if params.nbfix:
        out += ["", "NBFIX"]
        for (a, b), (aa, bb, aa14, bb14) in params.nbfix.items():
            emin, rmin = _lj_from_ab(aa, bb, f"NBFIX {a} {b}")
            emin14, rmin14 = _lj_from_ab(aa14, bb14, f"NBFIX {a} {b} (1-4)")
            out.append(f"{a:<6} {b:<6} {-emin:.8f} {rmin:.8f} {-emin14:.8f} {rmin14:.8f}")
    out += ["", "END", ""]
    return "\n".join(out)


def convert(paths: list[str | Path]) -> str:
    """CHARMM parameter text of the X-PLOR files ``paths`` (read in order: a later one overrides)."""
    params = XplorParameters()
    for p in paths:
        read_xplor(p, params)
    return to_charmm(params)
