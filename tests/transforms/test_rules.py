"""Every op's JVP and VJP rule against central finite differences, and every batch rule against a
Python loop over the lanes, through the reference interpreter (the rules are graph rewrites; the
interpreter runs their graphs exactly as the op table defines them).

Error model (float64): the central difference (f(x + h v) - f(x - h v)) / 2h, h = 1e-6, is off by
h^2/6 |f'''| (about 1e-12 for these O(1) functions on O(1) inputs) plus the rounding of f, about
2 eps |f| / 2h ~ 1e-10 |f|. The JVP (exact but for a few roundings, ~1e-15 relative) must agree to
1e-7 (1 + |f'|): three orders above the bound, far below any error of a wrong rule (O(1)). The
VJP is checked by the transpose identity <ct, J v> = <J^T ct, v> against the same difference.
A batch rule must give the loop's values to 1e-12 relative (the same ops on the same values; only a
batched contraction's order of summation may differ).
"""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.ir.ops.rules import defined_rules
from cdnajit.tree_util import tree_leaves

from .op_cases import CASES, FORWARD_ONLY, PASS_MADE_OPS, UNDIFFERENTIABLE_OPS, ZERO_DERIVATIVE_OPS

STEP = 1e-6
SMOKE = ["tanh", "mul", "dot_general", "reduce_max", "gather", "scan"]   # make test; the rest is slow


def flat(fn):
    """fn with its outputs raveled and concatenated (one vector)."""
    return lambda *args: cnp.concatenate([cnp.ravel(leaf) for leaf in tree_leaves(fn(*args))])


def interpreted(fn):
    return cj.jit(fn, backend="interpret")


def check_derivatives(name, case, reverse=True):
    rng = np.random.default_rng(sum(map(ord, name)))
    args = case.args(rng)
    g = flat(case.fn)
    run = interpreted(g)
    direction = tuple(rng.normal(size=np.shape(a)) for a in args)
    shifted = lambda sign: run(*(a + sign * STEP * v for a, v in zip(args, direction)))
    difference = (shifted(1) - shifted(-1)) / (2 * STEP)
    tangent = interpreted(lambda a, v: cj.jvp(g, a, v)[1])(args, direction)
    tolerance = 1e-7 * (1 + np.abs(difference).max())
    np.testing.assert_allclose(tangent, difference, rtol=0, atol=tolerance, err_msg=f"{name}: JVP")
    if reverse:
        ct = rng.normal(size=difference.shape)
        cts = interpreted(lambda a, c: cj.vjp(g, *a)[1](c))(args, ct)
        transposed = sum(float(np.sum(c * v)) for c, v in zip(cts, direction))
        np.testing.assert_allclose(transposed, float(ct @ difference), rtol=0,
                                   atol=tolerance * np.abs(ct).sum(), err_msg=f"{name}: VJP")


def check_batching(name, case, lanes=3):
    rng = np.random.default_rng(sum(map(ord, name)) + 1)
    lane_args = [case.args(rng) for _ in range(lanes)]
    g = flat(case.fn)
    run = interpreted(g)
    expected = np.stack([run(*args) for args in lane_args])
    stacked = tuple(np.stack(column) for column in zip(*lane_args))
    np.testing.assert_allclose(interpreted(cj.vmap(g))(*stacked), expected, rtol=1e-12, atol=1e-12,
                               err_msg=f"{name}: vmap, every argument batched")
    if len(stacked) > 1:   # the first argument batched, the others shared by every lane
        shared = [(stacked[0][i],) + lane_args[0][1:] for i in range(lanes)]
        expected = np.stack([run(*args) for args in shared])
        in_axes = (0,) + (None,) * (len(stacked) - 1)
        np.testing.assert_allclose(interpreted(cj.vmap(g, in_axes=in_axes))(stacked[0], *lane_args[0][1:]),
                                   expected, rtol=1e-12, atol=1e-12, err_msg=f"{name}: vmap, first argument batched")


@pytest.mark.parametrize("name", SMOKE)
def test_rules_smoke(name):
    check_derivatives(name, CASES[name])
    check_batching(name, CASES[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(CASES) - set(SMOKE)))
def test_derivatives(name):
    check_derivatives(name, CASES[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(CASES) - set(SMOKE)))
def test_batching(name):
    check_batching(name, CASES[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FORWARD_ONLY))
def test_forward_only(name):
    check_derivatives(name, FORWARD_ONLY[name], reverse=False)
    check_batching(name, FORWARD_ONLY[name])


def test_every_rule_has_a_case():
    """Each op with a JVP rule appears in some case's graph (or is listed as zero-derivative,
    undifferentiable or made only by the passes), so no rule goes untested."""
    traced = set()
    for case in {**CASES, **FORWARD_ONLY}.values():
        module = cj.make_jaxpr(case.fn)(*case.args(np.random.default_rng(0)))
        traced |= {op.name for op in cj.ir.core.walk(module.body)}
    missing = set(defined_rules("jvp")) - traced - ZERO_DERIVATIVE_OPS - UNDIFFERENTIABLE_OPS - PASS_MADE_OPS
    assert not missing, f"ops with rules but no case: {sorted(missing)}"
