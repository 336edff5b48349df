"""cdnajit.random beyond JAX's stored answers (tests/known_answers/test_jax_random.py):

- accuracy: each transform of uniform floats against numpy/scipy applied to the same uniform floats
  (which are bit-exact), within 2 eps max(1, |x|) (both sides' functions within an ulp, the formula's
  arithmetic rounding once or twice more);
- distributions of the rejection-loop samplers (gamma, beta, dirichlet, t, poisson) and the
  factorizing ones, by Kolmogorov-Smirnov tests against scipy.stats at significance 1e-4 (with fixed
  keys: a test fails for a wrong distribution, never by chance run to run) and by identities
  (orthonormal columns, the unit ball, a covariance within 5 standard errors);
- the threefry hash compiled against the reference interpreter, its fusion into the sampler's kernel,
  typed keys through jit, and the errors of bad input.
The samplers with nested loops take seconds to trace and compile each: most of them are slow.
"""
import numpy as np
import pytest
import scipy.special
import scipy.stats

import cdnajit as cj
import cdnajit.random as cr

KEY = cr.PRNGKey(2024)
N = 4000


def uniform_inputs(lo, dtype, n=N, key=KEY):
    """The uniform floats in [lo, 1) a transform reads, as the sampler draws them."""
    return cr.uniform(key, (n,), dtype, lo, 1.0)


def within_eps(got, want, dtype, bound=2.0):
    eps = np.finfo(dtype).eps
    error = np.abs(got.astype(np.float64) - want) / (eps * np.maximum(1.0, np.abs(want)))
    assert error.max() <= bound, error.max()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transforms_against_numpy(dtype):
    info = np.finfo(dtype)
    with np.errstate(divide="ignore"):
        u = uniform_inputs(0.0, dtype).astype(np.float64)
        within_eps(cr.exponential(KEY, (N,), dtype), -np.log1p(-u), dtype)
        u = uniform_inputs(-1.0 + float(info.epsneg), dtype).astype(np.float64)
        within_eps(cr.laplace(KEY, (N,), dtype), np.sign(u) * np.log1p(-np.abs(u)), dtype)
        u = uniform_inputs(float(info.tiny), dtype).astype(np.float64)
        within_eps(cr.logistic(KEY, (N,), dtype), np.log(u) - np.log1p(-u), dtype)
        within_eps(cr.gumbel(KEY, (N,), dtype), -np.log(-np.log(u)), dtype, bound=4.0)   # log of a rounded log
        lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
        u = uniform_inputs(lo, dtype).astype(np.float64)
        # float32 takes XLA's formula (Giles' polynomial in w = -log1p(-u^2)), whose rounding of u^2
        # costs up to eps / (1 - u^2) relative in w, tens of eps in the tails; float64 is correctly rounded.
        within_eps(cr.normal(KEY, (N,), dtype), np.sqrt(2) * scipy.special.erfinv(u), dtype,
                   bound=32.0 if dtype == "float32" else 2.0)


def ks_pvalue(samples, cdf) -> float:
    return scipy.stats.kstest(np.asarray(samples, np.float64).ravel(), cdf).pvalue


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.2, 1.0, 7.5])
def test_gamma_distribution(alpha):
    assert ks_pvalue(cr.gamma(KEY, alpha, (N,), "float32"), scipy.stats.gamma(alpha).cdf) > 1e-4


@pytest.mark.slow
def test_beta_dirichlet_t_distributions():
    assert ks_pvalue(cr.beta(KEY, 0.5, 2.0, (N,)), scipy.stats.beta(0.5, 2.0).cdf) > 1e-4
    d = cr.dirichlet(KEY, np.array([1.0, 2.0, 3.0]), (N,))
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-12)
    assert ks_pvalue(d[:, 2], scipy.stats.beta(3.0, 3.0).cdf) > 1e-4     # a marginal: Beta(3, 1 + 2)
    assert ks_pvalue(cr.t(KEY, 3.0, (N,)), scipy.stats.t(3.0).cdf) > 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("lam", [0.7, 6.0, 40.0])
def test_poisson_distribution(lam):
    """Counts against the Poisson pmf by a chi-square test over the bins of expected count >= 20."""
    k = cr.poisson(KEY, lam, (N,))
    assert k.dtype == np.int64 and k.min() >= 0
    values = np.arange(int(lam + 10 * np.sqrt(lam) + 10))
    expected = N * scipy.stats.poisson(lam).pmf(values)
    kept = expected >= 20
    observed = np.array([(k == v).sum() for v in values])
    statistic = (((observed - expected) ** 2 / expected)[kept]).sum()
    assert scipy.stats.chi2(kept.sum() - 1).sf(statistic) > 1e-4


