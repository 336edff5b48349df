"""checkpoint (remat) and lax.optimization_barrier: the recomputation survives the optimizer.

checkpoint's reverse pass recomputes the body from its inputs read through an optimization_barrier,
which canonicalize neither folds nor merges and fusion never groups; remove_barriers drops it after
fusion. The checks: the optimized graph computes the checkpointed matmuls again in the backward pass,
the compiled program's arena is smaller (fewer intermediate values live between forward and backward),
and gradients are the un-checkpointed ones bit for bit (the same ops on the same values).
"""
from __future__ import annotations

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.numpy as cnp
from cdnajit.codegen import native_schedule as codegen_schedule
from cdnajit.ir.core import walk
from cdnajit.passes.canonicalize import canonicalize
from cdnajit.passes.manager import run_pipeline


def layer(x, w):
    return cnp.tanh(cnp.tanh(x @ w) @ w)


def loss(ws, x, remat, prevent_cse=True):
    apply = cj.checkpoint(layer, prevent_cse=prevent_cse) if remat else layer
    for w in ws:
        x = apply(x, w)
    return cnp.sum(x * x)


def chain_args(rng, width=32, rows=48, depth=4, dtype=np.float32):
    ws = [(rng.normal(size=(width, width)) / np.sqrt(width)).astype(dtype) for _ in range(depth)]
    return ws, rng.normal(size=(rows, width)).astype(dtype)


def op_names(module):
    return [op.name for op in walk(module.body)]


def contractions(module) -> int:
    """The matrix products of an optimized graph: dot_general left as it is, or the BLAS library's calls."""
    return sum(name in ("dot_general", "library_call") for name in op_names(module))


def test_checkpoint_recomputes_in_the_optimized_graph():
    """Un-checkpointed, the 4-layer chain's gradient has 8 forward and 15 backward products (the first
    layer's input needs no cotangent); checkpointed, each layer recomputes its 2 forward products in
    the backward pass: 8 more. No barrier is left in the optimized graph. With prevent_cse=False there
    is no barrier and CSE merges the recomputation back into the forward pass."""
    ws, x = chain_args(np.random.default_rng(0))
    counts = {}
    for remat, prevent_cse in ((False, True), (True, True), (True, False)):
        graph = cj.make_graph(lambda ws, x: cj.grad(loss)(ws, x, remat, prevent_cse))(ws, x)
        optimized = run_pipeline(graph).module
        assert ("optimization_barrier" in op_names(graph)) == (remat and prevent_cse)
        assert "optimization_barrier" not in op_names(optimized)
        counts[remat, prevent_cse] = contractions(optimized)
    assert counts[True, True] == counts[False, True] + 8, counts
    assert counts[True, False] == counts[False, True], counts


def test_checkpoint_gradients_equal_the_plain_ones():
    """The same ops on the same values: equal in the interpreter, in float64, to the last bit; with
    closed-over weights too (closure conversion), and under vmap and jvp of the checkpointed call."""
    ws, x = chain_args(np.random.default_rng(1), width=5, rows=3, depth=3, dtype=np.float64)
    run = lambda f: cj.jit(f, backend="interpret")
    plain = run(lambda ws, x: cj.grad(loss, argnums=(0, 1))(ws, x, False))(ws, x)
    remat = run(lambda ws, x: cj.grad(loss, argnums=(0, 1))(ws, x, True))(ws, x)
    for a, b in zip(cj.tree_util.tree_leaves(plain), cj.tree_util.tree_leaves(remat)):
        np.testing.assert_array_equal(a, b)
    closed = cj.checkpoint(lambda v: layer(v, ws[0]))
    np.testing.assert_array_equal(run(cj.grad(lambda v: cnp.sum(closed(v) ** 2)))(x),
                                  run(cj.grad(lambda v: cnp.sum(layer(v, ws[0]) ** 2)))(x))
    per_row = run(cj.vmap(cj.grad(lambda v: cnp.sum(cj.checkpoint(cnp.sin)(v) ** 2))))(x)
    np.testing.assert_allclose(per_row, 2 * np.sin(x) * np.cos(x), rtol=1e-15)
    _, tangent = cj.jvp(cj.checkpoint(cnp.sin), (x,), (np.ones_like(x),))
    np.testing.assert_allclose(tangent, np.cos(x), rtol=1e-15)


def named_layer(x, w):
    return cnp.tanh(cnp.tanh(cj.ad_checkpoint.checkpoint_name(x @ w, "hidden")) @ w)


def named_loss(ws, x, policy, remat=True):
    apply = cj.checkpoint(named_layer, policy=policy) if remat else named_layer
    for w in ws:
        x = apply(x, w)
    return cnp.sum(x * x)


