"""split_reductions: IR text in, IR text out; then compiled reductions, split, against the reference
interpreter (which runs them unsplit) and numpy, over shapes (prime lengths, 0- and 1-sized axes),
every reducer and dtypes of each kind.

Integer, bool, max and min results are exact (NaN and zero signs included); float sums and
products within the bound of the two summation orders (see `sum_bound`).
"""
import math

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.ir.core import walk
from cdnajit.ir.targets import get_target
from cdnajit.passes import run_pipeline
from cdnajit.passes.fusion import MAX_ROW_ELEMENTS
from cdnajit.passes.split_reductions import MIN_REDUCED_ELEMENTS, plan_split, split_reductions

# Reduces the pass leaves alone: rows short enough to stay whole (and results enough to fill the machine), more rows than
# PARTIAL_ROWS_PER_CU x the CUs / MIN_PARTIALS (304 on gfx942),
# reduced axes apart, no results; and argmax, which is no reduce.
LEFT_ALONE = """
func @f(%0: f32[16384], %1: f32[305,17000], %2: f32[9,2,9000], %3: i64[0,20000], %4: f32[20000,3])
    -> (f32[], f32[305], f32[2], i64[0], i64[3]) {
  %5 = reduce(%0) {reducer = "sum", axes = [0]} : f32[]
  %6 = reduce(%1) {reducer = "max", axes = [1]} : f32[305]
  %7 = reduce(%2) {reducer = "min", axes = [0, 2]} : f32[2]
  %8 = reduce(%3) {reducer = "or", axes = [1]} : i64[0]
  %9 = argmax(%4) {axis = 0, index_dtype = i64} : i64[3]
  return %5, %6, %7, %8, %9
}"""

