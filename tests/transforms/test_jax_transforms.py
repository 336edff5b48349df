"""cdnajit's transformations against JAX's stored answers (jax_transforms.json, made by
generate_jax_transforms.py from transform_cases.py).

Error model (float64): the two sides run the same formulas with different transcendental
implementations (numpy's and XLA's, each within a few ulp) and summation orders, through at most
a few dozen dependent operations: agreement within 1e-12 of the case's largest value.
"""
import json
import pathlib
import types

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.numpy as cnp

from .transform_cases import CASES

ANSWERS = json.loads(pathlib.Path(__file__).with_name("jax_transforms.json").read_text())["cases"]
NAMESPACE = types.SimpleNamespace(np=cnp, lax=lax, api=cj)


def check(name, leaves):
    expected = ANSWERS[name]
    assert len(leaves) == len(expected), name
    scale = max(max(map(abs, e["values"]), default=0) for e in expected)
    for leaf, answer in zip(leaves, expected):
        want = np.array(answer["values"]).reshape(answer["shape"])
        np.testing.assert_allclose(np.asarray(leaf), want, rtol=0, atol=1e-12 * max(scale, 1), err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_interpreted(name):
    """The transformations traced inside one jit and run by the reference interpreter."""
    check(name, cj.tree_util.tree_leaves(cj.jit(lambda: CASES[name](NAMESPACE), backend="interpret")()))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled(name):
    """As users call them: outside jit each transformation compiles its function."""
    check(name, cj.tree_util.tree_leaves(CASES[name](NAMESPACE)))


@pytest.mark.slow
def test_compiled_training_step():
    """The issue's example: value_and_grad and an SGD update in one compiled step."""
    from .transform_cases import MLP_ARGS, mlp_loss

    @cj.jit
    def step(params, x, y):
        loss, grads = cj.value_and_grad(mlp_loss(NAMESPACE))(params, x, y)
        return loss, cj.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    loss, new = step(*MLP_ARGS)
    expected_loss, grads = (ANSWERS["mlp_value_and_grad"][0], ANSWERS["mlp_value_and_grad"][1:])
    np.testing.assert_allclose(loss, expected_loss["values"][0], rtol=1e-12)
    for p, g, n in zip(cj.tree_util.tree_leaves(MLP_ARGS[0]), grads, cj.tree_util.tree_leaves(new)):
        np.testing.assert_allclose(n, p - 0.1 * np.array(g["values"]).reshape(g["shape"]), rtol=0, atol=1e-12)
