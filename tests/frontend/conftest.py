"""Fixtures of the frontend tests."""
import numpy as np
import pytest

import cdnajit as cj


def run_eagerly_and_jitted(fn, *arrays, **static):
    """fn(*arrays, **static) called eagerly and jitted (arrays traced, static closed over): they
    must agree to the bit; the eager result is returned."""
    eager = fn(*arrays, **static)
    jitted = cj.jit(lambda *xs: fn(*xs, **static))(*arrays)
    eager_leaves, eager_tree = cj.tree_flatten(eager)
    jitted_leaves, jitted_tree = cj.tree_flatten(jitted)
    assert eager_tree == jitted_tree
    for e, j in zip(eager_leaves, jitted_leaves):
        e, j = np.asarray(e), np.asarray(j)
        assert (e.dtype, e.shape) == (j.dtype, j.shape)
        assert e.tobytes() == j.tobytes(), f"eager {e} and jit {j} differ"
    return eager


@pytest.fixture(scope="session")
def run_both():
    """`run_eagerly_and_jitted`, for the differential tests of the jax.numpy functions."""
    return run_eagerly_and_jitted