CASES = [
    ("full_max_of_a_parameter", True, """
func @f(%0: f64[1048576]) -> (f64[]) {
  %1 = reduce(%0) {reducer = "max", axes = [0]} : f64[]
  return %1
}""", """
func @f(%0: f64[1048576]) -> (f64[]) {
  %1 = reshape(%0) {new_sizes = [1024, 1024]} : f64[1024,1024]
  %2 = reduce(%1) {reducer = "max", axes = [1]} : f64[1024]
  %3 = reduce(%2) {reducer = "max", axes = [0]} : f64[]
  return %3
}"""),
    ("elementwise_producers_rebuilt_on_reshaped_leaves", True, """
func @f(%0: f32[4,8192], %1: f32[4,8192]) -> (f32[]) {
  %2 = sub(%0, %1) : f32[4,8192]
  %3 = abs(%2) : f32[4,8192]
  %4 = reduce(%3) {reducer = "max", axes = [0, 1]} : f32[]
  %5 = sqrt(%4) : f32[]
  return %5
}""", """
func @f(%0: f32[4,8192], %1: f32[4,8192]) -> (f32[]) {
  %2 = reshape(%0) {new_sizes = [32, 1024]} : f32[32,1024]
  %3 = reshape(%1) {new_sizes = [32, 1024]} : f32[32,1024]
  %4 = sub(%2, %3) : f32[32,1024]
  %5 = abs(%4) : f32[32,1024]
  %6 = reduce(%5) {reducer = "max", axes = [1]} : f32[32]
  %7 = reduce(%6) {reducer = "max", axes = [0]} : f32[]
  %8 = sqrt(%7) : f32[]
  return %8
}"""),
    ("prime_length_padded_with_the_identity", True, """
func @f(%0: i32[16411]) -> (i32[]) {
  %1 = reduce(%0) {reducer = "prod", axes = [0]} : i32[]
  return %1
}""", """
func @f(%0: i32[16411]) -> (i32[]) {
  %1 = constant() {value = dense<1>} : i32[]
  %2 = pad(%0, %1) {low = [0], high = [5], interior = [0]} : i32[16416]
  %3 = reshape(%2) {new_sizes = [16, 1026]} : i32[16,1026]
  %4 = reduce(%3) {reducer = "prod", axes = [1]} : i32[16]
  %5 = reduce(%4) {reducer = "prod", axes = [0]} : i32[]
  return %5
}"""),
    ("column_sum_padded_and_kept_unit_axis_restored", False, """
func @f(%0: f32[20011,3]) -> (f32[1,3]) {
  %1 = reduce(%0) {reducer = "sum", axes = [0]} : f32[3]
  %2 = reshape(%1) {new_sizes = [1, 3]} : f32[1,3]
  return %2
}""", """
func @f(%0: f32[20011,3]) -> (f32[1,3]) {
  %1 = constant() {value = dense<0.0>} : f32[]
  %2 = pad(%0, %1) {low = [0, 0], high = [9, 0], interior = [0, 0]} : f32[20020,3]
  %3 = reshape(%2) {new_sizes = [308, 65, 3]} : f32[308,65,3]
  %4 = reduce(%3) {reducer = "sum", axes = [1]} : f32[308,3]
  %5 = transpose(%4) {permutation = [1, 0]} : f32[3,308]
  %6 = reduce(%5) {reducer = "sum", axes = [1]} : f32[3]
  %7 = reshape(%6) {new_sizes = [1, 3]} : f32[1,3]
  return %7
}"""),
    ("half_sum_accumulates_in_f32_and_masks_the_padding", False, """
func @f(%0: f16[2,16411]) -> (f16[2]) {
  %1 = constant() {value = dense<0.5>} : f16[]
  %2 = broadcast_in_dim(%1) {shape = [2, 16411], broadcast_dimensions = []} : f16[2,16411]
  %3 = mul(%0, %2) : f16[2,16411]
  %4 = reduce(%3) {reducer = "sum", axes = [1]} : f16[2]
  return %4
}""", """
func @f(%0: f16[2,16411]) -> (f16[2]) {
  %1 = constant() {value = dense<0.5>} : f16[]
  %2 = constant() {value = dense<1.0>} : f16[]
  %3 = pad(%0, %2) {low = [0, 0], high = [0, 5], interior = [0, 0]} : f16[2,16416]
  %4 = reshape(%3) {new_sizes = [2, 16, 1026]} : f16[2,16,1026]
  %5 = broadcast_in_dim(%1) {shape = [2, 16, 1026], broadcast_dimensions = []} : f16[2,16,1026]
  %6 = mul(%4, %5) : f16[2,16,1026]
  %7 = convert(%6) {dtype = f32} : f32[2,16,1026]
  %8 = constant() {value = dense<true>} : bool[]
  %9 = broadcast_in_dim(%8) {shape = [2, 16411], broadcast_dimensions = []} : bool[2,16411]
  %10 = constant() {value = dense<false>} : bool[]
  %11 = pad(%9, %10) {low = [0, 0], high = [0, 5], interior = [0, 0]} : bool[2,16416]
  %12 = reshape(%11) {new_sizes = [2, 16, 1026]} : bool[2,16,1026]
  %13 = constant() {value = dense<0.0>} : f32[]
  %14 = broadcast_in_dim(%13) {shape = [2, 16, 1026], broadcast_dimensions = []} : f32[2,16,1026]
  %15 = select(%12, %7, %14) : f32[2,16,1026]
  %16 = reduce(%15) {reducer = "sum", axes = [2]} : f32[2,16]
  %17 = reduce(%16) {reducer = "sum", axes = [1]} : f32[2]
  %18 = convert(%17) {dtype = f16} : f16[2]
  return %18
}"""),
    ("middle_axes_with_unit_axes", True, """
func @f(%0: bool[2,1,20011,1,3]) -> (bool[2,1,3]) {
  %1 = reduce(%0) {reducer = "and", axes = [2, 3]} : bool[2,1,3]
  return %1
}""", """
func @f(%0: bool[2,1,20011,1,3]) -> (bool[2,1,3]) {
  %1 = reshape(%0) {new_sizes = [2, 20011, 3]} : bool[2,20011,3]
  %2 = constant() {value = dense<true>} : bool[]
  %3 = pad(%1, %2) {low = [0, 0, 0], high = [0, 9, 0], interior = [0, 0, 0]} : bool[2,20020,3]
  %4 = reshape(%3) {new_sizes = [2, 308, 65, 3]} : bool[2,308,65,3]
  %5 = reduce(%4) {reducer = "and", axes = [2]} : bool[2,308,3]
  %6 = transpose(%5) {permutation = [0, 2, 1]} : bool[2,3,308]
  %7 = reduce(%6) {reducer = "and", axes = [2]} : bool[2,3]
  %8 = reshape(%7) {new_sizes = [2, 1, 3]} : bool[2,1,3]
  return %8
}"""),
    ("a_producer_read_elsewhere_stays_a_leaf", False, """
func @f(%0: f32[32768]) -> (f32[], f32[32768]) {
  %1 = abs(%0) : f32[32768]
  %2 = exp(%1) : f32[32768]
  %3 = reduce(%2) {reducer = "sum", axes = [0]} : f32[]
  %4 = reduce(%1) {reducer = "min", axes = [0]} : f32[]
  %5 = add(%4, %3) : f32[]
  return %5, %1
}""", """
func @f(%0: f32[32768]) -> (f32[], f32[32768]) {
  %1 = abs(%0) : f32[32768]
  %2 = reshape(%1) {new_sizes = [32, 1024]} : f32[32,1024]
  %3 = exp(%2) : f32[32,1024]
  %4 = reduce(%3) {reducer = "sum", axes = [1]} : f32[32]
  %5 = reduce(%4) {reducer = "sum", axes = [0]} : f32[]
  %6 = reduce(%2) {reducer = "min", axes = [1]} : f32[32]
  %7 = reduce(%6) {reducer = "min", axes = [0]} : f32[]
  %8 = add(%7, %5) : f32[]
  return %8, %1
}"""),
    # columns shorter than a row kept whole, but few: 16 work-items' loops (a bias gradient) become 98 x 16
    ("few_short_columns", True, """
func @f(%0: f32[6272,16]) -> (f32[16]) {
  %1 = reduce(%0) {reducer = "max", axes = [0]} : f32[16]
  return %1
}""", """
func @f(%0: f32[6272,16]) -> (f32[16]) {
  %1 = reshape(%0) {new_sizes = [98, 64, 16]} : f32[98,64,16]
  %2 = reduce(%1) {reducer = "max", axes = [1]} : f32[98,16]
  %3 = transpose(%2) {permutation = [1, 0]} : f32[16,98]
  %4 = reduce(%3) {reducer = "max", axes = [1]} : f32[16]
  return %4
}"""),
    ("left_alone_short_many_rows_scattered_axes_empty_argmax", False, LEFT_ALONE, LEFT_ALONE),
    ("in_a_while_condition", True, """
func @f(%0: f64[40000], %1: f64[]) -> (f64[40000]) {
  %2 = while(%0) : f64[40000] {
    ^(%3: f64[40000]):
      %4 = abs(%3) : f64[40000]
      %5 = reduce(%4) {reducer = "max", axes = [0]} : f64[]
      %6 = gt(%5, %1) : bool[]
      yield %6
    ^(%7: f64[40000]):
      %8 = constant() {value = dense<0.5>} : f64[]
      %9 = broadcast_in_dim(%8) {shape = [40000], broadcast_dimensions = []} : f64[40000]
      %10 = mul(%7, %9) : f64[40000]
      yield %10
  }
  return %2
}""", """
func @f(%0: f64[40000], %1: f64[]) -> (f64[40000]) {
  %2 = while(%0) : f64[40000] {
    ^(%3: f64[40000]):
      %4 = reshape(%3) {new_sizes = [32, 1250]} : f64[32,1250]
      %5 = abs(%4) : f64[32,1250]
      %6 = reduce(%5) {reducer = "max", axes = [1]} : f64[32]
      %7 = reduce(%6) {reducer = "max", axes = [0]} : f64[]
      %8 = gt(%7, %1) : bool[]
      yield %8
    ^(%9: f64[40000]):
      %10 = constant() {value = dense<0.5>} : f64[]
      %11 = broadcast_in_dim(%10) {shape = [40000], broadcast_dimensions = []} : f64[40000]
      %12 = mul(%9, %11) : f64[40000]
      yield %12
  }
  return %2
}"""),
]


