"""cdnajit.random.binomial and multinomial beyond JAX's stored answers (tests/known_answers/): moments
and the Kolmogorov-Smirnov-like agreement with scipy's distribution, over both of JAX's algorithms
(inversion for n q <= 10, BTRS above; q = min(p, 1 - p), p >= 1/2 sampled as n - Binomial(n, 1 - p)).

Bounds from the sample size N (fixed keys, so a test fails for a wrong distribution, never by chance
run to run): the sample mean within 6 standard errors sqrt(n p q / N) of n p; the sample variance
within 6 standard errors of n p q, its standard error sqrt((mu4 - s^4 (N - 3) / (N - 1)) / N) with the
binomial's fourth central moment mu4 = n p q (1 + 3 (n - 2) p q); the empirical CDF within the KS
bound sqrt(-log(1e-4 / 2) / (2 N)) of scipy.stats.binom's (significance 1e-4 for a continuous
distribution; conservative for a discrete one).
Each sampler's program (two while loops of threefry draws; multinomial's inside a scan) takes tens of
seconds to compile on a loaded machine, so every test here is slow.
"""
import math

import numpy as np
import pytest
import scipy.stats

import cdnajit as cj
import cdnajit.random as cr

KEY = cr.PRNGKey(77)
N = 20000


def check_moments(samples, n, p):
    samples = np.asarray(samples, dtype=np.float64)
    count = samples.size
    q = 1.0 - p
    var = n * p * q
    assert abs(samples.mean() - n * p) <= 6 * math.sqrt(max(var, 1e-300) / count), (n, p, samples.mean())
    mu4 = var * (1 + 3 * (n - 2) * p * q)
    var_error = math.sqrt(max(mu4 - var * var * (count - 3) / (count - 1), 0.0) / count)
    assert abs(samples.var(ddof=1) - var) <= 6 * var_error + 1e-12, (n, p, samples.var(ddof=1), var)


def check_cdf(samples, n, p):
    samples = np.asarray(samples)
    support = np.arange(int(samples.min()), int(samples.max()) + 1)
    empirical = np.searchsorted(np.sort(samples), support, side="right") / samples.size
    bound = math.sqrt(-math.log(1e-4 / 2) / (2 * samples.size))
    assert np.abs(empirical - scipy.stats.binom.cdf(support, n, p)).max() <= bound, (n, p)


# (n, p): inversion (n q <= 10) with p below and above 1/2, BTRS (n q > 10) below and above 1/2.
CASES = [(5, 0.3), (30, 0.95), (1000, 0.4), (200, 0.9)]


@pytest.mark.slow
@pytest.mark.parametrize("n, p", CASES)
def test_binomial_distribution(n, p):
    """One compiled program for all cases (n and p are traced arguments of the sampler)."""
    samples = np.asarray(cr.binomial(KEY, n, p, (N,)))
    assert samples.dtype == np.float64 and samples.shape == (N,)
    assert np.all((samples >= 0) & (samples <= n) & (samples == np.floor(samples)))
    check_moments(samples, n, p)
    check_cdf(samples, n, p)


@pytest.mark.slow
@pytest.mark.parametrize("n, p", [(1, 0.5), (10 ** 6, 0.25), (60, 1e-3), (15, 0.6)])
def test_binomial_distribution_float32(n, p):
    samples = np.asarray(cr.binomial(KEY, n, np.float32(p), (N,), "float32"))
    assert samples.dtype == np.float32
    check_moments(samples, n, np.float32(p))
    check_cdf(samples, n, p)


@pytest.mark.slow
def test_multinomial_moments():
    """Counts sum to n exactly; each category's counts are Binomial(n, p_j)."""
    n, p = 50, np.array([0.1, 0.2, 0.0, 0.3, 0.4])
    counts = np.asarray(cr.multinomial(KEY, n, p, shape=(N // 4, 5)))
    assert counts.shape == (N // 4, 5) and counts.dtype == np.float64
    assert np.all(counts.sum(axis=1) == n) and np.all(counts[:, 2] == 0)
    for j in (0, 1, 3, 4):
        check_moments(counts[:, j], n, p[j])


@pytest.mark.slow
def test_multinomial_inside_jit_batched_n():
    """n per row (both algorithms across rows) and the key a traced argument: the same counts as eagerly."""
    n = np.array([3.0, 40.0, 5000.0])
    p = np.array([0.25, 0.5, 0.25])
    eager = np.asarray(cr.multinomial(KEY, n, p, shape=(3, 3)))
    traced = np.asarray(cj.jit(lambda key: cr.multinomial(key, n, p, shape=(3, 3)))(KEY))
    np.testing.assert_array_equal(eager, traced)
    np.testing.assert_array_equal(eager.sum(axis=1), n)
