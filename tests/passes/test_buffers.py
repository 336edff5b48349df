"""Buffer assignment: live ranges on IR text, reuse along a chain of kernels, and the invariant that
no two values live at the same time share a buffer (also on random fused programs)."""
import itertools

import numpy as np
import pytest

import cdnajit as cj
from cdnajit.frontend.tracing import bind1, constant
from cdnajit.passes import assign_buffers, canonicalize, fuse
from cdnajit.passes.buffers import live_ranges, value_bytes


def check_assignment(module, assignment):
    """Each value fits its buffer; values sharing a buffer are never live at the same op."""
    for value, buffer in assignment.buffer_of.items():
        assert assignment.buffer_sizes[buffer] >= value_bytes(value)
    for a, b in itertools.combinations(assignment.buffer_of, 2):
        if assignment.buffer_of[a] == assignment.buffer_of[b]:
            (a_first, a_last), (b_first, b_last) = assignment.live_ranges[a], assignment.live_ranges[b]
            assert a_last < b_first or b_last < a_first, f"{a} and {b} share a buffer while both live"


def test_live_ranges_on_text():
    module = cj.ir.parse("""
func @f(%0: f32[8]) -> (f32[8], f32[8]) {
  %1 = constant() {value = dense<1.0>} : f32[]
  %2 = exp(%0) : f32[8]
  %3 = sin(%2) : f32[8]
  %4 = cos(%3) : f32[8]
  %5 = add(%2, %4) : f32[8]
  return %5, %3
}""")
    ranges = {str(i): r for i, r in enumerate(live_ranges(module).values(), start=2)}
    # op indices: 0 constant (no buffer), 1 exp, 2 sin, 3 cos, 4 add; outputs live to the end (5)
    assert ranges == {"2": (1, 4), "3": (2, 5), "4": (3, 4), "5": (4, 5)}
    assignment = assign_buffers(module)
    check_assignment(module, assignment)
    assert len(assignment.buffer_sizes) == 4   # all four ranges overlap at op 3 or 4
    assert assignment.total_bytes == assignment.naive_bytes == 4 * 32


def test_uses_inside_regions_extend_live_ranges():
    module = cj.ir.parse("""
func @f(%0: f32[8], %1: i64[]) -> (f32[8]) {
  %2 = exp(%0) : f32[8]
  %3 = neg(%0) : f32[8]
  %4, %5 = while(%1, %0) : (i64[], f32[8]) {
    ^(%6: i64[], %7: f32[8]):
      %8 = constant() {value = dense<3>} : i64[]
      %9 = lt(%6, %8) : bool[]
      yield %9
    ^(%10: i64[], %11: f32[8]):
      %12 = constant() {value = dense<1>} : i64[]
      %13 = add(%10, %12) : i64[]
      %14 = mul(%11, %2) : f32[8]
      yield %13, %14
  }
  %15 = sin(%5) : f32[8]
  return %15
}""")
    ranges = live_ranges(module)
    exp_value = module.body.ops[0].result
    assert ranges[exp_value] == (0, 2)
    assignment = assign_buffers(module)
    check_assignment(module, assignment)


def chain(x):
    """Ten kernels, each reading only the previous one's result, of sizes going down and up."""
    sizes = [1000, 900, 2000, 300, 1200, 700, 4000, 50, 600, 100]
    y = x
    for size in sizes:
        current = y.shape[0]
        if size < current:
            y = bind1("slice", [y], {"start_indices": (0,), "limit_indices": (size,), "strides": (1,)})
        else:
            zero = constant(np.float32(0))
            y = bind1("pad", [y, zero], {"low": (0,), "high": (size - current,), "interior": (0,)})
        y = bind1("exp", [bind1("neg", [y])])
    return y


def test_a_chain_of_kernels_reuses_buffers():
    module = fuse(canonicalize(cj.make_graph(chain)(np.zeros(1500, np.float32))))
    kernels = [op for op in module.body.ops if op.name == "fusion"]
    assert len(kernels) == 10
    assert len({op.result.type.size for op in kernels}) == 10
    assignment = assign_buffers(module)
    check_assignment(module, assignment)
    assert len(assignment.buffer_of) == 10
    assert len(assignment.buffer_sizes) <= 3
    assert assignment.total_bytes < assignment.naive_bytes / 2
    assert "buffers for 10 values" in str(assignment)


def test_the_input_module_is_not_changed():
    module = fuse(canonicalize(cj.make_graph(chain)(np.zeros(1500, np.float32))))
    text = str(module)
    assign_buffers(module)
    assert str(module) == text


def wide_program(x, w):
    import cdnajit.numpy as cnp
    a = cnp.exp(x)
    b = a @ w
    c = cnp.tanh(b) + a
    d = cnp.sum(c * c, axis=1)
    e = c @ w
    return d, cnp.sin(e) - b


@pytest.mark.parametrize("n", [1, 4, 7])
def test_no_overlapping_values_share_a_buffer(n):
    module = fuse(canonicalize(cj.make_graph(wide_program)(np.zeros((n, n)), np.zeros((n, n)))))
    assignment = assign_buffers(module)
    check_assignment(module, assignment)
    top_level = [v for op in module.body.ops if op.name != "constant" for v in op.results]
    assert set(assignment.buffer_of) == set(top_level)
