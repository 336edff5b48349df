"""The benchmark workloads: one table row each, a builder returning the peers' callables and inputs.

Most programs are written once over an array namespace `xp` (numpy, cdnajit.numpy or jax.numpy), so
the three peers run the same source. A builder gets a `Context` and returns a `Case`: the inputs,
one callable per peer (called as `fn(*inputs)`; None when the peer does not take part), the
tolerance cdnajit's result is checked with against numpy's, and for compile workloads a `setup`
run untimed before every timed call.
"""
from __future__ import annotations

import math
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from itertools import count
from pathlib import Path
from typing import Callable

import numpy as np

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.environment import library_directory

CACHE_DIR_VARIABLE = "CDNAJIT_CACHE_DIR"
LIBRARY_DIR_VARIABLE = "CDNAJIT_LIBRARY_DIR"
# The library's prebuilt kernels as installed (`python -m cdnajit warm`; `make bench` runs it for f32
# and f64): the W12 cases use them, but the one that shows a first call without them.
INSTALLED_LIBRARY = library_directory()


@dataclass(frozen=True)
class Context:
    quick: bool        # smaller sizes, for a smoke test
    jax: object        # the jax module, or None when it is not importable
    scratch: Path      # a temporary folder, removed after the run


@dataclass
class Case:
    inputs: tuple
    cdnajit: Callable
    numpy: Callable | None
    jax: Callable | None
    tolerance: tuple[float, float] | None    # (rtol, atol) of cdnajit against `reference`; None: not checked
    reference: Callable | None = None        # what cdnajit is checked against; the numpy peer by default
    setup: Callable[[], None] | None = None  # run before every timed call, outside the timing
    flops: int | None = None                 # floating-point operations per call, for GFLOP/s
    note: Callable[[], str] | None = None    # a remark on the measured run, asked for after it


@dataclass(frozen=True)
class Workload:
    name: str          # "W4.2048": the part before the dot is the group `--only` selects
    description: str
    build: Callable[[Context], Case]

    @property
    def group(self) -> str:
        return self.name.split(".")[0]


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def normal(generator, shape, dtype=np.float32, scale=1.0) -> np.ndarray:
    return (generator.standard_normal(shape) * scale).astype(dtype)


def bind(program, xp):
    """`program(xp, *arrays)` as a function of the arrays, keeping the program's name."""
    def bound(*arrays):
        return program(xp, *arrays)
    bound.__name__ = program.__name__
    return bound


def jax_call_x64(jax, jitted, inputs):
    """A JAX peer that computes with 64-bit types on, as cdnajit's semantics are: its inputs put on the
    device once under them (the runner's `jax.device_put`, made without them, would be 32-bit copies),
    so the runner's arguments are ignored."""
    with jax.enable_x64(True):
        placed = tuple(jax.device_put(x) for x in inputs)

    def call(*_runner_inputs):
        with jax.enable_x64(True):
            return jitted(*placed)
    return call


def jitted_peers(program, ctx: Context):
    """cdnajit, numpy and JAX callables of `program(xp, *arrays)`, jitted where the peer jits."""
    jax_fn = ctx.jax.jit(bind(program, ctx.jax.numpy)) if ctx.jax else None
    return cj.jit(bind(program, cnp)), bind(program, np), jax_fn


# ---- the programs, each written once over the namespace `xp`

def tanh_affine(xp, x):
    return xp.tanh(x * 1.5 + 0.25) * 0.5 + x


def softmax(xp, x):
    shifted = x - xp.max(x, axis=-1, keepdims=True)
    e = xp.exp(shifted)
    return e / xp.sum(e, axis=-1, keepdims=True)


def layernorm(xp, x, scale, shift):
    centered = x - xp.mean(x, axis=-1, keepdims=True)
    variance = xp.mean(centered * centered, axis=-1, keepdims=True)
    return centered / xp.sqrt(variance + 1e-5) * scale + shift


def mlp(xp, x, w1, b1, w2, b2, w3, b3):
    h = xp.maximum(x @ w1 + b1, 0.0)
    h = xp.maximum(h @ w2 + b2, 0.0)
    return softmax(xp, h @ w3 + b3)


def matmul(xp, a, b):
    return a @ b


