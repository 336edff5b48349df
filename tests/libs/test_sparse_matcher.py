"""The sparse matcher (libs/sparse/matcher.py) as IR text in and out: the dense CSR idiom
segment_sum(vals * x[cols], rows), as a scatter-add or as prim.segment_reduce, becomes a sort by row,
sparse.coo2csr, sparse.csrmv and a scatter-add of its carries; the interpreted result is the segment sum (to the rounding of a sum of
k products, k the longest row: k eps sum |vals x|, Higham's gamma_k), including rows given in any
order, repeated, negative or past the last segment, and columns clamped as the gather clamps."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
import cdnajit.ops as cops
from cdnajit.ir.interpreter import interpret
from cdnajit.ir.parser import parse
from cdnajit.ir.printer import print_module
from cdnajit.libs.sparse.matcher import RULES
from cdnajit.passes import canonicalize, match_libraries

IDIOM = """
func @spmv(%0: f64[9], %1: i64[9,1], %2: i64[9,1], %3: f64[6]) -> (f64[4]) {
  %4 = gather(%3, %2) : f64[9]
  %5 = mul(%0, %4) : f64[9]
  %6 = constant() {value = dense<0.0>} : f64[]
  %7 = broadcast_in_dim(%6) {shape = [4], broadcast_dimensions = []} : f64[4]
  %8 = scatter(%7, %1, %5) {reduction = "add"} : f64[4]
  return %8
}"""


def matched(text):
    return match_libraries(parse(text), list(RULES))


def test_the_idiom_becomes_csrmv_as_text():
    out = print_module(matched(IDIOM))
    lines = [line.strip() for line in out.splitlines()]
    assert any(line.startswith("%") and "= sort(" in line and "num_keys = 1" in line for line in lines), out
    assert any('routine = "coo2csr"' in line and "rows = 4" in line and line.endswith(": i32[5]") for line in lines), out
    assert any('routine = "csrmv"' in line and "chunk = 1024" in line and
               line.endswith(": (f64[4], f64[2], i32[2])") for line in lines), out
    # Two branches: rows already in order (no sort), else sorted first; each scatter-adds its carries.
    assert any(" = cond(" in line for line in lines), out
    assert sum(" = scatter(" in line and 'reduction = "add"' in line for line in lines) == 2, out
    assert " = gather(" not in out, out


@pytest.mark.parametrize("rows", [[3, 0, 3, -1, 7, 2, 0, 3, 1],     # unsorted (the sorting branch), -1 and 7 dropped
                                  [0, 0, 1, 1, 1, 2, 3, 3, 7]])    # in order: the branch without a sort
def test_the_rewrite_computes_the_segment_sum(rows):
    rng = np.random.default_rng(0)
    vals, x = rng.standard_normal(9), rng.standard_normal(6)
    rows = np.array(rows)[:, None]
    columns = np.array([[0], [5], [9], [-2], [1], [2], [3], [4], [0]])  # 9 and -2 clamped
    module = parse(IDIOM)
    (want,) = interpret(module, vals, rows, columns, x)
    (got,) = interpret(matched(IDIOM), vals, rows, columns, x)
    magnitude = np.zeros(4)
    np.add.at(magnitude, np.clip(rows[:, 0], 0, 3), np.abs(vals * x[np.clip(columns[:, 0], 0, 5)]))
    np.testing.assert_array_less(np.abs(got - want), 3 * np.finfo(float).eps * magnitude + 1e-300)


SEGMENT_REDUCE = """
func @spmv(%0: f64[9], %1: i64[9], %2: i64[9,1], %3: f64[6]) -> (f64[4]) {
  %4 = gather(%3, %2) : f64[9]
  %5 = mul(%0, %4) : f64[9]
  %6 = library_call(%5, %1) {library = "prim", routine = "segment_reduce", solution = "", reducer = "sum", run_length = 4, num_segments = 4} : f64[3,4,1]
  %7 = reduce(%6) {reducer = "sum", axes = [0]} : f64[4,1]
  %8 = reshape(%7) {new_sizes = [4]} : f64[4]
  return %8
}"""


def test_segment_reduce_becomes_csrmv_as_text():
    """prim.segment_reduce of the product (jax.ops.segment_sum's call) is rewritten too: its three runs'
    blocks become csrmv's result and two blocks of zeros."""
    out = print_module(matched(SEGMENT_REDUCE))
    assert 'routine = "csrmv"' in out and 'routine = "coo2csr"' in out and "segment_reduce" not in out, out
    assert any(" = concatenate(" in line and line.endswith(": f64[3,4,1]") for line in out.splitlines()), out
    for reducer in ("max", "min"):
        assert "csrmv" not in print_module(matched(SEGMENT_REDUCE.replace('reducer = "sum"', f'reducer = "{reducer}"',
                                                                          1)))


@pytest.mark.parametrize("rows", [[3, 0, 3, -1, 7, 2, 0, 3, 1], [0, 0, 1, 1, 1, 2, 3, 3, 7]])
def test_the_segment_reduce_rewrite_computes_the_segment_sum(rows):
    rng = np.random.default_rng(2)
    vals, x = rng.standard_normal(9), rng.standard_normal(6)
    rows = np.array(rows)
    columns = np.array([[0], [5], [9], [-2], [1], [2], [3], [4], [0]])  # 9 and -2 clamped
    (want,) = interpret(parse(SEGMENT_REDUCE), vals, rows, columns, x)
    (got,) = interpret(matched(SEGMENT_REDUCE), vals, rows, columns, x)
    magnitude = np.zeros(4)
    np.add.at(magnitude, np.clip(rows, 0, 3), np.abs(vals * x[np.clip(columns[:, 0], 0, 5)]))
    np.testing.assert_array_less(np.abs(got - want), 3 * np.finfo(float).eps * magnitude + 1e-300)


def test_other_scatters_are_left_alone():
    text = IDIOM.replace('reduction = "add"', 'reduction = "max"')
    assert "library_call" not in print_module(matched(text))
    text = IDIOM.replace("dense<0.0>", "dense<1.0>")
    assert "library_call" not in print_module(matched(text))


@pytest.mark.slow
def test_segment_sum_compiles_to_csrmv():
    """The traced idiom, compiled, written as a scatter-add and as cdnajit.ops.segment_sum (prim.segment_reduce):
    its optimized IR names the call and the result is the segment sum."""
    segments = 4101

    def scattered(vals, cols, rows, x):
        return cnp.zeros(segments, vals.dtype).at[rows].add(vals * x[cols])

    def summed(vals, cols, rows, x):
        return cops.segment_sum(vals * x[cols], rows, num_segments=segments)

    rng = np.random.default_rng(1)
    # columns from -40 to 39 for x of 30: read as the gather reads them, a negative one + 30, then clamped
    rows, cols = rng.integers(0, segments, 400).astype(np.int32), rng.integers(-40, 40, 400).astype(np.int32)
    vals, x = rng.standard_normal(400), rng.standard_normal(30)
    read = x[np.clip(np.where(cols < 0, cols + 30, cols), 0, 29)]
    want = np.zeros(segments)
    np.add.at(want, rows, vals * read)
    magnitude = np.zeros(segments)
    np.add.at(magnitude, rows, np.abs(vals * read))
    for f in (scattered, summed):
        compiled = cj.jit(f).lower(vals, cols, rows, x).compile()
        assert 'routine = "csrmv"' in compiled.as_text("optimized") and 'column_map = "wrap_clamp"' in \
            compiled.as_text("optimized")
        np.testing.assert_array_less(np.abs(compiled(vals, cols, rows, x) - want),
                                     np.bincount(rows, minlength=segments) * np.finfo(float).eps * magnitude + 1e-300)
