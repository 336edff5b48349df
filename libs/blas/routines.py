"""The BLAS library's routines (ir/ops/library.py's contract): a GEMM in hipBLASLt's form, row-major,

    D = epilogue(alpha * op(A) @ op(B) + beta * C + bias)       op(X) = X, or X's transpose if trans_x

Operands: A, B, then C (of D's type) when beta != 0, then bias (a row of N elements, added to every
row of D) when the epilogue starts with "bias". A is [M, K] ([K, M] if trans_a) and B is [K, N]
([N, K] if trans_b); the batched routines put one batch dimension first in A, B, C and D.
Attributes, beside library_call's own (`library` = "blas", `routine`, `solution`):
  - the routines are gemm, gemv, batched_gemm and strided_batched_gemm. The matcher emits
    strided_batched_gemm for batches (dense tensors have one batch stride); batched_gemm is
    rocBLAS's form with an array of pointers, left to the library's solution selection;
  - `trans_a`, `trans_b`, the scalars `alpha` and `beta` (ints for an integer D, complex for a
    complex one), and `epilogue`: "none", "bias", an activation (ACTIVATIONS) or "clamp", or
    "bias_" + one of them;
  - `clamp_min`, `clamp_max`: the clamp's bounds, min(max(D, clamp_min), clamp_max) (relu6 with
    other bounds, nn.hard_tanh, cnp.clip, lax.clamp), a float or None for no bound on that side; both
    None unless the activation is clamp. The kernels take them as scalar parameters;
  - `result_dtype` (D's) and `compute_dtype` (the accumulator's: f32 for f16/bf16, i32 for i8).

The reference computes as the graph ops the matcher replaced did, step by step with their
references: the product (accumulated in compute_dtype, rounded once to result_dtype, as
dot_general's reference), then alpha, C, bias and the activation, each rounded to result_dtype.
So interpreting a matched module gives the original's results; a kernel may keep the epilogue in
the accumulator and round once. Activations are computed in the forms written below; a graph that
wrote one otherwise (another association, constants to 10 digits) agrees to a few ulp.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir.opdef import OPS, fmt_types, require
from ...ir.ops.library import Routine
from ...ir.ops.linalg import dot_general
from ...ir.types import COMPLEXES, FLOATS, INTS, NUMERIC, NUMPY_DTYPES, TensorType

RANKS = {  # routine -> rank of A and B (a batch dimension first, for the batched ones)
    "gemm": 2, "gemv": 2, "batched_gemm": 3, "strided_batched_gemm": 3,
}
HALF_FLOATS = ("f16", "bf16")


def apply(name, *arrays):
    """Op `name`'s reference on arrays: the epilogue computes as the graph's ops do."""
    return OPS[name].reference(*arrays)


def splat(value, like: np.ndarray) -> np.ndarray:
    return np.full(like.shape, value, like.dtype)


def gelu_tanh(x):
    # x * (0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))), as jax.nn.gelu(approximate=True)
    cube = apply("mul", x, apply("mul", x, x))
    inner = apply("mul", splat(math.sqrt(2 / math.pi), x), apply("add", x, apply("mul", splat(0.044715, x), cube)))
    return apply("mul", x, apply("mul", splat(0.5, x), apply("add", splat(1, x), apply("tanh", inner))))


def gelu_erf(x):
    # x * (erf(x / sqrt(2)) + 1) / 2, as jax.nn.gelu(approximate=False)
    erf = apply("erf", apply("div", x, splat(math.sqrt(2), x)))
    return apply("div", apply("mul", x, apply("add", erf, splat(1, x))), splat(2, x))


# activation -> (reference, the result dtypes it accepts)
ACTIVATIONS = {
    "relu": (lambda x: apply("max", x, splat(0, x)), INTS + FLOATS),
    # min(max(x, 0), 6), as nn.relu6 writes it (the clamp epilogue of a conv whose GEMM is libs/blas's)
    "relu6": (lambda x: apply("min", apply("max", x, splat(0, x)), splat(6, x)), FLOATS),
    "sigmoid": (lambda x: apply("logistic", x), FLOATS),
    "tanh": (lambda x: apply("tanh", x), FLOATS),
    "silu": (lambda x: apply("mul", x, apply("logistic", x)), FLOATS),
    "gelu_tanh": (gelu_tanh, FLOATS),
    "gelu_erf": (gelu_erf, FLOATS),
}
# The clamp's bounds are attributes (clamp_min, clamp_max): one kernel serves every bound.
CLAMP = "clamp"
EPILOGUES = ("none", "bias", *ACTIVATIONS, CLAMP, *(f"bias_{name}" for name in (*ACTIVATIONS, CLAMP)))


def clamped(y, low, high):
    """min(max(y, low), high), a None bound not applied, as the graph's max and min ops compute it."""
    y = y if low is None else apply("max", y, splat(low, y))
    return y if high is None else apply("min", y, splat(high, y))


