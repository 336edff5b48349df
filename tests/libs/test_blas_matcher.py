"""The BLAS matcher on traced programs: matmul, @, dot, einsum, tensordot and lax.dot_general in every
transpose and batch arrangement over random shapes (1 and odd primes included), in each dtype the
library computes; the epilogues as programs write them; and the 3-layer MLP. Each optimized module
(canonicalize, then match_libraries) must hold the expected library calls, and interpreting it must
give numpy's results."""
import math

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.nn as nn
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.ir.core import walk
from cdnajit.libs.blas.matcher import RULES
from cdnajit.passes import canonicalize, fuse, match_libraries, run_pipeline

SIZES = (1, 2, 3, 5, 7, 11, 13)


def optimized(function, *args, rules=None):
    module = cj.make_graph(function)(*args)
    pipeline = [("canonicalize", canonicalize), ("match_libraries", lambda m: match_libraries(m, rules))]
    return module, run_pipeline(module, pipeline).module


def calls(module):
    return [op for op in walk(module.body) if op.name == "library_call"]


def only_call(module):
    assert not any(op.name == "dot_general" for op in walk(module.body)), module
    (call,) = calls(module)
    return call


def assert_product_close(got, want, magnitude, k, dtype):
    """|got - want| within the rounding a sum of k products may make: k * eps(dtype) * sum |a||b| (the
    standard bound for recursive summation), plus one rounding of the result."""
    eps = float(ml_dtypes.finfo(dtype).eps)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    error = np.abs(got.astype(np.complex128) - want)
    assert np.all(error <= (k + 1) * eps * magnitude + np.finfo(np.float64).tiny), (got, want)


# ---- every transpose and batch arrangement --------------------------------------------------------

def sizes(rng):
    return {name: int(rng.choice(SIZES)) for name in "BMNK"}


def expected_routine(batch, m, n):
    return "strided_batched_gemm" if batch != 1 else "gemv" if 1 in (m, n) else "gemm"


# name -> (function, operand shapes from sizes s, (numpy a, numpy b) -> the product, batched?, trans_a, trans_b)
# A batched program with B = 1 becomes a plain GEMM; M, N, K are the GEMM's sizes.
ARRANGEMENTS = {
    "a @ b": (lambda a, b: a @ b, lambda s: [(s["M"], s["K"]), (s["K"], s["N"])], np.matmul, False, False, False),
    "a.T @ b": (lambda a, b: a.T @ b, lambda s: [(s["K"], s["M"]), (s["K"], s["N"])], lambda a, b: a.T @ b, False,
                True, False),
    "a @ b.T": (lambda a, b: a @ b.T, lambda s: [(s["M"], s["K"]), (s["N"], s["K"])], lambda a, b: a @ b.T, False,
                False, True),
    "a.T @ b.T": (lambda a, b: cnp.matmul(a.T, b.T), lambda s: [(s["K"], s["M"]), (s["N"], s["K"])],
                  lambda a, b: a.T @ b.T, False, True, True),
    "batched matmul": (cnp.matmul, lambda s: [(s["B"], s["M"], s["K"]), (s["B"], s["K"], s["N"])], np.matmul, True,
                       False, False),
    "batched swapaxes": (lambda a, b: cnp.swapaxes(a, 1, 2) @ b, lambda s: [(s["B"], s["K"], s["M"]),
                                                                           (s["B"], s["K"], s["N"])],
                         lambda a, b: np.swapaxes(a, 1, 2) @ b, True, True, False),
    "stack @ matrix": (cnp.matmul, lambda s: [(s["B"], 1, s["M"], s["K"]), (s["K"], s["N"])], np.matmul, False,
                       False, False),
    "dot": (cnp.dot, lambda s: [(s["M"], s["K"]), (s["K"], s["N"])], np.dot, False, False, False),
    "matrix @ vector": (cnp.dot, lambda s: [(s["M"], s["K"]), (s["K"],)], np.dot, False, False, False),
    "vector @ matrix": (cnp.matmul, lambda s: [(s["K"],), (s["K"], s["N"])], np.matmul, False, False, False),
    "einsum ij,jk->ik": (lambda a, b: cnp.einsum("ij,jk->ik", a, b), lambda s: [(s["M"], s["K"]), (s["K"], s["N"])],
                         lambda a, b: np.einsum("ij,jk->ik", a, b), False, False, False),
    "einsum ji,kj->ik": (lambda a, b: cnp.einsum("ji,kj->ik", a, b), lambda s: [(s["K"], s["M"]), (s["N"], s["K"])],
                         lambda a, b: np.einsum("ji,kj->ik", a, b), False, True, True),
    # the result's transpose is absorbed by swapping the operands: D^T = B^T A^T
    "einsum ij,jk->ki": (lambda a, b: cnp.einsum("ij,jk->ki", a, b), lambda s: [(s["N"], s["K"]), (s["K"], s["M"])],
                         lambda a, b: np.einsum("ij,jk->ki", a, b), False, True, True),
    "einsum bij,bkj->bik": (lambda a, b: cnp.einsum("bij,bkj->bik", a, b),
                            lambda s: [(s["B"], s["M"], s["K"]), (s["B"], s["N"], s["K"])],
                            lambda a, b: np.einsum("bij,bkj->bik", a, b), True, False, True),
    "einsum bji,bjk->bik": (lambda a, b: cnp.einsum("bji,bjk->bik", a, b),
                            lambda s: [(s["B"], s["K"], s["M"]), (s["B"], s["K"], s["N"])],
                            lambda a, b: np.einsum("bji,bjk->bik", a, b), True, True, False),
    "tensordot axes=1": (lambda a, b: cnp.tensordot(a, b, axes=1), lambda s: [(s["M"], s["K"]), (s["K"], s["N"])],
                         lambda a, b: np.tensordot(a, b, axes=1), False, False, False),
    "tensordot axes=([0],[1])": (lambda a, b: cnp.tensordot(a, b, axes=([0], [1])),
                                 lambda s: [(s["K"], s["M"]), (s["N"], s["K"])],
                                 lambda a, b: np.tensordot(a, b, axes=([0], [1])), False, True, True),
    # two contracting dimensions flatten into one K (K = 2 * s["K"])
    "tensordot axes=2": (lambda a, b: cnp.tensordot(a, b, axes=2), lambda s: [(s["M"], 2, s["K"]), (2, s["K"], s["N"])],
                         lambda a, b: np.tensordot(a, b, axes=2), False, False, False),
    "lax.dot_general batch": (lambda a, b: lax.dot_general(a, b, (((1,), (2,)), ((0,), (0,)))),
                              lambda s: [(s["B"], s["K"], s["M"]), (s["B"], s["N"], s["K"])],
                              lambda a, b: np.einsum("bkm,bnk->bmn", a, b), True, True, True),
}
DRAWS = 4


