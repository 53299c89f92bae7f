"""The probes' one NVML reader (nvidia-ml-py): the node facts, the health probe, the power sampler and the MD
runner open NVML through it, read every optional value the same way, and close it once.

NVML is imported when a reader is opened, not when this module is, so that a node without a driver still gets
its facts (and each caller its fallback: nvidia-smi, or "not available")."""

from __future__ import annotations

from typing import Any


class Nvml:
    """An open NVML session: ``lib`` is the pynvml module, ``error`` its exception class. Use it as a context
    manager, or call ``close`` (a reader that lives as long as a sampler does)."""

    def __init__(self) -> None:
        import pynvml  # noqa: PLC0415 - imported late: see the module's docstring

        pynvml.nvmlInit()
        self.lib = pynvml
        self.error = pynvml.NVMLError

    def optional(self, fn, *args) -> Any:
        """``fn(*args)``, or None where NVML cannot say (not supported on this GPU or driver); bytes as text."""
        try:
            value = fn(*args)
        except self.error:
            return None
        return value.decode() if isinstance(value, bytes) else value

    def attempt(self, fn, *args) -> tuple[Any, str | None]:
        """``(fn(*args), None)``, or ``(None, why)`` where NVML cannot say: its error text and code, e.g. ``NVML:
        Not Supported (3)``; bytes as text."""
        try:
            value = fn(*args)
        except self.error as err:
            return None, f"NVML: {err} ({getattr(err, 'value', '?')})"
        return (value.decode() if isinstance(value, bytes) else value), None

    def call(self, name: str, *args) -> tuple[Any, str | None]:
        """``attempt`` of the pynvml function ``name``; ``(None, why)`` also where this nvidia-ml-py has no such
        function (an older one than the driver's NVML)."""
        fn = getattr(self.lib, name, None)
        if fn is None:
            return None, f"nvidia-ml-py has no {name}"
        return self.attempt(fn, *args)

    def versions(self) -> tuple[str | None, str | None]:
        """(the driver's version, the CUDA version it supports as ``major.minor``), each None where NVML cannot
        say."""
        cuda = self.optional(self.lib.nvmlSystemGetCudaDriverVersion_v2)
        cuda_version = f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None
        return self.optional(self.lib.nvmlSystemGetDriverVersion), cuda_version

    def handles(self) -> list[Any]:
        """Every GPU's handle, in NVML's order (the CUDA and nvidia-smi index)."""
        return [self.lib.nvmlDeviceGetHandleByIndex(i) for i in range(self.lib.nvmlDeviceGetCount())]

    def close(self) -> None:
        try:
            self.lib.nvmlShutdown()
        except self.error:
            pass

    def __enter__(self) -> Nvml:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