def causal_attention(xp, q, k, v):
    """Attention over q, k, v of [batch, sequence, heads, head size], each position attending to
    itself and the ones before it: two batched matmuls and a softmax, written out."""
    q, k, v = (xp.swapaxes(t, 1, 2) for t in (q, k, v))           # [batch, heads, sequence, head size]
    scores = (q @ xp.swapaxes(k, 2, 3)) * (1.0 / math.sqrt(q.shape[-1]))
    sequence = q.shape[2]
    causal = xp.arange(sequence)[:, None] >= xp.arange(sequence)[None, :]
    weights = softmax(xp, xp.where(causal, scores, -xp.inf))
    return xp.swapaxes(weights @ v, 1, 2)


def matmul_f32_accumulate(xp, a, b):
    return xp.matmul(a, b, preferred_element_type=xp.float32)


def add(xp, a, b):
    return a + b


# One period of the W9 chain: ten single ops that keep values in a small range (tanh, sin and cos
# bound them; exp and log1p only see bounded inputs), so 100 ops neither overflow nor flush to zero.
# Adding the input `x0` once a period keeps the result a function of the input.
CHAIN_PERIOD = (
    lambda xp, x, x0, c: x * c,
    lambda xp, x, x0, c: x + x0,
    lambda xp, x, x0, c: xp.tanh(x),
    lambda xp, x, x0, c: xp.exp(x),
    lambda xp, x, x0, c: x - c,
    lambda xp, x, x0, c: xp.sin(x),
    lambda xp, x, x0, c: x * c,
    lambda xp, x, x0, c: xp.cos(x),
    lambda xp, x, x0, c: x * x,
    lambda xp, x, x0, c: xp.log1p(x),
)
CHAIN_LENGTH = 100


def elementwise_chain(xp, variant: int):
    """A deterministic 100-op elementwise program. Each `variant` has other constants, hence other
    IR, so a cold compile cannot be served by any cache keyed on the program."""
    def chain(x0):
        x = x0
        for i in range(CHAIN_LENGTH):
            constant = 0.5 + 0.01 * ((7 * i) % 10) + 1e-6 * variant
            x = CHAIN_PERIOD[i % len(CHAIN_PERIOD)](xp, x, x0, constant)
        return x
    return chain


def build_tanh_affine(ctx: Context) -> Case:
    x = normal(rng(1), (2**18 if ctx.quick else 4 * 2**20,))
    # One tanh per element: a few ulp from the math library plus rounding of the affine steps;
    # rtol 1e-5 is ~80 f32 ulp, atol covers outputs near zero where x and the tanh term cancel.
    return Case((x,), *jitted_peers(tanh_affine, ctx), tolerance=(1e-5, 1e-6))


def build_softmax(ctx: Context) -> Case:
    x = normal(rng(2), (256 if ctx.quick else 4096, 1024))
    # Row sums of 1024 f32 terms in any order: worst-case relative error 1024 * 2**-24 ~ 6e-5.
    return Case((x,), *jitted_peers(softmax, ctx), tolerance=(1e-4, 1e-8))


def build_layernorm(ctx: Context) -> Case:
    generator = rng(3)
    x = normal(generator, (256 if ctx.quick else 4096, 1024))
    scale = 1.0 + normal(generator, (1024,), scale=0.1)
    shift = normal(generator, (1024,), scale=0.1)
    # Mean and variance are 1024-term f32 sums (relative error <= ~6e-5, see softmax); outputs are
    # O(1), and near zero the error of the mean dominates, hence an equal atol.
    return Case((x, scale, shift), *jitted_peers(layernorm, ctx), tolerance=(1e-4, 1e-4))


def gemm_tolerance(k: int) -> tuple[float, float]:
    # Each of the k accumulation steps rounds a partial sum of magnitude ~sqrt(k) (unit-normal
    # inputs) by at most 2**-24 relative, whatever the summation order: atol k*sqrt(k)*2**-24.
    return 1e-5, k * math.sqrt(k) * 2.0**-24


def gemm_builder(n: int, quick_n: int):
    def build(ctx: Context) -> Case:
        size = quick_n if ctx.quick else n
        generator = rng(4)
        a, b = normal(generator, (size, size)), normal(generator, (size, size))
        return Case((a, b), *jitted_peers(matmul, ctx), tolerance=gemm_tolerance(size),
                    flops=2 * size**3)
    return build