@pytest.mark.parametrize("draw", range(DRAWS))
@pytest.mark.parametrize("name", ARRANGEMENTS)
def test_arrangement_becomes_one_gemm(name, draw):
    function, shapes, oracle, batched, trans_a, trans_b = ARRANGEMENTS[name]
    rng = np.random.default_rng([draw, len(name)])
    s = sizes(rng)
    a, b = (rng.standard_normal(shape).astype(np.float32) for shape in shapes(s))
    module, result = optimized(function, a, b)
    (dot,) = [op for op in walk(module.body) if op.name == "dot_general"]
    if all(is_vector(operand, dot, side) for side, operand in enumerate(dot.operands)):
        # Dot products of vectors are a sum of products (passes/rules.py: dot_as_reduction), no GEMM.
        assert not calls(result) and any(op.name == "reduce" for op in walk(result.body)), result
        k = math.prod(dot.operands[0].type.shape[i] for i in dot.attrs["lhs_contracting"])
    else:
        call = only_call(result)
        m, n = call.result.type.shape[-2:]
        # A matrix with a dimension of 1 lies in both orders: its flag is then free.
        for operand, flag, expected in zip(call.operands, ("trans_a", "trans_b"), (trans_a, trans_b)):
            if 1 not in operand.type.shape[-2:]:
                assert call.attrs[flag] == expected, result
        assert call.attrs["routine"] == expected_routine(s["B"] if batched else 1, m, n), result
        k = a.size // max(m * (s["B"] if batched else 1), 1) if m else 1
    (got,) = cj.ir.interpret(result, a, b)
    want = oracle(a.astype(np.float64), b.astype(np.float64))
    magnitude = oracle(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    assert_product_close(got, want, magnitude, k, np.float32)


def is_vector(operand, dot, side: int) -> bool:
    """Whether a dot_general operand's free dimensions all have size 1."""
    prefix = "lhs" if side == 0 else "rhs"
    bound = set(dot.attrs[f"{prefix}_contracting"]) | set(dot.attrs[f"{prefix}_batch"])
    return all(d == 1 for i, d in enumerate(operand.type.shape) if i not in bound)


# ---- dtypes -----------------------------------------------------------------------------------

# operand dtype, preferred_element_type, result dtype, compute dtype
DTYPES = [
    ("float64", None, "f64", "f64"),
    ("float32", None, "f32", "f32"),
    ("float16", None, "f16", "f32"),
    ("float16", "float32", "f32", "f32"),
    ("bfloat16", None, "bf16", "f32"),
    ("bfloat16", "float32", "f32", "f32"),
    ("int8", "int32", "i32", "i32"),
    ("complex64", None, "c64", "c64"),
]


def sample(rng, dtype, shape):
    if dtype == "int8":
        return rng.integers(-128, 128, shape).astype(np.int8)
    values = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype == "complex64" else 0)
    return values.astype(cnp.dtype(dtype) if dtype == "bfloat16" else dtype)


