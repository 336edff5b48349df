"""cdnajit.numpy linear algebra (dot, matmul, vdot, inner, outer, tensordot, einsum, trace) against numpy.

Tolerances come from the standard error bound of a dot product of length K accumulated in
precision u: |computed - exact| <= K * u * (|a| . |b|), elementwise, plus one rounding of
the result. The oracle computes the exact product and |a|.|b| in float64/complex128; f16
and bf16 accumulate in f32 and are rounded once to their dtype.
"""
import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.float16, BF16, np.float32, np.float64, np.complex64, np.int32, np.bool_]


def run(fn, *args):
    return cj.jit(fn, backend="interpret")(*args)


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.4
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -4, 5, size=shape).astype(dtype)
    values = rng.standard_normal(shape)
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def wide(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    return x.astype(np.int64) if x.dtype.kind in "iub" else x.astype(np.float64)


def unit_roundoff(dtype):
    dtype = np.dtype(dtype)
    return float((ml_dtypes.finfo if dtype == BF16 else np.finfo)(dtype).eps)


def assert_contraction_close(got, exact, magnitude, dtype, k):
    """`exact` and `magnitude` (|a|.|b|) in float64; integers and bools must match exactly."""
    dtype = np.dtype(dtype)
    assert got.dtype == dtype, (got.dtype, dtype)
    exact = np.asarray(exact)
    assert got.shape == exact.shape, (got.shape, exact.shape)
    if dtype == np.bool_:
        np.testing.assert_array_equal(got, exact != 0)
    elif dtype.kind in "iu":
        np.testing.assert_array_equal(got, exact.astype(dtype))
    else:
        accumulate = np.float32 if dtype.itemsize == 2 else dtype
        tolerance = unit_roundoff(dtype) * np.abs(exact) + (k + 1) * unit_roundoff(accumulate) * magnitude
        assert np.all(np.abs(wide(got) - exact) <= tolerance + 1e-300), np.max(np.abs(wide(got) - exact) - tolerance)


def check(fn, np_fn, a, b, k, dtype=None, backend="interpret"):
    """Run fn on (a, b) and compare with np_fn in float64 and np_fn on |a|, |b| for the bound."""
    got = cj.jit(fn, backend=backend)(a, b)
    exact = np_fn(wide(a), wide(b))
    magnitude = np_fn(np.abs(wide(a)).astype(np.float64), np.abs(wide(b)).astype(np.float64))
    assert_contraction_close(got, exact, magnitude, dtype or np.result_type(a, b), k)


MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((1, 1), (1, 1)), ((5, 7), (7, 3)), ((0, 3), (3, 4)),
    ((3, 0), (0, 4)), ((2, 5, 3), (3, 4)), ((3, 4), (2, 4, 5)), ((5, 1, 2, 3), (4, 3, 2)), ((2, 1, 3), (1, 3, 4)),
    ((1, 2, 3), (6, 3, 4)), ((3,), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 0, 3, 4), (1, 4, 2)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
def test_matmul_matches_numpy(a_shape, b_shape, dtype):
    a, b = sample(a_shape, dtype), sample(b_shape, dtype, seed=1)
    check(cnp.matmul, np.matmul, a, b, a_shape[-1], dtype)


DOT_SHAPES = [((), ()), ((), (3, 2)), ((4,), ()), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((5, 7), (7, 3)),
              ((2, 3, 4), (5, 4, 6)), ((2, 3, 4), (4,)), ((0, 3), (3, 2)), ((2, 0), (0, 3))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape,b_shape", DOT_SHAPES)
def test_dot_matches_numpy(a_shape, b_shape, dtype):
    a, b = sample(a_shape, dtype), sample(b_shape, dtype, seed=1)
    k = a_shape[-1] if a_shape and b_shape else 1
    check(cnp.dot, np.dot, a, b, k, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32, np.bool_])
@pytest.mark.parametrize("a_shape,b_shape", [((), (3,)), ((4,), (4,)), ((2, 3), (5, 3)), ((2, 1, 3), (3,)),
                                             ((0,), (0,))])
def test_inner_matches_numpy(a_shape, b_shape, dtype):
    a, b = sample(a_shape, dtype), sample(b_shape, dtype, seed=1)
    check(cnp.inner, np.inner, a, b, a_shape[-1] if a_shape else 1, dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex64, np.int32, np.bool_])
