"""The transformations' graphs compiled (passes, libraries, kernels) against the same graphs run by
the reference interpreter: the backward convolutions through the DNN library, max-pool gradients,
loops vmapped with a batched predicate, forward mode through a while_loop.

Error model: float32 convolutions as GEMMs of K <= 45 products and max-pool selections (exact):
within 1e-5 of the largest gradient, ~100 f32 roundings of the same values in another order."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.numpy as cnp

pytestmark = pytest.mark.slow


def both(fn, *args):
    return cj.jit(fn)(*args), cj.jit(fn, backend="interpret")(*args)


def test_cnn_gradients():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 8, 8, 3)).astype(np.float32)
    w = rng.normal(size=(3, 3, 3, 5)).astype(np.float32)

    def loss(x, w):
        y = lax.conv_general_dilated(x, w, (2, 2), [(1, 1), (1, 1)], dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = lax.reduce_window(cnp.maximum(y, 0), -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return cnp.sum(y ** 2)
    compiled, interpreted = both(cj.grad(loss, argnums=(0, 1)), x, w)
    for got, want in zip(compiled, interpreted):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_vmap_of_while_with_batched_predicate():
    def steps(n):
        body = lambda c: (cnp.where(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1), c[1] + 1)
        return lax.while_loop(lambda c: c[0] > 1, body, (n, 0))[1]
    compiled, interpreted = both(cj.vmap(steps), np.array([1, 2, 3, 6, 7, 27]))
    np.testing.assert_array_equal(compiled, [0, 1, 7, 8, 16, 111])
    np.testing.assert_array_equal(interpreted, compiled)


def test_forward_mode_through_while_loop():
    x = np.linspace(1.5, 2.0, 5)   # above 1, so the product grows past the bound
    f = cj.jacfwd(lambda x: lax.while_loop(lambda c: cnp.sum(c[1]) < 100, lambda c: (c[0] + 1, c[1] * x), (0, x))[1])
    compiled, interpreted = both(f, x)
    np.testing.assert_allclose(compiled, interpreted, rtol=1e-13)
