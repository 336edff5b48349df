"""W11: loop programs written as a JAX user writes them (`lax.fori_loop`, `while_loop`, `scan`,
`.at[].set`, `dynamic_slice`), run under cdnajit (`cdnajit.numpy` and `cdnajit.lax`), JAX and numpy.

Each program takes the array namespace `xp` and the loop namespace `lax` (cdnajit's, JAX's, or
NUMPY_LAX: the same loops as the Python loops a numpy user writes). Programs that update an array
in place through `.at[]` have a numpy twin that assigns into a copy, as numpy code does.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import cdnajit as cj
import cdnajit.lax as clax
import cdnajit.numpy as cnp
from workloads import Case, Context, Workload, jax_call_x64, normal, rng

F32_EPSILON = 2.0**-24   # unit roundoff of float32
F64_EPSILON = 2.0**-53   # unit roundoff of float64


def numpy_fori_loop(lower, upper, body, carry):
    for i in range(lower, upper):
        carry = body(i, carry)
    return carry


def numpy_while_loop(cond, body, carry):
    while cond(carry):
        carry = body(carry)
    return carry


def numpy_scan(f, carry, xs):
    ys = []
    for x in xs:
        carry, y = f(carry, x)
        ys.append(y)
    return carry, np.stack(ys)


# The loops of jax.lax the W11 programs use, as Python loops over numpy arrays.
NUMPY_LAX = SimpleNamespace(fori_loop=numpy_fori_loop, while_loop=numpy_while_loop, scan=numpy_scan)


def bind_loops(program, xp, lax):
    """`program(xp, lax, *arrays)` as a function of the arrays, keeping the program's name."""
    def bound(*arrays):
        return program(xp, lax, *arrays)
    bound.__name__ = program.__name__
    return bound


def cdnajit_peer(program):
    return cj.jit(bind_loops(program, cnp, clax))


def jax_peer(program, ctx: Context, inputs, x64: bool = False):
    """`jax.jit` of the program, or None without JAX; with `x64`, computing with 64-bit types
    (workloads.jax_call_x64)."""
    if ctx.jax is None:
        return None
    jitted = ctx.jax.jit(bind_loops(program, ctx.jax.numpy, ctx.jax.lax))
    if not x64:
        return jitted
    return jax_call_x64(ctx.jax, jitted, inputs)


# ---- the programs

GAUSS_SEIDEL_STEPS = 4


def gauss_seidel(xp, lax, a):
    """Gauss-Seidel sweeps of the 5-point Laplace stencil over the interior of `a` (its border is a
    fixed boundary), one `.at[i, j].set` per point, rows and columns in order."""
    rows, columns = a.shape

    def point(i, j, a):
        return a.at[i, j].set((a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]) * 0.25)

    def row(i, a):
        return lax.fori_loop(1, columns - 1, lambda j, a: point(i, j, a), a)

    def sweep(_, a):
        return lax.fori_loop(1, rows - 1, row, a)

    return lax.fori_loop(0, GAUSS_SEIDEL_STEPS, sweep, a)


def gauss_seidel_numpy(a):
    a = a.copy()
    rows, columns = a.shape
    for _ in range(GAUSS_SEIDEL_STEPS):
        for i in range(1, rows - 1):
            for j in range(1, columns - 1):
                a[i, j] = (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]) * np.float32(0.25)
    return a


def forward_substitution(xp, lax, lower, b):
    """x with `lower @ x = b` for a lower-triangular `lower`: row i's dot with the x found so far
    (zero beyond i) gives x[i]."""
    n = b.shape[0]

    def solve_row(i, x):
        row = lax.dynamic_slice(lower, (i, 0), (1, n))[0]
        return x.at[i].set((b[i] - row @ x) / row[i])

    return lax.fori_loop(0, n, solve_row, xp.zeros_like(b))


def forward_substitution_numpy(lower, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - lower[i, :i] @ x[:i]) / lower[i, i]
    return x


