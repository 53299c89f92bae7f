"""Where NCCL is on this node, as ``reframe_checks/src/find-nccl.sh`` says: the one place gpuaccept looks for it
(the Makefile's nccl and hpl-gpu targets and the gpuaccept_reframe, gpuaccept_bench and gpuaccept_hpl roles run
the same script; gpuaccept.rfmconfig records its answer as the partition's ``extras.nccl_home``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

from gpuaccept.layout import PROJECT_ROOT

#: The finder, beside the Makefile that uses it.
FIND_NCCL = PROJECT_ROOT / "reframe_checks" / "src" / "find-nccl.sh"


class NcclError(ValueError):
    """A directory given for NCCL does not hold it; the message says what is missing."""


def find(home: str = "", pythons: Sequence[str] = (), env: dict[str, str] | None = None) -> str:
    """NCCL's directory (include/nccl.h, lib*/libnccl.so.2): ``home`` checked when given, else the first that holds
    it of NCCL_HOME, CUDA_HOME (/usr/local/cuda), /usr and the nvidia.nccl package of ``pythons`` (this interpreter
    first), GPUACCEPT_NCCL_PYTHONS and python3; '' when none does. NcclError when ``home`` or NCCL_HOME lacks it."""
    argv = ["sh", str(FIND_NCCL)]
    for python in (sys.executable, *pythons):
        argv += ["--python", python]
    if home:
        argv.append(home)
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120, env=env)
    if proc.returncode == 0:
        return proc.stdout.strip()
    if proc.returncode == 1:
        return ""
    raise NcclError(proc.stderr.strip() or f"{FIND_NCCL} exited with status {proc.returncode}")
