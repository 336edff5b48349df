"""Derivatives of cnp.linalg's solver-library functions (solve, inv, det, slogdet, cholesky, eigh, qr, svd,
pinv: one call op each with rules of its own, frontend/cnp/linalg_rules.py; lstsq through svd's) against
central finite differences of numpy's functions, and their vmap against a loop, through the reference
interpreter. QR and SVD factors are unique up to the signs of Q's (U's, V's) columns, so their cases
take functions of them that do not depend on those signs (Q diag(c) R, U diag(c) Vh, squares).

Error model (float64): the central difference with h = 1e-6 is off by h^2/6 |f'''| plus ~eps |f| / h
(~1e-10 for these O(1)-conditioned matrices, A = N(0,1) + 4 I); the rules' answers go through a few
LU solves (~1e-14 relative). Tolerance 1e-7 (1 + |grad|): far above both, far below a wrong rule's
O(1) error. The hessian is checked against differences of the (checked) gradient, and vmap against a
loop to 1e-12 relative (the same solves, in another batch order). eigh's hessian is not checked so:
its gradient comes from an iterative (Jacobi) solver converged to ~1e-10, which a difference with
h = 1e-6 amplifies to ~1e-4 (the hessian the rule gives is symmetric; the difference is not).
"""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp

STEP = 1e-6
RNG = np.random.default_rng(31)
A = RNG.normal(size=(2, 4, 4)) + 4 * np.eye(4)
B = RNG.normal(size=(2, 4, 3))

# name: (cdnajit function of one stack, numpy's, the argument)
CASES = {
    "solve_a": (lambda a: cnp.sum(cnp.sin(cnp.linalg.solve(a, B))), lambda a: np.sum(np.sin(np.linalg.solve(a, B))), A),
    "solve_b": (lambda b: cnp.sum(cnp.sin(cnp.linalg.solve(A, b))), lambda b: np.sum(np.sin(np.linalg.solve(A, b))), B),
    "solve_vector": (lambda b: cnp.sum(cnp.linalg.solve(A[0], b) ** 2), lambda b: np.sum(np.linalg.solve(A[0], b) ** 2),
                     B[0, :, 0]),
    "inv": (lambda a: cnp.sum(cnp.linalg.inv(a) ** 2), lambda a: np.sum(np.linalg.inv(a) ** 2), A),
    "det": (lambda a: cnp.sum(cnp.linalg.det(a)), lambda a: np.sum(np.linalg.det(a)), A),
    "slogdet": (lambda a: cnp.sum(cnp.linalg.slogdet(a)[1]), lambda a: np.sum(np.linalg.slogdet(a)[1]), A),
    "cholesky": (lambda a: cnp.sum(cnp.sin(cnp.linalg.cholesky(a @ a.mT))),
                 lambda a: np.sum(np.sin(np.linalg.cholesky(a @ a.mT))), A),
    # eigenvectors up to sign: a sign-invariant function of them (V diag(w^2) V^T = A^2 ... plus V's squares)
    "eigh": (lambda a: cnp.sum(cnp.sin(cnp.linalg.eigh(a + a.mT)[0])) + cnp.sum(cnp.linalg.eigh(a + a.mT)[1] ** 4),
             lambda a: np.sum(np.sin(np.linalg.eigh(a + a.mT)[0])) + np.sum(np.linalg.eigh(a + a.mT)[1] ** 4), A),
}
TALL = RNG.normal(size=(2, 5, 3))
WIDE = RNG.normal(size=(3, 5))
C4 = np.array([1.0, -0.5, 2.0, 0.7])
C5 = np.append(C4, -1.3)
W55 = RNG.normal(size=(5, 5))
B52 = RNG.normal(size=(5, 2))
B32 = RNG.normal(size=(3, 2))


def qr_function(linalg, sin, mode="reduced"):
    def f(a):
        q, r = linalg.qr(a, mode=mode)
        return (sin((q * C5[:q.shape[-1]]) @ r).sum() + (r ** 2).sum()
                + (q ** 2 * W55[:q.shape[-2], :q.shape[-1]]).sum())
    return f


def svd_function(linalg, sin):
    def f(a):
        u, s, vt = linalg.svd(a, full_matrices=False)
        k = s.shape[-1]
        return (sin(s).sum() + sin((u * C4[:k]) @ vt).sum() + (u ** 2 * W55[:u.shape[-2], :k]).sum()
                + (vt ** 2 * W55[:k, :vt.shape[-1]]).sum())
    return f