def floyd_warshall(xp, lax, distances):
    """All-pairs shortest path lengths: paths through vertex k relax every pair, for each k."""
    def relax(k, d):
        return xp.minimum(d, d[:, k, None] + d[None, k, :])
    return lax.fori_loop(0, distances.shape[0], relax, distances)


JACOBI_STEPS = 1000


def jacobi(xp, lax, x, steps=JACOBI_STEPS):
    """Jacobi steps of the 3-point averaging stencil; the two end points stay fixed."""
    def step(_, x):
        return x.at[1:-1].set((x[:-2] + x[1:-1] + x[2:]) / 3)
    return lax.fori_loop(0, steps, step, x)


def jacobi_numpy(x, steps=JACOBI_STEPS):
    x = x.copy()
    for _ in range(steps):
        x[1:-1] = (x[:-2] + x[1:-1] + x[2:]) / np.float32(3)
    return x


def newton_sqrt(xp, lax, a):
    """sqrt(a) by Newton's iteration x -> x - (x*x - a) / (2x) from x = a, until the largest update
    is below 1e-12: the trip count depends on the data."""
    def unconverged(state):
        _, update = state
        return xp.max(xp.abs(update)) >= 1e-12

    def step(state):
        x, _ = state
        update = (x * x - a) / (2 * x)
        return x - update, update

    x, _ = lax.while_loop(unconverged, step, (a, xp.full_like(a, xp.inf)))
    return x


EMA_DECAY = 0.9


def ema_scan(xp, lax, xs):
    """The exponential moving average of the rows of xs, each step's average stacked."""
    def step(average, x):
        average = EMA_DECAY * average + (1 - EMA_DECAY) * x
        return average, average
    _, averages = lax.scan(step, xp.zeros(xs.shape[1], xs.dtype), xs)
    return averages


# ---- the builders

def build_gauss_seidel(ctx: Context) -> Case:
    n = 12 if ctx.quick else 100
    a = rng(20).uniform(0.0, 1.0, (n, n)).astype(np.float32)
    # Each update averages four values with 4 roundings (<= 4 ulp of max|a|, the average cannot
    # exceed it), and averaging does not amplify earlier errors; an update's error reaches the
    # later points along a chain of dependencies at most 2n long per sweep. Both results carry it.
    atol = 2 * GAUSS_SEIDEL_STEPS * 2 * n * 4 * F32_EPSILON * float(np.max(np.abs(a)))
    return Case((a,), cdnajit_peer(gauss_seidel), numpy=gauss_seidel_numpy,
                jax=jax_peer(gauss_seidel, ctx, (a,)), tolerance=(0.0, atol))


def build_forward_substitution(ctx: Context) -> Case:
    n = 64 if ctx.quick else 2000
    generator = rng(21)
    # Diagonal in [1, 2], off-diagonal sums of magnitude below 1/2: |x| <= 2 max|b| and
    # || |L^-1| |L| || stays below ~4, so the solve is well conditioned at every n.
    lower = np.tril(generator.uniform(-1.0, 1.0, (n, n)) / (2 * n), -1) + np.diag(generator.uniform(1.0, 2.0, n))
    b = generator.standard_normal(n)
    # Forward substitution is componentwise backward stable, |dL| <= n u |L| (Higham, Accuracy and
    # Stability of Numerical Algorithms, thm 8.5): forward error <= n u || |L^-1||L| || |x|
    # <= n u * 4 * 2 max|b| for each result, whatever the order of each row's sum.
    atol = 2 * n * F64_EPSILON * 4 * 2 * float(np.max(np.abs(b)))
    inputs = (lower, b)
    return Case(inputs, cdnajit_peer(forward_substitution), numpy=forward_substitution_numpy,
                jax=jax_peer(forward_substitution, ctx, inputs, x64=True), tolerance=(0.0, atol))


