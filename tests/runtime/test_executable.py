"""The executable: host loops and branches around kernels, fresh outputs, the kernel contract.

Results are compared with the reference interpreter on the same module and inputs, exactly:
these programs use no transcendental functions, so the kernels must give the same bits.
"""
import threading

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.lowering import emitters as lower
from cdnajit.errors import CdnajitError
from cdnajit.runtime import executable as ex
from cdnajit.runtime.cache import CompileCache


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return CompileCache(tmp_path_factory.mktemp("cache"))


def compile_fn(fn, cache, *args):
    module = cj.make_graph(fn)(*args)
    return module, ex.Executable.compile(module, cache)


def assert_matches_interpreter(fn, cache, *args):
    module, executable = compile_fn(fn, cache, *args)
    actual = executable(*args)
    expected = cj.ir.interpret(module, *args)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(a, e)
    return executable


def fori(x):
    return lax.fori_loop(0, 5, lambda i, c: c * 2.0 + i.astype(c.dtype), x)


def while_collatz(n):
    return lax.while_loop(lambda c: c[0] != 1,
                          lambda c: (lax.select(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1), c[1] + 1), (n, 0))


def scan_cumsum(xs):
    return lax.scan(lambda c, x: (c + x, c * x), xs[0] * 0, xs)


def cond_two(p, x):
    return lax.cond(p > 0, lambda v: v * 3.0 - 1.0, lambda v: -v, x)


def switch_three(i, x):
    return lax.switch(i, [lambda v: v + 1, lambda v: v * v, lambda v: v - 7], x)


def loop_in_branch(p, x):  # a while nested in a cond branch
    return lax.cond(p > 0, lambda v: lax.fori_loop(0, 3, lambda i, c: c + c, v), lambda v: v, x)


def branch_in_loop(x):  # a cond nested in a while body, reading a captured value
    offset = x * 0.5
    return lax.fori_loop(0, 4, lambda i, c: lax.cond(i % 2 == 0, lambda v: v + offset, lambda v: v * 2.0, c), x)


def nested_loops(x):
    return lax.fori_loop(0, 3, lambda i, c: lax.fori_loop(0, i + 1, lambda j, d: d + 1.0, c), x)


X = np.linspace(-3, 3, 67).astype(np.float32)  # 67: not a multiple of a workgroup
M = np.arange(35, dtype=np.float64).reshape(5, 7)


@pytest.mark.parametrize("fn, args", [
    (fori, (X,)),
    (fori, (M,)),
    (while_collatz, (np.int64(27),)),
    (scan_cumsum, (M,)),
    (cond_two, (np.int32(1), X)),
    (cond_two, (np.int32(0), X)),
    (switch_three, (np.int32(-4), M)),   # clamped to branch 0
    (switch_three, (np.int32(1), M)),
    (switch_three, (np.int32(9), M)),    # clamped to branch 2
    (loop_in_branch, (np.int32(1), X)),
    (loop_in_branch, (np.int32(0), X)),
    (branch_in_loop, (X,)),
    (nested_loops, (M,)),
], ids=lambda v: getattr(v, "__name__", None))
def test_host_loops_and_branches_match_the_interpreter(fn, args, cache):
    assert_matches_interpreter(fn, cache, *args)