@pytest.mark.parametrize("dtype, preferred, result_dtype, compute_dtype", DTYPES)
@pytest.mark.parametrize("m, k, n", [(5, 7, 3), (1, 13, 11), (6, 1, 2)])
def test_dtypes_the_library_computes(dtype, preferred, result_dtype, compute_dtype, m, k, n):
    rng = np.random.default_rng(m * k * n)
    a, b = sample(rng, dtype, (m, k)), sample(rng, dtype, (k, n))
    preferred_type = None if preferred is None else getattr(cnp, preferred)
    module, result = optimized(lambda a, b: cnp.matmul(a, b, preferred_element_type=preferred_type), a, b)
    call = only_call(result)
    assert (call.attrs["result_dtype"], call.attrs["compute_dtype"]) == (result_dtype, compute_dtype)
    (got,) = cj.ir.interpret(result, a, b)
    wide = np.complex128 if dtype == "complex64" else np.float64
    want = a.astype(wide) @ b.astype(wide)
    if dtype == "int8":
        np.testing.assert_array_equal(got, want.astype(np.int32))   # exact: |sums| < 2**31
    else:
        # the accumulator's rounding over k products, and one rounding to the result dtype
        eps = ml_dtypes.finfo(cj.ir.numpy_dtype(compute_dtype)).eps * k + ml_dtypes.finfo(got.dtype).eps
        magnitude = np.abs(a.astype(wide)) @ np.abs(b.astype(wide))
        assert np.all(np.abs(got.astype(wide) - want) <= 2 * eps * magnitude)


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool", "complex128", "float32"])
def test_contractions_the_library_lacks_stay_dot_general(dtype):
    a = np.ones((3, 4), dtype)
    function = (lambda a, b: cnp.outer(a, b)) if dtype == "float32" else (lambda a, b: a @ b)
    module, result = optimized(function, a, a.T.copy() if dtype != "float32" else a)
    assert not calls(result)
    assert any(op.name == "dot_general" for op in walk(result.body))


# ---- epilogues --------------------------------------------------------------------------------------

def gelu_tanh_of(cube, association, half):
    return lambda h: association(h, cnp.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * cube(h))), half)


def gelu_erf_of(scaled, association, half):
    return lambda h: association(h, lax.erf(scaled(h)), half)


HALVES = {"* 0.5": lambda p: p * 0.5, "/ 2": lambda p: p / 2}
ASSOCIATIONS = {"x * half(1 + g)": lambda x, g, half: x * half(1 + g),
                "half(x) * (1 + g)": lambda x, g, half: half(x) * (1 + g),
                "half(x * (1 + g))": lambda x, g, half: half(x * (g + 1))}
CUBES = {"x ** 3": lambda h: h ** 3, "pow(x, 3.0)": lambda h: lax.pow(h, 3.0)}
ERF_SCALINGS = {"x / sqrt(2)": lambda h: h / math.sqrt(2), "x * sqrt(0.5)": lambda h: h * math.sqrt(0.5)}

# name -> (the function of h = x @ w, the epilogue)
ACTIVATIONS = {
    "relu": (lambda h: cnp.maximum(h, 0), "relu"),
    "relu reversed": (lambda h: cnp.maximum(0.0, h), "relu"),
    "relu6": (lambda h: cnp.minimum(cnp.maximum(h, 0), 6.0), "relu6"),
    "relu6 reversed": (lambda h: cnp.minimum(6.0, cnp.maximum(h, 0)), "relu6"),
    "tanh": (cnp.tanh, "tanh"),
    "sigmoid": (lax.logistic, "sigmoid"),
    "silu": (lambda h: h * lax.logistic(h), "silu"),
    "clip": (lambda h: cnp.clip(h, -0.5, 0.25), "clamp"),
    "lax.clamp": (lambda h: lax.clamp(np.float32(-0.5), h, np.float32(0.25)), "clamp"),
    "max of a constant": (lambda h: cnp.maximum(h, 0.5), "clamp"),
    "min of a constant, reversed": (lambda h: cnp.minimum(0.5, h), "clamp"),
    "relu then min": (lambda h: cnp.minimum(cnp.maximum(h, 0), 2.0), "clamp"),
    "hard_tanh": (nn.hard_tanh, "clamp"),
    **{f"gelu tanh {c}, {a}, {h}": (gelu_tanh_of(cube, association, half), "gelu_tanh")
       for c, cube in CUBES.items() for a, association in ASSOCIATIONS.items() for h, half in HALVES.items()},
    **{f"gelu erf {e}, {a}, {h}": (gelu_erf_of(scaled, association, half), "gelu_erf")
       for e, scaled in ERF_SCALINGS.items() for a, association in ASSOCIATIONS.items() for h, half in HALVES.items()},
}