@pytest.mark.parametrize("name, exact, before, after", CASES, ids=[case[0] for case in CASES])
def test_split_reductions_text(name, exact, before, after, check_equivalent):
    module = cj.ir.parse(before)
    result = split_reductions(module)
    assert str(result) == str(cj.ir.parse(after))
    assert str(module) == str(cj.ir.parse(before)), "split_reductions changed its input"
    cj.ir.verify(result)
    if exact:   # integer, bool, max and min results do not depend on the grouping
        check_equivalent(module, result, trials=2)


# A sum over 3 Mi elements, split for targets of 304 and 220 CUs: 4 partials per CU at most, the
# largest divisor of N down to half as many (1216 -> 1024 on gfx942, 880 -> 768 on gfx90a).
SUM_3MI = """
func @f(%0: f32[3145728]) -> (f32[]) {
  %1 = reduce(%0) {reducer = "sum", axes = [0]} : f32[]
  return %1
}"""


@pytest.mark.parametrize("target, partials", [("gfx942", 1024), ("gfx90a", 768)])
def test_the_partials_are_counted_by_the_targets_compute_units(target, partials):
    module = cj.ir.parse(SUM_3MI)
    text = str(run_pipeline(module, pipeline=[("split_reductions", split_reductions)], target=get_target(target)).module)
    assert f"new_sizes = [{partials}, {3145728 // partials}]" in text, text