def build_floyd_warshall(ctx: Context) -> Case:
    n = 32 if ctx.quick else 300
    generator = rng(22)
    distances = generator.uniform(1.0, 10.0, (n, n)).astype(np.float32)
    distances[generator.uniform(size=(n, n)) < 0.5] = np.inf   # half the edges missing
    np.fill_diagonal(distances, 0.0)
    # Every peer makes the same sequence of correctly rounded f32 additions and exact minima per
    # element and k: the results are identical.
    return Case((distances,), cdnajit_peer(floyd_warshall), numpy=lambda d: floyd_warshall(np, NUMPY_LAX, d),
                jax=jax_peer(floyd_warshall, ctx, (distances,)), tolerance=(0.0, 0.0))


def build_jacobi(ctx: Context) -> Case:
    n, steps = (256, 50) if ctx.quick else (4000, JACOBI_STEPS)
    x = normal(rng(23), (n,))

    def program(xp, lax, x):
        return jacobi(xp, lax, x, steps)
    program.__name__ = "jacobi"
    # Three roundings a step (two additions, a division), each <= 1 ulp of max|x| (an average never
    # exceeds it); averaging does not amplify earlier errors. Both results carry it.
    atol = 2 * steps * 3 * F32_EPSILON * float(np.max(np.abs(x)))
    return Case((x,), cdnajit_peer(program), numpy=lambda x: jacobi_numpy(x, steps),
                jax=jax_peer(program, ctx, (x,)), tolerance=(0.0, atol))


def build_newton(ctx: Context) -> Case:
    n = 4096 if ctx.quick else 2**20
    a = rng(24).uniform(0.01, 100.0, n)
    # Newton's map converges quadratically: after an update below 1e-12 the error left is ~1e-24,
    # and the rounded map's fixed points lie within 2 ulp of sqrt(a), for each result: 4 ulp
    # (2**-52 relative each) apart at most.
    return Case((a,), cdnajit_peer(newton_sqrt), numpy=lambda a: newton_sqrt(np, NUMPY_LAX, a),
                jax=jax_peer(newton_sqrt, ctx, (a,), x64=True), tolerance=(4 * 2.0**-52, 0.0))


def build_ema_scan(ctx: Context) -> Case:
    steps = 200 if ctx.quick else 10_000
    xs = normal(rng(25), (steps, 256))
    # A step rounds three times (two products, a sum), <= 3 ulp of max|x| (an average never exceeds
    # it); earlier errors shrink by EMA_DECAY each step, so they sum to at most 3 u max|x| / (1 - 0.9).
    # A fused multiply-add rounds less. Both results carry it.
    atol = 2 * 3 * F32_EPSILON * float(np.max(np.abs(xs))) / (1 - EMA_DECAY)
    return Case((xs,), cdnajit_peer(ema_scan), numpy=lambda xs: ema_scan(np, NUMPY_LAX, xs),
                jax=jax_peer(ema_scan, ctx, (xs,)), tolerance=(0.0, atol))


LOOP_WORKLOADS = (
    Workload("W11.gauss_seidel", "Gauss-Seidel 2-D, 100x100 f32, 4 steps: three nested fori_loops, "
             "a.at[i, j].set per point (numpy: Python loops)", build_gauss_seidel),
    Workload("W11.forward_subst", "forward substitution L x = b, n=2000 f64: fori_loop, dynamic_slice of "
             "a row, x.at[i].set (numpy: a Python loop of row dots)", build_forward_substitution),
    Workload("W11.floyd_warshall", "Floyd-Warshall, 300x300 f32: fori_loop over k of "
             "minimum(D, D[:, k, None] + D[None, k, :])", build_floyd_warshall),
    Workload("W11.jacobi", "1-D Jacobi, 1000 fori_loop steps of a 3-point average over 4000 f32",
             build_jacobi),
    Workload("W11.newton", "Newton sqrt over 1 Mi f64: while_loop until the largest update < 1e-12",
             build_newton),
    Workload("W11.ema_scan", "scan of an exponential moving average: a 256-f32 state through 10000 steps",
             build_ema_scan),
)