def build_gemm_f16(ctx: Context) -> Case:
    size = 128 if ctx.quick else 1024
    generator = rng(5)
    a, b = normal(generator, (size, size), np.float16), normal(generator, (size, size), np.float16)
    cdnajit_fn, _, jax_fn = jitted_peers(matmul_f32_accumulate, ctx)
    return Case(
        (a, b), cdnajit_fn, numpy=lambda a, b: a.astype(np.float32) @ b.astype(np.float32), jax=jax_fn,
        # f16 x f16 products are exact in f32 (11 + 11 significand bits <= 24): same error as f32 GEMM.
        tolerance=gemm_tolerance(size), flops=2 * size**3)


def build_mlp(ctx: Context) -> Case:
    batch, width = (32, 256) if ctx.quick else (256, 1024)
    generator = rng(6)
    widths = (width, width, width, 10)
    params = []
    for fan_in, fan_out in zip(widths, widths[1:]):
        # 1/sqrt(fan_in) keeps activations O(1) through the layers.
        params += [normal(generator, (fan_in, fan_out), scale=fan_in**-0.5), normal(generator, (fan_out,), scale=0.1)]
    x = normal(generator, (batch, width))
    flops = 2 * batch * sum(i * o for i, o in zip(widths, widths[1:]))
    # Three GEMMs with O(1) outputs (relative error ~1e-5, see gemm_tolerance) feeding a softmax
    # over 10 logits: probabilities ~0.1 agree to a few 1e-5 relative.
    return Case((x, *params), *jitted_peers(mlp, ctx), tolerance=(1e-4, 1e-6), flops=flops)


def build_mlp_tuned(ctx: Context) -> Case:
    """W5 after the find mode: `cj.libs.blas.tune` times the model's 12 best solutions of each of the
    MLP's GEMM problems, with the epilogue the matcher fuses into it (bias and relu, or bias), on
    this host and records the fastest, in a tuning database of the benchmark's own (the user's is
    never touched); the jitted MLP then runs the recorded winners."""
    case = build_mlp(ctx)
    cache_dir = tempfile.mkdtemp(prefix="tuned-", dir=ctx.scratch)
    os.environ[CACHE_DIR_VARIABLE] = cache_dir
    x, *params = case.inputs
    weights = params[0::2]
    last = len(weights) - 1
    for layer_epilogue, shape in dict.fromkeys(("bias" if i == last else "bias_relu", w.shape)
                                               for i, w in enumerate(weights)):
        cj.libs.blas.tune(x.shape[0], shape[1], shape[0], "float32", epilogue=layer_epilogue, top=12,
                          show_progress=False)

    def setup():
        os.environ[CACHE_DIR_VARIABLE] = cache_dir

    return replace(case, setup=setup)


def cold_compile_case(program, inputs, ctx: Context, tolerance, x64: bool = False, library: bool = True) -> Case:
    """W12: the first call of `program` with an empty persistent cache (a fresh folder before every
    call) and, for JAX, cleared caches and a new jit: tracing, compiling and one run, side by side.
    The library's prebuilt kernels are the installed ones, or with `library=False` none (an empty
    folder too), so that every GEMM kernel compiles."""
    def setup():
        os.environ[CACHE_DIR_VARIABLE] = tempfile.mkdtemp(prefix="cold-", dir=ctx.scratch)
        os.environ[LIBRARY_DIR_VARIABLE] = (INSTALLED_LIBRARY if library else
                                            tempfile.mkdtemp(prefix="no-library-", dir=ctx.scratch))
        if ctx.jax:
            ctx.jax.clear_caches()

    def cdnajit_fn(*arrays):
        return cj.jit(bind(program, cnp))(*arrays)

    def jax_fn(*arrays):
        if not x64:
            return ctx.jax.jit(bind(program, ctx.jax.numpy))(*arrays)
        # jax.device_put made f32 copies of f64 inputs (64-bit types are off by default): the
        # numpy inputs go in, under 64-bit types, as cdnajit's semantics are.
        with ctx.jax.enable_x64(True):
            return ctx.jax.jit(bind(program, ctx.jax.numpy))(*inputs)

    def note():
        installed = Path(INSTALLED_LIBRARY)
        if library and not (installed.is_dir() and any(installed.glob("*.bin"))):
            return f"no prebuilt kernels in {installed}: run `python -m cdnajit warm` first"
        return ""

    return Case(inputs, cdnajit_fn, numpy=None, jax=jax_fn if ctx.jax else None, tolerance=tolerance,
                reference=bind(program, np), setup=setup, note=note)