@pytest.mark.parametrize("a_shape,b_shape", [((), ()), ((3,), (4,)), ((2, 3), (5,)), ((0,), (3,))])
def test_outer_matches_numpy(a_shape, b_shape, dtype):
    a, b = sample(a_shape, dtype), sample(b_shape, dtype, seed=1)
    check(cnp.outer, np.outer, a, b, 1, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
@pytest.mark.parametrize("a_shape,b_shape", [((6,), (6,)), ((2, 3), (3, 2)), ((2, 3), (6,)), ((0,), (0,))])
def test_vdot_conjugates_and_flattens(a_shape, b_shape, dtype):
    a, b = sample(a_shape, dtype), sample(b_shape, dtype, seed=1)
    check(cnp.vdot, np.vdot, a, b, a.size, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("a_shape,b_shape,axes", [
    ((3, 4, 5), (4, 5, 2), 2), ((3, 4), (4, 5), 1), ((3, 4), (5, 6), 0), ((2, 3), (2, 3), 2), ((), (3,), 0),
    ((3, 4, 5), (5, 3, 2), ([0, 2], [1, 0])), ((3, 4, 5), (2, 4), (1, 1)), ((3, 4, 5), (4, 3), ((-2, 0), (0, -1))),
    ((0, 4), (4, 0), 1),
])
def test_tensordot_matches_numpy(a_shape, b_shape, axes, dtype):
    a, b = sample(a_shape, dtype), sample(b_shape, dtype, seed=1)
    k = int(np.prod([a_shape[i] for i in (range(len(a_shape) - axes, len(a_shape)) if isinstance(axes, int)
                                           else np.atleast_1d(axes[0]))]))
    check(lambda x, y: cnp.tensordot(x, y, axes), lambda x, y: np.tensordot(x, y, axes), a, b, max(k, 1), dtype)


EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]),
    ("ij", [(3, 4)]), ("ji", [(3, 4)]), ("ii", [(4, 4)]), ("ii->i", [(4, 4)]), ("iij->j", [(3, 3, 2)]),
    ("iii->i", [(2, 2, 2)]), ("i,i", [(5,), (5,)]), ("i,i->i", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)]),
    ("ijk,kl,lm->im", [(2, 3, 4), (4, 5), (5, 6)]), ("ab,bc,cd,de", [(2, 3), (3, 4), (4, 2), (2, 5)]),
    ("ab,cd->", [(2, 3), (4, 5)]), ("ab,cd->db", [(2, 3), (4, 5)]), ("ij,ij->i", [(3, 4), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("...i,...i", [(3, 4), (4,)]), ("i...->...", [(3, 2, 5)]),
    ("...,...", [(), (3,)]), ("ij...,jk...->ik...", [(2, 3, 4), (3, 5, 1)]), ("Ba,aC", [(2, 3), (3, 4)]),
    ("i,i", [(1,), (3,)]), ("ij,j->", [(1, 3), (1,)]), ("ij->", [(0, 3)]), ("ij,jk->ik", [(2, 0), (0, 3)]),
    ("ii,ij->j", [(3, 3), (3, 2)]), ("i,ij,j->", [(3,), (3, 4), (4,)]), (" ij , jk -> ik ", [(3, 4), (4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 7, 4)]), ("ij,ij,ij->", [(3, 4), (3, 4), (3, 4)]),
    ("i,i,i", [(5,), (5,), (1,)]), ("ab,bc,ca->", [(2, 3), (3, 4), (4, 2)]),
]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64, np.int32, np.bool_])
@pytest.mark.parametrize("subscripts,shapes", EINSUM_CASES)
def test_einsum_matches_numpy(subscripts, shapes, dtype):
    operands = [sample(s, dtype, seed=i) for i, s in enumerate(shapes)]
    got = run(lambda *xs: cnp.einsum(subscripts, *xs), *operands)
    exact = np.einsum(subscripts, *[wide(x) for x in operands])
    magnitude = np.einsum(subscripts, *[np.abs(wide(x)).astype(np.float64) for x in operands])
    # Each contraction step or sum adds at most its length times u: bound by the total element count.
    k = int(np.prod([max(d, 1) for s in shapes for d in s]))
    assert_contraction_close(got, exact, magnitude, dtype, k)


