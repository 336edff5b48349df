"""`python -m cdnajit warm`: compile the GEMM kernels the BLAS heuristic picks for common problems
(libs/blas/prebuilt.py) into the compile cache, as a library ships its kernels.

Each problem's call is emitted as a compiled program emits it (the library's `emit` for the
target), and its kernel's object code is stored under the same key (`executable.object_code`:
the kernel's code text), so a later program whose GEMM picks that solution and variant, at any
size, loads it instead of compiling. Problems that share a kernel are compiled once; kernels
already in the cache cost a lookup.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from ..ir.kernel import Kernel
from ..ir.targets import Target, get_target
from ..libs.blas import kernels as blas
from ..libs.blas.prebuilt import common_calls, prebuilt_dtypes
from .blas_tune import progress
from .cache import default_cache
from .executable import object_code


@dataclass(frozen=True)
class WarmResult:
    kernels: int        # distinct kernels of the common problems
    compiled: int       # of which this run compiled (the others were in the cache)
    seconds: float
    cache_bytes: int    # the cache folder's size after the run

    def describe(self) -> str:
        return (f"{self.kernels} GEMM kernels ({self.compiled} compiled now, {self.kernels - self.compiled} "
                f"already cached) in {self.seconds:.0f} s; the cache holds {self.cache_bytes / 2**20:.1f} MiB")


def prebuilt_kernels(target: Target, dtypes=None) -> list[Kernel]:
    """One kernel per distinct code text among the common problems' kernels, in problem order."""
    kernels = {}
    for in_dtype in dtypes or prebuilt_dtypes():
        for call in common_calls(in_dtype):
            kernel = blas.emit(call, "blas_prebuilt", target)
            kernels.setdefault(kernel.code_text(), kernel)
    return list(kernels.values())


def warm(target: str | Target | None = None, dtypes=None, show_progress: bool = True, file=None) -> WarmResult:
    """Compile the common problems' GEMM kernels for `target` (default gfx942) into the cache."""
    target = target if isinstance(target, Target) else get_target(target)
    file = file or sys.stderr
    start = time.perf_counter()
    kernels = prebuilt_kernels(target, dtypes)
    cache = default_cache()
    compiled = 0
    for index, kernel in enumerate(kernels):
        if show_progress:
            progress(index, len(kernels), kernel_label(kernel), file, task="warm")
        misses = cache.misses
        object_code(kernel, cache)
        compiled += cache.misses - misses
    if show_progress:
        progress(len(kernels), len(kernels), "done", file, task="warm")
        file.write("\n")
    size = sum(path.stat().st_size for path in cache.directory.rglob("*") if path.is_file())
    return WarmResult(len(kernels), compiled, time.perf_counter() - start, size)


def kernel_label(kernel: Kernel) -> str:
    """The dtypes of a GEMM kernel's operands and result, for the progress bar."""
    return " ".join(f"{buffer.name}:{buffer.dtype}" for buffer in (kernel.buffers[0], kernel.buffers[-1]))