POLICIES = cj.checkpoint_policies
# (policy, the layers' products it recomputes: "all" of them, "none" or "half", each layer's second)
POLICY_CASES = [
    (POLICIES.save_only_these_names("hidden"), "half"),
    pytest.param(POLICIES.dots_saveable, "none", marks=pytest.mark.slow),
    pytest.param(POLICIES.everything_saveable, "none", marks=pytest.mark.slow),
    pytest.param(POLICIES.checkpoint_dots, "none", marks=pytest.mark.slow),
    pytest.param(POLICIES.dots_with_no_batch_dims_saveable, "none", marks=pytest.mark.slow),
    pytest.param(POLICIES.nothing_saveable, "all", marks=pytest.mark.slow),
    pytest.param(POLICIES.save_any_names_but_these("other"), "half", marks=pytest.mark.slow),
    pytest.param(POLICIES.save_anything_except_these_names("hidden"), "none", marks=pytest.mark.slow),
    pytest.param(POLICIES.save_from_both_policies(POLICIES.nothing_saveable, POLICIES.save_only_these_names("hidden")),
                 "half", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("policy, recomputed", POLICY_CASES)
def test_checkpoint_policies_save_what_they_name(policy, recomputed):
    """What a policy saves is not recomputed. A 2-layer chain, each layer two products, the first
    named "hidden": checkpointed without a policy, the gradient's optimized graph has 4 products more
    than the plain one (each layer's recomputed); with a policy saving products none more, saving the
    named ones 2 more (each layer's second product recomputed). The gradients are the plain ones bit
    for bit (the same ops on the same values)."""
    ws, x = chain_args(np.random.default_rng(1), depth=2)

    def products(policy, remat=True):
        graph = cj.make_graph(lambda ws, x: cj.grad(named_loss)(ws, x, policy, remat))(ws, x)
        return contractions(run_pipeline(graph).module)
    plain = products(None, remat=False)
    assert products(None) == plain + 4
    assert products(policy) == plain + {"all": 4, "half": 2, "none": 0}[recomputed]
    grads = cj.jit(cj.grad(named_loss), static_argnums=(2, 3), backend="interpret")
    for got, want in zip(grads(ws, x, policy, True), grads(ws, x, None, False)):
        np.testing.assert_array_equal(got, want)


def test_checkpoint_policy_errors():
    x = np.ones(3)
    assert cj.ad_checkpoint.checkpoint_name(x, "outside") is x
    with pytest.raises(NotImplementedError, match="offloading"):
        cj.grad(lambda x: cnp.sum(cj.checkpoint(cnp.sin, policy=POLICIES.offload_dot_with_no_batch_dims)(x)))(x)
    with pytest.raises(TypeError, match="policy must be a callable"):
        cj.checkpoint(cnp.sin, policy="dots")


def test_optimization_barrier_keeps_computations_apart():
    """sin(x) and sin(barrier(x)) stay two sins through canonicalize; a barrier of a constant is not
    folded; the values are the operands' (pytrees and weak types kept)."""
    def f(x):
        y, (z,) = lax.optimization_barrier((x, [x]))
        return cnp.sin(x) + cnp.sin(y) * z + lax.optimization_barrier(np.float32(2.0))
    x = np.linspace(-1, 1, 7).astype(np.float32)
    graph = cj.make_graph(f)(x)
    canonical = op_names(canonicalize(graph))
    assert canonical.count("sin") == 2 and canonical.count("optimization_barrier") == 2, canonical
    np.testing.assert_allclose(cj.jit(f, backend="interpret")(x), np.sin(x) + np.sin(x) * x + 2, rtol=1e-6)
    assert cj.jit(lambda v: lax.optimization_barrier(2.0) * v, backend="interpret")(x).dtype == np.float32


@pytest.mark.slow
def test_checkpointed_chain_compiled_keeps_less_memory():
    """Compiled: the native schedule's arena (the bytes of every value live between kernels) is
    smaller with checkpoint (only each layer's input waits for the backward pass), and the
    gradients are equal to the un-checkpointed ones (the same kernels' arithmetic on the same
    values, so bit for bit)."""
    ws, x = chain_args(np.random.default_rng(2), width=64, rows=128)
    arena, grads = {}, {}
    for remat in (False, True):
        f = cj.jit(lambda ws, x: cj.grad(loss)(ws, x, remat))
        grads[remat] = f(ws, x)
        plan = f.lower(ws, x).compile().executable.plan
        arena[remat] = codegen_schedule.schedule_layout(plan["body"], plan["outputs"], plan["slots"],
                                                           plan["kernels"]).arena_bytes
    assert arena[True] < arena[False], arena
    for a, b in zip(grads[True], grads[False]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_optimization_barrier_of_complex_values_compiled():
    """expand_complex splits a complex barrier into one over the parts; the values come back whole."""
    z = (np.arange(6) - 2.5 + 1j * np.arange(6)).astype(np.complex64)
    got = cj.jit(lambda z: lax.optimization_barrier(z) * (1 + 2j) + z)(z)
    np.testing.assert_allclose(got, z * (1 + 2j) + z, rtol=1e-6)