def test_einsum_interleaved_sublists():
    a, b = sample((2, 3, 4), np.float64), sample((4, 5), np.float64, seed=1)
    got = run(lambda x, y: cnp.einsum(x, [Ellipsis, 0, 1], y, [1, 2], [Ellipsis, 2, 0]), a, b)
    np.testing.assert_allclose(got, np.einsum(a, [Ellipsis, 0, 1], b, [1, 2], [Ellipsis, 2, 0]), rtol=1e-12)
    np.testing.assert_allclose(run(lambda x: cnp.einsum(x, [0, 0]), a[0, :, :3]), np.trace(a[0, :, :3]), rtol=1e-12)
    raises_here(ValueError, lambda x: cnp.einsum(x, ["i"]), np.ones(2), match="sublist label")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.complex64])
@pytest.mark.parametrize("shape,offset,axis1,axis2", [
    ((4, 4), 0, 0, 1), ((3, 5), 1, 0, 1), ((3, 5), -2, 0, 1), ((3, 5), 7, 0, 1), ((2, 3, 4), 0, 1, 2),
    ((2, 3, 4), 1, 2, 0), ((2, 3, 4), 0, -1, -3), ((0, 3), 0, 0, 1), ((1, 1), 0, 0, 1),
])
def test_trace_matches_numpy(shape, offset, axis1, axis2, dtype):
    x = sample(shape, dtype)
    got = run(lambda a: cnp.trace(a, offset, axis1, axis2), x)
    expected = np.trace(x, offset, axis1, axis2)
    assert got.dtype == expected.dtype      # numpy and jnp (x64) agree: sum's integer promotion
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("fn", [cnp.matmul, cnp.dot, lambda a, b, **kw: cnp.einsum("ij,jk->ik", a, b, **kw),
                                lambda a, b, **kw: cnp.tensordot(a, b, 1, **kw)])
@pytest.mark.parametrize("dtype,preferred", [(np.float16, np.float32), (BF16, np.float32), (np.int8, np.int32),
                                             (np.int8, np.float32), (np.float32, np.float64), (np.bool_, np.int32)])
def test_preferred_element_type_sets_the_result_dtype(fn, dtype, preferred):
    a, b = sample((3, 40), dtype), sample((40, 2), dtype, seed=1)
    got = run(lambda x, y: fn(x, y, preferred_element_type=preferred), a, b)
    assert got.dtype == np.dtype(preferred)
    # int8 products would wrap in int8; the wider result type holds them exactly.
    check(lambda x, y: fn(x, y, preferred_element_type=preferred), np.matmul, a, b, 40, preferred)


def test_mixed_dtypes_promote_as_jax():
    a, b = sample((3, 4), np.float16), sample((4, 2), np.float32)
    assert run(cnp.matmul, a, b).dtype == np.float32
    assert run(cnp.matmul, sample((3, 4), np.int32), sample((4, 2), np.float16)).dtype == np.float16
    assert run(lambda x: cnp.dot(x, 2.0), sample((3,), np.float16)).dtype == np.float16
    assert run(lambda x, y: cnp.einsum("i,i", x, y), sample((3,), np.int8), sample((3,), np.uint8)).dtype == np.int16