def build_cold_mlp(ctx: Context) -> Case:
    case = build_mlp(ctx)
    return cold_compile_case(mlp, case.inputs, ctx, case.tolerance)


def build_cold_mlp_no_library(ctx: Context) -> Case:
    case = build_mlp(ctx)
    return cold_compile_case(mlp, case.inputs, ctx, case.tolerance, library=False)


def build_cold_gemm_f64(ctx: Context) -> Case:
    size = 200 if ctx.quick else 1000
    generator = rng(10)
    a, b = normal(generator, (size, size), np.float64), normal(generator, (size, size), np.float64)
    # gemm_tolerance's argument in f64: k steps of partial sums ~sqrt(k), each rounded by 2**-53.
    return cold_compile_case(matmul, (a, b), ctx, (1e-12, size * math.sqrt(size) * 2.0**-53), x64=True)


def build_cold_attention(ctx: Context) -> Case:
    batch, sequence, heads, size = (1, 64, 2, 32) if ctx.quick else (2, 512, 8, 64)
    generator = rng(11)
    q, k, v = (normal(generator, (batch, sequence, heads, size)) for _ in range(3))
    # Scores are 64-term f32 sums of O(1) products scaled by 1/8 (error ~1e-6 relative); the softmax
    # and the second product average O(1) values with weights summing to one: a few 1e-6.
    return cold_compile_case(causal_attention, (q, k, v), ctx, (1e-4, 1e-5))


def build_cold_mlp_new_batch(ctx: Context) -> Case:
    """The W5 MLP called at batch 100 after batch 256: the persistent cache holds what the batch-256
    call compiled (copied into a fresh folder before every call; no library kernels installed, so
    the GEMM kernels are those it compiled), JAX's jit has compiled batch 256
    (after cleared caches). A GEMM kernel serves every M, so cdnajit compiles only the kernels whose
    sizes are static (the elementwise and softmax ones); JAX compiles the program for the new shape."""
    case = build_mlp(ctx)
    x, *params = case.inputs
    small = normal(rng(12), (100 if not ctx.quick else 20, x.shape[1]))
    primed = tempfile.mkdtemp(prefix="primed-", dir=ctx.scratch)
    no_library = tempfile.mkdtemp(prefix="no-library-", dir=ctx.scratch)
    os.environ[CACHE_DIR_VARIABLE], os.environ[LIBRARY_DIR_VARIABLE] = primed, no_library
    cj.jit(bind(mlp, cnp))(x, *params)
    jax_mlp = ctx.jax.jit(bind(mlp, ctx.jax.numpy)) if ctx.jax else None

    def setup():
        fresh = tempfile.mkdtemp(prefix="batch-", dir=ctx.scratch)
        shutil.copytree(primed, fresh, dirs_exist_ok=True)
        os.environ[CACHE_DIR_VARIABLE], os.environ[LIBRARY_DIR_VARIABLE] = fresh, no_library
        if ctx.jax:
            ctx.jax.clear_caches()
            ctx.jax.block_until_ready(jax_mlp(x, *params))

    def cdnajit_fn(*arrays):
        return cj.jit(bind(mlp, cnp))(*arrays)

    return Case((small, *params), cdnajit_fn, numpy=None, jax=jax_mlp, tolerance=case.tolerance,
                reference=bind(mlp, np), setup=setup)


def small_add_inputs():
    generator = rng(8)
    return normal(generator, (8,)), normal(generator, (8,))


def build_jit_call(ctx: Context) -> Case:
    # f32 addition is correctly rounded everywhere: results must be identical.
    return Case(small_add_inputs(), *jitted_peers(add, ctx), tolerance=(0.0, 0.0))