def activation_dtypes(activation: str) -> tuple[str, ...]:
    """The result dtypes an epilogue's activation (or the clamp) is defined on."""
    return FLOATS if activation == CLAMP else ACTIVATIONS[activation][1]


def activated(y, activation: str | None, clamp_min, clamp_max):
    """The epilogue's activation (None: none; the clamp with its bounds) of y, as the graph's ops compute it."""
    if activation == CLAMP:
        return clamped(y, clamp_min, clamp_max)
    return y if activation is None else ACTIVATIONS[activation][0](y)


def split_epilogue(epilogue: str) -> tuple[bool, str | None]:
    """("bias_relu") -> (True, "relu"); ("bias") -> (True, None); ("none") -> (False, None)."""
    has_bias = epilogue == "bias" or epilogue.startswith("bias_")
    activation = epilogue[len("bias_"):] if epilogue.startswith("bias_") else epilogue
    return has_bias, (None if activation in ("none", "bias") else activation)


def gemm_sizes(a: TensorType, b: TensorType, trans_a: bool, trans_b: bool):
    """(M, K of A, K of B, N) of the matrices op(A) and op(B)."""
    rows_a, columns_a = a.shape[-2:]
    rows_b, columns_b = b.shape[-2:]
    m, k_a = (columns_a, rows_a) if trans_a else (rows_a, columns_a)
    k_b, n = (columns_b, rows_b) if trans_b else (rows_b, columns_b)
    return m, k_a, k_b, n


def scalar_fits(value, dtype: str) -> bool:
    """Whether alpha or beta is a number of dtype's kind: an int for integers, real for floats."""
    if dtype in INTS:
        return isinstance(value, int) and not isinstance(value, bool)
    return not isinstance(value, bool) and (dtype in COMPLEXES or not isinstance(value, complex))