def close_to_original(module, result, *args):
    """The optimized module against the traced one: the same reference ops, up to an activation written in
    another association or with constants to 10 digits (a few ulp of f32)."""
    for got, want in zip(cj.ir.interpret(result, *args), cj.ir.interpret(module, *args)):
        np.testing.assert_allclose(got, want, rtol=4e-6, atol=4e-6)


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("with_bias", [False, True])
def test_activations_fuse_into_the_epilogue(name, with_bias):
    activation, epilogue = ACTIVATIONS[name]
    rng = np.random.default_rng(len(name))
    x, w, bias = (rng.standard_normal(shape).astype(np.float32) for shape in [(5, 7), (7, 3), (3,)])
    module, result = optimized(lambda x, w, bias: activation(x @ w + bias if with_bias else x @ w), x, w, bias)
    assert only_call(result).attrs["epilogue"] == (f"bias_{epilogue}" if with_bias else epilogue), result
    assert len(result.body.ops) == 1, result
    close_to_original(module, result, x, w, bias)


# function of h -> the clamp epilogue's (clamp_min, clamp_max): the bounds composed as max and min compose
CLAMPS = [(lambda h: cnp.clip(h, -0.5, 0.25), (-0.5, 0.25)), (lambda h: cnp.maximum(h, 0.5), (0.5, None)),
          (lambda h: cnp.minimum(0.5, h), (None, 0.5)), (lambda h: cnp.minimum(cnp.maximum(h, 0), 2.0), (0.0, 2.0)),
          (lambda h: cnp.maximum(cnp.minimum(h, 2.0), 3.0), (3.0, 3.0)), (nn.hard_tanh, (-1.0, 1.0))]


@pytest.mark.parametrize("index", range(len(CLAMPS)))
def test_clamps_fuse_with_their_bounds(index):
    function, bounds = CLAMPS[index]
    rng = np.random.default_rng(index)
    x, w = (rng.standard_normal(shape).astype(np.float32) for shape in [(5, 7), (7, 3)])
    module, result = optimized(lambda x, w: function(x @ w), x, w)
    call = only_call(result)
    assert (call.attrs["clamp_min"], call.attrs["clamp_max"]) == bounds and len(result.body.ops) == 1, result
    close_to_original(module, result, x, w)
    # The kernel: 7-term f32 dot products, in another order than the interpreter's.
    np.testing.assert_allclose(np.asarray(cj.jit(lambda x, w: function(x @ w))(x, w)), cj.ir.interpret(module, x, w)[0],
                               rtol=4e-6, atol=4e-6)


def test_a_clamp_is_the_matrix_vector_kernels_epilogue_too():
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(shape).astype(np.float32) for shape in [(9, 7), (7, 1), (1,)])
    function = lambda x, w, b: cnp.clip(x @ w + b, -0.5, 0.25)
    compiled = cj.jit(function).lower(x, w, b).compile()
    text = compiled.as_text("optimized")
    assert 'routine = "gemv"' in text and 'epilogue = "bias_clamp"' in text and " min(" not in text, text
    np.testing.assert_allclose(np.asarray(compiled(x, w, b)), cj.jit(function, backend="interpret")(x, w, b),
                               rtol=4e-6, atol=4e-6)


# name -> (function of x, w, c, the attributes the one call has)
SCALINGS = {
    "result * s": (lambda x, w, c: (x @ w) * 0.125, {"alpha": 0.125, "beta": 0.0}),
    "-result": (lambda x, w, c: -(x @ w), {"alpha": -1.0}),
    "result + C": (lambda x, w, c: x @ w + c, {"beta": 1.0}),
    "C + s * result": (lambda x, w, c: c + 3.0 * (x @ w), {"alpha": 3.0, "beta": 1.0}),
    "result - s * C": (lambda x, w, c: x @ w - 0.5 * c, {"beta": -0.5}),
    "C - s * result (an SGD update)": (lambda x, w, c: c - 0.25 * (x @ w), {"alpha": -0.25, "beta": 1.0}),
    "s * result + C then relu": (lambda x, w, c: cnp.maximum(0.5 * (x @ w) + c, 0),
                                 {"alpha": 0.5, "beta": 1.0, "epilogue": "relu"}),
}


