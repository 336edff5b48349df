"""in_place: IR text in, IR text out (which updates write into their operand, where copies go);
compiled programs with in-place updates against the interpreter, arguments left unchanged; and
loop programs whose one-element updates touch one element."""
import threading

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.numpy as cnp
from cdnajit.passes.in_place import in_place
from cdnajit.runtime.executable import Executable

# (name, input text, expected text after in_place)
CASES = [
    ("argument_stays_a_copy", """
func @f(%0: f32[8], %1: f32[2], %2: i32[]) -> (f32[8]) {
  %3 = dynamic_update_slice(%0, %1, %2) : f32[8]
  return %3
}""", """
func @f(%0: f32[8], %1: f32[2], %2: i32[]) -> (f32[8]) {
  %3 = dynamic_update_slice(%0, %1, %2) : f32[8]
  return %3
}
"""),
    ("computed_operand_read_by_nothing_later", """
func @f(%0: f32[8], %1: f32[2], %2: i32[]) -> (f32[8]) {
  %3 = neg(%0) : f32[8]
  %4 = dynamic_update_slice(%3, %1, %2) : f32[8]
  %5 = dynamic_update_slice(%4, %1, %2) : f32[8]
  return %5
}""", """
func @f(%0: f32[8], %1: f32[2], %2: i32[]) -> (f32[8]) {
  %3 = neg(%0) : f32[8]
  %4 = dynamic_update_slice_in_place(%3, %1, %2) : f32[8]
  %5 = dynamic_update_slice_in_place(%4, %1, %2) : f32[8]
  return %5
}
"""),
    ("operand_read_later_or_returned", """
func @f(%0: f32[8], %1: f32[2], %2: i32[]) -> (f32[8], f32[8], f32[8]) {
  %3 = neg(%0) : f32[8]
  %4 = dynamic_update_slice(%3, %1, %2) : f32[8]
  %5 = add(%3, %4) : f32[8]
  %6 = neg(%0) : f32[8]
  %7 = dynamic_update_slice(%6, %1, %2) : f32[8]
  return %5, %6, %7
}""", """
func @f(%0: f32[8], %1: f32[2], %2: i32[]) -> (f32[8], f32[8], f32[8]) {
  %3 = neg(%0) : f32[8]
  %4 = dynamic_update_slice(%3, %1, %2) : f32[8]
  %5 = add(%3, %4) : f32[8]
  %6 = neg(%0) : f32[8]
  %7 = dynamic_update_slice(%6, %1, %2) : f32[8]
  return %5, %6, %7
}
"""),
    ("a_view_read_later_keeps_the_copy", """
func @f(%0: f32[8], %1: f32[2], %2: i32[]) -> (f32[8], f32[2,4]) {
  %3 = neg(%0) : f32[8]
  %4 = reshape(%3) {new_sizes = [2, 4]} : f32[2,4]
  %5 = dynamic_update_slice(%3, %1, %2) : f32[8]
  return %5, %4
}""", """
func @f(%0: f32[8], %1: f32[2], %2: i32[]) -> (f32[8], f32[2,4]) {
  %3 = neg(%0) : f32[8]
  %4 = reshape(%3) {new_sizes = [2, 4]} : f32[2,4]
  %5 = dynamic_update_slice(%3, %1, %2) : f32[8]
  return %5, %4
}
"""),
    ("the_update_reads_the_operand_buffer", """
func @f(%0: f32[4], %1: i32[]) -> (f32[4]) {
  %2 = neg(%0) : f32[4]
  %3 = reshape(%2) {new_sizes = [4]} : f32[4]
  %4 = dynamic_update_slice(%2, %3, %1) : f32[4]
  return %4
}""", """
func @f(%0: f32[4], %1: i32[]) -> (f32[4]) {
  %2 = neg(%0) : f32[4]
  %3 = reshape(%2) {new_sizes = [4]} : f32[4]
  %4 = dynamic_update_slice(%2, %3, %1) : f32[4]
  return %4
}
"""),
    ("loop_over_an_argument_copies_it_once", """
func @f(%0: i64[], %1: f32[8], %2: f32[1]) -> (f32[8]) {
  %3, %4 = while(%0, %1) : (i64[], f32[8]) {
    ^(%5: i64[], %6: f32[8]):
      %7 = constant() {value = dense<8>} : i64[]
      %8 = lt(%5, %7) : bool[]
      yield %8
    ^(%9: i64[], %10: f32[8]):
      %11 = dynamic_update_slice(%10, %2, %9) : f32[8]
      %12 = constant() {value = dense<1>} : i64[]
      %13 = add(%9, %12) : i64[]
      yield %13, %11
  }
  return %4
}""", """
func @f(%0: i64[], %1: f32[8], %2: f32[1]) -> (f32[8]) {
  %3 = copy(%1) : f32[8]
  %4, %5 = while(%0, %3) : (i64[], f32[8]) {
    ^(%6: i64[], %7: f32[8]):
      %8 = constant() {value = dense<8>} : i64[]
      %9 = lt(%6, %8) : bool[]
      yield %9
    ^(%10: i64[], %11: f32[8]):
      %12 = dynamic_update_slice_in_place(%11, %2, %10) : f32[8]
      %13 = constant() {value = dense<1>} : i64[]
      %14 = add(%10, %13) : i64[]
      yield %14, %12
  }
  return %5
}
"""),
    ("loop_over_a_dead_computed_value_needs_no_copy", """
func @f(%0: i64[], %1: f32[8], %2: f32[1]) -> (f32[8]) {
  %3 = neg(%1) : f32[8]
  %4, %5 = while(%0, %3) : (i64[], f32[8]) {
    ^(%6: i64[], %7: f32[8]):
      %8 = constant() {value = dense<8>} : i64[]
      %9 = lt(%6, %8) : bool[]
      yield %9
    ^(%10: i64[], %11: f32[8]):
      %12 = dynamic_update_slice(%11, %2, %10) : f32[8]
      %13 = constant() {value = dense<1>} : i64[]
      %14 = add(%10, %13) : i64[]
      yield %14, %12
  }
  return %5
}""", """
func @f(%0: i64[], %1: f32[8], %2: f32[1]) -> (f32[8]) {
  %3 = neg(%1) : f32[8]
  %4, %5 = while(%0, %3) : (i64[], f32[8]) {
    ^(%6: i64[], %7: f32[8]):
      %8 = constant() {value = dense<8>} : i64[]
      %9 = lt(%6, %8) : bool[]
      yield %9
    ^(%10: i64[], %11: f32[8]):
      %12 = dynamic_update_slice_in_place(%11, %2, %10) : f32[8]
      %13 = constant() {value = dense<1>} : i64[]
      %14 = add(%10, %13) : i64[]
      yield %14, %12
  }
  return %5
}
"""),
    ("loop_whose_initial_value_is_read_after_it_or_twice", """
func @f(%0: i64[], %1: f32[8], %2: f32[1]) -> (f32[8], f32[8], f32[8]) {
  %3 = neg(%1) : f32[8]
  %4, %5, %6 = while(%0, %3, %3) : (i64[], f32[8], f32[8]) {
    ^(%7: i64[], %8: f32[8], %9: f32[8]):
      %10 = constant() {value = dense<8>} : i64[]
      %11 = lt(%7, %10) : bool[]
      yield %11
    ^(%12: i64[], %13: f32[8], %14: f32[8]):
      %15 = dynamic_update_slice(%13, %2, %12) : f32[8]
      %16 = constant() {value = dense<1>} : i64[]
      %17 = add(%12, %16) : i64[]
      yield %17, %15, %14
  }
  return %5, %6, %3
}""", """
func @f(%0: i64[], %1: f32[8], %2: f32[1]) -> (f32[8], f32[8], f32[8]) {
  %3 = neg(%1) : f32[8]
  %4 = copy(%3) : f32[8]
  %5, %6, %7 = while(%0, %4, %3) : (i64[], f32[8], f32[8]) {
    ^(%8: i64[], %9: f32[8], %10: f32[8]):
      %11 = constant() {value = dense<8>} : i64[]
      %12 = lt(%8, %11) : bool[]
      yield %12
    ^(%13: i64[], %14: f32[8], %15: f32[8]):
      %16 = dynamic_update_slice_in_place(%14, %2, %13) : f32[8]
      %17 = constant() {value = dense<1>} : i64[]
      %18 = add(%13, %17) : i64[]
      yield %18, %16, %15
  }
  return %6, %7, %3
}
"""),
    ("a_carry_yielded_in_another_place_is_not_owned", """
func @f(%0: i64[], %1: f32[8], %2: f32[8], %3: f32[1]) -> (f32[8]) {
  %4, %5, %6 = while(%0, %1, %2) : (i64[], f32[8], f32[8]) {
    ^(%7: i64[], %8: f32[8], %9: f32[8]):
      %10 = constant() {value = dense<8>} : i64[]
      %11 = lt(%7, %10) : bool[]
      yield %11
    ^(%12: i64[], %13: f32[8], %14: f32[8]):
      %15 = dynamic_update_slice(%13, %3, %12) : f32[8]
      %16 = constant() {value = dense<1>} : i64[]
      %17 = add(%12, %16) : i64[]
      yield %17, %14, %15
  }
  return %5
}""", """
func @f(%0: i64[], %1: f32[8], %2: f32[8], %3: f32[1]) -> (f32[8]) {
  %4, %5, %6 = while(%0, %1, %2) : (i64[], f32[8], f32[8]) {
    ^(%7: i64[], %8: f32[8], %9: f32[8]):
      %10 = constant() {value = dense<8>} : i64[]
      %11 = lt(%7, %10) : bool[]
      yield %11
    ^(%12: i64[], %13: f32[8], %14: f32[8]):
      %15 = dynamic_update_slice(%13, %3, %12) : f32[8]
      %16 = constant() {value = dense<1>} : i64[]
      %17 = add(%12, %16) : i64[]
      yield %17, %14, %15
  }
  return %5
}
"""),
    ("nested_loops_copy_only_at_the_top", """
func @f(%0: i64[], %1: f32[8], %2: f32[1], %24: i32[1,1]) -> (f32[8]) {
  %3, %4 = while(%0, %1) : (i64[], f32[8]) {
    ^(%5: i64[], %6: f32[8]):
      %7 = constant() {value = dense<4>} : i64[]
      %8 = lt(%5, %7) : bool[]
      yield %8
    ^(%9: i64[], %10: f32[8]):
      %11, %12 = while(%0, %10) : (i64[], f32[8]) {
        ^(%13: i64[], %14: f32[8]):
          %15 = constant() {value = dense<8>} : i64[]
          %16 = lt(%13, %15) : bool[]
          yield %16
        ^(%17: i64[], %18: f32[8]):
          %19 = scatter(%18, %24, %2) {reduction = "add"} : f32[8]
          %20 = constant() {value = dense<1>} : i64[]
          %21 = add(%17, %20) : i64[]
          yield %21, %19
      }
      %22 = constant() {value = dense<1>} : i64[]
      %23 = add(%9, %22) : i64[]
      yield %23, %12
  }
  return %4
}""", """
func @f(%0: i64[], %1: f32[8], %2: f32[1], %3: i32[1,1]) -> (f32[8]) {
  %4 = copy(%1) : f32[8]
  %5, %6 = while(%0, %4) : (i64[], f32[8]) {
    ^(%7: i64[], %8: f32[8]):
      %9 = constant() {value = dense<4>} : i64[]
      %10 = lt(%7, %9) : bool[]
      yield %10
    ^(%11: i64[], %12: f32[8]):
      %13, %14 = while(%0, %12) : (i64[], f32[8]) {
        ^(%15: i64[], %16: f32[8]):
          %17 = constant() {value = dense<8>} : i64[]
          %18 = lt(%15, %17) : bool[]
          yield %18
        ^(%19: i64[], %20: f32[8]):
          %21 = scatter_in_place(%20, %3, %2) {reduction = "add"} : f32[8]
          %22 = constant() {value = dense<1>} : i64[]
          %23 = add(%19, %22) : i64[]
          yield %23, %21
      }
      %24 = constant() {value = dense<1>} : i64[]
      %25 = add(%11, %24) : i64[]
      yield %25, %14
  }
  return %6
}
"""),
    ("a_captured_read_inside_a_later_loop", """
func @f(%0: i64[], %1: f32[8], %2: f32[1]) -> (f32[8], i64[]) {
  %3 = neg(%1) : f32[8]
  %4 = dynamic_update_slice(%3, %2, %0) : f32[8]
  %5 = while(%0) : (i64[]) {
    ^(%6: i64[]):
      %7 = reduce(%3) {reducer = "max", axes = [0]} : f32[]
      %8 = convert(%7) {dtype = i64} : i64[]
      %9 = lt(%6, %8) : bool[]
      yield %9
    ^(%10: i64[]):
      %11 = constant() {value = dense<1>} : i64[]
      %12 = add(%10, %11) : i64[]
      yield %12
  }
  return %4, %5
}""", """
func @f(%0: i64[], %1: f32[8], %2: f32[1]) -> (f32[8], i64[]) {
  %3 = neg(%1) : f32[8]
  %4 = dynamic_update_slice(%3, %2, %0) : f32[8]
  %5 = while(%0) : i64[] {
    ^(%6: i64[]):
      %7 = reduce(%3) {reducer = "max", axes = [0]} : f32[]
      %8 = convert(%7) {dtype = i64} : i64[]
      %9 = lt(%6, %8) : bool[]
      yield %9
    ^(%10: i64[]):
      %11 = constant() {value = dense<1>} : i64[]
      %12 = add(%10, %11) : i64[]
      yield %12
  }
  return %4, %5
}
"""),
    ("branches_own_only_what_they_make", """
func @f(%0: i32[], %1: f32[8], %2: f32[2], %3: i32[]) -> (f32[8]) {
  %4 = cond(%0, %1) : (f32[8]) {
    ^(%5: f32[8]):
      %6 = dynamic_update_slice(%5, %2, %3) : f32[8]
      yield %6
    ^(%7: f32[8]):
      %8 = neg(%7) : f32[8]
      %9 = dynamic_update_slice(%8, %2, %3) : f32[8]
      yield %9
  }
  %10 = dynamic_update_slice(%4, %2, %3) : f32[8]
  return %10
}""", """
func @f(%0: i32[], %1: f32[8], %2: f32[2], %3: i32[]) -> (f32[8]) {
  %4 = cond(%0, %1) : f32[8] {
    ^(%5: f32[8]):
      %6 = dynamic_update_slice(%5, %2, %3) : f32[8]
      yield %6
    ^(%7: f32[8]):
      %8 = neg(%7) : f32[8]
      %9 = dynamic_update_slice_in_place(%8, %2, %3) : f32[8]
      yield %9
  }
  %10 = dynamic_update_slice(%4, %2, %3) : f32[8]
  return %10
}"""),
    ("hand_written_in_place_update_of_an_argument", """
func @f(%0: f32[8], %1: f32[2], %2: i32[]) -> (f32[8]) {
  %3 = dynamic_update_slice_in_place(%0, %1, %2) : f32[8]
  return %3
}""", """
func @f(%0: f32[8], %1: f32[2], %2: i32[]) -> (f32[8]) {
  %3 = dynamic_update_slice(%0, %1, %2) : f32[8]
  return %3
}
"""),
]