@pytest.mark.parametrize("preferred", [None, np.bool_, np.int32, np.float32])
def test_lax_dot_general_of_bools(preferred):
    # jax.lax.dot_general on bools: an or of ands (bool), or the count of true products in the
    # preferred type (dtypes as jax 0.10.2 gives them).
    a, b = sample((3, 70), np.bool_), sample((70, 2), np.bool_, seed=1)
    got = run(lambda x, y: cj.lax.dot_general(x, y, (((1,), (0,)), ((), ())), preferred_element_type=preferred), a, b)
    counts = a.astype(np.int64) @ b.astype(np.int64)
    expected = counts != 0 if preferred in (None, np.bool_) else counts.astype(preferred)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_batched_matmul_against_a_broadcast_matrix_is_one_dot_general():
    graph = str(cj.make_graph(cnp.matmul)(np.ones((8, 5, 3), np.float32), np.ones((3, 4), np.float32)))
    assert graph.count("dot_general") == 1 and "broadcast_in_dim" not in graph and "transpose" not in graph


# ---- bad input ---------------------------------------------------------------------------------

def raises_here(error, fn, *args, match=None):
    """The error is a cdnajit error of `error`'s kind whose message names this test file's line."""
    with pytest.raises(error, match=match) as info:
        run(fn, *args)
    assert isinstance(info.value, cj.CdnajitError)
    assert "test_linalg.py:" in str(info.value), str(info.value)
    return str(info.value)


def test_matmul_shape_mismatch_names_both_shapes_and_dimensions():
    message = raises_here(ValueError, cnp.matmul, np.ones((2, 3, 4)), np.ones((5, 6)))
    assert "(2, 3, 4)" in message and "(5, 6)" in message and "dimension 2" in message and "dimension 0" in message
    message = raises_here(ValueError, cnp.matmul, np.ones((2, 3, 4)), np.ones((3, 4, 5)))
    assert "(2, 3, 4)" in message and "(3, 4, 5)" in message and "broadcast" in message
    raises_here(ValueError, cnp.matmul, np.ones(3), np.float32(2), match="at least 1-d")


@pytest.mark.parametrize("fn,a_shape,b_shape", [
    (cnp.dot, (2, 3), (4, 5)), (cnp.inner, (2, 3), (3, 2)), (cnp.vdot, (2, 3), (7,)),
    (lambda a, b: cnp.tensordot(a, b, 1), (2, 3), (4, 3)),
    (lambda a, b: cnp.tensordot(a, b, ([0], [0])), (2, 3), (3, 2)),
])
def test_contraction_mismatches_name_both_shapes(fn, a_shape, b_shape):
    message = raises_here(ValueError, fn, np.ones(a_shape), np.ones(b_shape))
    assert str(a_shape) in message and str(b_shape) in message


@pytest.mark.parametrize("subscripts,shapes,match", [
    ("ij,jk", [(2, 3), (4, 5)], "subscript 'j' has sizes"), ("ij", [(2, 3, 4)], "name 2 dimensions"),
    ("ij,jk", [(2, 3)], "2 operands"), ("ij->k", [(2, 3)], "never appears"), ("ij->ii", [(2, 3)], "repeated"),
    ("ii", [(2, 3)], "subscript 'i' has sizes"), ("ii", [(1, 3)], "repeated subscript 'i'"),
    ("i1", [(2, 3)], "invalid"), ("...i->i", [(2, 3)], "'...'"),
])
def test_einsum_bad_subscripts(subscripts, shapes, match):
    raises_here(ValueError, lambda *xs: cnp.einsum(subscripts, *xs), *[np.ones(s) for s in shapes], match=match)


def test_trace_and_tensordot_bad_arguments():
    raises_here(ValueError, cnp.trace, np.ones(3), match="at least 2-d")
    raises_here(ValueError, lambda a: cnp.trace(a, axis1=1, axis2=-1), np.ones((2, 2)), match="same axis")
    raises_here(ValueError, lambda a, b: cnp.tensordot(a, b, 3), np.ones((2, 2)), np.ones((2, 2)), match="axes=3")
    raises_here(TypeError, lambda a, b: cnp.tensordot(a, b, "x"), np.ones((2, 2)), np.ones((2, 2)), match="axes")


