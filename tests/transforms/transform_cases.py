"""The transformations whose results generate_jax_transforms.py stores (jax_transforms.json) and
test_jax_transforms.py compares. Each case is a function of a namespace `ns` (ns.np: jax.numpy or
cdnajit.numpy; ns.lax; ns.api: jax or cdnajit) returning a pytree of float64 arrays. Inputs are
fixed formulas (no random generators, which differ between the two)."""
from __future__ import annotations

import numpy as np


def ramp(*shape, scale=1.0, phase=0.0):
    """A deterministic array of values in [-scale, scale]."""
    n = int(np.prod(shape))
    return (scale * np.sin(np.arange(n) * 0.7 + phase)).reshape(shape)


def complex_ramp(*shape, phase=0.0):
    return ramp(*shape, phase=phase) + 1j * ramp(*shape, phase=phase + 0.35)


def hermitian(n, phase):
    """A Hermitian positive definite matrix of distinct eigenvalues."""
    b = complex_ramp(n, n, phase=phase)
    return b @ b.conj().T + np.diag(np.arange(1.0, n + 1))


def mlp_loss(ns):
    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        h = ns.np.tanh(x @ w1 + b1)
        return ns.np.mean((h @ w2 + b2 - y) ** 2)
    return loss


MLP_ARGS = (((ramp(5, 8, scale=0.5), ramp(8, phase=1.0)), (ramp(8, 3, scale=0.5, phase=2.0), ramp(3, phase=3.0))),
            ramp(16, 5, phase=4.0), ramp(16, 3, phase=5.0))


def rosenbrock(ns):
    return lambda x: ns.np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logistic_loss(ns):
    return lambda w, x, y: ns.np.log1p(ns.np.exp(-y * ns.np.dot(x, w)))


def rnn_loss(ns):
    def loss(w, xs):
        h, hs = ns.lax.scan(lambda h, x: (ns.np.tanh(w @ h + x), h), ns.np.zeros(4), xs)
        return ns.np.sum(h ** 2) + ns.np.sum(hs)
    return loss


def branchy(ns):
    return lambda x: ns.lax.cond(x[0] > 0, lambda v: ns.np.sin(v) * v, lambda v: ns.np.exp(v), x).sum()


