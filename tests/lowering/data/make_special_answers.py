"""Generates special_answers.npz, the known answers of test_elemental_special.py: scipy.special's
values (f64; glibc's for erfc) at fixed random points of each function's domains (digamma below 0 by the reflection
formula from scipy's positive values, see digamma_reflected). Run once, with scipy installed:
    python tests/lowering/data/make_special_answers.py
"""
import math
import pathlib

import numpy as np
import scipy.special as sp

rng = np.random.default_rng(20261204)
N = 1000


def log_uniform(low, high, n=N):
    return np.exp(rng.uniform(np.log(low), np.log(high), n))


def non_integer(x):
    return x[x != np.floor(x)]


def digamma_reflected(x):
    """psi(x) for x < 0 from scipy's psi(1 - x) (1 - x exact: x has 20 fractional bits) and pi cot(pi x)
    in long double after the exact reduction of x: scipy's own reflection rounds pi * x first."""
    reduced = np.longdouble(x) - np.round(np.longdouble(x))
    pi = np.longdouble("3.14159265358979323846264338327950288")
    return (np.longdouble(sp.digamma(1 - x)) - pi * np.cos(pi * reduced) / np.sin(pi * reduced)).astype(np.float64)


def on_grid(x):
    return np.round(x * 2.0 ** 20) / 2.0 ** 20


DOMAINS = {
    # name: (scipy function, {domain: points})
    "lgamma": (sp.gammaln, {
        "positive": np.concatenate([log_uniform(1e-6, 1e3), rng.uniform(0.4, 2.6, N), log_uniform(1e3, 1e300, N // 4)]),
        "negative": non_integer(-log_uniform(1e-3, 170.0)),
    }),
    "digamma": (sp.digamma, {
        "positive": np.concatenate([log_uniform(1e-6, 1e6), rng.uniform(1.0, 2.0, N)]),
    }),
    "digamma_negative": (digamma_reflected, {"negative": non_integer(on_grid(-log_uniform(1e-3, 50.0)))}),
    # scipy's erfc is ~500 ulp off near x = 25 (checked with the continued fraction at 40 digits);
    # glibc's erfc (math.erfc) is within an ulp there and keeps subnormal results.
    "erfc": (np.vectorize(math.erfc), {"all": np.concatenate([rng.uniform(-6.0, 27.0, N), rng.uniform(-0.6, 3.0, N)])}),
    "bessel_i0e": (sp.i0e, {"all": np.concatenate([rng.uniform(-40.0, 40.0, N), log_uniform(1e-3, 1e4),
                                                   -log_uniform(1e-3, 1e4)])}),
    "bessel_i1e": (sp.i1e, {"all": np.concatenate([rng.uniform(-40.0, 40.0, N), log_uniform(1e-3, 1e4),
                                                   -log_uniform(1e-3, 1e4)])}),
    "erf_inv": (sp.erfinv, {"all": np.concatenate([rng.uniform(-1.0, 1.0, N),
                                                    1 - log_uniform(1e-16, 0.5), -(1 - log_uniform(1e-7, 0.5))])}),
}

arrays = {}
for name, (fn, domains) in DOMAINS.items():
    for domain, x in domains.items():
        arrays[f"{name}/{domain}/x"] = x
        arrays[f"{name}/{domain}/f64"] = fn(x)
        x32 = x.astype(np.float32)
        arrays[f"{name}/{domain}/x32"] = x32
        arrays[f"{name}/{domain}/f32"] = fn(x32.astype(np.float64))
for key in [k for k in arrays if k.startswith("digamma_negative/")]:
    arrays[key.replace("digamma_negative/", "digamma/")] = arrays.pop(key)
# Two-argument functions: zeta(s, q) and polygamma(m, x), with the arguments as "<name>/all/a" and "/b".
s_values = np.concatenate([1 + log_uniform(1e-3, 30.0), rng.integers(2, 9, N // 4).astype(np.float64)])
q_values = np.concatenate([log_uniform(1e-3, 50.0, s_values.size - N // 4),
                           -rng.uniform(0.05, 3.95, N // 4)])   # negative q with the integer s
m_values = rng.integers(0, 6, N).astype(np.float64)
x_values = np.concatenate([log_uniform(1e-2, 100.0, N - N // 4), -rng.uniform(0.05, 3.95, N // 4)])
for name, fn, a, b in (("zeta", sp.zeta, s_values, q_values),
                       ("polygamma", lambda m, x: sp.polygamma(m.astype(int), x), m_values, x_values)):
    arrays[f"{name}/all/a"], arrays[f"{name}/all/b"] = a, b
    arrays[f"{name}/all/f64"] = fn(a, b)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    arrays[f"{name}/all/a32"], arrays[f"{name}/all/b32"] = a32, b32
    arrays[f"{name}/all/f32"] = fn(a32.astype(np.float64), b32.astype(np.float64))
np.savez_compressed(pathlib.Path(__file__).with_name("special_answers.npz"), **arrays)