CASES.update({
    "qr_tall": (qr_function(cnp.linalg, cnp.sin), qr_function(np.linalg, np.sin), TALL),
    "qr_square": (qr_function(cnp.linalg, cnp.sin), qr_function(np.linalg, np.sin), A[0]),
    "qr_wide": (qr_function(cnp.linalg, cnp.sin), qr_function(np.linalg, np.sin), WIDE),
    # the complete Q of a tall matrix: Q2 is LAPACK's (Householder) completion, as numpy's
    "qr_complete": (qr_function(cnp.linalg, cnp.sin, "complete"), qr_function(np.linalg, np.sin, "complete"), TALL),
    "svd_tall": (svd_function(cnp.linalg, cnp.sin), svd_function(np.linalg, np.sin), TALL),
    "svd_wide": (svd_function(cnp.linalg, cnp.sin), svd_function(np.linalg, np.sin), WIDE),
    "svdvals": (lambda a: cnp.sum(cnp.sin(cnp.linalg.svd(a, compute_uv=False))),
                lambda a: np.sum(np.sin(np.linalg.svd(a, compute_uv=False))), TALL),
    "pinv_tall": (lambda a: cnp.sum(cnp.sin(cnp.linalg.pinv(a))), lambda a: np.sum(np.sin(np.linalg.pinv(a))), TALL),
    "pinv_wide": (lambda a: cnp.sum(cnp.sin(cnp.linalg.pinv(a))), lambda a: np.sum(np.sin(np.linalg.pinv(a))), WIDE),
    "lstsq_tall": (lambda a: cnp.sum(cnp.sin(cnp.linalg.lstsq(a, B52)[0])),
                   lambda a: np.sum(np.sin(np.linalg.lstsq(a, B52, rcond=None)[0])), TALL[0]),
    "lstsq_wide": (lambda a: cnp.sum(cnp.sin(cnp.linalg.lstsq(a, B32)[0])),
                   lambda a: np.sum(np.sin(np.linalg.lstsq(a, B32, rcond=None)[0])), WIDE),
})
SMOKE = ["solve_a", "slogdet", "svd_tall"]


def central_difference(f, x):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = STEP
        g[i] = (f(x + e) - f(x - e)) / (2 * STEP)
    return g


def interpreted(fn):
    return cj.jit(fn, backend="interpret")


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in SMOKE else pytest.mark.slow) for n in CASES])
def test_grad_and_jvp_against_differences(name):
    f, numpy_f, x = CASES[name]
    expected = central_difference(numpy_f, x)
    tolerance = 1e-7 * (1 + np.abs(expected).max())
    np.testing.assert_allclose(interpreted(cj.grad(f))(x), expected, rtol=0, atol=tolerance)
    direction = RNG.normal(size=x.shape)
    tangent = interpreted(lambda x, t: cj.jvp(f, (x,), (t,))[1])(x, direction)
    np.testing.assert_allclose(tangent, np.sum(expected * direction), rtol=0, atol=tolerance * x.size)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["solve_a", "det", "slogdet", "cholesky"])
def test_hessian_against_differences_of_the_gradient(name):
    f, _, x = CASES[name]
    x = x[0]
    grad = interpreted(cj.grad(lambda a: f(a[None])))
    expected = np.stack([central_difference(lambda y: np.asarray(grad(y))[i], x) for i in np.ndindex(x.shape)])
    hessian = np.asarray(interpreted(cj.hessian(lambda a: f(a[None])))(x)).reshape(expected.shape)
    np.testing.assert_allclose(hessian, expected, rtol=0, atol=1e-6 * (1 + np.abs(expected).max()))


@pytest.mark.slow
def test_vmap_against_a_loop():
    fns = [lambda a, b: cnp.linalg.solve(a, b), lambda a, b: cnp.linalg.inv(a),
           lambda a, b: cnp.linalg.det(a), lambda a, b: cnp.linalg.slogdet(a)[1],
           lambda a, b: cnp.linalg.cholesky(a @ a.mT), lambda a, b: cnp.linalg.eigh(a + a.mT)[0],
           lambda a, b: cnp.linalg.qr(a)[1] ** 2, lambda a, b: cnp.linalg.svd(a, compute_uv=False),
           lambda a, b: cnp.linalg.pinv(a[:, :3])]
    for fn in fns:
        batched = interpreted(cj.vmap(fn, in_axes=(0, None)))(A, B[0])
        loop = np.stack([interpreted(fn)(a, B[0]) for a in A])
        np.testing.assert_allclose(batched, loop, rtol=1e-12, atol=0)
    per_example = interpreted(cj.vmap(cj.grad(lambda a, b: cnp.sum(cnp.linalg.solve(a, b))), in_axes=(0, None)))
    loop = np.stack([interpreted(cj.grad(lambda a: cnp.sum(cnp.linalg.solve(a, B[0]))))(a) for a in A])
    np.testing.assert_allclose(per_example(A, B[0]), loop, rtol=1e-12, atol=0)


def test_undefined_factorization_derivatives_raise():
    """Full U/Vh of a non-square svd have no derivative (as JAX's). QR of a wide matrix has (JAX's
    values in test_jax_transforms)."""
    assert interpreted(cj.grad(lambda a: cnp.sum(cnp.linalg.qr(a)[1])))(WIDE).shape == WIDE.shape
    with pytest.raises(NotImplementedError, match="full_matrices=True is defined for square matrices only"):
        interpreted(cj.grad(lambda a: cnp.sum(cnp.linalg.svd(a)[0] ** 2)))(TALL)