# ---- compiled kernels: contractions through libs/blas, against numpy ------------------------------

DTYPE_NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "float16", "bfloat16", "float32",
               "float64", "complex64", "complex128"]
# The result dtype of jnp.matmul(a, b) (jax 0.10.2, jax_enable_x64=True), row: a's dtype, column:
# b's dtype in DTYPE_NAMES order; einsum, dot, tensordot, vdot, outer and lax.dot_general on
# promoted operands agree with it.
JAX_MATMUL_DTYPE = {
    "bool": "bool int8 int16 int32 int64 uint8 uint32 float16 bfloat16 float32 float64 complex64 complex128",
    "int8": "int8 int8 int16 int32 int64 int16 int64 float16 bfloat16 float32 float64 complex64 complex128",
    "int16": "int16 int16 int16 int32 int64 int16 int64 float16 bfloat16 float32 float64 complex64 complex128",
    "int32": "int32 int32 int32 int32 int64 int32 int64 float16 bfloat16 float32 float64 complex64 complex128",
    "int64": "int64 int64 int64 int64 int64 int64 int64 float16 bfloat16 float32 float64 complex64 complex128",
    "uint8": "uint8 int16 int16 int32 int64 uint8 uint32 float16 bfloat16 float32 float64 complex64 complex128",
    "uint32": "uint32 int64 int64 int64 int64 uint32 uint32 float16 bfloat16 float32 float64 complex64 complex128",
    "float16": "float16 float16 float16 float16 float16 float16 float16 float16 float32 float32 float64 complex64 "
               "complex128",
    "bfloat16": "bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 float32 bfloat16 float32 float64 "
                "complex64 complex128",
    "float32": "float32 float32 float32 float32 float32 float32 float32 float32 float32 float32 float64 complex64 "
               "complex128",
    "float64": "float64 float64 float64 float64 float64 float64 float64 float64 float64 float64 float64 complex128 "
               "complex128",
    "complex64": "complex64 complex64 complex64 complex64 complex64 complex64 complex64 complex64 complex64 complex64 "
                 "complex128 complex64 complex128",
    "complex128": " ".join(["complex128"] * 13),
}
DTYPE_PAIRS = [(a, b) for a in DTYPE_NAMES for b in DTYPE_NAMES]
# Pairs the default run covers: each dtype with itself plus the mixes that convert a bool or an
# integer operand, or widen a half-precision one.
QUICK_PAIRS = [("int32", "bool"), ("bool", "bool"), ("int8", "uint8"), ("uint32", "int8"), ("float16", "bfloat16"),
               ("int64", "float16"), ("float32", "complex128"), ("bfloat16", "bfloat16"), ("uint8", "uint8")]


def jax_dtype(a, b):
    dtype = JAX_MATMUL_DTYPE[a].split()[DTYPE_NAMES.index(b)]
    return BF16 if dtype == "bfloat16" else np.dtype(dtype)


def as_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def check_compiled(fn, np_fn, a, b, k, dtype):
    check(fn, np_fn, a, b, k, dtype, backend="compiled")


def test_compiled_matmul_with_batch_dimensions_broadcast_from_different_ranks():
    # a's batch (2,) meets b's (2, 2): a's one batch dimension pairs with b's second.
    a, b = sample((2, 2, 3), np.float32), sample((2, 2, 3, 1), np.float32, seed=1)
    check_compiled(cnp.matmul, np.matmul, a, b, 3, np.float32)


def test_compiled_int_matmul_against_a_gathered_bool_operand():
    x0 = sample((1, 3, 129, 8), np.int32)
    index = np.array([3, 1, 2, 0])

    def program(x, xp):
        square = 1 + x @ xp.swapaxes(x, -1, -2)
        return square @ xp.broadcast_to(x, (4, 3, 3, 129, 8))[index, 2].astype(bool)
    got = cj.jit(lambda x: program(x, cnp))(x0)
    expected = program(x0.astype(np.int64), np).astype(np.int32)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("a_name,b_name", [
    pytest.param(a, b, marks=[] if (a, b) in QUICK_PAIRS else pytest.mark.slow) for a, b in DTYPE_PAIRS])