@pytest.mark.parametrize("name, before, after", CASES, ids=[c[0] for c in CASES])
def test_in_place(name, before, after):
    module = in_place(cj.ir.parse(before.strip()))
    cj.ir.verify(module)
    assert str(module).strip() == after.strip()


def random_arguments(module, rng):
    arrays = []
    for param in module.params:
        dtype = param.type.numpy_dtype
        if dtype.kind in "iu":
            arrays.append(rng.integers(0, 3, param.type.shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(param.type.shape).astype(dtype))
    return arrays


@pytest.mark.parametrize("name, before, after", CASES, ids=[c[0] for c in CASES])
def test_compiled_in_place_programs_match_the_interpreter_and_leave_arguments_alone(name, before, after):
    module = cj.ir.parse(before.strip())
    arguments = random_arguments(module, np.random.default_rng(len(name)))
    kept = [a.copy() for a in arguments]
    want = cj.ir.interpret(module, *arguments)
    got = Executable.compile(module)(*arguments)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    for a, k in zip(arguments, kept):
        np.testing.assert_array_equal(a, k)


def gauss_seidel(a, steps):
    """In-place sweeps of the 4-point average over the interior, one element per iteration."""
    rows, columns = a.shape

    def point(j, carry):
        i, a = carry
        return i, a.at[i, j].set(0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]))

    def row(i, a):
        return lax.fori_loop(1, columns - 1, point, (i, a))[1]

    return lax.fori_loop(0, steps, lambda s, a: lax.fori_loop(1, rows - 1, row, a), a)


