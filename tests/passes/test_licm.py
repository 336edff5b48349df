"""licm: loop-invariant ops leave their loops (IR text in, text out)."""
import numpy as np

import cdnajit as cj
from cdnajit import lax
from cdnajit.passes.licm import licm

LOOP = """
func @f(%0: f32[8], %1: f32[8]) -> (f32[8]) {
  %2 = constant() {value = dense<0>} : i64[]
  %3, %4 = while(%2, %0) : (i64[], f32[8]) {
    ^(%5: i64[], %6: f32[8]):
      %7 = constant() {value = dense<3>} : i64[]
      %8 = lt(%5, %7) : bool[]
      yield %8
    ^(%9: i64[], %10: f32[8]):
      %11 = constant() {value = dense<2.0>} : f32[]
      %12 = broadcast_in_dim(%11) {shape = [8], broadcast_dimensions = []} : f32[8]
      %13 = mul(%1, %12) : f32[8]
      %14 = sin(%13) : f32[8]
      %15 = add(%10, %14) : f32[8]
      %16 = mul(%10, %12) : f32[8]
      %17 = constant() {value = dense<1>} : i64[]
      %18 = add(%9, %17) : i64[]
      yield %18, %16
  }
  return %4
}
"""

# sin(x1 * 2) runs once before the loop, with its own copy of the broadcast; the broadcast stays
# inside for the loop's own multiply; the constant and the compare stay; the dead add goes.
EXPECTED = """
func @f(%0: f32[8], %1: f32[8]) -> (f32[8]) {
  %2 = constant() {value = dense<0>} : i64[]
  %3, %4 = while(%2, %0) : (i64[], f32[8]) {
    ^(%5: i64[], %6: f32[8]):
      %7 = constant() {value = dense<3>} : i64[]
      %8 = lt(%5, %7) : bool[]
      yield %8
    ^(%9: i64[], %10: f32[8]):
      %11 = constant() {value = dense<2.0>} : f32[]
      %12 = broadcast_in_dim(%11) {shape = [8], broadcast_dimensions = []} : f32[8]
      %13 = mul(%10, %12) : f32[8]
      %14 = constant() {value = dense<1>} : i64[]
      %15 = add(%9, %14) : i64[]
      yield %15, %13
  }
  return %4
}
"""


def test_invariant_ops_leave_and_dead_ones_go():
    assert str(licm(cj.ir.parse(LOOP))) == str(cj.ir.parse(EXPECTED))


def test_an_invariant_op_used_by_the_loop_leaves_with_its_inputs():
    text = LOOP.replace("yield %18, %16", "yield %18, %15")
    moved = str(licm(cj.ir.parse(text)))
    before_loop = moved[:moved.index("while(")]
    assert "sin(" in before_loop and "broadcast_in_dim(" in before_loop and "mul(%1" in before_loop
    assert moved.count("broadcast_in_dim(") == 1    # the loop's own copy was dead: only the outside one


def test_nested_loops_and_branches():
    def program(w, x):
        def inner(j, c):
            return c + lax.cond(j > 1, lambda v: cj.numpy.exp(w) * v, lambda v: v, c) + cj.numpy.tanh(w * 3.0)
        return lax.fori_loop(0, 3, lambda i, c: lax.fori_loop(0, 4, inner, c), x)
    w, x = np.linspace(-1, 1, 6), np.linspace(0, 1, 6)
    module = cj.make_graph(program)(w, x)
    moved = str(licm(module))
    assert moved.index("tanh(") < moved.index("while(")      # out of both loops
    assert moved.index("exp(") > moved.index("cond(")        # a branch's op stays in its branch
    np.testing.assert_allclose(cj.ir.interpret(cj.ir.parse(moved), w, x)[0], cj.ir.interpret(module, w, x)[0])
