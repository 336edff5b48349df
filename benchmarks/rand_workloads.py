"""W13: random number generation, side by side with jax.random and numpy's Generator.

- normal_f32: `random.normal(key, (16 Mi,))` float32 (cdnajit.random, bit for bit jax.random's
  threefry bits; numpy: default_rng().standard_normal, another generator and algorithm);
- uniform_f64: `random.uniform(key, (16 Mi,))` float64 (JAX under x64; numpy: default_rng().random);
- philox_uniform_f32: 16 Mi Philox4x32-10 uniforms from cj.libs.rand against numpy's
  Generator(Philox).random(dtype=float32) (numpy's Philox is the 4x64 variant);
- philox_poisson: 16 Mi Poisson(40) values of Philox4x32-10 (rocRAND's host-API alias method) against
  numpy's Generator(Philox).poisson (its PTRS rejection sampler);
- mt19937_bits: 16 Mi raw 32-bit words of libs/rand's MT19937 against numpy's RandomState(seed)
  (the same stream: init_genrand seeding), checked bit for bit;
- xorwow_uniform_f32, mrg32k3a_uniform_f32, mtgp32_uniform_f32: 16 Mi uniforms of libs/rand's
  sequential generators against numpy's default_rng().random(dtype=float32) (numpy has none of them).
Each peer generates its own stream: the check compares cdnajit with the stream it must reproduce
(JAX's, or libs/rand's numpy reference), not with numpy's.
"""
from __future__ import annotations

import numpy as np

import cdnajit as cj
import cdnajit.random as cr
from cdnajit.libs.rand import routines
from workloads import Case, Context, Workload

F32_EPSILON = 2.0**-24
THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def size(ctx: Context) -> int:
    return 2**16 if ctx.quick else 2**24


def threefry_uniform_f64(key: np.ndarray, n: int) -> np.ndarray:
    """jax.random.uniform(key, (n,), float64) in numpy: threefry2x32 of each index (Salmon et al. 2011),
    the two words as the 64 random bits, their top 52 as the mantissa of a float in [1, 2), minus 1."""
    ks = [np.uint32(key[0]), np.uint32(key[1]), np.uint32(key[0] ^ key[1] ^ 0x1BD11BDA)]
    x0 = np.zeros(n, np.uint32) + ks[0]
    x1 = np.arange(n, dtype=np.uint32) + ks[1]
    with np.errstate(over="ignore"):
        for group in range(5):
            for r in THREEFRY_ROTATIONS[group % 2]:
                x0 += x1
                x1 = x0 ^ ((x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r)))
            x0 += ks[(group + 1) % 3]
            x1 += ks[(group + 2) % 3] + np.uint32(group + 1)
    bits = (x0.astype(np.uint64) << np.uint64(32)) | x1.astype(np.uint64)
    return ((bits >> np.uint64(12)) | np.uint64(0x3FF0000000000000)).view(np.float64) - 1.0


def jax_key_peer(ctx: Context, sample, x64: bool):
    """A jax.jit of `sample(jax.random, key)` on a key placed once, under x64 where asked."""
    if ctx.jax is None:
        return None
    jitted = ctx.jax.jit(lambda key: sample(ctx.jax.random, key))
    with ctx.jax.enable_x64(x64):
        key = ctx.jax.random.PRNGKey(0)

    def call(*_inputs):
        with ctx.jax.enable_x64(x64):
            return jitted(key)
    return call


def build_normal_f32(ctx: Context) -> Case:
    n = size(ctx)
    key = cr.PRNGKey(0)
    generator = np.random.default_rng(0)
    jax_fn = jax_key_peer(ctx, lambda random, k: random.normal(k, (n,), np.float32), x64=False)
    # The reference is JAX's stream: the same uniform floats and XLA's erf_inv formula on both sides,
    # where only log1p rounds differently: 4 eps of max(1, |x|) (tests/known_answers/random_cases.py),
    # |x| < 6.
    return Case((key,), cj.jit(lambda k: cr.normal(k, (n,), "float32")),
                numpy=lambda k: generator.standard_normal(n, dtype=np.float32), jax=jax_fn,
                reference=(lambda k: np.asarray(jax_fn())) if jax_fn else None,
                tolerance=(0.0, 4 * 2 * F32_EPSILON * 6))


def build_uniform_f64(ctx: Context) -> Case:
    n = size(ctx)
    key = cr.PRNGKey(0)
    generator = np.random.default_rng(0)
    # Integer bits and one exact subtraction: identical to JAX's, and to this numpy statement of it.
    return Case((key,), cj.jit(lambda k: cr.uniform(k, (n,), "float64")),
                numpy=lambda k: generator.random(n), jax=jax_key_peer(ctx, lambda random, k: random.uniform(
                    k, (n,), np.float64), x64=True),
                reference=lambda k: threefry_uniform_f64(k, n), tolerance=(0.0, 0.0))


