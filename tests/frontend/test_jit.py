"""jit: signatures and the trace cache, pytrees, static arguments, lower/make_graph, bad input."""
import collections

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp


def test_second_call_with_same_signature_does_not_retrace():
    f = cj.jit(lambda x, y: x * y + 1)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(f(x, x), x * x + 1)
    f(x + 1, x)
    assert f.trace_count == 1
    f(x.astype(np.float64), x)          # new dtype -> retrace
    f(x[:1], x[:1])                     # new shape -> retrace
    assert f.trace_count == 3


def test_python_scalars_are_weakly_typed_and_values_do_not_retrace():
    f = cj.jit(lambda x, s: x * s)
    x = np.ones(3, np.float16)
    assert f(x, 2.0).dtype == np.float16
    assert f(x, 3.0).dtype == np.float16
    assert f.trace_count == 1
    assert f(x, np.float32(2.0)).dtype == np.float32   # numpy scalars are strong
    assert f(x, 2).dtype == np.float16


def test_pytree_arguments_and_results():
    Point = collections.namedtuple("Point", "x y")

    @cj.jit
    def f(params, pts, extra=None):
        return {"sum": params["a"] + params["b"], "pts": Point(pts[0] * 2, pts[1]), "none": None,
                "list": [params["a"]]}

    a, b = np.ones(2), np.arange(2.0)
    out = f({"b": b, "a": a}, (np.ones(3), np.zeros(1)))
    np.testing.assert_array_equal(out["sum"], a + b)
    assert isinstance(out["pts"], Point) and out["none"] is None and isinstance(out["list"], list)
    np.testing.assert_array_equal(out["pts"].x, 2 * np.ones(3))


def test_keyword_arguments_are_traced():
    f = cj.jit(lambda x, scale=1.0: x * scale)
    np.testing.assert_allclose(f(np.ones(2), scale=3.0), [3.0, 3.0])
    np.testing.assert_allclose(f(np.ones(2)), [1.0, 1.0])


def test_static_argnums_and_argnames():
    @cj.jit(static_argnums=1, static_argnames="mode")
    def f(x, n, mode="sum"):
        for _ in range(n):          # Python control flow on a static value is fine
            x = x + 1
        return x.sum() if mode == "sum" else x

    x = np.zeros(4)
    assert f(x, 3) == 12.0
    np.testing.assert_array_equal(f(x, 2, mode="keep"), np.full(4, 2.0))
    f(x, 3)
    assert f.trace_count == 2
    with pytest.raises(cj.TracingTypeError, match="hashable"):
        cj.jit(lambda x, s: x, static_argnums=1)(x, [1, 2])


def test_results_are_fresh_numpy_arrays():
    f = cj.jit(lambda x: x)
    x = np.ones(3)
    y = f(x)
    assert isinstance(y, np.ndarray) and y is not x
    y[0] = 5
    assert x[0] == 1


def test_constant_and_scalar_outputs():
    f = cj.jit(lambda x: (x, 2.0, np.arange(3)))
    _, two, rng = f(np.ones(1))
    assert two.shape == () and two.dtype == np.float64 and two == 2.0
    np.testing.assert_array_equal(rng, np.arange(3))


def test_lower_and_make_graph_show_the_graph_ir():
    def g(x, w):
        return cnp.tanh(x @ w)
    x, w = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    text = cj.jit(g).lower(x, w).as_text()
    assert text.startswith("func @g(%0: f32[2,3], %1: f32[3,4]) -> (f32[2,4])")
    assert "dot_general" in text and "tanh" in text
    module = cj.make_graph(g)(x, w)
    assert isinstance(module, cj.ir.Module) and str(module) == text
    compiled = cj.jit(g).lower(x, w).compile()
    np.testing.assert_allclose(compiled(x, w), np.tanh(x @ w), rtol=1e-6)


def test_jit_on_a_method_binds_self_as_jax_does():
    class Model:
        def __init__(self, k):
            self.k = k

        @cj.jit(static_argnums=0)      # self is not an array: static, as with jax.jit
        def apply(self, x):
            return x * self.k

    np.testing.assert_array_equal(Model(3).apply(np.ones(2)), [3.0, 3.0])
    with pytest.raises(cj.TracingTypeError, match="Model is not an array"):
        cj.jit(Model.apply.__wrapped__)(Model(3), np.ones(2))


def test_jit_of_a_partial_and_of_a_callable_object():
    """Neither has a __name__: jax.jit takes both, and so does cj.jit, naming the graph after the
    wrapped function or the object's class."""
    import functools

    def scaled(k, x):
        return x * k

    class Shift:
        def __call__(self, x):
            return x + 1

    x = np.arange(3.0)
    by_partial = cj.jit(functools.partial(scaled, 2.0))
    np.testing.assert_array_equal(by_partial(x), x * 2)
    assert by_partial.lower(x).module.name == "scaled"
    np.testing.assert_array_equal(cj.jit(Shift())(x), x + 1)
    assert cj.jit(Shift()).lower(x).module.name == "Shift"
    with pytest.raises(cj.TracingTypeError, match="argument of scaled"):
        by_partial("text")


def test_nested_jit_inlines():
    inner = cj.jit(lambda x: x + 1)
    outer = cj.jit(lambda x: inner(x) * 2)
    np.testing.assert_array_equal(outer(np.ones(2)), [4.0, 4.0])
    assert "add" in outer.lower(np.ones(2)).as_text()


def test_bad_arguments_name_the_problem_and_the_line():
    f = cj.jit(lambda x: x)
    with pytest.raises(cj.TracingTypeError, match=r"str is not an array.*test_jit\.py:\d+"):
        f("hello")
    with pytest.raises(cj.TracingTypeError, match="unsupported dtype"):
        f(np.array(["a"]))
    with pytest.raises(TypeError):
        f(object())


def test_python_control_flow_on_a_traced_value_is_a_clear_error():
    def g(x):
        if x > 0:
            return x
        return -x
    with pytest.raises(cj.ConcretizationError, match=r"truth value.*test_jit\.py:\d+"):
        cj.jit(g)(np.float32(1.0))


def test_leaked_tracer_is_detected():
    leaked = []
    cj.jit(lambda x: leaked.append(x) or x)(np.ones(2))
    with pytest.raises(cj.TracingError, match="escaped"):
        cj.jit(lambda y: y + leaked[0])(np.ones(2))


def test_empty_and_zero_d_arrays():
    f = cj.jit(lambda x: x * 2)
    assert f(np.zeros((0, 3))).shape == (0, 3)
    assert f(np.float64(3.0)) == 6.0
