"""Each op's JVP and VJP rule against JAX's, case by case (op_cases.py; the answers in
jax_op_rules.json, made by generate_jax_op_rules.py). test_rules.py checks the same rules against
central differences; this checks them against JAX's own rules at the same points, so a rule that
is right to first order but follows another convention (a subgradient at a tie, a branch cut)
shows here.

Error model (float64): both sides evaluate the same derivative formulas with different
transcendental implementations (each within a few ulp) and summation orders, through a few
dependent operations: agreement within 1e-12 of the case's largest value.
"""
import json
import pathlib

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.frontend.pytree import tree_leaves

from .op_cases import CASES, FORWARD_ONLY, known_answer_draws

STORED = json.loads(pathlib.Path(__file__).with_name("jax_op_rules.json").read_text())
ANSWERS = STORED["cases"]
SMOKE = ["tanh", "dot_general", "max_pool", "conv_batch_grouped"]   # make test; the rest is slow


def flat(fn):
    return lambda *args: cnp.concatenate([cnp.ravel(leaf) for leaf in tree_leaves(fn(*args))])


def assert_close(got, want, scale, what):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=0, atol=1e-12 * max(scale, 1.0), err_msg=what)


def check(name):
    case = {**CASES, **FORWARD_ONLY}[name]
    answer = ANSWERS[name]
    args, direction, cotangent = known_answer_draws(name, case)
    g = flat(case.fn)
    tangent = cj.jit(lambda a, v: cj.jvp(g, a, v)[1], backend="interpret")(args, direction)
    want = np.array(answer["jvp"])
    assert_close(tangent, want, np.abs(want).max(initial=0), f"{name}: JVP")
    if "vjp" in answer:
        cts = cj.jit(lambda a, c: cj.vjp(g, *a)[1](c), backend="interpret")(args, cotangent(want.size))
        scale = max(np.abs(w).max(initial=0) for w in map(np.array, answer["vjp"]))
        for k, (ct, w) in enumerate(zip(cts, answer["vjp"])):
            assert_close(np.ravel(ct), np.array(w), scale, f"{name}: VJP of argument {k}")


def test_every_case_has_an_answer_or_a_reason():
    assert set(ANSWERS) | set(STORED["left_out"]) == set(CASES) | set(FORWARD_ONLY)


@pytest.mark.parametrize("name", SMOKE)
def test_rules_match_jax_smoke(name):
    check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(ANSWERS) - set(SMOKE)))
def test_rules_match_jax(name):
    check(name)