@pytest.mark.slow
def test_bad_parameters_give_jax_results():
    """JAX's answers for parameters outside the domain: NaN gammas, -1 Poisson counts (Knuth's loop
    never runs), 0 for lam = 0."""
    assert np.isnan(cr.gamma(KEY, np.array([-1.0, np.nan]))).all()
    np.testing.assert_array_equal(cr.poisson(KEY, np.array([-1.0, np.nan, 0.0])), [-1, -1, 0])


@pytest.mark.slow
def test_factorizing_samplers():
    q = cr.orthogonal(KEY, 6, (3,))
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(6), (3, 6, 6)), atol=1e-13)
    wide = cr.orthogonal(KEY, 3, m=5, dtype="float32")
    assert wide.shape == (3, 5) and wide.dtype == np.float32
    np.testing.assert_allclose(wide @ wide.T, np.eye(3), atol=1e-5)
    points = cr.ball(KEY, 3, p=2, shape=(N,))
    assert (np.linalg.norm(points, axis=-1) <= 1).all()
    cov = np.array([[2.0, 0.3], [0.3, 0.5]])
    standard_error = np.sqrt((cov ** 2 + np.outer(np.diag(cov), np.diag(cov))) / N)
    for method in ("cholesky", "eigh", "svd"):
        x = cr.multivariate_normal(KEY, np.array([1.0, -1.0]), cov, (N,), method=method)
        assert (np.abs(np.cov(x.T) - cov) < 5 * standard_error).all(), method


def threefry_reference(key, counters):
    """Threefry-2x32, 20 rounds, in numpy (Salmon et al. 2011): the test's own statement of it."""
    rotations = ((13, 15, 26, 6), (17, 29, 16, 24))
    k = [np.uint32(key[0]), np.uint32(key[1])]
    ks = [k[0], k[1], k[0] ^ k[1] ^ np.uint32(0x1BD11BDA)]
    x0, x1 = counters[0] + ks[0], counters[1] + ks[1]
    for group in range(5):
        for r in rotations[group % 2]:
            x0 = x0 + x1
            x1 = x0 ^ ((x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r)))
        x0 = x0 + ks[(group + 1) % 3]
        x1 = x1 + ks[(group + 2) % 3] + np.uint32(group + 1)
    return x0, x1


@pytest.mark.parametrize("shape", [(1,), (63,), (65, 3), (1025,)])
def test_bits_compiled_interpreted_and_reference(shape):
    """bits = the xor of the hash's two words of each element's flat index (counter (0, i))."""
    key = np.array([0xDEADBEEF, 12345], np.uint32)
    fn = lambda k: cr.bits(k, shape, "uint32")
    compiled, interpreted = cj.jit(fn)(key), cj.jit(fn, backend="interpret")(key)
    size = int(np.prod(shape))
    with np.errstate(over="ignore"):
        x0, x1 = threefry_reference(key, (np.zeros(size, np.uint32), np.arange(size, dtype=np.uint32)))
    np.testing.assert_array_equal(compiled, (x0 ^ x1).reshape(shape))
    np.testing.assert_array_equal(interpreted, compiled)


def test_hash_fuses_into_the_sampler():
    """The threefry rounds, the float conversion and the user's arithmetic are one loop kernel (after a
    kernel of scalars: the key words)."""
    text = cj.jit(lambda k: cr.normal(k, (1000,), "float32") * 2.0).lower(KEY).compile().as_text("optimized")
    fusions = [line for line in text.splitlines() if "= fusion(" in line]
    assert len(fusions) == 2 and "f32[1000]" in fusions[1]


def test_typed_keys_through_jit():
    key = cr.key(7)
    assert key.shape == () and cr.key_impl(key) == "threefry2x32"

    @cj.jit
    def step(key):
        key, sub = cr.split(key)
        return key, cr.uniform(sub, (3,))

    new_key, sample = step(key)
    assert isinstance(new_key, cr.PRNGKeyArray) and new_key.shape == ()
    raw_new, raw_sub = cr.split(cr.key_data(key))
    np.testing.assert_array_equal(cr.key_data(new_key), raw_new)
    np.testing.assert_array_equal(sample, cr.uniform(raw_sub, (3,)))
    np.testing.assert_array_equal(cr.key_data(cr.wrap_key_data(raw_new)), raw_new)


@pytest.mark.parametrize("call, error, message", [
    (lambda: cr.uniform(np.zeros(3, np.uint32)), TypeError, r"shape to end with \(2,\)"),
    (lambda: cr.normal(np.zeros(2, np.float32)), TypeError, "uint32"),
    (lambda: cr.choice(KEY, 3, (4,), replace=False), ValueError, "larger sample"),
    (lambda: cr.uniform(KEY, (2,), "int32"), ValueError, "float dtype"),
    (lambda: cr.PRNGKey(2 ** 64), OverflowError, "64 bits"),
    (lambda: cr.gumbel(KEY, mode="high"), NotImplementedError, "mode='low'"),
])
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