def build_eager_call(ctx: Context) -> Case:
    return Case(small_add_inputs(), cdnajit=cnp.add, numpy=np.add, jax=ctx.jax.numpy.add if ctx.jax else None,
                tolerance=(0.0, 0.0))


def chain_input():
    return (rng(9).uniform(-1.0, 1.0, 1024).astype(np.float32),)


def build_compile_cold(ctx: Context) -> Case:
    variants = count(1)
    variant = 0

    def setup():
        # A fresh program, an empty persistent cache and cleared JAX caches before every compile.
        nonlocal variant
        variant = next(variants)
        os.environ[CACHE_DIR_VARIABLE] = tempfile.mkdtemp(prefix="cold-", dir=ctx.scratch)
        if ctx.jax:
            ctx.jax.clear_caches()

    def cdnajit_fn(x):
        return cj.jit(elementwise_chain(cnp, variant))(x)

    def jax_fn(x):
        ctx.jax.jit(elementwise_chain(ctx.jax.numpy, variant)).lower(x).compile()

    # Each timed call compiles another variant, so results are not compared.
    return Case(chain_input(), cdnajit_fn, numpy=None, jax=jax_fn if ctx.jax else None, tolerance=None, setup=setup)


def build_compile_warm(ctx: Context) -> Case:
    cache_dir = tempfile.mkdtemp(prefix="warm-", dir=ctx.scratch)

    def setup():
        os.environ[CACHE_DIR_VARIABLE] = cache_dir  # filled by the warm-up call

    def cdnajit_fn(x):
        return cj.jit(elementwise_chain(cnp, 0))(x)

    # 100 ops, each within a few ulp, on values in [0.5, 0.7]; the chain does not amplify errors
    # (its f32 result is within 2 ulp of a float64 evaluation): rtol 1e-5 is ~100 ulp.
    def note():
        return "" if any(Path(cache_dir).iterdir()) else "the cache dir stayed empty: no persistent cache in use"

    return Case(chain_input(), cdnajit_fn, numpy=None, jax=None, tolerance=(1e-5, 1e-6),
                reference=elementwise_chain(np, 0), setup=setup, note=note)


WORKLOADS = (
    Workload("W1", "tanh(x*1.5+0.25)*0.5+x on 4 Mi float32", build_tanh_affine),
    Workload("W2", "softmax over rows of 4096x1024 float32", build_softmax),
    Workload("W3", "layernorm over rows of 4096x1024 float32 (eps 1e-5, scale and shift)", build_layernorm),
    Workload("W4.1024", "f32 GEMM 1024^3", gemm_builder(1024, quick_n=128)),
    Workload("W4.2048", "f32 GEMM 2048^3", gemm_builder(2048, quick_n=256)),
    Workload("W4.f16", "f16 GEMM 1024^3, f32 accumulate (numpy: f32 GEMM of the upcast inputs)", build_gemm_f16),
    Workload("W5", "MLP forward: relu, relu, softmax; batch 256, widths 1024-1024-1024-10, f32", build_mlp),
    Workload("W5.tuned", "the same MLP after cj.libs.blas.tune of its GEMMs on this host", build_mlp_tuned),
    Workload("W8", "per-call time of a jitted a+b on 8 float32", build_jit_call),
    Workload("W9.cold", "compile of a 100-op elementwise chain on 1024 float32, empty cache", build_compile_cold),
    Workload("W9.warm", "compile of the same chain, from the persistent cache", build_compile_warm),
    Workload("W10", "per-call time of an eager add on 8 float32", build_eager_call),
    Workload("W12.mlp", "first call, empty cache, the library's kernels installed: the W5 MLP", build_cold_mlp),
    Workload("W12.f64", "first call, empty cache, the library's kernels installed: a 1000x1000 f64 GEMM",
             build_cold_gemm_f64),
    Workload("W12.attention", "first call, empty cache, the library's kernels installed: causal attention, "
             "B=2 S=512 H=8 D=64 f32, softmax and two matmuls", build_cold_attention),
    Workload("W12.bare", "first call, empty cache, no library kernels installed: the W5 MLP",
             build_cold_mlp_no_library),
    Workload("W12.batch100", "the W5 MLP at batch 100 after batch 256, no library kernels installed: "
             "no GEMM kernel compiled", build_cold_mlp_new_batch),
)