def gauss_seidel_numpy(a, steps):
    a = a.astype(np.float32).copy()
    for _ in range(steps):
        for i in range(1, a.shape[0] - 1):
            for j in range(1, a.shape[1] - 1):
                a[i, j] = np.float32(0.25) * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
    return a


def test_a_loop_of_one_element_updates_matches_numpy_and_leaves_its_argument():
    a = np.random.default_rng(3).standard_normal((13, 11)).astype(np.float32)
    kept = a.copy()
    got = cj.jit(gauss_seidel, static_argnums=1)(a, 2)
    # The same f32 operations in the same order: exact.
    np.testing.assert_array_equal(got, gauss_seidel_numpy(kept, 2))
    np.testing.assert_array_equal(a, kept)


def test_the_one_element_update_in_a_loop_is_in_place_and_moves_one_element():
    a = np.zeros((64, 64), np.float32)
    compiled = cj.jit(gauss_seidel, static_argnums=1).lower(a, 1).compile()
    text = compiled.as_text("optimized")
    assert text.count("copy(") == 1 and "scatter_in_place" in text and "scatter(" not in text
    (update,) = [k for k in compiled.kernels if "scatter_in_place" in " ".join(k.source_ops)]
    # One f32 element written, its two i64 indices and one f32 update read: no 16 KiB copy.
    assert update.bytes <= 64 and update.grid == (1, 1, 1)


