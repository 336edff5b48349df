"""The transformations' API as JAX users call it: argnums, has_aux, pytrees, nesting, custom rules,
vmap's axes, tree_util and the top-level helpers, and JAX's errors for bad input naming the
user's line. Run through the reference interpreter where the values are checked (one compiled
smoke case)."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.numpy as cnp

X = np.linspace(0.1, 1.0, 4)


def interpreted(fn):
    return cj.jit(fn, backend="interpret")


def test_grad_compiled_outside_jit():
    np.testing.assert_allclose(cj.grad(lambda x: cnp.sum(cnp.sin(x)))(X), np.cos(X), rtol=1e-14)


def test_argnums_has_aux_and_pytrees():
    def f(a, b, c):
        return cnp.sum(a["w"] * b[0]) + c, (a["w"] * 2, "aux")
    run = interpreted(lambda a, b, c: cj.value_and_grad(lambda *xs: f(*xs)[0], argnums=(0, 1))(a, b, c))
    value, (ga, gb) = run({"w": X}, (X ** 2,), 1.0)
    np.testing.assert_allclose(value, np.sum(X ** 3) + 1)
    np.testing.assert_allclose(ga["w"], X ** 2)
    np.testing.assert_allclose(gb[0], X)
    g, aux = interpreted(lambda x: cj.grad(lambda x: (cnp.sum(x ** 2), x * 3), has_aux=True)(x))(X)
    np.testing.assert_allclose(g, 2 * X)
    np.testing.assert_allclose(aux, 3 * X)


def test_nested_transformations():
    # d^2/dx^2 sin = -sin, per element by vmap of grad of grad; hessian of a quadratic form.
    second = interpreted(cj.vmap(cj.grad(cj.grad(cnp.sin))))(X)
    np.testing.assert_allclose(second, -np.sin(X), rtol=1e-13)
    a = np.arange(9.).reshape(3, 3)
    np.testing.assert_allclose(interpreted(cj.hessian(lambda x: x @ a @ x))(X[:3]), a + a.T, atol=1e-12)
    # vmap of vmap: an outer product.
    outer = interpreted(cj.vmap(cj.vmap(lambda x, y: x * y, in_axes=(None, 0)), in_axes=(0, None)))(X, X[:3])
    np.testing.assert_allclose(outer, np.outer(X, X[:3]))


def test_jvp_linearize_vjp():
    out, tangent = interpreted(lambda x, t: cj.jvp(cnp.exp, (x,), (t,)))(X, np.ones(4))
    np.testing.assert_allclose(tangent, np.exp(X))
    out, f_jvp = cj.linearize(cnp.sin, X)
    np.testing.assert_allclose(f_jvp(np.ones(4)), np.cos(X), rtol=1e-14)
    out, pullback = cj.vjp(lambda x, y: x * y, X, 2 * X)
    cx, cy = pullback(np.ones(4))
    np.testing.assert_allclose(cx, 2 * X)
    np.testing.assert_allclose(cy, X)


def test_vmap_axes():
    m = np.arange(12.).reshape(3, 4)
    np.testing.assert_allclose(interpreted(cj.vmap(cnp.sum, in_axes=1))(m), m.sum(0))
    np.testing.assert_allclose(interpreted(cj.vmap(lambda r: r * 2, out_axes=1))(m), (m * 2).T)
    tree = interpreted(cj.vmap(lambda d: {"s": d["a"] + d["b"]}, in_axes=({"a": 0, "b": None},)))(
        {"a": m, "b": np.ones(4)})
    np.testing.assert_allclose(tree["s"], m + 1)
    made = interpreted(cj.vmap(lambda: cnp.ones(2), axis_size=3))()
    np.testing.assert_allclose(made, np.ones((3, 2)))


def test_vmapped_matmul_is_one_dot_general():
    w = np.ones((4, 5))
    module = cj.make_jaxpr(cj.vmap(lambda x: x @ w))(np.ones((7, 4)))
    assert [op.name for op in module.body.ops].count("dot_general") == 1
    assert "while" not in str(module)


def test_custom_rules_and_stop_gradient():
    @cj.custom_jvp
    def safe_log(x):
        return cnp.log(x)
    safe_log.defjvp(lambda p, t: (safe_log(p[0]), t[0] / cnp.maximum(p[0], 1.0)))
    np.testing.assert_allclose(interpreted(cj.grad(lambda x: cnp.sum(safe_log(x))))(X), 1.0)

    @cj.custom_vjp
    def clip_gradient(x):
        return x
    clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (cnp.clip(g, -0.5, 0.5),))
    np.testing.assert_allclose(interpreted(cj.grad(lambda x: cnp.sum(clip_gradient(x) * 3)))(X), 0.5)
    np.testing.assert_allclose(interpreted(cj.grad(lambda x: cnp.sum(x * lax.stop_gradient(x))))(X), X)
    remat = cj.checkpoint(lambda x: cnp.sin(cnp.sin(x)))
    np.testing.assert_allclose(interpreted(cj.grad(lambda x: cnp.sum(remat(x))))(X), np.cos(np.sin(X)) * np.cos(X))


def test_while_loop_forward_mode_only():
    f = lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, x))[1]
    np.testing.assert_allclose(interpreted(cj.jacfwd(f))(X), np.diag(4 * X ** 3), atol=1e-14)
    # A loop of static trip count (a counter from a constant, +1, below a constant) reverses through
    # its stored carries; one whose end depends on values does not, as in JAX.
    np.testing.assert_allclose(interpreted(cj.grad(lambda x: cnp.sum(f(x))))(X), 4 * X ** 3, rtol=1e-14)
    data_bound = lambda x: lax.while_loop(lambda c: cnp.sum(c) < 10, lambda c: c * 2, x)
    with pytest.raises(NotImplementedError, match="reverse-mode differentiation of a while_loop"):
        interpreted(cj.grad(lambda x: cnp.sum(data_bound(x))))(X)


def test_tree_util_and_helpers():
    tu = cj.tree_util

    @tu.register_pytree_node_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return (self.a, self.b), "pair"

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)
    leaves, tree = tu.tree_flatten(Pair(1, (2, 3)))
    assert leaves == [1, 2, 3] and tu.tree_unflatten(tree, [4, 5, 6]).b == (5, 6)
    g = interpreted(cj.grad(lambda p: cnp.sum(p.a * p.b)))(Pair(X, 2 * X))
    np.testing.assert_allclose(g.a, 2 * X)
    partial = tu.Partial(lambda a, b: a * b, X)
    np.testing.assert_allclose(interpreted(lambda p, y: p(y))(partial, X), X * X)
    assert tu.tree_structure({"a": 1, "b": [2]}) == tu.tree_structure({"a": 0, "b": [0]})
    shape = cj.eval_shape(lambda x: x @ x.T, cj.ShapeDtypeStruct((3, 4), np.float32))
    assert shape == cj.ShapeDtypeStruct((3, 3), np.float32)
    assert "dot_general" in str(cj.make_jaxpr(lambda x: x @ x.T)(cj.ShapeDtypeStruct((3, 4), np.float32)))
    assert cj.block_until_ready(X) is X and isinstance(cj.device_get({"x": X})["x"], np.ndarray)


def test_integer_values_have_float0_tangents():
    """As JAX: integer primals take float0 tangents (others are a TypeError), integer outputs have them,
    and grad with allow_int gives float0 zeros; inside jit and outside, through the interpreter."""
    float0 = cj.dtypes.float0
    assert float0 is cj.float0 and float0.itemsize == 0
    ints = np.arange(3)
    out, tangent = interpreted(lambda x: cj.jvp(lambda x: x * 2, (x,), (np.zeros(3, float0),)))(ints)
    np.testing.assert_array_equal(out, 2 * ints)
    assert tangent.dtype == float0 and tangent.shape == (3,)
    with pytest.raises(TypeError, match=r"looking for tangent dtype float0, but got tangent dtype int64.*test_api.py"):
        cj.jvp(lambda x: x * 2, (ints,), (ints,))
    with pytest.raises(TypeError, match=r"Got primal dtype float64.*but got tangent dtype float0"):
        cj.jvp(cnp.sin, (X,), (np.zeros(4, float0),))
    (y, n), (ty, tn) = cj.jvp(lambda x, n: (x * n, n + 1), (X, ints[:1]), (X, np.zeros(1, float0)))
    np.testing.assert_allclose(ty, X * 0)
    assert tn.dtype == float0 and tn.shape == (1,)
    gx, gn = interpreted(cj.grad(lambda x, n: cnp.sum(x * n), argnums=(0, 1), allow_int=True))(X, ints[:1])
    np.testing.assert_allclose(gx, np.zeros(4))
    assert gn.dtype == float0 and gn.shape == (1,)
    _, pullback = cj.vjp(lambda x, n: (x * n, n * 2), X, ints[:1])
    gx, gn = pullback((X, np.zeros(1, float0)))
    np.testing.assert_allclose(gx, X * 0)
    assert gn.dtype == float0


def is_float0_of(value, shape) -> bool:
    return value.dtype == cj.float0 and value.shape == shape


def test_float0_through_jacobians_vmap_and_jit_arguments():
    """As JAX: float0 Jacobian blocks for integer outputs (jacfwd) and integer inputs (jacrev with
    allow_int), float0 outputs of vmap batched along out_axes, float0 arguments of jit (no program
    parameter: the function sees float0 zeros); jacrev of an integer output is JAX's TypeError."""
    float0, ints = cj.float0, np.arange(3)
    jac = interpreted(cj.jacfwd(lambda x: (x * 2, (x * 2).astype(int))))(X)
    np.testing.assert_allclose(jac[0], 2 * np.eye(4))
    assert is_float0_of(jac[1], (4, 4))
    gx, gn = interpreted(cj.jacrev(lambda x, n: x[:2] * cnp.sum(n), argnums=(0, 1), allow_int=True))(X, ints)
    np.testing.assert_allclose(gx, 3 * np.eye(2, 4))
    assert is_float0_of(gn, (2, 3))
    with pytest.raises(TypeError, match=r"jacrev requires real-valued outputs.*int64.*test_api.py"):
        interpreted(cj.jacrev(lambda x: (x * 2).astype(int)))(X)
    with pytest.raises(TypeError, match=r"jacfwd requires real- or complex-valued inputs.*int64.*test_api.py"):
        interpreted(cj.jacfwd(lambda n: n * 1.0))(ints)
    tangent_of = lambda n: cj.jvp(lambda m: m * 2, (n,), (np.zeros(n.shape, float0),))[1]
    assert is_float0_of(interpreted(cj.vmap(tangent_of))(ints), (3,))
    assert is_float0_of(interpreted(cj.vmap(tangent_of, in_axes=1, out_axes=1))(np.ones((2, 5), int)), (2, 5))
    assert is_float0_of(interpreted(cj.vmap(lambda n: np.zeros((), float0), out_axes=None))(ints), ())
    grads = interpreted(cj.vmap(cj.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)))(X[:3], ints)
    np.testing.assert_allclose(grads[0], ints)
    assert is_float0_of(grads[1], (3,))
    with_float0 = interpreted(lambda n, t, x: (cj.jvp(lambda m: m * 2, (n,), (t,)), x + 1, t))
    (out, tangent), y, t = with_float0(ints, np.zeros(3, float0), X)
    np.testing.assert_array_equal(out, 2 * ints)
    np.testing.assert_allclose(y, X + 1)
    assert is_float0_of(tangent, (3,)) and is_float0_of(t, (3,))
    assert is_float0_of(interpreted(lambda t: t)(np.zeros((2, 0, 1), float0)), (2, 0, 1))
    lowered = cj.jit(lambda t, x: (x * 2, t), donate_argnums=1).lower(np.zeros(3, float0), X)
    assert len(lowered.module.params) == 1 and lowered.module.donated == {0}