CASES = {
    "mlp_value_and_grad": lambda ns: ns.api.value_and_grad(mlp_loss(ns))(*MLP_ARGS),
    "rosenbrock_hessian": lambda ns: ns.api.hessian(rosenbrock(ns))(ramp(7, scale=1.2)),
    "per_example_grads": lambda ns: ns.api.vmap(ns.api.grad(logistic_loss(ns)), in_axes=(None, 0, 0))(
        ramp(6, phase=0.3), ramp(10, 6, phase=1.1), np.sign(ramp(10, phase=2.0))),
    "rnn_grad": lambda ns: ns.api.grad(rnn_loss(ns))(ramp(4, 4, scale=0.4), ramp(5, 4, phase=0.5)),
    "cond_grads": lambda ns: [ns.api.grad(branchy(ns))(ramp(3, phase=p)) for p in (0.5, 3.5)],
    "jacfwd_jacrev": lambda ns: [ns.api.jacfwd(ns.np.sin)(ramp(3)), ns.api.jacrev(lambda x: x[::-1] * x)(ramp(4))],
    # cumprod through zeros (JAX: the JVP of its associative scan), forward and reverse
    "cumprod_grads": lambda ns: [ns.api.grad(lambda x: ns.np.sum(ns.lax.cumprod(x, axis=1, reverse=r) * ramp(3, 4)))(
        ramp(3, 4) * np.array([1.0, 0.0, 1.0, 1.0])) for r in (False, True)]
        + [ns.api.jacfwd(ns.np.cumprod)(ramp(5) * np.array([1.0, 1.0, 0.0, 1.0, 0.0]))],
    # scatter max/min with ties (x[0] and the update 0.5 both attain row 0's max at column 0: shared),
    # mul with unique indices (JAX differentiates the updates only then)
    "scatter_extreme_mul_grads": lambda ns: [
        ns.api.grad(lambda x, u: ns.np.sum(x.at[np.array([0, 2, 0])].max(u) * ramp(3, 2)), argnums=(0, 1))(
            np.array([[0.5, 1.0], [0.0, 0.0], [2.0, -1.0]]), np.array([[0.5, 0.2], [3.0, 1.0], [-1.0, 1.0]])),
        ns.api.grad(lambda x, u: ns.np.sum(x.at[np.array([1, 1])].min(u) * ramp(3, 2)), argnums=(0, 1))(
            np.array([[0.5, 1.0], [0.25, 0.0], [2.0, -1.0]]), np.array([[0.25, 0.2], [0.25, -1.0]])),
        ns.api.grad(lambda x, u: ns.np.sum(x.at[np.array([2, 0])].multiply(u, unique_indices=True) * ramp(3, 2)),
                    argnums=(0, 1))(ramp(3, 2, phase=1.0), np.array([[0.0, 2.0], [3.0, 0.5]]))],
    # the factorizations' derivatives (functions of Q, U, V that do not depend on their columns' signs;
    # ramps have rank 2, so an identity is added: full rank, distinct singular values)
    "linalg_factorization_grads": lambda ns: [
        ns.api.grad(lambda a: ns.np.sum(ns.np.sin(ns.np.linalg.qr(a)[0] @ ns.np.linalg.qr(a)[1] * 2.0))
                    + ns.np.sum(ns.np.linalg.qr(a)[1] ** 2) + ns.np.sum(ns.np.linalg.qr(a)[0] ** 3 * ns.np.linalg.qr(a)[0]))(
            ramp(5, 3, phase=0.2) + np.eye(5, 3)),
        ns.api.grad(lambda a: ns.np.sum(ns.np.sin(ns.np.linalg.svd(a, full_matrices=False)[1]))
                    + ns.np.sum(ns.np.linalg.svd(a, full_matrices=False)[0] ** 2 * ramp(5, 3))
                    + ns.np.sum(ns.np.linalg.svd(a, full_matrices=False)[2] ** 2 * ramp(3, 3, phase=1.0)))(
            ramp(5, 3, phase=0.4) + 2 * np.eye(5, 3)),
        ns.api.jacrev(lambda a: ns.np.linalg.svd(a, compute_uv=False))(ramp(3, 4, phase=0.6) + 2 * np.eye(3, 4)),
        ns.api.grad(lambda a: ns.np.sum(ns.np.sin(ns.np.linalg.pinv(a))))(ramp(3, 5, phase=0.8) + 2 * np.eye(3, 5)),
        ns.api.grad(lambda a, b: ns.np.sum(ns.np.linalg.lstsq(a, b)[0] ** 2), argnums=(0, 1))(
            ramp(6, 3, phase=1.2) + 2 * np.eye(6, 3), ramp(6, 2, phase=1.4))],
    # complex matrices: gradients of real functions (JAX's convention), stored as real and imaginary
    # parts; functions of singular vectors and of Q and R through |.|, which does not depend on their
    # columns' phases. Not eigh: the interpreter's Jacobi eigenvectors are accurate to ~1e-9, beyond
    # this file's tolerance (tests/frontend/test_numpy_linalg_complex.py checks its reverse mode)
    "complex_factorization_grads": lambda ns: [
        part(ns, g) for g in [
            ns.api.grad(lambda a: ns.np.sum(ns.np.sin(ns.np.real(ns.np.linalg.cholesky(a))))
                        + ns.np.sum(ns.np.imag(ns.np.linalg.cholesky(a)) ** 2))(hermitian(4, 0.3)),
            ns.api.grad(lambda a: 2 * ns.np.real(ns.np.linalg.slogdet(a)[0]) + ns.np.imag(ns.np.linalg.slogdet(a)[0])
                        + ns.np.linalg.slogdet(a)[1])(complex_ramp(3, 3, phase=1.1) + 2 * np.eye(3)),
            ns.api.grad(lambda a: ns.np.sum(ns.np.abs(ns.np.linalg.qr(a)[0]) ** 2 * ramp(5, 3, phase=0.3))
                        + ns.np.sum(ns.np.abs(ns.np.linalg.qr(a)[1]) ** 3))(complex_ramp(5, 3, phase=1.3) + np.eye(5, 3)),
            ns.api.grad(lambda a: ns.np.sum(ns.np.sin(ns.np.linalg.svd(a, full_matrices=False)[1]))
                        + ns.np.sum(ns.np.abs(ns.np.linalg.svd(a, full_matrices=False)[0]) ** 2 * ramp(5, 3))
                        + ns.np.sum(ns.np.abs(ns.np.linalg.svd(a, full_matrices=False)[2]) ** 2 * ramp(3, 3, phase=1.0)))(
                complex_ramp(5, 3, phase=1.5) + 2 * np.eye(5, 3)),
            ns.api.grad(lambda a: ns.np.sum(ns.np.linalg.svd(a, compute_uv=False) ** 2 * ramp(3)))(
                complex_ramp(3, 4, phase=1.7) + 2 * np.eye(3, 4)),
            ns.api.grad(lambda a: ns.np.sum(ns.np.sin(ns.np.real(ns.np.linalg.pinv(a))))
                        + ns.np.sum(ns.np.imag(ns.np.linalg.pinv(a)) ** 2))(complex_ramp(3, 5, phase=1.9) + 2 * np.eye(3, 5)),
        ] for part in (lambda ns, g: ns.np.real(g), lambda ns, g: ns.np.imag(g))],
    # QR of wide matrices (JAX 0.10.2's rule: the square block's, then dR2 = dQ^H A2 + Q^H dA2)
    "qr_wide_grads": lambda ns: [
        ns.api.grad(lambda a: ns.np.sum(ns.np.abs(ns.np.linalg.qr(a)[0]) ** 2 * ramp(3, 3, phase=0.2))
                    + ns.np.sum(ns.np.sin(ns.np.abs(ns.np.linalg.qr(a)[1]))))(ramp(3, 5, phase=2.1) + 2 * np.eye(3, 5)),
        *[part(ns, ns.api.grad(lambda a: ns.np.sum(ns.np.abs(ns.np.linalg.qr(a)[1]) ** 2 * ramp(2, 4, phase=0.4)))(
            complex_ramp(2, 4, phase=2.3) + 2 * np.eye(2, 4)))
          for part in (lambda ns, g: ns.np.real(g), lambda ns, g: ns.np.imag(g))]],
    # the complete Q of tall matrices (JAX 0.10.2's rule: Roberts and Roberts' derivative of the
    # Householder completion), real and complex
    "qr_complete_grads": lambda ns: [
        ns.api.grad(lambda a: ns.np.sum(ns.np.sin(ns.np.linalg.qr(a, mode="complete")[0]) * ramp(5, 5, phase=0.7))
                    + ns.np.sum(ns.np.linalg.qr(a, mode="complete")[1] ** 2))(ramp(5, 3, phase=1.3) + 2 * np.eye(5, 3)),
        *[part(ns, ns.api.grad(lambda a: ns.np.sum(ns.np.abs(ns.np.linalg.qr(a, mode="complete")[0]) ** 3
                                                  * ramp(4, 4, phase=0.3)))(complex_ramp(4, 2, phase=0.9) + np.eye(4, 2)))
          for part in (lambda ns, g: ns.np.real(g), lambda ns, g: ns.np.imag(g))]],
}
