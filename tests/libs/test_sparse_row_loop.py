"""The loop form of the CSR idiom (libs/sparse/row_loop.py) as IR text in and out: a fori_loop over
rows gathering `width` entries from each row's start, masked at its end, becomes sparse.csrmv_ell
(csr2ell then ellmv in one pass); interpreted, the rewrite equals the loop (to the rounding of a sum of k <= width
products: k eps sum |vals x| per row, Higham's gamma_k) for valid indptr with rows longer than
width (truncated in both) and columns negative or past n (wrapped and clamped as the gather does)."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as clax
import cdnajit.numpy as cnp
from cdnajit.ir.interpreter import interpret
from cdnajit.ir.parser import parse
from cdnajit.ir.printer import print_module
from cdnajit.libs.sparse.matcher import RULES
from cdnajit.passes import match_libraries

# The canonicalized graph of the loop below with m = 7, nnz = 17, n = 6, width = 3.
LOOP = """
func @rows_loop(%0: i32[8], %1: i32[17], %2: f64[17], %3: f64[6]) -> (f64[7]) {
  %4 = iota() {dtype = i64, shape = [3], dimension = 0} : i64[3]
  %5 = constant() {value = dense<0.0>} : f64[]
  %6 = broadcast_in_dim(%5) {shape = [7], broadcast_dimensions = []} : f64[7]
  %7 = constant() {value = dense<0>} : i64[]
  %8 = constant() {value = dense<7>} : i64[]
  %9, %10 = while(%7, %6) : (i64[], f64[7]) {
    ^(%11: i64[], %12: f64[7]):
      %13 = lt(%11, %8) : bool[]
      yield %13
    ^(%14: i64[], %15: f64[7]):
      %16 = lt(%14, %7) : bool[]
      %17 = constant() {value = dense<8>} : i64[]
      %18 = add(%14, %17) : i64[]
      %19 = select(%16, %18, %14) : i64[]
      %20 = dynamic_slice(%0, %19) {slice_sizes = [1]} : i32[1]
      %21 = reshape(%20) {new_sizes = []} : i32[]
      %22 = convert(%21) {dtype = i64} : i64[]
      %23 = broadcast_in_dim(%22) {shape = [3], broadcast_dimensions = []} : i64[3]
      %24 = add(%23, %4) : i64[3]
      %25 = constant() {value = dense<1>} : i64[]
      %26 = add(%14, %25) : i64[]
      %27 = lt(%26, %7) : bool[]
      %28 = add(%26, %17) : i64[]
      %29 = select(%27, %28, %26) : i64[]
      %30 = dynamic_slice(%0, %29) {slice_sizes = [1]} : i32[1]
      %31 = reshape(%30) {new_sizes = []} : i32[]
      %32 = convert(%31) {dtype = i64} : i64[]
      %33 = broadcast_in_dim(%32) {shape = [3], broadcast_dimensions = []} : i64[3]
      %34 = lt(%24, %33) : bool[3]
      %35 = constant() {value = dense<16>} : i64[]
      %36 = broadcast_in_dim(%35) {shape = [3], broadcast_dimensions = []} : i64[3]
      %37 = min(%24, %36) : i64[3]
      %38 = broadcast_in_dim(%7) {shape = [3], broadcast_dimensions = []} : i64[3]
      %39 = lt(%37, %38) : bool[3]
      %40 = constant() {value = dense<17>} : i64[]
      %41 = broadcast_in_dim(%40) {shape = [3], broadcast_dimensions = []} : i64[3]
      %42 = add(%37, %41) : i64[3]
      %43 = select(%39, %42, %37) : i64[3]
      %44 = broadcast_in_dim(%43) {shape = [3, 1], broadcast_dimensions = [0]} : i64[3,1]
      %45 = gather(%2, %44) : f64[3]
      %46 = gather(%1, %44) : i32[3]
      %47 = convert(%46) {dtype = i64} : i64[3]
      %48 = lt(%47, %38) : bool[3]
      %49 = constant() {value = dense<6>} : i64[]
      %50 = broadcast_in_dim(%49) {shape = [3], broadcast_dimensions = []} : i64[3]
      %51 = add(%47, %50) : i64[3]
      %52 = select(%48, %51, %47) : i64[3]
      %53 = broadcast_in_dim(%52) {shape = [3, 1], broadcast_dimensions = [0]} : i64[3,1]
      %54 = gather(%3, %53) : f64[3]
      %55 = mul(%45, %54) : f64[3]
      %56 = broadcast_in_dim(%5) {shape = [3], broadcast_dimensions = []} : f64[3]
      %57 = select(%34, %55, %56) : f64[3]
      %58 = reduce(%57) {reducer = "sum", axes = [0]} : f64[]
      %59 = add(%14, %8) : i64[]
      %60 = select(%16, %59, %14) : i64[]
      %61 = broadcast_in_dim(%60) {shape = [1], broadcast_dimensions = []} : i64[1]
      %62 = scatter(%15, %61, %58) {reduction = "set"} : f64[7]
      yield %26, %62
  }
  return %10
}"""

# The same loop with width = 1, as canonicalize leaves it: the sum of one product is a reshape of the
# one-element vector to a scalar, not a reduce.
LOOP_WIDTH_1 = """
func @rows_loop(%0: i32[8], %1: i32[17], %2: f64[17], %3: f64[6]) -> (f64[7]) {
  %4 = constant() {value = dense<0.0>} : f64[]
  %5 = broadcast_in_dim(%4) {shape = [7], broadcast_dimensions = []} : f64[7]
  %6 = constant() {value = dense<0>} : i64[]
  %7 = constant() {value = dense<7>} : i64[]
  %8, %9 = while(%6, %5) : (i64[], f64[7]) {
    ^(%10: i64[], %11: f64[7]):
      %12 = lt(%10, %7) : bool[]
      yield %12
    ^(%13: i64[], %14: f64[7]):
      %15 = lt(%13, %6) : bool[]
      %16 = constant() {value = dense<8>} : i64[]
      %17 = add(%13, %16) : i64[]
      %18 = select(%15, %17, %13) : i64[]
      %19 = dynamic_slice(%0, %18) {slice_sizes = [1]} : i32[1]
      %20 = reshape(%19) {new_sizes = []} : i32[]
      %21 = iota() {dtype = i64, shape = [1], dimension = 0} : i64[1]
      %22 = convert(%20) {dtype = i64} : i64[]
      %23 = broadcast_in_dim(%22) {shape = [1], broadcast_dimensions = []} : i64[1]
      %24 = add(%23, %21) : i64[1]
      %25 = constant() {value = dense<1>} : i64[]
      %26 = add(%13, %25) : i64[]
      %27 = lt(%26, %6) : bool[]
      %28 = add(%26, %16) : i64[]
      %29 = select(%27, %28, %26) : i64[]
      %30 = dynamic_slice(%0, %29) {slice_sizes = [1]} : i32[1]
      %31 = reshape(%30) {new_sizes = []} : i32[]
      %32 = convert(%31) {dtype = i64} : i64[]
      %33 = broadcast_in_dim(%32) {shape = [1], broadcast_dimensions = []} : i64[1]
      %34 = lt(%24, %33) : bool[1]
      %35 = constant() {value = dense<[0]>} : i64[1]
      %36 = lt(%24, %35) : bool[1]
      %37 = constant() {value = dense<[17]>} : i64[1]
      %38 = add(%24, %37) : i64[1]
      %39 = select(%36, %38, %24) : i64[1]
      %40 = broadcast_in_dim(%39) {shape = [1, 1], broadcast_dimensions = [0]} : i64[1,1]
      %41 = gather(%2, %40) : f64[1]
      %42 = gather(%1, %40) : i32[1]
      %43 = convert(%42) {dtype = i64} : i64[1]
      %44 = lt(%43, %35) : bool[1]
      %45 = constant() {value = dense<[6]>} : i64[1]
      %46 = add(%43, %45) : i64[1]
      %47 = select(%44, %46, %43) : i64[1]
      %48 = broadcast_in_dim(%47) {shape = [1, 1], broadcast_dimensions = [0]} : i64[1,1]
      %49 = gather(%3, %48) : f64[1]
      %50 = mul(%41, %49) : f64[1]
      %51 = constant() {value = dense<[0.0]>} : f64[1]
      %52 = select(%34, %50, %51) : f64[1]
      %53 = reshape(%52) {new_sizes = []} : f64[]
      %54 = add(%13, %7) : i64[]
      %55 = select(%15, %54, %13) : i64[]
      %56 = broadcast_in_dim(%55) {shape = [1], broadcast_dimensions = []} : i64[1]
      %57 = scatter(%14, %56, %53) {reduction = "add"} : f64[7]
      yield %26, %57
  }
  return %9
}"""


def rows_loop(indptr, columns, values, x, width):
    """A variant of the idiom (benchmarks/sparse_workloads.py's csr_rows_loop sets each row and clamps
    the positions itself): here each row is added into zeros and the gathers clamp."""
    def row(i, y):
        at = indptr[i] + cnp.arange(width)
        return y.at[i].add(cnp.sum(cnp.where(at < indptr[i + 1], values[at] * x[columns[at]], 0.0)))

    return clax.fori_loop(0, indptr.shape[0] - 1, row, cnp.zeros(indptr.shape[0] - 1, values.dtype))


def matched(text):
    return match_libraries(parse(text), list(RULES))


@pytest.mark.parametrize("text, width", [(LOOP, 3), (LOOP_WIDTH_1, 1)])
def test_the_loop_becomes_csrmv_ell_as_text(text, width):
    out = print_module(matched(text))
    lines = [line.strip() for line in out.splitlines()]
    assert any('routine = "csrmv_ell"' in line and f"width = {width}" in line and 'column_map = "wrap_clamp"' in line and
               line.startswith("%") and "library_call(%0, %1, %2, %3)" in line and line.endswith(": f64[7]")
               for line in lines), out
    assert "while(" not in out and " = gather(" not in out and "convert(" not in out, out


def inputs(seed):
    rng = np.random.default_rng(seed)
    counts = np.array([0, 5, 1, 3, 2, 4, 2])               # rows of 5 and 4 are truncated to width 3
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    columns = rng.integers(-8, 9, 17).astype(np.int32)      # negative (wrapped) and >= 6 (clamped)
    return indptr, columns, rng.standard_normal(17), rng.standard_normal(6)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("text, width", [(LOOP, 3), (LOOP_WIDTH_1, 1)])
def test_the_rewrite_equals_the_loop(text, width, seed):
    indptr, columns, values, x = inputs(seed)
    (want,) = interpret(parse(text), indptr, columns, values, x)
    (got,) = interpret(matched(text), indptr, columns, values, x)
    wrapped = np.clip(np.where(columns < 0, columns + 6, columns), 0, 5)
    kept = [range(indptr[r], min(indptr[r + 1], indptr[r] + width)) for r in range(7)]
    magnitude = np.array([sum(abs(values[p] * x[wrapped[p]]) for p in row) for row in kept])
    np.testing.assert_array_less(np.abs(got - want), 3 * np.finfo(float).eps * magnitude + 1e-300)
    assert np.any(want != 0)


@pytest.mark.parametrize("loop, change", [
    (LOOP, ("dense<7>} : i64[]", "dense<6>} : i64[]")),       # not every row
    (LOOP, ("lt(%24, %33)", "lt(%24, %23)")),                  # masked at its own start
    (LOOP, ("yield %26, %62", "yield %18, %62")),              # a step other than 1
    (LOOP_WIDTH_1, ("reshape(%52)", "reshape(%50)")),          # width 1, not masked
    (LOOP_WIDTH_1, ("lt(%24, %33)", "lt(%33, %24)"))])         # width 1, masked before the row's end
def test_other_loops_are_left_alone(loop, change):
    text = loop.replace(*change)
    assert text != loop
    assert "library_call" not in print_module(matched(text))


@pytest.mark.slow
def test_the_traced_loop_compiles_to_csrmv_ell():
    """Traced and compiled: the optimized IR names csrmv_ell; the result equals the interpreted loop."""
    indptr, columns, values, x = inputs(4)
    f = lambda *arrays: rows_loop(*arrays, 3)
    compiled = cj.jit(f).lower(indptr, columns, values, x).compile()
    assert 'routine = "csrmv_ell"' in compiled.as_text("optimized")
    want = cj.jit(f, backend="interpret")(indptr, columns, values, x)
    np.testing.assert_allclose(compiled(indptr, columns, values, x), want, rtol=0, atol=1e-14 * np.abs(values).sum())


@pytest.mark.slow
@pytest.mark.parametrize("column_map", ["drop", "clamp", "wrap_clamp"])
def test_csrmv_ell_compiled_equals_its_reference(column_map):
    """The routine alone, compiled against its numpy reference (routines.csrmv_ell) bit for bit (the
    same additions in the same order): rows truncated to width, an indptr entry past nnz, columns
    negative and past n, i64 columns with i32 indptr."""
    from cdnajit.frontend.sparse import calls
    from cdnajit.libs.sparse.routines import csrmv_ell

    indptr, columns, values, x = inputs(5)
    indptr = indptr.copy()
    indptr[-1] = 40                                          # past nnz = 17: read as 17
    for cols in (columns, columns.astype(np.int64)):
        f = lambda p, c, v, x: calls.sparse_call("csrmv_ell", p, c, v, x, width=3, column_map=column_map)[0]
        got = np.asarray(cj.jit(f)(indptr, cols, values, x))
        np.testing.assert_array_equal(got, csrmv_ell(indptr, cols, values, x, width=3, column_map=column_map))
        assert np.any(got != 0)