def test_float0_as_vmap_inputs():
    """As JAX: a float0 argument is mapped along its in_axes (the function sees one lane's float0
    zeros, nothing traced) or given whole (in_axes None), and counts in the size check."""
    n = np.arange(6).reshape(3, 2)
    lanes = interpreted(cj.vmap(lambda n, t: cj.jvp(lambda n: n * 2, (n,), (t,))))(n, np.zeros((3, 2), cj.float0))
    np.testing.assert_array_equal(lanes[0], n * 2)
    assert is_float0_of(lanes[1], (3, 2))
    out, t = interpreted(cj.vmap(lambda x, t: (x * 2, t), in_axes=(0, 1)))(np.ones((2, 4)), np.zeros((4, 2), cj.float0))
    assert out.shape == (2, 4) and is_float0_of(t, (2, 4))
    seen = []
    interpreted(cj.vmap(lambda x, t: (seen.append(t.shape), x)[1], in_axes=(0, None)))(np.ones((2, 4)),
                                                                                        np.zeros(5, cj.float0))
    assert seen == [(5,)]
    with pytest.raises(ValueError, match=r"inconsistent sizes[\s\S]*float0\[3\] had size 3"):
        interpreted(cj.vmap(lambda x, t: x))(np.ones(2), np.zeros(3, cj.float0))


