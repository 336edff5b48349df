"""The rand library's one routine, `generate`: values of a distribution from a generator's stream,
given a 64-bit seed and an offset (the index of the first value in the stream), both u64 scalars
operands so that a new seed or offset compiles nothing. Philox4x32-10 and the sequential generators
(XORWOW, MRG32k3a) take a third u64 operand, rocrand_init's subsequence; the sequential generators then
their skip-ahead matrices. Sobol32 takes its direction numbers (u32[dimensions, 32]) third and gives
points of shape (dimensions, n), dimension-major as rocRAND.

Streams, as rocRAND's device API draws them after `rocrand_init(seed, subsequence, 0)`: Philox's value
i of (seed, offset, subsequence) is value offset + i of rocrand_uniform / rocrand_uniform_double /
rocrand_normal2 / rocrand_normal_double2 called one after another, which for subsequence 0 is also
rocRAND's host API output (rocrand_generate_uniform etc.) of a generator seeded `seed`: word j comes
from counter (j / 4 as 64 bits, subsequence as 64 bits) under the key (seed low word, seed high word),
word j % 4 of Philox's result (rocrand_philox4x32_10.h). XORWOW's and MRG32k3a's word i is the i-th
`rocrand()` (subsequences of 2^67 and 2^76 words), a distribution block four consecutive words, as a
Philox block is four words of one counter; MRG32k3a's uniforms and normals are rocRAND's mrg ones, on
its outputs themselves (distributions.py). MT19937's stream is mt19937ar's genrand_int32 after
init_genrand(seed & 0xffffffff), or after init_by_array(key) when the seed operand is a u32[k] key,
blocks likewise; its third operand is its jump table (mt19937.jump_table of the call's layout).
MTGP32's is rocRAND's first MTGP32 state's (mtgp32.py).
A Poisson call takes rocRAND's alias table of lam (`distributions.poisson_table`) as its last operand.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir.opdef import require
from ...ir.ops.library import Routine
from ...ir.types import TensorType
from . import distributions, mrg32k3a, mt19937, mtgp32, philox, sobol, xorwow

SEQUENTIAL = {"xorwow": xorwow, "mrg32k3a": mrg32k3a}   # generator -> module (JUMPS, words, kernels)
SINGLE_STREAM = {"mt19937": mt19937, "mtgp32": mtgp32}   # generator -> module (words): state in LDS, no subsequences
GENERATORS = ("philox4x32_10", "sobol32", *SEQUENTIAL, *SINGLE_STREAM)
TAKE_SUBSEQUENCE = ("philox4x32_10", *SEQUENTIAL)          # a third u64 operand: rocrand_init's subsequence
SOBOL_DISTRIBUTIONS = ("bits", "uniform")
DTYPES = ("f32", "f64")
ATTRS = {"generator": "str", "distribution": "str", "dtype": "dtype", "shape": "ints", "mean": "float",
         "stddev": "float", "lam": "float"}


def generate_infer(types, attrs):
    require(attrs["generator"] in GENERATORS, f"rand.generate: generator {attrs['generator']!r} is not one of "
                                              f"{', '.join(GENERATORS)}")
    sobol32 = attrs["generator"] == "sobol32"
    scalars = 3 if attrs["generator"] in TAKE_SUBSEQUENCE else 2
    table = {"sobol32": " and sobol32 direction numbers", "xorwow": ", a u64 subsequence and its jump matrices",
             "mrg32k3a": ", a u64 subsequence and its jump matrices",
             "philox4x32_10": " and a u64 subsequence", "mt19937": " and its jump table"}.get(attrs["generator"], "")
    poisson = attrs["distribution"] == "poisson"
    if poisson:
        require(0.0 < attrs["lam"] <= distributions.MAX_POISSON_LAM,
                f"rand.generate: poisson's lam must be in (0, {distributions.MAX_POISSON_LAM:g}], got {attrs['lam']}")
        expected = distributions.poisson_table(attrs["lam"])[0].shape
        require(types[-1] == TensorType("f64", expected),
                f"rand.generate: poisson's last operand is its alias table, f64{list(expected)} for lam "
                f"{attrs['lam']}, got {types[-1]}")
        table += ", then its Poisson table"
    mt_key = attrs["generator"] == "mt19937" and types[0].dtype == "u32" and len(types[0].shape) == 1
    require(len(types) == scalars + (attrs["generator"] in SEQUENTIAL or sobol32 or attrs["generator"] == "mt19937")
            + poisson and all(t == TensorType("u64", ()) for t in types[mt_key:scalars]),
            f"library_call: rand.generate takes a u64 seed and a u64 offset{table}, got {', '.join(map(str, types))}")
    if attrs["generator"] in SEQUENTIAL:
        jumps = SEQUENTIAL[attrs["generator"]].JUMPS
        require(types[3] == TensorType({"uint32": "u32", "uint64": "u64"}[jumps.dtype.name], jumps.shape),
                f"rand.generate: {attrs['generator']}'s jump matrices are {jumps.dtype}{list(jumps.shape)}, "
                f"got {types[3]}")
    if mt_key:
        require(types[0].shape[0] >= 1, "rand.generate: mt19937's init_by_array key needs at least one word")
    if attrs["generator"] == "mt19937":
        per_block = _per_block(attrs["generator"], attrs["distribution"], attrs["dtype"])
        groups, _ = mt19937.layout(math.prod(attrs["shape"]), per_block)
        rows = groups + mt19937.OFFSET_JUMPS
        require(types[2].dtype == "i32" and len(types[2].shape) == 2 and types[2].shape[0] == rows
                and types[2].shape[1] >= mt19937.HEADER,
                f"rand.generate: mt19937's jump table is i32[{rows}, >= {mt19937.HEADER}] for this call, got "
                f"{types[2]}")
    if sobol32:
        shape = tuple(attrs["shape"])
        require(len(shape) == 2 and types[2] == TensorType("u32", (shape[0], sobol.BITS)),
                f"rand.generate: sobol32 gives (dimensions, n) points from u32[dimensions, {sobol.BITS}] direction "
                f"numbers, got shape {shape} and {types[2]}")
        require(attrs["distribution"] in SOBOL_DISTRIBUTIONS,
                f"rand.generate: sobol32 gives {', '.join(SOBOL_DISTRIBUTIONS)}, not {attrs['distribution']}")
    require(attrs["distribution"] in distributions.DISTRIBUTIONS,
            f"rand.generate: distribution {attrs['distribution']!r} is not one of "
            f"{', '.join(distributions.DISTRIBUTIONS)}")
    require(attrs["dtype"] in DTYPES, f"rand.generate: dtype {attrs['dtype']} is not one of {', '.join(DTYPES)}")
    require(attrs["stddev"] >= 0.0, f"rand.generate: stddev must be >= 0, got {attrs['stddev']}")
    return [TensorType(distributions.result_dtype(attrs["distribution"], attrs["dtype"]), tuple(attrs["shape"]))]


def _per_block(generator: str, distribution: str, dtype: str) -> int:
    """Values of a distribution block (four words of the stream)."""
    return 4 // distributions.words_per_value(distribution, dtype, generator)


def table(generator: str, shape, distribution: str, dtype: str) -> "np.ndarray | None":
    """The generator's table operand: Sobol32's direction numbers, a sequential generator's jumps,
    MT19937's jump table for the call's workgroups (dtype: "f32" or "f64")."""
    if generator == "sobol32":
        return sobol.direction_numbers(shape[0])
    if generator == "mt19937":
        return mt19937.jump_table(*mt19937.layout(math.prod(shape), _per_block(generator, distribution, dtype)))
    return SEQUENTIAL[generator].JUMPS if generator in SEQUENTIAL else None


def generate_reference(seed, offset, *operands, generator, distribution, dtype, shape, mean, stddev, lam):
    """The stream's values [offset, offset + size) of the distribution, in numpy (Poisson's table, the
    last operand, is distributions.poisson_table(lam), which infer checks by type)."""
    seed, offset = (np.asarray(seed) if np.ndim(seed) else int(seed)), int(offset)
    if generator == "sobol32":
        words = [sobol.points_numpy(operands[0], offset, shape[1])]
        return np.asarray(distributions.values_numpy(words, distribution, dtype, 0.0, 1.0, 0.0, words_per_value=1)[0])
    size = math.prod(shape)
    per_block = _per_block(generator, distribution, dtype)
    first, skip = offset // per_block, offset % per_block
    blocks = np.arange(first, first + -(-(skip + size) // per_block), dtype=np.uint64)
    if generator in SEQUENTIAL or generator in SINGLE_STREAM:
        # what the kernels' steps give: rocrand()'s words, but MRG32k3a's outputs (its distributions' input)
        stream_of = mrg32k3a.outputs if generator == "mrg32k3a" else (SEQUENTIAL.get(generator) or
                                                                      SINGLE_STREAM[generator]).words
        subsequence = (int(operands[0]),) if generator in SEQUENTIAL else ()
        stream = stream_of(seed, 4 * first, 4 * len(blocks), *subsequence)
        words = [stream[j::4] for j in range(4)]
    else:
        subsequence = int(operands[0])
        counter = [(blocks & np.uint64(0xFFFFFFFF)).astype(np.uint32), (blocks >> np.uint64(32)).astype(np.uint32),
                   np.full(blocks.shape, subsequence & 0xFFFFFFFF, np.uint32),
                   np.full(blocks.shape, subsequence >> 32, np.uint32)]
        words = philox.rounds_numpy(counter, (seed & 0xFFFFFFFF, seed >> 32))
    values = distributions.values_numpy(words, distribution, dtype, mean, stddev, lam, mrg=generator == "mrg32k3a")
    stream = np.stack(values, axis=-1).reshape(-1)
    return stream[skip:skip + size].reshape(shape)


ROUTINES = {"generate": Routine(attrs=ATTRS, infer=generate_infer, reference=generate_reference,
                                doc="values of a distribution from a generator's stream at (seed, offset)")}