def test_compiled_matmul_every_dtype_pair(a_name, b_name):
    a, b = sample((2, 3, 65), as_dtype(a_name)), sample((65, 4), as_dtype(b_name), seed=1)
    check_compiled(cnp.matmul, np.matmul, a, b, 65, jax_dtype(a_name, b_name))


BROADCAST_MATMUL_SHAPES = [
    ((2, 2, 3), (2, 2, 3, 1)), ((3, 1, 4, 5), (2, 5, 3)), ((1, 4, 5), (3, 1, 5, 2)), ((2, 1, 3, 1, 4), (5, 1, 4, 2)),
    ((4, 5), (2, 3, 5, 1)), ((1, 1, 2, 3), (1, 3, 1)), ((2, 3, 0, 4), (3, 4, 2)), ((1, 2, 4), (0, 4, 3)),
    ((5,), (2, 1, 5, 3)), ((2, 1, 1, 5), (5,)), ((1, 1), (3, 1, 2)), ((2, 65, 63), (3, 1, 63, 1)),
]


def quick_or_slow(values, quick):
    return [pytest.param(v, marks=[] if v in quick else pytest.mark.slow) for v in values]


@pytest.mark.parametrize("dtype", quick_or_slow(["float32", "int32", "bool", "complex64", "float16"], ["float32"]))
@pytest.mark.parametrize("a_shape,b_shape", BROADCAST_MATMUL_SHAPES)
def test_compiled_matmul_broadcasts_batch_dimensions(a_shape, b_shape, dtype):
    a, b = sample(a_shape, as_dtype(dtype)), sample(b_shape, as_dtype(dtype), seed=1)
    check_compiled(cnp.matmul, np.matmul, a, b, a_shape[-1], as_dtype(dtype))


TILE_SIZES = [1, 63, 65, 129]


@pytest.mark.parametrize("dtype", quick_or_slow(["float32", "int8", "bfloat16", "complex128"], ["float32"]))
@pytest.mark.parametrize("m,n,k", [pytest.param(m, n, k, marks=[] if (m, n, k) in [(65, 63, 129), (1, 129, 65)]
                                                else pytest.mark.slow)
                                   for m in TILE_SIZES for n in TILE_SIZES for k in TILE_SIZES])
def test_compiled_matmul_sizes_crossing_tiles(m, n, k, dtype):
    a, b = sample((m, k), as_dtype(dtype)), sample((k, n), as_dtype(dtype), seed=1)
    check_compiled(cnp.matmul, np.matmul, a, b, k, as_dtype(dtype))


# Operands that reach the GEMM transposed, strided or broadcast: the view is taken in the program.
VIEW_CASES = [
    ("a.T @ b", lambda xp, a, b: xp.swapaxes(a, -1, -2) @ b, (65, 3), (65, 5)),
    ("a @ b.T", lambda xp, a, b: a @ xp.swapaxes(b, -1, -2), (2, 3, 65), (4, 65)),
    ("a.T @ b.T", lambda xp, a, b: a.T @ b.T, (63, 3), (5, 63)),
    ("strided rows and columns", lambda xp, a, b: a[::2, 1::3] @ b[::3], (9, 200), (201, 4)),
    ("reversed", lambda xp, a, b: a[::-1] @ b[:, ::-1], (5, 7), (7, 6)),
    ("broadcast operand", lambda xp, a, b: xp.broadcast_to(a, (3, 4, 65)) @ b, (4, 65), (3, 65, 2)),
    ("column of a batch", lambda xp, a, b: a[:, 1] @ b, (3, 4, 5), (3, 5, 2)),
]