def test_the_first_reduce_fuses_with_its_producers_and_the_second_with_its_consumers():
    x = np.zeros(1 << 20)
    graph = cj.make_graph(lambda a, b: cnp.sqrt(cnp.max(cnp.abs(a - b))))(x, x)
    first, second = [op for op in run_pipeline(graph).module.body.ops if op.name == "fusion"]
    assert [op.name for op in first.regions[0].ops] == ["reshape", "reshape", "sub", "abs", "reduce"]
    assert [op.name for op in second.regions[0].ops] == ["reduce", "sqrt"]
    assert second.operands == first.results


def test_rows_that_fusion_keeps_on_chip_stay_whole():
    assert MIN_REDUCED_ELEMENTS == MAX_ROW_ELEMENTS + 1


def test_a_bias_gradient_beside_its_elementwise_result():
    """A convolution's bias gradient: the channel sums of an elementwise value the program also returns
    (one fusion of a loop result and a reduce, 16 work-items, unsplit). Split, the product is a leaf of
    the first reduce. Float sums: within the bound of the two summation orders (sum_bound)."""
    rng = np.random.default_rng(5)
    g, mask = rng.standard_normal((32, 14, 14, 16)).astype(np.float32), rng.random((32, 14, 14, 16)) < 0.5
    f = lambda g, mask: (g * mask, cnp.sum(g * mask, axis=(0, 1, 2)))
    graph = cj.make_graph(f)(g, mask)
    reduces = [op for op in walk(run_pipeline(graph).module.body) if op.name == "reduce"]
    assert len(reduces) == 2
    product, total = (np.asarray(r) for r in cj.jit(f)(g, mask))
    _, expected = cj.ir.interpret(graph, g, mask)
    np.testing.assert_array_equal(product, g * mask)
    n = 32 * 14 * 14
    assert (np.abs(total - expected) <= sum_bound(g * mask, (0, 1, 2), 64 + 98, n, np.float32)).all()


# ---- compiled, against the interpreter and numpy ---------------------------------------------------

RNG = np.random.default_rng(11)

# (shape, reduced axes)
SHAPES = [((16411,), (0,)),             # a prime length: padded
          ((131, 137), (0, 1)),         # two axes, 17947 elements
          ((3, 17000), (1,)),           # a few rows
          ((20011, 3), (0,)),           # columns of a prime length
          ((2, 16411, 3), (1,)),        # a middle axis
          ((1, 20011, 1), (1,)),        # 1-sized axes around it
          ((20000, 1), (0,)),
          ((0, 20000), (1,)),           # no results: left alone
          ((20000, 0), (0,))]           # nothing reduced: the identity, left alone