def build_philox_uniform_f32(ctx: Context) -> Case:
    n = size(ctx)
    seed = np.uint64(1234)
    generator = np.random.Generator(np.random.Philox(1234))
    reference = lambda s: routines.generate_reference(
        int(s), 0, 0, generator="philox4x32_10", distribution="uniform", dtype="f32", shape=(n,), mean=0.0,
        stddev=1.0, lam=1.0)
    # Integer arithmetic and rocRAND's f32 scaling (the same f32 operations on both sides): identical to the
    # library's numpy reference.
    return Case((seed,), cj.jit(lambda s: cj.libs.rand.generate("philox4x32_10", (n,), seed=s)),
                numpy=lambda s: generator.random(n, dtype=np.float32), jax=None, reference=reference,
                tolerance=(0.0, 0.0))


POISSON_LAM = 40.0


def build_philox_poisson(ctx: Context) -> Case:
    n = size(ctx)
    generator = np.random.Generator(np.random.Philox(1234))
    reference = lambda s: routines.generate_reference(
        int(s), 0, 0, generator="philox4x32_10", distribution="poisson", dtype="f32", shape=(n,), mean=0.0,
        stddev=1.0, lam=POISSON_LAM)
    # rocRAND's alias method: one word, one f64 product and floor, two table reads a value; the same
    # arithmetic as the library's numpy reference.
    return Case((np.uint64(1234),), cj.jit(lambda s: cj.libs.rand.generate("philox4x32_10", (n,), "poisson", seed=s,
                                                                           lam=POISSON_LAM)),
                numpy=lambda s: generator.poisson(POISSON_LAM, n), jax=None, reference=reference,
                tolerance=(0.0, 0.0))


def sequential_uniform_f32(generator_name: str):
    """cj.libs.rand's sequential generators against numpy's fastest uniform float32 (PCG64; numpy has
    none of XORWOW, MRG32k3a, MTGP32). Not checked here: the reference steps the generator in Python
    (minutes at 16 Mi); tests/libs/test_rand.py checks the kernels against it bit for bit."""
    def build(ctx: Context) -> Case:
        n = size(ctx)
        generator = np.random.default_rng(0)
        return Case((np.uint64(1234),), cj.jit(lambda s: cj.libs.rand.generate(generator_name, (n,), seed=s)),
                    numpy=lambda s: generator.random(n, dtype=np.float32), jax=None, tolerance=None)
    return build


def build_mt19937_bits(ctx: Context) -> Case:
    n = size(ctx)
    return Case((np.uint64(1234),), cj.jit(lambda s: cj.libs.rand.generate("mt19937", (n,), "bits", seed=s)),
                numpy=lambda s: np.random.RandomState(int(s)).randint(0, 2 ** 32, n, dtype=np.uint32), jax=None,
                tolerance=(0.0, 0.0))


RAND_WORKLOADS = (
    Workload("W13.normal_f32", "random.normal(key, (16 Mi,)) float32: threefry bits, erf_inv "
             "(numpy: default_rng().standard_normal)", build_normal_f32),
    Workload("W13.uniform_f64", "random.uniform(key, (16 Mi,)) float64 (JAX under x64; numpy: "
             "default_rng().random)", build_uniform_f64),
    Workload("W13.philox_uniform_f32", "cj.libs.rand Philox4x32-10 uniform, 16 Mi float32 (numpy: "
             "Generator(Philox).random, Philox4x64)", build_philox_uniform_f32),
    Workload("W13.philox_poisson", "cj.libs.rand Philox4x32-10 Poisson(40), 16 Mi uint32: rocRAND's alias table "
             "(numpy: Generator(Philox).poisson)", build_philox_poisson),
    Workload("W13.xorwow_uniform_f32", "cj.libs.rand XORWOW uniform, 16 Mi float32: runs of 4096 words a work-item "
             "after a jump-matrix skip-ahead (numpy: default_rng().random(float32))", sequential_uniform_f32("xorwow")),
    Workload("W13.mrg32k3a_uniform_f32", "cj.libs.rand MRG32k3a uniform, 16 Mi float32 (numpy: "
             "default_rng().random(float32))", sequential_uniform_f32("mrg32k3a")),
    Workload("W13.mtgp32_uniform_f32", "cj.libs.rand MTGP32 uniform, 16 Mi float32: one workgroup stepping the "
             "state in LDS (numpy: default_rng().random(float32))", sequential_uniform_f32("mtgp32")),
    Workload("W13.mt19937_bits", "cj.libs.rand MT19937 raw words, 16 Mi uint32: a workgroup per run of 2048 "
             "twists, jumped ahead by the characteristic polynomial (numpy: RandomState(seed).randint, the same "
             "stream)", build_mt19937_bits),
)
