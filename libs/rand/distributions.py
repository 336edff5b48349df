"""The distributions on top of a generator's 32-bit words, each on numpy (the reference) and on
kernel expressions, with the same arithmetic: a block of the generator gives WORDS values of a
distribution per `values_per_block` (four f32 or two f64 values from Philox's four words).

  bits        the generator's 32-bit words themselves (u32);
  uniform     (0, 1]: (u + 1/2) 2^-32 for f32 (rocRAND's uniform_distribution), ((u64 >> 11) + 1/2)
              2^-53 for f64 from two words, high word first;
  normal      Box-Muller on pairs of uniforms (u1, u2): sqrt(-2 log u1) (cos, sin)(2 pi u2), in f64,
              then scaled by stddev, moved by mean and rounded to the dtype;
  log_normal  exp of the normal;
  poisson     inversion of the CDF by sequential search, one f64 uniform a value (two words), with as
              many terms as the mean needs (lam + 12 sqrt(lam) + 16); lam up to MAX_POISSON_LAM, where
              exp(-lam) stays a normal f64 number.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import kernel as K

DISTRIBUTIONS = ("bits", "uniform", "normal", "log_normal", "poisson")
MAX_POISSON_LAM = 500.0


def poisson_terms(lam: float) -> int:
    return int(math.ceil(lam + 12.0 * math.sqrt(lam) + 16.0))


def words_per_value(distribution: str, dtype: str) -> int:
    return 2 if dtype == "f64" or distribution == "poisson" else 1


def result_dtype(distribution: str, dtype: str) -> str:
    return "u32" if distribution in ("bits", "poisson") else dtype


# -- numpy --

def uniform_numpy(words: list[np.ndarray], dtype: str, words_per_value: int = 2) -> np.ndarray:
    """Uniforms from one block's words (each an array over blocks): the block's values in order. A
    generator of one word per value (Sobol32) gives f64 values as (u + 1/2) 2^-32 too."""
    if dtype == "f32" or words_per_value == 1:
        real = np.float32 if dtype == "f32" else np.float64
        return [(w.astype(real) + real(0.5)) * real(2.0 ** -32) for w in words]
    wide = [(words[i].astype(np.uint64) << np.uint64(32)) | words[i + 1].astype(np.uint64)
            for i in range(0, len(words), 2)]
    return [((w >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53 for w in wide]


def values_numpy(words, distribution: str, dtype: str, mean: float, stddev: float, lam: float,
                 words_per_value: int = 2):
    """The block's values (a list of arrays over blocks) of the distribution."""
    if distribution == "bits":
        return list(words)
    if distribution == "poisson":
        return [poisson_numpy(u, lam) for u in uniform_numpy(words, "f64")]
    u = uniform_numpy(words, dtype, words_per_value)
    if distribution == "uniform":
        return u
    out = []
    for u1, u2 in zip(u[0::2], u[1::2]):
        radius = np.sqrt(-2.0 * np.log(u1.astype(np.float64)))
        angle = 2.0 * np.pi * u2.astype(np.float64)
        out += [radius * np.cos(angle), radius * np.sin(angle)]
    out = [z * stddev + mean for z in out]
    if distribution == "log_normal":
        out = [np.exp(z) for z in out]
    return [z.astype(np.float32 if dtype == "f32" else np.float64) for z in out]


def poisson_numpy(u: np.ndarray, lam: float) -> np.ndarray:
    k = np.zeros(u.shape, np.uint32)
    p = np.full(u.shape, math.exp(-lam))
    cdf = p.copy()
    for i in range(1, poisson_terms(lam) + 1):
        k = np.where(u > cdf, np.uint32(i), k)
        p = p * (lam / i)
        cdf = cdf + p
    return k


# -- kernel expressions --

def uniform_kernel(words: list[K.Expr], dtype: str, let, words_per_value: int = 2) -> list[K.Expr]:
    if dtype == "f32" or words_per_value == 1:
        return [let((w.cast(dtype) + 0.5) * K.Const(2.0 ** -32, dtype)) for w in words]
    out = []
    for i in range(0, len(words), 2):
        wide = let((words[i].cast("u64") << K.Const(32, "u64")) | words[i + 1].cast("u64"))
        out.append(let(((wide >> K.Const(11, "u64")).cast("f64") + 0.5) * K.Const(2.0 ** -53, "f64")))
    return out


def values_kernel(words, distribution: str, dtype: str, mean: K.Expr, stddev: K.Expr, lam: K.Expr,
                  terms: K.Expr, let, poisson_loop) -> list[K.Expr]:
    if distribution == "bits":
        return list(words)
    if distribution == "poisson":
        return [poisson_loop(u, lam, terms) for u in uniform_kernel(words, "f64", let)]
    u = uniform_kernel(words, dtype, let)
    if distribution == "uniform":
        return u
    out = []
    for u1, u2 in zip(u[0::2], u[1::2]):
        radius = let(K.sqrt(K.log(u1.cast("f64")) * -2.0))
        angle = let(u2.cast("f64") * (2.0 * math.pi))
        out += [radius * K.cos(angle), radius * K.sin(angle)]
    out = [let(z * stddev + mean) for z in out]
    if distribution == "log_normal":
        out = [let(K.exp(z)) for z in out]
    return [z.cast(dtype) if dtype != "f64" else z for z in out]