def gemm_infer(types, attrs):
    name = "library_call"
    routine, epilogue = attrs["routine"], attrs["epilogue"]
    require(epilogue in EPILOGUES, f"{name}: epilogue {epilogue!r} is not one of {', '.join(EPILOGUES)}")
    has_bias, activation = split_epilogue(epilogue)
    has_c = attrs["beta"] != 0
    expected = 2 + has_c + has_bias
    require(len(types) == expected, f"{name}: beta={attrs['beta']} and epilogue {epilogue!r} take {expected} "
                                    f"operands (A, B{', C' if has_c else ''}{', bias' if has_bias else ''}), "
                                    f"got ({fmt_types(types)})")
    a, b = types[:2]
    rank = RANKS[routine]
    require(a.ndim == rank and b.ndim == rank, f"{name}: {routine} takes operands of rank {rank}, got {a} and {b}")
    require(a.shape[:-2] == b.shape[:-2], f"{name}: the batch dimensions of A {a} and B {b} differ")
    require(a.dtype == b.dtype and a.dtype in NUMERIC, f"{name}: A {a} and B {b} must have one numeric dtype")
    m, k_a, k_b, n = gemm_sizes(a, b, attrs["trans_a"], attrs["trans_b"])
    require(k_a == k_b, f"{name}: op(A) is {m}x{k_a} (A {a}, trans_a={attrs['trans_a']}) but op(B) is {k_b}x{n} "
                        f"(B {b}, trans_b={attrs['trans_b']}): the contracting sizes {k_a} and {k_b} differ")
    require(routine != "gemv" or m == 1 or n == 1, f"{name}: gemv needs M or N of 1, got {m}x{n}")
    result_dtype, compute = attrs["result_dtype"], attrs["compute_dtype"]
    family = next(f for f in (INTS, FLOATS, COMPLEXES) if a.dtype in f)
    for what, dtype in [("result_dtype", result_dtype), ("compute_dtype", compute)]:
        require(dtype in family and NUMPY_DTYPES[dtype].itemsize >= NUMPY_DTYPES[a.dtype].itemsize,
                f"{name}: {what} {dtype} does not hold products of operands of dtype {a.dtype}")
    require(compute not in HALF_FLOATS, f"{name}: compute_dtype {compute}: half floats accumulate in f32")
    for what in ("alpha", "beta"):
        require(scalar_fits(attrs[what], result_dtype), f"{name}: {what}={attrs[what]!r} is not a {result_dtype}")
    result = TensorType(result_dtype, a.shape[:-2] + (m, n))
    if has_c:
        require(types[2] == result, f"{name}: C must have D's type {result}, got {types[2]}")
    if has_bias:
        require(types[-1] == TensorType(result_dtype, (n,)), f"{name}: bias must be {result_dtype}[{n}], "
                                                             f"got {types[-1]}")
    if activation is not None:
        require(result_dtype in activation_dtypes(activation),
                f"{name}: epilogue {epilogue!r} is not defined on {result_dtype}")
    check_clamp_bounds(name, activation, attrs)
    return [result]


def check_clamp_bounds(name: str, activation: str | None, attrs) -> None:
    bounds = (attrs["clamp_min"], attrs["clamp_max"])
    require(activation == CLAMP or bounds == (None, None),
            f"{name}: clamp_min and clamp_max are for the clamp epilogue, got {bounds} with epilogue {attrs['epilogue']!r}")


def gemm_reference(a, b, *rest, trans_a, trans_b, alpha, beta, epilogue, result_dtype, compute_dtype, clamp_min,
                   clamp_max):
    batch = tuple(range(a.ndim - 2))
    # The product as dot_general's reference computes it: accumulate in compute_dtype, round once
    # (overflowing to inf as IEEE says, silently).
    product = dot_general(a, b, lhs_contracting=(a.ndim - 2 if trans_a else a.ndim - 1,),
                          rhs_contracting=(b.ndim - 1 if trans_b else b.ndim - 2,), lhs_batch=batch, rhs_batch=batch,
                          preferred_element_type=compute_dtype)
    with np.errstate(over="ignore"):
        d = product.astype(NUMPY_DTYPES[result_dtype])
    if alpha != 1:
        d = apply("mul", d, splat(alpha, d))
    if beta != 0:
        c = rest[0]
        d = apply("add", d, c if beta == 1 else apply("mul", c, splat(beta, c)))
    has_bias, activation = split_epilogue(epilogue)
    if has_bias:
        d = apply("add", d, np.broadcast_to(rest[-1], d.shape))
    return activated(d, activation, clamp_min, clamp_max)


ATTRS = {"trans_a": "bool", "trans_b": "bool", "alpha": "scalar", "beta": "scalar", "epilogue": "str",
         "result_dtype": "dtype", "compute_dtype": "dtype", "clamp_min": "float?", "clamp_max": "float?"}
DOC = "D = epilogue(alpha * op(A) @ op(B) + beta * C + bias) (libs/blas/routines.py)"
ROUTINES = {name: Routine(ATTRS, gemm_infer, gemm_reference, DOC) for name in RANKS}
