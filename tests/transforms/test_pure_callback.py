"""jax.pure_callback: a Python function whose results the program uses, inside and outside jit.

The callbacks here are numpy functions with exact answers (reversal, integer arithmetic, sin of the
same float32 values numpy computes), so the checks compare exactly with numpy. JAX's documented
behaviour, checked once against jax 0.10 by hand: the results' tree, shapes and dtypes must match
result_shape_dtypes; grad raises ("Pure callbacks do not support JVP"); vmap needs a vmap_method:
'sequential' calls the function once per lane with that lane's values, 'expand_dims' once with a
leading dimension of 1 on the unbatched arguments, 'broadcast_all' once with every argument
broadcast to the batch. The compiled runs are slow tests but one smoke case.
"""
from __future__ import annotations

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.numpy as cnp

BACKENDS = ["interpret", pytest.param("native", marks=pytest.mark.slow)]


def jitted(fn, backend):
    return cj.jit(fn, backend="interpret") if backend == "interpret" else cj.jit(fn)


def sine_twice(x):
    return cj.pure_callback(np.sin, cj.ShapeDtypeStruct(x.shape, x.dtype), x) * 2


def loop_of_callbacks(x):
    """Two results of two dtypes from one callback, in a loop's body: c + 3i per step."""
    def body(i, c):
        shifted, doubled = cj.pure_callback(lambda v, k: (v + np.float32(k), np.int32(2 * k)),
                                            (cj.ShapeDtypeStruct((3,), np.float32), cj.ShapeDtypeStruct((), np.int32)),
                                            c, i)
        return shifted + doubled
    return lax.fori_loop(0, 4, body, x)


def test_results_in_the_compiled_program_and_its_ir():
    """The make-test smoke case: the optimized IR keeps the callback out of the kernels, and the
    native schedule writes its result where the next kernel reads it."""
    x = np.array([0.0, 0.5, 1.0, 2.0, -3.0], np.float32)
    compiled = cj.jit(sine_twice).lower(x).compile()
    assert "pure_callback(%0)" in compiled.as_text("optimized")
    np.testing.assert_array_equal(compiled(x), np.sin(x) * 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_several_results_in_a_loop(backend):
    x = np.array([0.0, 1.0, 2.0], np.float32)
    np.testing.assert_array_equal(jitted(loop_of_callbacks, backend)(x), x + 18)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_mismatched_result_is_a_type_error_naming_both(backend):
    x = np.zeros(3, np.float32)
    as_int = jitted(lambda v: cj.pure_callback(lambda a: a.astype(np.int32), cj.ShapeDtypeStruct((3,), np.float32), v),
                    backend)
    with pytest.raises(TypeError, match=r"result 0 of the callback is int32\[3\], expected float32\[3\]"):
        as_int(x)
    wrong_tree = jitted(lambda v: cj.pure_callback(lambda a: (a, a), cj.ShapeDtypeStruct((3,), np.float32), v), backend)
    with pytest.raises(TypeError, match="the callback returned a tree"):
        wrong_tree(x)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method, seen_shapes", [
    ("sequential", [((3,), (3,)), ((3,), (3,))]),
    ("expand_dims", [((2, 3), (1, 3))]),
    ("broadcast_all", [((2, 3), (2, 3))]),
])
def test_vmap_calls_as_its_method_says(backend, method, seen_shapes):
    seen = []

    def add(a, b):
        seen.append((a.shape, b.shape))
        return a + b

    def f(x, y):
        return cj.pure_callback(add, cj.ShapeDtypeStruct(x.shape, x.dtype), x, y, vmap_method=method)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([10, 20, 30], np.float32)
    np.testing.assert_array_equal(jitted(cj.vmap(f, in_axes=(0, None)), backend)(x, y), x + y)
    assert seen == seen_shapes


def test_vmap_without_a_method_and_grad_raise_as_jax():
    x = np.ones((2, 3), np.float32)
    no_method = cj.vmap(lambda v: cj.pure_callback(np.sin, cj.ShapeDtypeStruct((3,), np.float32), v))
    with pytest.raises(NotImplementedError, match="needs vmap_method .* got vmap_method=None"):
        cj.jit(no_method, backend="interpret")(x)
    with pytest.raises(ValueError, match=r"Pure callbacks do not support JVP \(pure_callback at .*test_pure_callback"):
        cj.grad(lambda v: sine_twice(v).sum())(np.ones(3, np.float32))


def test_custom_jvp_around_a_callback_differentiates():
    """JAX's advice for derivatives: a custom_jvp whose rule gives the callback's derivative."""
    @cj.custom_jvp
    def sine(x):
        return cj.pure_callback(np.sin, cj.ShapeDtypeStruct(x.shape, x.dtype), x)

    @sine.defjvp
    def sine_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return sine(x), cnp.cos(x) * t
    x = np.array([0.25, 1.5], np.float32)
    np.testing.assert_allclose(cj.jit(cj.grad(lambda v: sine(v).sum()), backend="interpret")(x), np.cos(x), rtol=1e-6)


def test_outside_jit_the_function_runs_at_once():
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(cj.pure_callback(np.sin, cj.ShapeDtypeStruct((2,), np.float32), x), np.sin(x))
    with pytest.raises(TypeError, match=r"result 0 of the callback is float64\[2\], expected float32\[2\]"):
        cj.pure_callback(lambda a: a.astype(np.float64), cj.ShapeDtypeStruct((2,), np.float32), x)


# ---- io_callback ----------------------------------------------------------------------------------
# jax.experimental.io_callback: pure_callback's results with an effect: each runs once per call, in
# program order, even when nothing reads its result or two are alike (a pure_callback may be merged
# or dropped).

@pytest.mark.parametrize("backend", ["interpret", "native"])
def test_io_callbacks_run_once_each_in_program_order(backend):
    from cdnajit.experimental import io_callback
    log = []

    def send(tag):
        def call(x):
            log.append((tag, float(x.sum())))
            return x * 2
        return call

    def program(x):
        like = cj.ShapeDtypeStruct(x.shape, x.dtype)
        a = io_callback(send("a"), like, x)
        b = io_callback(send("b"), like, x)      # the same operand: not merged
        io_callback(send("c"), like, x + 1)      # nothing reads it: it runs all the same
        return a + b
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(jitted(program, backend)(x), 4 * x)
    assert log == [("a", 6.0), ("b", 6.0), ("c", 10.0)]


def test_io_callback_without_a_derivative_and_with_sequential_vmap():
    from cdnajit.experimental import io_callback
    lanes = []
    call = lambda x: io_callback(lambda v: lanes.append(v.shape) or v + 1, cj.ShapeDtypeStruct((), np.float32), x)
    np.testing.assert_array_equal(cj.vmap(call)(np.arange(3, dtype=np.float32)), np.arange(1, 4, dtype=np.float32))
    assert lanes == [(), (), ()]
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
        cj.grad(call)(np.float32(1))
