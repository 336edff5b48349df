"""`cj.libs.rand.generate`: the rand library's generators (libs/rand), inside and outside jit."""
from __future__ import annotations

import operator

import numpy as np

from ...errors import TracingValueError
from ...ir.types import dtype_name
from ...libs.rand import distributions, routines, sobol
from .. import cnp
from ..tracing import Tracer, as_tracer, bind1, located
from .continuous import canonical_shape, compiled


@compiled("generator", "shape", "distribution", "dtype", "mean", "stddev", "lam")
def generate_call(seed, offset, subsequence, table, poisson_table, generator, shape, distribution, dtype, mean, stddev,
                  lam):
    # a 1-D seed is mt19937's init_by_array key (u32 words)
    operands = [as_tracer(cnp.asarray(seed).astype("uint32" if np.ndim(seed) else "uint64"))]
    operands += [as_tracer(cnp.asarray(v).astype("uint64")) for v in (offset, subsequence) if v is not None]
    # direction numbers or jump matrices, then Poisson's alias table
    operands += [as_tracer(t) for t in (table, poisson_table) if t is not None]
    return bind1("library_call", operands,
                 {"library": "rand", "routine": "generate", "solution": "", "generator": generator,
                  "distribution": distribution, "dtype": dtype, "shape": tuple(shape), "mean": mean,
                  "stddev": stddev, "lam": lam})


def generate(generator, shape, distribution="uniform", *, seed=0, offset=0, subsequence=0, dtype="float32", mean=0.0,
             stddev=1.0, lam=1.0):
    """Values of `distribution` from a generator's stream, starting `offset` values (Sobol: points) into the
    stream of `seed`.
    - distribution: "bits" (the raw 32-bit words, uint32), "uniform" in (0, 1], "normal" and "log_normal"
      (mean, stddev), "poisson" (lam in (0, 2^30]; uint32: rocRAND's host API's alias-table method);
    - generator: rocRAND's "philox4x32_10" (its stream value for value, libs/rand/routines.py), "xorwow",
      "mrg32k3a", "mt19937" (init_genrand of the seed's low 32 bits, or init_by_array of a 1-D seed of 32-bit
      words, as numpy's RandomState(seed); an offset costs a jump per set bit of its count of 624-word
      twists), "mtgp32" (rocRAND's first MTGP32 state, parameter set 11213 No. 0; time linear in offset,
      no skip-ahead) or "sobol32"
      quasi-random points of shape (dimensions <= 128, n), "bits" or "uniform", which ignore the seed;
    - subsequence: rocrand_init's second argument, for philox4x32_10, xorwow and mrg32k3a (the others take
      only 0).
    seed, offset and subsequence may be traced; the rest are static."""
    if generator not in routines.GENERATORS:
        raise NotImplementedError(located(
            f"rand generator {generator!r}: only {', '.join(routines.GENERATORS)} are implemented"))
    if distribution not in distributions.DISTRIBUTIONS:
        raise TracingValueError(located(
            f"rand distribution {distribution!r} is not one of {', '.join(distributions.DISTRIBUTIONS)}"))
    dtype = np.dtype(dtype).name
    if dtype not in ("float32", "float64"):
        raise TracingValueError(located(f"rand.generate: dtype must be float32 or float64, got {dtype}"))
    if isinstance(seed, int):
        seed = np.uint64(operator.index(seed) % 2 ** 64)
    elif generator == "mt19937" and np.ndim(seed) == 1:
        seed = mt19937_key(seed)
    elif np.ndim(seed) != 0:
        raise TracingValueError(located(
            f"rand.generate: the seed must be a scalar (mt19937 also takes a 1-D key), got shape {np.shape(seed)}"))
    if isinstance(offset, int):
        offset = np.uint64(operator.index(offset))
    if isinstance(subsequence, int):
        subsequence = np.uint64(operator.index(subsequence) % 2 ** 64)
    if generator not in routines.TAKE_SUBSEQUENCE:
        if not isinstance(subsequence, np.uint64) or subsequence:
            raise NotImplementedError(located(
                f"rand.generate: subsequences of {generator!r} (only {', '.join(routines.TAKE_SUBSEQUENCE)} take "
                f"one)"))
        subsequence = None
    shape = canonical_shape(shape)
    if generator == "sobol32":
        if len(shape) != 2 or not 1 <= shape[0] <= sobol.MAX_DIMENSIONS:
            raise TracingValueError(located(
                f"rand.generate: sobol32 gives points of shape (dimensions, n) with 1 <= dimensions <= "
                f"{sobol.MAX_DIMENSIONS} (the first of Joe and Kuo's direction numbers), got {shape}"))
    poisson_table = None
    if distribution == "poisson":
        if not 0.0 < lam <= distributions.MAX_POISSON_LAM:
            raise TracingValueError(located(
                f"rand.generate: poisson's lam must be in (0, {distributions.MAX_POISSON_LAM:g}], got {lam}"))
        poisson_table = distributions.poisson_table(float(lam))[0]
    table = routines.table(generator, shape, distribution, dtype_name(dtype))
    return generate_call(seed, offset, subsequence, table, poisson_table, generator=generator,
                         shape=canonical_shape(shape), distribution=distribution, dtype=dtype_name(dtype),
                         mean=float(mean), stddev=float(stddev), lam=float(lam))


def mt19937_key(seed):
    """A 1-D seed as init_by_array's key: u32 words (a traced key must have an integer dtype)."""
    if np.shape(seed)[0] == 0:
        raise TracingValueError(located("rand.generate: mt19937's init_by_array key needs at least one word"))
    if isinstance(seed, Tracer):
        if not np.issubdtype(np.dtype(seed.dtype), np.integer):
            raise TracingValueError(located(f"rand.generate: mt19937's key must be integers, got {seed.dtype}"))
        return seed
    key = np.asarray(seed)
    if not np.issubdtype(key.dtype, np.integer) or key.min() < 0 or key.max() > 0xFFFFFFFF:
        raise TracingValueError(located(f"rand.generate: mt19937's key must be integers in [0, 2^32), got {seed!r}"))
    return key.astype(np.uint32)