# ---- bad input: JAX's errors, naming the line that made the call -------------------------------

def test_grad_errors_name_the_users_line():
    with pytest.raises(TypeError, match=r"Gradient only defined for scalar-output functions.*test_api.py"):
        interpreted(cj.grad(lambda x: x * 2))(X)
    with pytest.raises(TypeError, match=r"grad requires real-valued outputs.*int64.*test_api.py"):
        interpreted(cj.grad(lambda x: cnp.sum(x).astype(int)))(X)
    with pytest.raises(TypeError, match=r"grad requires real- or complex-valued inputs.*int64.*test_api.py"):
        interpreted(cj.grad(lambda x: cnp.sum(x * 1.0)))(np.arange(3))


def test_vmap_errors():
    with pytest.raises(ValueError, match=r"(?s)vmap got inconsistent sizes for array axes to be mapped.*test_api.py"):
        interpreted(cj.vmap(lambda a, b: a + b))(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match=r"in_axes specification must be a tree prefix.*test_api.py"):
        interpreted(cj.vmap(lambda a, b: a + b, in_axes=(0, 0, 0)))(np.ones(3), np.ones(3))


def test_custom_vjp_wrong_structure():
    @cj.custom_vjp
    def f(x, y):
        return x * y
    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g * res[1],))
    with pytest.raises(TypeError, match=r"Custom VJP bwd rule must produce an output with the same container.*test_api.py"):
        interpreted(cj.grad(lambda x: cnp.sum(f(x, x))))(X)