@pytest.mark.parametrize("shape", [(), (1,), (0,), (3, 0), (1, 1), (67,), (5, 7), (2, 3, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16])
def test_elementwise_shapes_and_dtypes(shape, dtype, cache):
    x = (np.arange(int(np.prod(shape))) % 11 - 5).astype(dtype).reshape(shape)
    assert_matches_interpreter(lambda a, b: (a * b + a, cnp.maximum(a, b) - b), cache, x, x[::-1] if x.ndim else x)


def test_ops_with_empty_results_compile_no_kernel(cache):
    module, executable = compile_fn(lambda a: a * 2.0, cache, np.zeros((0, 4), np.float32))
    assert executable.plan["kernels"] == []
    assert executable(np.zeros((0, 4), np.float32))[0].shape == (0, 4)


def test_outputs_are_fresh_arrays(cache):
    x = np.arange(6, dtype=np.float32)
    module, executable = compile_fn(lambda a: (a, a, a + 1, a + 1, np.float32(2) * np.ones(3, np.float32)), cache, x)
    outputs = executable(x)
    for i, out in enumerate(outputs):
        assert not np.shares_memory(out, x)
        for other in outputs[i + 1:]:
            assert not np.shares_memory(out, other)
    outputs[4][:] = 0  # a constant output is a copy: the next call still sees the constant
    np.testing.assert_array_equal(executable(x)[4], [2, 2, 2])


def test_loop_results_are_fresh_when_the_loop_does_not_run(cache):
    x = np.arange(4, dtype=np.float32)
    module, executable = compile_fn(lambda a: lax.fori_loop(0, 0, lambda i, c: c + 1, a), cache, x)
    out = executable(x)[0]
    np.testing.assert_array_equal(out, x)
    assert not np.shares_memory(out, x)


OPTIMIZED_WITH_RESHAPE = """
func @viewed(%0: f32[2,3]) -> (f32[6], f32[2,3]) {
  %1 = fusion(%0) {kind = "loop"} : f32[2,3] {
    ^(%2: f32[2,3]):
      %3 = add(%2, %2) : f32[2,3]
      yield %3
  }
  %4 = reshape(%1) {new_sizes = [6]} : f32[6]
  return %4, %1
}
"""


def test_top_level_reshape_is_a_view(cache):
    module = cj.ir.parse(OPTIMIZED_WITH_RESHAPE)
    executable = ex.Executable.compile(module, cache, pipeline=[])
    assert [s["op"] for s in executable.plan["body"]["steps"]] == ["kernel", "reshape"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    flat, square = executable(x)
    np.testing.assert_array_equal(flat, (x + x).reshape(6))
    np.testing.assert_array_equal(square, x + x)
    assert not np.shares_memory(flat, square)  # both views of one result: the second is copied


def test_concurrent_calls(cache):
    module, executable = compile_fn(lambda a: a * 3.0 + 1.0, cache, np.zeros(50_000, np.float32))
    inputs = [np.full(50_000, i, np.float32) for i in range(4)]
    results = [None] * 4

    def work(i):
        for _ in range(20):
            results[i] = executable(inputs[i])[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, result in enumerate(results):
        np.testing.assert_array_equal(result, np.full(50_000, 3 * i + 1, np.float32))


def test_inputs_are_converted_only_when_needed(cache):
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    module, executable = compile_fn(lambda a: a + 1.0, cache, x)
    for view in (x.T.copy().T, x[::-1], x.astype(">f8"), np.asfortranarray(x)):
        np.testing.assert_array_equal(executable(view)[0], view + 1.0)
    with pytest.raises(CdnajitError, match="shape"):
        executable(np.zeros((4, 3)))
    with pytest.raises(CdnajitError, match="takes 1 arguments"):
        executable(x, x)


def test_an_op_without_emitter_raises(cache, monkeypatch):
    monkeypatch.delitem(lower.KERNEL_EMITTERS, "fusion")
    with pytest.raises(NotImplementedError, match="fusion"):
        compile_fn(lambda a: a - 1.0, cache, np.arange(3.0))


def test_a_kernel_breaking_the_contract_is_rejected(cache, monkeypatch):
    emit_fusion = lower.KERNEL_EMITTERS["fusion"]

    def without_last_param(op, name):
        kernel = emit_fusion(op, name)
        return type(kernel)(kernel.name, kernel.params[:-1], kernel.grid, kernel.workgroup_size, kernel.body)

    monkeypatch.setitem(lower.KERNEL_EMITTERS, "fusion", without_last_param)
    with pytest.raises(CdnajitError, match="parameter contract"):
        compile_fn(lambda a: a - 2.0, cache, np.arange(3.0))


def test_kernels_and_optimized_module_after_a_cache_hit(cache):
    fn, x = (lambda a: a * 5.0 + 2.0), np.arange(9, dtype=np.float32)
    _, first = compile_fn(fn, cache, x)
    _, again = compile_fn(fn, cache, x)
    assert [stage for stage, _ in again.timings] == ["cache lookup", "load"]
    assert str(again.optimized) == str(first.optimized)
    assert [str(k) for k in again.kernels] == [str(k) for k in first.kernels]
    np.testing.assert_array_equal(again(x)[0], x * 5 + 2)


def test_a_cached_program_reruns_its_passes_only_under_the_library_state_it_was_compiled_in(cache):
    from cdnajit.libs.dnn import winograd
    x, w = np.ones((1, 9, 9, 4), np.float32), np.ones((3, 3, 4, 4), np.float32)
    module = cj.make_graph(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))(x, w)
    with winograd.forced("im2col"):
        ex.Executable.compile(module, cache)
        loaded = ex.Executable.compile(module, cache)
    assert [stage for stage, _ in loaded.timings] == ["cache lookup", "load"]
    with pytest.raises(CdnajitError, match="changed since it was compiled.*forced im2col"):
        loaded.optimized
    with winograd.forced("im2col"):
        assert "im2col" in str(loaded.optimized)
