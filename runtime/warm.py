"""`python -m cdnajit warm`: compile the GEMM kernels the BLAS heuristic picks for common problems
(libs/blas/prebuilt.py) into the library store (cache.library_cache: a folder of the installation,
not the user's compile cache), as a ROCm library ships its kernels.

Each problem's call is emitted as a compiled program emits it (the library's `emit` for the
target), and its kernel's object code is stored under the key a program looks it up by
(`launch.object_code`: the kernel's code text), so a later program whose GEMM picks that
solution and variant, at any size and with an empty compile cache, loads it instead of compiling.
Problems that share a kernel are compiled once; kernels already in the store cost a lookup, and
entries an older compiler made are removed first.
"""
from __future__ import annotations

import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from ..codegen.host import compile_object
from ..environment import LIBRARY_DIR_ENV
from ..errors import LibraryStoreError
from ..ir.kernel import Kernel
from ..ir.targets import Target, get_target
from ..libs.blas import kernels as blas
from ..libs.blas.prebuilt import common_calls, prebuilt_dtypes
from .blas_tune import progress
from .cache import library_cache


@dataclass(frozen=True)
class WarmResult:
    kernels: int        # distinct kernels of the common problems
    compiled: int       # of which this run compiled (the others were in the store)
    seconds: float
    store_bytes: int    # the store folder's size after the run
    folder: str

    def describe(self) -> str:
        return (f"{self.kernels} GEMM kernels ({self.compiled} compiled now, {self.kernels - self.compiled} "
                f"already there) in {self.seconds:.0f} s; {self.folder} holds {self.store_bytes / 2**20:.1f} MiB")


def prebuilt_kernels(target: Target, dtypes=None) -> list[Kernel]:
    """One kernel per distinct code text among the common problems' kernels, in problem order."""
    kernels = {}
    for in_dtype in dtypes or prebuilt_dtypes():
        for call in common_calls(in_dtype):
            kernel = blas.emit(call, "blas_prebuilt", target)
            kernels.setdefault(kernel.code_text(), kernel)
    return list(kernels.values())


def warm(target: str | Target | None = None, dtypes=None, show_progress: bool = True, file=None,
         jobs: int = 1) -> WarmResult:
    """Compile the common problems' GEMM kernels for `target` (default gfx942) into the library
    store, in `jobs` processes at once."""
    target = target if isinstance(target, Target) else get_target(target)
    file = file or sys.stderr
    start = time.perf_counter()
    kernels = prebuilt_kernels(target, dtypes)
    store = library_cache()
    writable_or_raise(store.directory)
    store.remove_other_versions()
    keys = [store.key("kernel", kernel.code_text()) for kernel in kernels]
    missing = [(key, kernel) for key, kernel in zip(keys, kernels) if store.load(key) is None]
    done = len(kernels) - len(missing)

    def stored(key: str, kernel: Kernel, code: bytes):
        nonlocal done
        store.store(key, {"kind": "object", "compiler": store.version}, code)
        done += 1
        if show_progress:
            progress(done, len(kernels), kernel_label(kernel), file, task="warm")

    if jobs > 1 and len(missing) > 1:
        # Fresh interpreters (spawn), not forks of this one: a caller's threads hold no lock in them.
        with ProcessPoolExecutor(min(jobs, len(missing)), mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(compile_object, kernel): (key, kernel) for key, kernel in missing}
            for future in as_completed(futures):
                stored(*futures[future], future.result())
    else:
        for key, kernel in missing:
            stored(key, kernel, compile_object(kernel))
    if show_progress:
        progress(len(kernels), len(kernels), "done", file, task="warm")
        file.write("\n")
    size = sum(path.stat().st_size for path in store.directory.glob("*.bin"))
    return WarmResult(len(kernels), len(missing), time.perf_counter() - start, size, str(store.directory))


def writable_or_raise(directory: Path) -> None:
    """Make the store's folder, or raise a clear error naming it and the variable that moves it."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=directory, prefix=".probe-")
        probe.close()
    except OSError as error:
        raise LibraryStoreError(f"cannot write the library's kernels to {directory} ({error.strerror}); "
                              f"set {LIBRARY_DIR_ENV} to a folder you can write") from None


def kernel_label(kernel: Kernel) -> str:
    """The dtypes of a GEMM kernel's operands and result, for the progress bar."""
    return " ".join(f"{buffer.name}:{buffer.dtype}" for buffer in (kernel.buffers[0], kernel.buffers[-1]))