BF16 = np.dtype(ml_dtypes.bfloat16)
# (reducer, dtype): every reducer, each kind of dtype
REDUCERS = [("sum", np.float32), ("sum", np.float64), ("sum", np.float16), ("sum", BF16), ("sum", np.int32),
            ("sum", np.int8), ("sum", np.uint64), ("prod", np.float64), ("prod", np.int32), ("prod", np.uint8),
            ("max", np.float32), ("max", np.float16), ("max", np.int64), ("max", np.bool_),
            ("min", np.float64), ("min", BF16), ("min", np.uint16), ("min", np.bool_),
            ("and", np.bool_), ("and", np.int32), ("or", np.bool_), ("or", np.uint8)]
LAX = {"sum": lax.reduce_sum, "prod": lax.reduce_prod, "max": lax.reduce_max, "min": lax.reduce_min,
       "and": lax.reduce_and, "or": lax.reduce_or}
NUMPY = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
         "or": np.bitwise_or}


def argument(shape, reducer, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":   # mostly the absorbing value's opposite, so that the result depends on every element
        return RNG.random(shape) < (0.9999 if reducer in ("and", "min") else 0.0001)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = RNG.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)   # sums wrap
        return values | 1 if reducer == "prod" else values   # odd factors: the product wraps but is never 0
    if reducer == "prod":   # near 1: no overflow
        return (1 + RNG.standard_normal(shape) * 1e-3).astype(dtype)
    values = RNG.standard_normal(shape) * 3
    if reducer in ("max", "min"):   # NaN, infinities and zeros of both signs
        values = np.where(RNG.random(shape) < 1e-4, RNG.choice([0.0, -0.0, np.inf, -np.inf, np.nan], shape), values)
    return values.astype(dtype)


def assert_exact(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)
    if expected.dtype.kind == "f" or expected.dtype == BF16:
        np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected))


def reduction_depth(graph) -> int:
    """Roundings a term goes through in the compiled sum at most: a chunk's, then the partials'.
    Checks that the compiled program reduces in two steps exactly where the pass splits."""
    (op,) = [op for op in graph.body.ops if op.name == "reduce"]
    split = plan_split(op)
    compiled = [inner for inner in walk(run_pipeline(graph).module.body) if inner.name == "reduce"]
    assert len(compiled) == (2 if split else 1)
    n = math.prod(op.operands[0].type.shape[a] for a in op.attrs["axes"])
    return split.chunk + split.partials if split else n


def sum_bound(operand, axes, compiled_depth, reference_depth, dtype):
    """|compiled - reference| for float sums: each rounds every term at most `depth` times by at
    most u of the running sum's magnitude, itself at most sum |x|. f16 and bf16 accumulate in f32
    (its u) and round once, so their roundings of sums that close may differ by one ulp."""
    magnitude = np.abs(operand.astype(np.float64)).sum(axis=axes)
    accumulator = np.float32 if dtype in (np.float16, BF16) else dtype
    bound = (compiled_depth + reference_depth) * np.finfo(accumulator).eps / 2 * magnitude
    return bound if accumulator == dtype else bound + 2 * magnitude * np.finfo(dtype).eps


def check_reduction(reducer, dtype, shape, axes, with_producer):
    x = argument(shape, reducer, dtype)
    if with_producer:   # max(x, y) fuses into the first reduce: leaves padded with 1 and the padding masked
        y = argument(shape, reducer, dtype)
        f, args, operand = lambda a, b: LAX[reducer](lax.max(a, b), axes), (x, y), np.maximum(x, y)
    else:               # the operand itself, padded with the identity
        f, args, operand = lambda a: LAX[reducer](a, axes), (x,), x
    graph = cj.make_graph(f)(*args)
    (expected,) = cj.ir.interpret(graph, *args)
    actual = np.asarray(cj.jit(f)(*args))
    depth = reduction_depth(graph)
    with np.errstate(all="ignore"):
        wide = operand.astype(np.float32) if np.dtype(dtype) in (np.float16, BF16) else operand
        numpy_result = NUMPY[reducer].reduce(wide, axis=axes).astype(dtype) if reducer not in ("and", "or") or \
            np.dtype(dtype) != np.bool_ else NUMPY[reducer].reduce(operand, axis=axes)
    if reducer in ("sum", "prod") and (np.dtype(dtype).kind == "f" or np.dtype(dtype) == BF16):
        n = math.prod(shape[a] for a in axes)
        if reducer == "sum":   # numpy's pairwise sum: 8 accumulators over blocks of 128, then halves
            reference = sum_bound(operand, axes, depth, 26 + math.log2(max(n, 1)), dtype)
            along_columns = sum_bound(operand, axes, depth, n, dtype)   # numpy adds row after row there
        else:   # a product's roundings are relative, in any order: about 2 n u of the result
            reference = along_columns = 2 * n * np.finfo(dtype).eps * np.abs(expected.astype(np.float64))
        difference = lambda a, b: np.abs(a.astype(np.float64) - b.astype(np.float64))
        assert (difference(actual, expected) <= reference).all()
        assert (difference(actual, numpy_result) <= along_columns).all()
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
    else:
        assert_exact(actual, expected)
        np.testing.assert_array_equal(actual, numpy_result)   # numpy settles zero signs otherwise


