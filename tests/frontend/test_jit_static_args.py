"""jit's static arguments follow jax.jit's rules: numbers and names are inferred from each other
through the function's signature, and numbers or names the function does not have are errors."""
import functools

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp


def test_static_argname_passed_positionally_is_static():
    @functools.partial(cj.jit, static_argnames=["n"])
    def f(x, n):
        grid = cnp.linspace(0.0, 1.0, n)       # needs n as a Python int
        return grid[: n // 2] + x

    np.testing.assert_allclose(f(1.0, 6), 1.0 + np.linspace(0, 1, 6)[:3])
    np.testing.assert_allclose(f(1.0, n=6), 1.0 + np.linspace(0, 1, 6)[:3])
    assert f.static_argnums == (1,)


def test_static_argnum_passed_by_keyword_is_static():
    @functools.partial(cj.jit, static_argnums=1)
    def f(x, n):
        return cnp.zeros(n) + x

    np.testing.assert_array_equal(f(2.0, n=3), np.full(3, 2.0))
    np.testing.assert_array_equal(f(2.0, 3), np.full(3, 2.0))
    assert f.static_argnames == ("n",)


def test_static_argnum_left_to_its_default_is_skipped():
    @functools.partial(cj.jit, static_argnums=1)
    def f(x, n=4):
        return cnp.zeros(n) + x

    np.testing.assert_array_equal(f(1.0), np.ones(4))


def test_mgrid_with_a_static_size():
    @functools.partial(cj.jit, static_argnames="n")
    def f(x, n):
        rows, cols = cnp.mgrid[0:n, 0:n]
        return x * rows + cols

    rows, cols = np.mgrid[0:5, 0:5]
    np.testing.assert_array_equal(f(2.0, 5), 2.0 * rows + cols)


@pytest.mark.parametrize("kwargs, message", [
    (dict(static_argnums=5), "only accepts 2 positional"),
    (dict(static_argnums=-3), "only accepts 2 positional"),
    (dict(static_argnames="zz"), "not parameters"),
])
def test_static_args_the_function_lacks_are_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cj.jit(lambda x, n: x, **kwargs)


def test_positional_only_static_argname_is_an_error():
    def f(x, /, n):
        return x
    with pytest.raises(ValueError, match="positional-only"):
        cj.jit(f, static_argnames="x")


def test_variadic_functions_accept_any_static_arg():
    def f(x, *args, **kwargs):
        return x + len(args) + len(kwargs)
    assert cj.jit(f, static_argnums=5)(1.0, 2.0) == 2.0
    assert cj.jit(f, static_argnames="q")(1.0, q=2) == 2.0
