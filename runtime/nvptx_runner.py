"""Runs compiled programs' kernels on an NVIDIA GPU (the NVPTX backend, codegen/nvptx.py), for
validation: the same kernel IR as the CPU's, on hardware whose work-items really run concurrently,
under compute-sanitizer where asked (tests/gpu/).

A test-only runner, not a `cj.jit` backend: it copies every buffer of a launch to the GPU and the
written ones back (per launch, through the CUDA driver API), which checks each kernel on the
program's real data but is no way to run a program fast; and it reuses the executable's own
schedule (`Executable.block`, which `profile` runs), so a program's loops, branches, views and
in-place updates run as the CPU runs them, each launch going to the GPU instead of the host pool.

    compiled = cj.jit(f).lower(x).compile()
    gpu_result = nvptx_runner.run_program(compiled, x)      # every kernel on the GPU
    cpu_result = compiled(x)

The driver: libcuda through ctypes (no new dependency): cuInit, the device's primary context,
cuModuleLoadDataEx (PTX, compiled by the driver for the device), cuModuleGetFunction, cuMemAlloc,
cuMemcpyHtoD/DtoH, cuLaunchKernel, cuCtxSynchronize. Scalar parameters (runtime extents) are passed
as the kernel's params, from the kernel's bound `arguments`.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache

import numpy as np

from ..codegen import nvptx
from ..errors import CdnajitError
from ..ir.kernel import GlobalBuffer, Kernel
from ..ir.types import NUMPY_DTYPES
from .executable import Executable

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 5, 6
STATIC_SHARED_LIMIT = 48 * 1024     # what a launch may take without raising the function's limit
MAX_GRID_YZ = 65535


class CudaError(CdnajitError, RuntimeError):
    """A CUDA driver call failed (its error name in the message)."""


class Driver:
    """The CUDA driver of this process: one device (0), its primary context current."""

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as error:
            raise CudaError(f"no CUDA driver (libcuda.so.1): {error}") from None
        self.call("cuInit", 0)
        self.device = ctypes.c_int()
        self.call("cuDeviceGet", ctypes.byref(self.device), 0)
        self.context = ctypes.c_void_p()
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(self.context), self.device)
        self.call("cuCtxSetCurrent", self.context)

    def call(self, name: str, *args) -> None:
        result = getattr(self.lib, name)(*args)
        if result != 0:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorName(result, ctypes.byref(text))
            raise CudaError(f"{name} failed: {text.value.decode() if text.value else result}")

    def load(self, ptx: str, name: str) -> ctypes.c_void_p:
        """The kernel function `name` of a PTX module, which the driver compiles for the device."""
        module, log = ctypes.c_void_p(), ctypes.create_string_buffer(1 << 14)
        options = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        values = (ctypes.c_void_p * 2)(ctypes.addressof(log), len(log))
        try:
            self.call("cuModuleLoadDataEx", ctypes.byref(module), ptx.encode() + b"\0", 2, options, values)
        except CudaError as error:
            raise CudaError(f"{error} for kernel {name}: {log.value.decode(errors='replace')}") from None
        function = ctypes.c_void_p()
        self.call("cuModuleGetFunction", ctypes.byref(function), module, name.encode())
        return function

    def allocate(self, nbytes: int) -> int:
        """A device buffer of exactly `nbytes` (memcheck bounds-checks it), or 0 for no bytes."""
        if nbytes == 0:
            return 0
        pointer = ctypes.c_uint64()
        self.call("cuMemAlloc_v2", ctypes.byref(pointer), ctypes.c_size_t(nbytes))
        return pointer.value

    def free(self, pointer: int) -> None:
        if pointer:
            self.call("cuMemFree_v2", ctypes.c_uint64(pointer))

    def to_device(self, pointer: int, host: int, nbytes: int) -> None:
        if nbytes:
            self.call("cuMemcpyHtoD_v2", ctypes.c_uint64(pointer), ctypes.c_void_p(host), ctypes.c_size_t(nbytes))

    def to_host(self, host: int, pointer: int, nbytes: int) -> None:
        if nbytes:
            self.call("cuMemcpyDtoH_v2", ctypes.c_void_p(host), ctypes.c_uint64(pointer), ctypes.c_size_t(nbytes))


@lru_cache(maxsize=None)
def driver() -> Driver:
    return Driver()


def available() -> bool:
    """Whether a CUDA driver and a device are here."""
    try:
        driver()
    except CudaError:
        return False
    return True


class GpuKernel:
    """A kernel loaded on the GPU, launched as `Executable.block`'s launches launch a compiled
    kernel: `launch(address)` with the address of its buffers' host addresses, in parameter order.
    Its scalars are its own bound `arguments` (so `bound_addresses` is empty)."""

    bound_addresses = ()

    def __init__(self, kernel: Kernel):
        if any(isinstance(p, GlobalBuffer) for p in kernel.params[len(kernel.buffers):]):
            raise NotImplementedError(f"kernel {kernel.name}: a buffer parameter after a scalar")
        self.kernel = kernel
        self.driver = driver()
        self.function = self.driver.load(nvptx.ptx(kernel), kernel.name)
        self.shared = nvptx.shared_bytes(kernel)
        if self.shared > STATIC_SHARED_LIMIT:
            self.driver.call("cuFuncSetAttribute", self.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             self.shared)
        self.arguments = dict(kernel.arguments)
        scalars = kernel.params[len(kernel.buffers):]
        missing = [p.name for p in scalars if p.name not in self.arguments]
        if missing:
            raise CudaError(f"kernel {kernel.name} has no bound value for its scalars {', '.join(missing)}")
        # One 8-byte slot per parameter; kernelParams[i] points at slot i, which holds the buffer's
        # device address or the scalar's value (in its memory form, little-endian).
        self.slots = np.zeros(max(len(kernel.params), 1), np.uint64)
        for i, param in enumerate(scalars, start=len(kernel.buffers)):
            self.slots[i:i + 1].view(NUMPY_DTYPES[param.dtype] if param.dtype != "bool" else np.uint8)[0] = \
                self.arguments[param.name]
        self.params = (ctypes.c_void_p * len(self.slots))(*(self.slots.ctypes.data + 8 * i for i in range(len(self.slots))))

    def byte_counts(self) -> list[int]:
        return [self.kernel.launch_count(buffer, self.arguments) * NUMPY_DTYPES[buffer.dtype].itemsize
                for buffer in self.kernel.buffers]

    def launch(self, address: int) -> None:
        buffers = self.kernel.buffers
        hosts = list((ctypes.c_void_p * max(len(buffers), 1)).from_address(address))[:len(buffers)]
        grid = self.kernel.launch_grid(self.arguments)
        if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
            raise NotImplementedError(f"kernel {self.kernel.name}: grid {grid} (CUDA's y and z are at most {MAX_GRID_YZ})")
        sizes = self.byte_counts()
        devices = []
        try:
            for host, nbytes in zip(hosts, sizes):
                devices.append(self.driver.allocate(nbytes))
                self.driver.to_device(devices[-1], host, nbytes)
            self.slots[:len(devices)] = devices
            if 0 not in grid:
                x, y, z = self.kernel.workgroup_size
                self.driver.call("cuLaunchKernel", self.function, *grid, x, y, z, self.shared, None, self.params, None)
                self.driver.call("cuCtxSynchronize")
            for buffer, host, device, nbytes in zip(buffers, hosts, devices, sizes):
                if not buffer.readonly:
                    self.driver.to_host(host, device, nbytes)
        finally:
            for device in devices:
                self.driver.free(device)


def run_kernel(kernel: Kernel, *arrays: np.ndarray) -> None:
    """Launch one kernel on the GPU with one C-contiguous array per buffer parameter (its scalars
    bound in `kernel.arguments`); the written buffers' arrays receive the results."""
    if len(arrays) != len(kernel.buffers):
        raise CdnajitError(f"kernel {kernel.name} takes {len(kernel.buffers)} buffers, got {len(arrays)}")
    gpu = GpuKernel(kernel)
    for array, buffer, nbytes in zip(arrays, kernel.buffers, gpu.byte_counts()):
        if not array.flags.c_contiguous or array.nbytes != nbytes or array.dtype != NUMPY_DTYPES[buffer.dtype]:
            raise CdnajitError(f"kernel {kernel.name}: buffer {buffer.name} takes {nbytes} bytes of "
                               f"{buffer.dtype}, C-contiguous; got {array.dtype} {array.shape}")
    block = (ctypes.c_void_p * max(len(arrays), 1))(*(array.ctypes.data for array in arrays))
    gpu.launch(ctypes.addressof(block))


def run_executable(executable: Executable, *arrays) -> list[np.ndarray]:
    """Run an executable's schedule with every kernel launched on the GPU: its outputs."""
    kernels = [GpuKernel(kernel) for kernel in executable.kernels]
    body = executable.block(executable.plan["body"], kernels)
    outputs = body.run(executable.initial_env.copy(), executable.inputs(arrays))
    return [np.array(output) for output in outputs]


def run_program(compiled, *arrays):
    """A `cj.jit(f).lower(...).compile()` program called, with flat array arguments, with every
    kernel on the GPU: its outputs as the program returns them."""
    return compiled.unflatten(run_executable(compiled.executable, *arrays))