def test_jacobians_with_aux_and_holomorphic_grad():
    f = lambda x: (cnp.sin(x) * x[0], {"aux": x * 2})
    for jacobian in (cj.jacfwd, cj.jacrev):
        jac, aux = interpreted(jacobian(f, has_aux=True))(X)
        expected = np.diag(np.cos(X) * X[0])
        expected[:, 0] += np.sin(X)
        np.testing.assert_allclose(jac, expected, rtol=1e-14)
        np.testing.assert_allclose(aux["aux"], 2 * X)
    z = np.array(1.5 + 0.5j)
    np.testing.assert_allclose(interpreted(cj.grad(lambda z: z * z, holomorphic=True))(z), 2 * z)


def test_custom_vmap_and_stop_gradient_under_vmap():
    @cj.custom_batching.custom_vmap
    def f(x):
        return x * 2

    @f.def_vmap
    def rule(axis_size, in_batched, x):
        return x * 3, in_batched[0]
    np.testing.assert_allclose(interpreted(f)(X), 2 * X)
    np.testing.assert_allclose(interpreted(cj.vmap(f))(X), 3 * X)
    # vmap first, then grad: the batched stop_gradient still stops.
    g = cj.grad(lambda x: cnp.sum(cj.vmap(cj.vmap(lambda v: v * lax.stop_gradient(v)))(x)))
    np.testing.assert_allclose(interpreted(g)(np.ones((2, 3)) * 3), np.full((2, 3), 3.0))


def test_vmap_of_dynamic_slices_with_batched_starts():
    """Each lane's window (clamped into bounds, as dynamic_slice clamps) against a loop over lanes."""
    xs = np.arange(3 * 5 * 4.).reshape(3, 5, 4)
    starts = np.array([0, 2, 7])   # 7 is clamped to 3
    window = lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 3))
    loop = np.stack([interpreted(window)(x, i) for x, i in zip(xs, starts)])
    np.testing.assert_array_equal(interpreted(cj.vmap(window))(xs, starts), loop)
    shared = np.stack([interpreted(window)(xs[0], i) for i in starts])
    np.testing.assert_array_equal(interpreted(cj.vmap(window, in_axes=(None, 0)))(xs[0], starts), shared)
    update = lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 1))
    us = -np.ones((3, 2, 3))
    loop = np.stack([interpreted(update)(x, u, i) for x, u, i in zip(xs, us, starts)])
    np.testing.assert_array_equal(interpreted(cj.vmap(update))(xs, us, starts), loop)
    grads = interpreted(cj.vmap(cj.grad(lambda x, i: cnp.sum(window(x, i) ** 2))))(xs, starts)
    np.testing.assert_array_equal(grads, np.stack([interpreted(cj.grad(lambda x: cnp.sum(window(x, i) ** 2)))(x)
                                                   for x, i in zip(xs, starts)]))


