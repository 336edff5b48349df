"""cdnajit.random against JAX's results (jax_random.json, written by generate_jax_random.py with JAX's
default threefry2x32 keys and jax_threefry_partitionable on, under x64): every case of random_cases.py
for every stored seed, compared as its check says (exact, ulps N, agree F R, error; the error models
are in random_cases.py's docstring). The cases run eagerly (each sampler is one compiled program);
`test_inside_jit` runs a few inside a user's jit, where they are inlined into the user's program.
The full table is slow (a compile per sampler signature); the default run takes one case per sampler.
"""
import json
import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.random as cr

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from random_cases import SEEDS, cases  # noqa: E402

STORED = json.loads(pathlib.Path(__file__).with_name("jax_random.json").read_text())
CASES = cases()
# One case per sampler family and check kind, run by the default suite; the rest are slow.
QUICK = {"PRNGKey(-1)", "PRNGKey(1099511627781)", "key_data(split(key(5), (2, 3)))", "split(3)",
         "fold_in(4294967295)", "bits((3, 5), None)", "bits((257,), uint8)", "bits((2, 0, 3), uint32)",
         "uniform((4, 65), float32)", "uniform((7,), None)", "uniform((7,), bfloat16)",
         "uniform(minval=-2, maxval=[1, 2, 3])", "randint(-3, 100, int8)", "randint(-3, 100, None)",
         "randint(int32 full)", "bernoulli(0.3)", "permutation(1000)", "permutation(grid, axis=1)",
         "choice(10, (5,), replace=False)", "choice(4, p)", "categorical", "normal(float32)",
         "normal(default)", "exponential(float64)", "gamma(0.3, float32)", "poisson(25.0)",
         "split(key of shape (3,))", "choice(replace=False, too many)", "uniform(int dtype)",
         "binomial(int dtype)", "multinomial(shape mismatch)"}


def numpy_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def decode(entry: dict) -> np.ndarray:
    return np.frombuffer(bytes.fromhex(entry["hex"]), numpy_dtype(entry["dtype"])).reshape(entry["shape"])


def eps_apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| / (eps max(1, |b|)): relative error in units of the dtype's epsilon, absolute below 1
    (where the sampler's input, a scaled uniform float, carries an absolute rounding error of eps)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore"):
        distance = np.abs(a64 - b64) / (float(ml_dtypes.finfo(a.dtype).eps) * np.maximum(1.0, np.abs(b64)))
    return np.where((a64 == b64) | (np.isnan(a64) & np.isnan(b64)), 0.0, distance)


def check(name: str, kind: str, expected: dict, got) -> None:
    if "error" in expected:
        assert kind == "error", name
        return
    got = np.asarray(cr.key_data(got) if isinstance(got, cr.PRNGKeyArray) else got)
    want = decode(expected)
    assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, got.shape, want.dtype, want.shape)
    words = kind.split()
    if words[0] == "exact":
        assert got.tobytes() == want.tobytes(), name
    elif words[0] == "eps":
        parts = [(got.real, want.real), (got.imag, want.imag)] if np.iscomplexobj(want) else [(got, want)]
        for g, w in parts:
            assert eps_apart(g, w).max(initial=0) <= float(words[1]), (name, eps_apart(g, w).max())
    else:
        fraction, rtol = float(words[1]), float(words[2])
        agree = np.isclose(got, want, rtol=rtol, atol=0, equal_nan=True)
        assert agree.mean() >= fraction, (name, agree.mean())


def run_case(name: str, seed: int) -> None:
    kind, fn = CASES[name]
    expected = STORED["cases"][name][SEEDS.index(seed)]
    if "error" in expected:
        with pytest.raises((TypeError, ValueError, OverflowError)) as raised:
            fn(cr, cr.PRNGKey(seed))
        jax_error = {"TypeError": TypeError, "ValueError": ValueError}[expected["error"]]
        assert isinstance(raised.value, jax_error), (name, type(raised.value), expected["error"])
        return
    check(name, kind, expected, fn(cr, cr.PRNGKey(seed)))


def test_stored_answers_describe_the_cases():
    assert set(STORED["cases"]) == set(CASES)
    assert STORED["jax_threefry_partitionable"] is True and STORED["x64"] is True


@pytest.mark.parametrize("name", sorted(QUICK))
def test_quick(name):
    run_case(name, SEEDS[0])


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_all(name, seed):
    run_case(name, seed)


@pytest.mark.parametrize("name", ["split(3)", "uniform((4, 65), float32)", "randint(-3, 100, int8)",
                                  "permutation(grid, axis=1)", "normal(float32)", "poisson(4.0)"])
def test_inside_jit(name):
    """The key as a traced argument of a user's function: the same results as eagerly."""
    kind, fn = CASES[name]
    seed = SEEDS[1]
    check(name, kind, STORED["cases"][name][1], cj.jit(lambda key: fn(cr, key))(cr.PRNGKey(seed)))