FAST = [(reducer, dtype, *SHAPES[i % len(SHAPES)], i % 2 == 0) for i, (reducer, dtype) in enumerate(REDUCERS)]
SLOW = [(reducer, dtype, shape, axes, with_producer) for reducer, dtype in REDUCERS for shape, axes in SHAPES
        for with_producer in (False, True) if (reducer, dtype, shape, axes, with_producer) not in FAST]


def case_id(case):
    reducer, dtype, shape, axes, with_producer = case
    return f"{reducer}-{np.dtype(dtype).name}-{'x'.join(map(str, shape))}-{''.join(map(str, axes))}" + (
        "-producer" if with_producer else "")


@pytest.mark.parametrize("reducer, dtype, shape, axes, with_producer", FAST, ids=map(case_id, FAST))
def test_split_reduction_matches_the_interpreter_and_numpy(reducer, dtype, shape, axes, with_producer):
    check_reduction(reducer, dtype, shape, axes, with_producer)


@pytest.mark.slow
@pytest.mark.parametrize("reducer, dtype, shape, axes, with_producer", SLOW, ids=map(case_id, SLOW))
def test_split_reduction_matches_the_interpreter_and_numpy_everywhere(reducer, dtype, shape, axes, with_producer):
    check_reduction(reducer, dtype, shape, axes, with_producer)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16])
@pytest.mark.parametrize("reducer", ["max", "min"])
@pytest.mark.parametrize("where", [0, 9000, 16410])   # the first chunk, a middle one, the last (beside the padding)
def test_max_and_min_propagate_nan_and_settle_zero_signs_as_unsplit(reducer, dtype, where):
    sign = -1.0 if reducer == "max" else 1.0   # every element on the far side of zero from the result
    x = (sign * (np.abs(RNG.standard_normal(16411)) + 1)).astype(dtype)
    x[RNG.choice(16411, 50, replace=False)] = sign * 0.0
    with_nan, with_other_zero = x.copy(), x.copy()
    with_nan[where] = np.nan
    with_other_zero[where] = -sign * 0.0   # +0 for max, -0 for min: it wins over the 50 others
    elementwise = {"max": lax.max, "min": lax.min}[reducer]
    f = lambda a, b: LAX[reducer](a, (0,))
    g = lambda a, b: LAX[reducer](elementwise(a, b), (0,))   # a producer: leaves padded, padding masked
    identity = np.full(16411, sign * np.inf, dtype)   # b: elementwise(a, b) is a, bit for bit
    for array, expected in [(x, sign * 0.0), (with_nan, np.nan), (with_other_zero, -sign * 0.0)]:
        for fn in (f, g):
            (reference,) = cj.ir.interpret(cj.make_graph(fn)(array, identity), array, identity)
            actual = np.asarray(cj.jit(fn)(array, identity))
            assert_exact(actual, reference)
            assert_exact(actual, np.asarray(expected, dtype))


def test_a_sum_of_negative_zeros_is_positive_zero_as_unsplit():
    x = np.full(20011, -0.0)
    f = lambda a: lax.reduce_sum(a, (0,))
    (reference,) = cj.ir.interpret(cj.make_graph(f)(x), x)
    assert_exact(np.asarray(cj.jit(f)(x)), reference)
    assert_exact(reference, np.asarray(0.0))