@pytest.mark.parametrize("name", SCALINGS)
def test_scalars_and_c_fold_into_alpha_and_beta(name):
    function, attrs = SCALINGS[name]
    rng = np.random.default_rng(len(name))
    x, w, c = (rng.standard_normal(shape).astype(np.float32) for shape in [(5, 7), (7, 3), (5, 3)])
    module, result = optimized(function, x, w, c)
    call = only_call(result)
    assert {key: call.attrs[key] for key in attrs} == attrs, result
    assert len(result.body.ops) == 1, result
    close_to_original(module, result, x, w, c)


def test_operand_factors_stay_operands():
    # alpha = -1 would turn a sum of zero products into -0; JAX's (-x) @ w is +0 there.
    x, w = np.zeros((4, 5), np.float32), np.ones((5, 3), np.float32)
    function = lambda x, w: (-x) @ (w * 2.0)
    module, result = optimized(function, x, w)
    assert only_call(result).attrs["alpha"] == 1.0, result
    assert [op.name for op in result.body.ops].count("neg") == 1, result
    got = np.asarray(cj.jit(function)(x, w))
    np.testing.assert_array_equal(np.signbit(got), np.zeros((4, 3), bool))
    # alpha = 1e60 would make -0 * -max a 0; JAX's (x * 1e30) @ (x * 1e30).T multiplies -0 by -inf: NaN
    # (fuzz seed 2121, program 2121007794).
    x = np.array([[-0.0], [2.0], [-np.finfo(np.float64).max]])
    got = np.asarray(cj.jit(lambda x: (x * 1e30) @ (x * 1e30).T)(x))
    assert np.isnan(got[0, 2]) and np.isnan(got[2, 0]) and got[1, 1] == (2.0 * 1e30) ** 2


def test_every_rule_fires():
    fired = set()

    def recording(index, rewrite):
        def run(m, **bindings):
            result = rewrite(m, **bindings)
            if result is not None:
                fired.add(index)
            return result
        return run

    rules = [(pattern, recording(i, rewrite)) for i, (pattern, rewrite) in enumerate(RULES)]
    x, w, c = np.ones((5, 7), np.float32), np.ones((7, 3), np.float32), np.ones((5, 3), np.float32)
    for activation, _ in ACTIVATIONS.values():
        optimized(lambda x, w, c: activation(x @ w + c[0]), x, w, c, rules=rules)
    for function, _ in SCALINGS.values():
        optimized(function, x, w, c, rules=rules)
    optimized(lambda x, w: cnp.einsum("ij,jk->ki", x, w), x, w, rules=rules)
    assert sorted(set(range(len(RULES))) - fired) == []


# ---- the 3-layer MLP --------------------------------------------------------------------------------

def mlp(x, w1, b1, w2, b2, w3, b3, xp=cnp):
    h1 = xp.maximum(x @ w1 + b1, 0)
    h2 = xp.maximum(h1 @ w2 + b2, 0)
    logits = h2 @ w3 + b3
    e = xp.exp(logits - xp.max(logits, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


def test_mlp_is_three_gemms_with_fused_epilogues():
    # batch 256 as the benchmark's (W5); widths 32-64-48-10 instead of 1024s, for speed
    rng = np.random.default_rng(5)
    widths = [32, 64, 48, 10]
    x = rng.standard_normal((256, widths[0])).astype(np.float32)
    params = []
    for fan_in, fan_out in zip(widths, widths[1:]):
        params += [(rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32),
                   rng.standard_normal(fan_out).astype(np.float32)]
    module, result = optimized(mlp, x, *params)
    assert [call.attrs["epilogue"] for call in calls(result)] == ["bias_relu", "bias_relu", "bias"], result
    assert all(call.attrs["routine"] == "gemm" for call in calls(result))
    assert not any(op.name == "dot_general" for op in walk(result.body))
    (got,) = cj.ir.interpret(result, x, *params)
    want = mlp(*(a.astype(np.float64) for a in [x, *params]), xp=np)
    # f32 sums of at most 64 products of O(1) terms feeding a softmax: probabilities to ~1e-5
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # fusion keeps the calls and groups the softmax around them
    fused = fuse(result)
    cj.ir.verify(fused)
    assert len(calls(fused)) == 3
    np.testing.assert_array_equal(cj.ir.interpret(fused, x, *params)[0], got)