@pytest.mark.parametrize("dtype", quick_or_slow(["float32", "int32", "complex64"], ["float32"]))
@pytest.mark.parametrize("name,program,a_shape,b_shape", VIEW_CASES, ids=[c[0] for c in VIEW_CASES])
def test_compiled_matmul_of_views(name, program, a_shape, b_shape, dtype):
    a, b = sample(a_shape, as_dtype(dtype)), sample(b_shape, as_dtype(dtype), seed=1)
    k = program(np, np.ones(a_shape), np.ones(b_shape)).max()
    check_compiled(lambda x, y: program(cnp, x, y), lambda x, y: program(np, x, y), a, b, int(k), as_dtype(dtype))


# (name, cnp program, numpy program, a's shape, b's shape, contraction length)
OTHER_CONTRACTIONS = [
    ("dot", cnp.dot, np.dot, (3, 65, 4), (2, 4, 63), 4),
    ("dot vector", cnp.dot, np.dot, (65,), (65, 3), 65),
    ("dot scalar", cnp.dot, np.dot, (), (3, 4), 1),
    ("matrix @ vector", cnp.matmul, np.matmul, (2, 63, 129), (129,), 129),
    ("vector @ matrix", cnp.matmul, np.matmul, (129,), (3, 129, 1), 129),
    ("vector @ vector", cnp.matmul, np.matmul, (65,), (65,), 65),
    ("einsum batch", lambda a, b: cnp.einsum("bij,jbk->kbi", a, b), lambda a, b: np.einsum("bij,jbk->kbi", a, b),
     (3, 5, 65), (65, 3, 2), 65),
    ("einsum broadcast", lambda a, b: cnp.einsum("...ij,...jk", a, b), lambda a, b: np.einsum("...ij,...jk", a, b),
     (2, 1, 3, 4), (3, 4, 5), 4),
    ("tensordot", lambda a, b: cnp.tensordot(a, b, ([0, 2], [1, 0])),
     lambda a, b: np.tensordot(a, b, ([0, 2], [1, 0])), (3, 4, 65), (65, 3, 2), 195),
    ("vdot", cnp.vdot, np.vdot, (5, 13), (65,), 65),
    ("inner", cnp.inner, np.inner, (2, 3, 63), (4, 63), 63),
    ("outer", cnp.outer, np.outer, (2, 3), (65,), 1),
    ("lax.dot_general", lambda a, b: cj.lax.dot_general(a, b, (((2,), (0,)), ((1,), (2,)))),
     lambda a, b: np.einsum("ibk,kjb->bij", a, b), (3, 4, 65), (65, 2, 4), 65),
    ("lax.dot_general no batch", lambda a, b: cj.lax.dot_general(a, b, (((0,), (1,)), ((), ()))),
     lambda a, b: np.einsum("ki,jk->ij", a, b), (63, 3), (2, 63), 63),
]


@pytest.mark.parametrize("dtype", quick_or_slow(["float32", "float64", "int16", "uint8", "bool", "bfloat16",
                                                 "complex64"], ["float32", "bool"]))
@pytest.mark.parametrize("name,fn,np_fn,a_shape,b_shape,k", OTHER_CONTRACTIONS, ids=[c[0] for c in OTHER_CONTRACTIONS])
def test_compiled_contractions_match_numpy(name, fn, np_fn, a_shape, b_shape, k, dtype):
    a, b = sample(a_shape, as_dtype(dtype)), sample(b_shape, as_dtype(dtype), seed=1)
    check_compiled(fn, np_fn, a, b, k, as_dtype(dtype))


@pytest.mark.slow
@pytest.mark.parametrize("a_name,b_name", DTYPE_PAIRS)
@pytest.mark.parametrize("name,fn,np_fn,a_shape,b_shape,k", OTHER_CONTRACTIONS[:12:3],
                         ids=[c[0] for c in OTHER_CONTRACTIONS[:12:3]])
def test_compiled_contractions_every_dtype_pair(name, fn, np_fn, a_shape, b_shape, k, a_name, b_name):
    a, b = sample(a_shape, as_dtype(a_name)), sample(b_shape, as_dtype(b_name), seed=1)
    check_compiled(fn, np_fn, a, b, k, jax_dtype(a_name, b_name))
