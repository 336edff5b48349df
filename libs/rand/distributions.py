"""The distributions on top of a generator's 32-bit words, each on numpy (the reference) and on
kernel expressions, with the same arithmetic: a block of four words gives `4 / words_per_value`
values (four f32 or two f64 values from Philox's four words). The formulas and the words each value
takes are rocRAND's (library/include/rocrand/rocrand_uniform.h, rocrand_normal.h, as of 2024), so a
Philox4x32-10 stream is rocRAND's value for value:

  bits        the generator's 32-bit words themselves (u32);
  uniform     (0, 1]: f32 2^-32 + u 2^-32 in f32 arithmetic (u rounded to f32 first) from one word;
              f64 (x + 1) 2^-53 from two words w0, w1, x = (w1 >> 11) << 32 | w0 (w0 the low bits);
  normal      Box-Muller, rocRAND's: f32 from two words x, y: u = the f32 uniform of x, angle
              v = c + y c in f32 (c = 2 pi 2^-32 rounded to f32), (sin v, cos v) sqrt(-2 log u);
              f64 from four words: u = (a + 1) 2^-53, a = w0 ^ (w1 << 21), t = (b + 1) 2^-52,
              b = w2 ^ (w3 << 21), (sin pi t, cos pi t) sqrt(-2 log u). The log, sqrt, sin and cos are
              evaluated in f64 (rocRAND's f32 path uses f32 functions: a few f32 ulps apart), then
              scaled by stddev, moved by mean and rounded to the dtype;
  log_normal  exp of the normal;
  MRG32k3a    (rocRAND's mrg distributions, rocrand_mrg32k3a.h) take the generator's outputs o in [1, m1]
              themselves, one a value: uniform o / m1 (ROCRAND_MRG32K3A_NORM_DOUBLE; rounded to f32 for
              f32); normal from a pair (x, y): u = the uniform of x, angle = the f32 uniform of y times
              f32 2 pi for f32, pi (2 y / m1) for f64; bits and poisson use rocrand()'s word of o;
  poisson     rocRAND's host API (rocrand_generate_poisson: library/src/rng/distribution/poisson.hpp,
              discrete.hpp, rocrand_discrete.h), one word a value for every generator: Walker's alias
              method on a table of the Poisson probabilities (`poisson_table`); the word r gives
              x = r 2^-32, nx = size x, i = floor(nx), and the value first + (nx - i < probability[i] ?
              i : alias[i]). (rocRAND's device API, rocrand_poisson, instead draws a varying number of
              uniforms a value: Knuth's product below lambda 64, Atkinson's rejection method PA to
              4000, a rounded normal above; a stream of such values is sequential, not this
              per-value layout.)
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ...ir import kernel as K
from . import mrg32k3a

DISTRIBUTIONS = ("bits", "uniform", "normal", "log_normal", "poisson")
MAX_POISSON_LAM = 2.0 ** 30    # rocRAND keeps the table's first value in an int: lambda < 2^31
POISSON_EPSILON = 1e-12        # rocRAND's p_epsilon: the table keeps the probabilities from here up


def poisson_probability(x: float, log_lam: float, lam: float) -> float:
    """exp(x log(lam) - lgamma(x + 1) - lam) in the C library's double arithmetic (Python's math
    module is the C library's), 0 where lgamma has its poles (x + 1 a non-positive integer)."""
    return 0.0 if x + 1.0 <= 0.0 else math.exp(x * log_lam - math.lgamma(x + 1.0) - lam)


