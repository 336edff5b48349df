"""W7: FFTs through `cdnajit.numpy.fft` (libs/fft's plans), side by side with numpy.fft and jax.numpy.fft.

Tolerances follow libs/fft's error model (tests/libs/test_fft.py): a relative error of a few eps x
log2(N) of the result's norm per transform; the runner compares elementwise, so the absolute part is
that bound times the largest magnitude of the reference, and the relative part is 0.
"""
from __future__ import annotations

import math

import numpy as np

import cdnajit as cj
import cdnajit.numpy as cnp
from workloads import Case, Context, Workload, jax_call_x64, rng

F32_EPSILON = 2.0**-24
F64_EPSILON = 2.0**-53
ERROR_FACTOR = 8   # a few roundings per pass, and the elementwise comparison of an L2 bound


def complex_normal(generator, shape, dtype) -> np.ndarray:
    return (generator.standard_normal(shape) + 1j * generator.standard_normal(shape)).astype(dtype)


def tolerance(reference, length: int, epsilon: float) -> tuple[float, float]:
    magnitude = float(np.max(np.abs(reference))) if reference.size else 0.0
    return 0.0, ERROR_FACTOR * epsilon * math.log2(max(length, 2)) * magnitude


def jax_peer(ctx: Context, function, inputs, x64: bool = False):
    """jax.jit(function(jax.numpy)), or None without JAX. With `x64`, JAX runs with 64-bit types on
    inputs put on its device under them (the runner's `jax.device_put`, made without 64-bit types,
    would be complex64 copies, so its arguments are then ignored)."""
    if ctx.jax is None:
        return None
    jitted = ctx.jax.jit(lambda *arrays: function(ctx.jax.numpy, *arrays))
    if not x64:
        return jitted
    return jax_call_x64(ctx.jax, jitted, inputs)


def case(ctx: Context, function, inputs, length: int, epsilon: float, x64: bool = False) -> Case:
    reference = function(np, *inputs)
    return Case(inputs, cj.jit(lambda *arrays: function(cnp, *arrays)), numpy=lambda *arrays: function(np, *arrays),
                jax=jax_peer(ctx, function, inputs, x64), tolerance=tolerance(np.asarray(reference), length, epsilon),
                flops=int(5 * np.asarray(reference).size * math.log2(max(length, 2))))


def build_1d(ctx: Context) -> Case:
    n = 2**14 if ctx.quick else 2**20
    x = complex_normal(rng(70), (n,), np.complex64)
    return case(ctx, lambda xp, x: xp.fft.fft(x), (x,), n, F32_EPSILON)


def build_2d(ctx: Context) -> Case:
    batch, side = (2, 64) if ctx.quick else (16, 512)
    x = complex_normal(rng(71), (batch, side, side), np.complex64)
    return case(ctx, lambda xp, x: xp.fft.fft2(x), (x,), side * side, F32_EPSILON)


def build_rfft(ctx: Context) -> Case:
    n = 2**14 if ctx.quick else 2**22
    x = rng(72).standard_normal(n).astype(np.float32)
    return case(ctx, lambda xp, x: xp.fft.irfft(xp.fft.rfft(x), n), (x,), n, F32_EPSILON)


def build_3d(ctx: Context) -> Case:
    side = 32 if ctx.quick else 128
    x = complex_normal(rng(73), (side, side, side), np.complex64)
    return case(ctx, lambda xp, x: xp.fft.fftn(x), (x,), side ** 3, F32_EPSILON)


def build_prime(ctx: Context) -> Case:
    n, batch = 10007, (10 if ctx.quick else 1000)
    x = complex_normal(rng(74), (batch, n), np.complex128)
    return case(ctx, lambda xp, x: xp.fft.fft(x), (x,), 4 * n, F64_EPSILON, x64=True)


def build_small_batch(ctx: Context) -> Case:
    batch, n = (1024 if ctx.quick else 65536), 64
    x = complex_normal(rng(75), (batch, n), np.complex64)
    return case(ctx, lambda xp, x: xp.fft.fft(x), (x,), n, F32_EPSILON)


FFT_WORKLOADS = (
    Workload("W7.1d", "c64 FFT of length 2^20 (two-pass plan 512 x 2048, the columns 8 side by side)", build_1d),
    Workload("W7.2d", "batched 2-D FFT, 16 x 512 x 512 c64 (fft2: a 512-point stockham per axis, reading rows, "
                      "writing transposed, 8 transforms side by side)", build_2d),
    Workload("W7.rfft", "rfft of 2^22 f32 then irfft back (2^21-point complex plans 512 x 4096, rfft_post / irfft_pre)",
             build_rfft),
    Workload("W7.3d", "3-D FFT, 128^3 c64 (fftn: a 128-point stockham per axis, reading rows, writing "
                      "transposed, 16 transforms side by side)", build_3d),
    Workload("W7.prime", "c128 FFT of prime length 10007, batch 1000 (Bluestein through 20160 = 140 x 144 in "
                         "three kernels: padded columns, rows convolved in place, cropped inverse columns)",
             build_prime),
    Workload("W7.batch", "c64 FFTs of length 64, batch 65536 (one stockham kernel, 16 transforms per workgroup)",
             build_small_batch),
)