def test_array_and_config():
    assert isinstance(np.ones(2), cj.Array) and not isinstance([1.0], cj.Array)
    seen = []
    cj.jit(lambda x: seen.append(isinstance(x, cj.Array)) or x)(np.ones(2))
    assert seen == [True]
    cj.config.update("jax_enable_x64", True)
    assert cj.config.jax_enable_x64 is True
    with pytest.raises(NotImplementedError, match="jax_enable_x64"):
        cj.config.update("jax_enable_x64", False)
    with pytest.raises(AttributeError, match="Unrecognized config option: jax_no_such_flag"):
        cj.config.update("jax_no_such_flag", 1)


def test_ensure_compile_time_eval():
    """Inside jit, calls on concrete values are computed at once (Python control flow reads them);
    calls on traced values stay traced."""
    @interpreted
    def f(x):
        with cj.ensure_compile_time_eval():
            table = cnp.cos(np.arange(4.0))
            assert isinstance(table, np.ndarray)
            scale = 2.0 if float(cnp.sum(table)) < 1 else 3.0
            traced = cnp.sin(x)
        assert isinstance(cnp.cos(np.arange(4.0)), cj.Array) and not isinstance(cnp.cos(np.arange(4.0)), np.ndarray)
        return traced * scale + table
    np.testing.assert_allclose(f(X), np.sin(X) * 2.0 + np.cos(np.arange(4.0)), rtol=1e-15)


def test_abs_derivative_as_jax():
    """JAX's values: d|x|/dx is 1 at 0 (its rule selects x >= 0); grad of |z| at complex z is
    conj(z) / |z| (its transpose convention), 0 at 0."""
    grad_abs = interpreted(cj.vmap(cj.grad(cnp.abs)))
    np.testing.assert_array_equal(grad_abs(np.array([-2.0, 0.0, 3.0])), [-1.0, 1.0, 1.0])
    np.testing.assert_allclose(grad_abs(np.array([3 + 4j, 0j])), [0.6 - 0.8j, 0], rtol=1e-15)
    _, tangent = interpreted(lambda z, t: cj.jvp(cnp.abs, (z,), (t,)))(np.array([3 + 4j]), np.array([1j]))
    np.testing.assert_allclose(tangent, [0.8], rtol=1e-15)


def test_scatter_set_gradient_as_jax():
    """JAX's values: of updates to one place only the last stays and has a gradient; the overwritten x
    has none."""
    f = lambda x, u: cnp.sum(x.at[np.array([0, 0, 2])].set(u) * np.array([1.0, 2.0, 3.0]))
    gx, gu = interpreted(cj.grad(f, argnums=(0, 1)))(np.ones(3), np.ones(3))
    np.testing.assert_array_equal(gx, [0.0, 2.0, 0.0])
    np.testing.assert_array_equal(gu, [0.0, 1.0, 3.0])


def test_scatter_extreme_and_product_gradients():
    """max/min: JAX's values at ties (the result's cotangent shared equally by x and the updates equal to
    it). mul: exact with zeros and repeated indices (an update's derivative is x times the product of the
    others there; JAX computes only unique indices' and raises otherwise)."""
    f = lambda x, u: cnp.sum(x.at[np.array([0, 0, 0, 1])].max(u) * np.array([1.0, 2.0, 3.0]))
    gx, gu = interpreted(cj.grad(f, argnums=(0, 1)))(np.array([1.0, 0.0, 5.0]), np.array([1.0, 0.5, 1.0, -1.0]))
    np.testing.assert_allclose(gx, [1 / 3, 2.0, 3.0], rtol=1e-15)
    np.testing.assert_allclose(gu, [1 / 3, 0.0, 1 / 3, 0.0], rtol=1e-15)
    g = lambda x, u: cnp.sum(x.at[np.array([0, 0, 0, 1, 1])].multiply(u))
    gx, gu = interpreted(cj.grad(g, argnums=(0, 1)))(np.array([2.0, 3.0, 4.0]), np.array([0.0, 5.0, 7.0, 0.0, 0.0]))
    np.testing.assert_array_equal(gx, [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(gu, [70.0, 0.0, 0.0, 0.0, 0.0])