@lru_cache(maxsize=64)
def poisson_table(lam: float) -> tuple[np.ndarray, int]:
    """rocRAND's alias table for Poisson(lam), built as its host code builds it (the module
    docstring's files): f64 (2, size) rows probability and alias (exact in f64), and the value of
    entry 0. Probabilities from the mode down and up until one falls below POISSON_EPSILON, over
    a window of 2 int(16 (2 + sqrt(lam))) values; normalized by their sum in order; then Vose's
    construction with rocRAND's stacks (the last small and the last large index first)."""
    capacity = 2 * int(16.0 * (2.0 + math.sqrt(lam)))
    log_lam, left = math.log(lam), int(math.floor(lam)) - capacity // 2
    p = [0.0] * capacity
    lo, hi = 0, capacity - 1
    for i in range(capacity // 2, -1, -1):
        p[i] = poisson_probability(float(left + i), log_lam, lam)
        if p[i] < POISSON_EPSILON:
            lo = i + 1
            break
    for i in range(capacity // 2 + 1, capacity):
        p[i] = poisson_probability(float(left + i), log_lam, lam)
        if p[i] < POISSON_EPSILON:
            hi = i - 1
            break
    p = p[lo:hi + 1]
    size, total = len(p), 0.0
    for q in p:
        total += q
    p = [q / total for q in p]
    average = 1.0 / size
    probability, alias = [1.0] * size, [0] * size
    small = [i for i in range(size) if p[i] < average]
    large = [i for i in range(size) if p[i] >= average]
    while small and large:
        less, more = small.pop(), large.pop()
        probability[less], alias[less] = p[less] * size, more
        p[more] = (p[more] + p[less]) - average
        (large if p[more] >= average else small).append(more)
    table = np.array([probability, alias], np.float64)
    table.flags.writeable = False
    return table, left + lo


def words_per_value(distribution: str, dtype: str, generator: str) -> int:
    if generator == "mrg32k3a" or distribution == "poisson":
        return 1
    return 2 if dtype == "f64" else 1


def result_dtype(distribution: str, dtype: str) -> str:
    return "u32" if distribution in ("bits", "poisson") else dtype


# -- numpy --

TWO_PI_2POW32 = np.float32(2.0 * math.pi * 2.0 ** -32)   # rocRAND's ROCRAND_2POW32_INV_2PI
TWO_PI_F32 = np.float32(2.0 * math.pi)                    # rocRAND's ROCRAND_2PI


def uniform_numpy(words: list[np.ndarray], dtype: str, words_per_value: int = 2) -> np.ndarray:
    """Uniforms from one block's words (each an array over blocks): the block's values in order. A
    generator of one word per value (Sobol32) gives f64 values as (u + 1) 2^-32."""
    if dtype == "f32":
        return [np.float32(2.0 ** -32) + w.astype(np.float32) * np.float32(2.0 ** -32) for w in words]
    if words_per_value == 1:
        return [(w.astype(np.float64) + 1.0) * 2.0 ** -32 for w in words]
    wide = [((words[i + 1] >> np.uint32(11)).astype(np.uint64) << np.uint64(32)) | words[i].astype(np.uint64)
            for i in range(0, len(words), 2)]
    return [(w.astype(np.float64) + 1.0) * 2.0 ** -53 for w in wide]


def box_muller_inputs_numpy(words: list[np.ndarray], dtype: str):
    """Each pair's (u, angle in radians) of rocRAND's Box-Muller, as f64 arrays."""
    if dtype == "f32":
        u = uniform_numpy(words[0::2], "f32")
        angle = [TWO_PI_2POW32 + y.astype(np.float32) * TWO_PI_2POW32 for y in words[1::2]]
        return [(a.astype(np.float64), v.astype(np.float64)) for a, v in zip(u, angle)]
    w = [x.astype(np.uint64) for x in words]
    u = (((w[0] ^ (w[1] << np.uint64(21))).astype(np.float64) + 1.0) * 2.0 ** -53)
    t = (((w[2] ^ (w[3] << np.uint64(21))).astype(np.float64) + 1.0) * 2.0 ** -52)
    return [(u, t * math.pi)]


def mrg_box_muller_inputs_numpy(outputs: list[np.ndarray], dtype: str):
    u = [o.astype(np.float64) * mrg32k3a.NORM for o in outputs]
    if dtype == "f32":
        return [(x.astype(np.float32).astype(np.float64), (y.astype(np.float32) * TWO_PI_F32).astype(np.float64))
                for x, y in zip(u[0::2], u[1::2])]
    return [(x, y * 2.0 * math.pi) for x, y in zip(u[0::2], u[1::2])]


def values_numpy(words, distribution: str, dtype: str, mean: float, stddev: float, lam: float,
                 words_per_value: int = 2, mrg: bool = False):
    """The block's values (a list of arrays over blocks) of the distribution; `mrg`: the words are
    MRG32k3a's outputs."""
    if mrg and distribution in ("bits", "poisson"):
        words, mrg = [mrg32k3a.word_numpy(o) for o in words], False
    if distribution == "bits":
        return list(words)
    if distribution == "poisson":
        return [poisson_numpy(w, *poisson_table(lam)) for w in words]
    if distribution == "uniform" and mrg:
        u = [o.astype(np.float64) * mrg32k3a.NORM for o in words]
        return [x.astype(np.float32) for x in u] if dtype == "f32" else u
    if distribution == "uniform":
        return uniform_numpy(words, dtype, words_per_value)
    out = []
    for u, angle in (mrg_box_muller_inputs_numpy if mrg else box_muller_inputs_numpy)(words, dtype):
        radius = np.sqrt(-2.0 * np.log(u))
        out += [np.sin(angle) * radius, np.cos(angle) * radius]
    out = [z * stddev + mean for z in out]
    if distribution == "log_normal":
        out = [np.exp(z) for z in out]
    return [z.astype(np.float32 if dtype == "f32" else np.float64) for z in out]


def poisson_numpy(words: np.ndarray, table: np.ndarray, first: int) -> np.ndarray:
    """The alias method on one word a value (the module docstring)."""
    scaled = table.shape[1] * (words.astype(np.float64) * 2.0 ** -32)
    i = np.floor(scaled)
    index = i.astype(np.int64)
    chosen = np.where(scaled - i < table[0, index], index, table[1, index].astype(np.int64))
    return (first + chosen).astype(np.uint32)


# -- kernel expressions --

def uniform_kernel(words: list[K.Expr], dtype: str, let, words_per_value: int = 2) -> list[K.Expr]:
    if dtype == "f32":
        return [let(w.cast("f32") * K.Const(2.0 ** -32, "f32") + K.Const(2.0 ** -32, "f32")) for w in words]
    if words_per_value == 1:
        return [let((w.cast("f64") + 1.0) * K.Const(2.0 ** -32, "f64")) for w in words]
    out = []
    for i in range(0, len(words), 2):
        wide = let(((words[i + 1] >> K.Const(11, "u32")).cast("u64") << K.Const(32, "u64")) | words[i].cast("u64"))
        out.append(let((wide.cast("f64") + 1.0) * K.Const(2.0 ** -53, "f64")))
    return out


def box_muller_inputs_kernel(words: list[K.Expr], dtype: str, let) -> list[tuple[K.Expr, K.Expr]]:
    if dtype == "f32":
        u = uniform_kernel(words[0::2], "f32", let)
        c = K.Const(float(TWO_PI_2POW32), "f32")
        angle = [let(y.cast("f32") * c + c) for y in words[1::2]]
        return [(let(a.cast("f64")), let(v.cast("f64"))) for a, v in zip(u, angle)]
    w = [let(x.cast("u64")) for x in words]
    u = let(((w[0] ^ (w[1] << K.Const(21, "u64"))).cast("f64") + 1.0) * K.Const(2.0 ** -53, "f64"))
    t = let(((w[2] ^ (w[3] << K.Const(21, "u64"))).cast("f64") + 1.0) * K.Const(2.0 ** -52, "f64"))
    return [(u, let(t * math.pi))]


def mrg_box_muller_inputs_kernel(outputs: list[K.Expr], dtype: str, let) -> list[tuple[K.Expr, K.Expr]]:
    u = [let(o.cast("f64") * mrg32k3a.NORM) for o in outputs]
    if dtype == "f32":
        return [(let(x.cast("f32").cast("f64")), let((y.cast("f32") * K.Const(float(TWO_PI_F32), "f32")).cast("f64")))
                for x, y in zip(u[0::2], u[1::2])]
    return [(x, let(y * 2.0 * math.pi)) for x, y in zip(u[0::2], u[1::2])]


def poisson_kernel(word: K.Expr, table: K.GlobalBuffer, size: K.Expr, first: K.Expr, let) -> K.Expr:
    """poisson_numpy's arithmetic on one word; `table` holds the probabilities, then the aliases."""
    scaled = let(size.cast("f64") * (word.cast("f64") * K.Const(2.0 ** -32, "f64")))
    i = let(K.floor(scaled))
    index = let(i.cast("i64"))
    chosen = K.select(scaled - i < table[index], index, table[size + index].cast("i64"))
    return let((first + chosen).cast("u32"))


def values_kernel(words, distribution: str, dtype: str, mean: K.Expr, stddev: K.Expr, let, poisson,
                  mrg: bool = False) -> list[K.Expr]:
    """The block's values; `poisson(word)` is a Poisson value's expression (poisson_kernel)."""
    if mrg and distribution in ("bits", "poisson"):
        words, mrg = [mrg32k3a.word_kernel(o, let) for o in words], False
    if distribution == "bits":
        return list(words)
    if distribution == "poisson":
        return [poisson(w) for w in words]
    if distribution == "uniform" and mrg:
        u = [let(o.cast("f64") * mrg32k3a.NORM) for o in words]
        return [let(x.cast("f32")) for x in u] if dtype == "f32" else u
    if distribution == "uniform":
        return uniform_kernel(words, dtype, let)
    out = []
    for u, angle in (mrg_box_muller_inputs_kernel if mrg else box_muller_inputs_kernel)(words, dtype, let):
        radius = let(K.sqrt(K.log(u) * -2.0))
        out += [K.sin(angle) * radius, K.cos(angle) * radius]
    out = [let(z * stddev + mean) for z in out]
    if distribution == "log_normal":
        out = [let(K.exp(z)) for z in out]
    return [z.cast(dtype) if dtype != "f64" else z for z in out]