def test_scan_stacking_its_outputs_updates_one_row_per_step():
    def ema(xs):
        def step(c, x):
            c = 0.5 * c + 0.5 * x
            return c, c
        return lax.scan(step, cnp.zeros(xs.shape[1], xs.dtype), xs)

    xs = np.random.default_rng(4).standard_normal((50, 7)).astype(np.float32)
    compiled = cj.jit(ema).lower(xs).compile()
    assert "dynamic_update_slice_in_place" in compiled.as_text("optimized")
    c, ys = compiled(xs)
    want, rows = np.zeros(7, np.float32), []
    for x in xs:
        want = np.float32(0.5) * want + np.float32(0.5) * x
        rows.append(want)
    np.testing.assert_array_equal(ys, np.stack(rows))
    np.testing.assert_array_equal(c, want)


def test_concurrent_calls_each_update_their_own_copy():
    f = cj.jit(gauss_seidel, static_argnums=1)
    inputs = [np.random.default_rng(10 + t).standard_normal((9, 9)).astype(np.float32) for t in range(8)]
    f(inputs[0], 1)   # compiled once, before the threads
    results = [None] * 8

    def call(t):
        results[t] = [f(inputs[t], 1) for _ in range(5)]

    threads = [threading.Thread(target=call, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for t in range(8):
        want = gauss_seidel_numpy(inputs[t], 1)
        for got in results[t]:
            np.testing.assert_array_equal(got, want)
