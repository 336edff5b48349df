"""cdnajit.nn.initializers against JAX's results (jax_initializers.json, written by
generate_jax_initializers.py under x64 with JAX's default threefry2x32 keys): every case of
initializer_cases.py for every stored seed, compared as its check says (exact, eps N S, close R,
error; the error models are in initializer_cases.py's docstring). The default suite runs one case per
family (QUICK) for the first seed, the full table is slow; `test_inside_jit` draws a few inside a user's jit, where they are traced into its program.
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
from initializer_cases import SEEDS, cases  # noqa: E402
from test_jax_random import decode  # noqa: E402

STORED = json.loads(pathlib.Path(__file__).with_name("jax_initializers.json").read_text())
CASES = cases()
# One case per initializer family and check kind, and the errors, run by the default suite; the rest
# are slow.
QUICK = {"zeros", "constant(-7, bfloat16)", "uniform(10, float32)", "uniform(3)(float16)", "normal(5, float32)",
         "truncated_normal(2, float32)", "variance_scaling(2, fan_geo_avg, uniform, float32)",
         "variance_scaling(2, fan_avg, truncated_normal, float64)", "variance_scaling(2, fan_out, normal, float32)",
         "variance_scaling(axes)", "variance_scaling(uniform, complex64)", "he_uniform(float32)",
         "glorot_normal(float32)", "orthogonal(column_axis=0)", "delta_orthogonal(float32)"} | \
        {name for name, (kind, _) in CASES.items() if kind == "error"}


def eps_apart(got: np.ndarray, want: np.ndarray, scale: float) -> float:
    """max |got - want| / (eps max(scale, |want|)): the error in units of the dtype's epsilon,
    relative to the value, or to the samples' scale where the value is smaller."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    eps = float(ml_dtypes.finfo(got.dtype).eps)
    return float((np.abs(g - w) / (eps * np.maximum(scale, np.abs(w)))).max(initial=0))


def check(name: str, kind: str, expected: dict, got) -> None:
    got, want = np.asarray(got), decode(expected)
    assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, got.shape, want.dtype, want.shape)
    words = kind.split()
    if words[0] == "exact":
        assert got.tobytes() == want.tobytes(), name
    elif words[0] == "eps":
        bound, scale = float(words[1]), float(words[2])
        parts = [(got.real, want.real), (got.imag, want.imag)] if np.iscomplexobj(want) else [(got, want)]
        for g, w in parts:
            assert eps_apart(g, w, scale) <= bound, (name, eps_apart(g, w, scale))
    else:
        assert words[0] == "close", name
        tolerance = float(words[1]) * np.abs(want).max(initial=0)
        assert np.abs(got - want).max(initial=0) <= tolerance, (name, np.abs(got - want).max())


def run_case(name: str, seed: int) -> None:
    kind, fn = CASES[name]
    expected = STORED["cases"][name][SEEDS.index(seed)]
    if "error" in expected:
        assert kind == "error", name
        with pytest.raises(ValueError):   # JAX's errors here are all ValueErrors
            fn(cj.nn.initializers, cr.PRNGKey(seed))
        return
    check(name, kind, expected, fn(cj.nn.initializers, cr.PRNGKey(seed)))


def test_stored_answers_describe_the_cases():
    assert set(STORED["cases"]) == set(CASES)
    assert STORED["jax_threefry_partitionable"] is True and STORED["x64"] is True
    assert {name for name, seeds in STORED["cases"].items() if "error" in seeds[0]} == \
        {name for name, (kind, _) in CASES.items() if kind == "error"}


@pytest.mark.parametrize("name", sorted(QUICK))
def test_quick(name):
    run_case(name, SEEDS[0])


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_all(name, seed):
    run_case(name, seed)


@pytest.mark.parametrize("name", ["glorot_uniform(float32)", "he_normal(float32)", "orthogonal(column_axis=0)",
                                  "delta_orthogonal(float32)"])
def test_inside_jit(name):
    """The key as a traced argument of a user's function: the same results as eagerly."""
    kind, fn = CASES[name]
    check(name, kind, STORED["cases"][name][1], cj.jit(lambda key: fn(cj.nn.initializers, key))(cr.PRNGKey(SEEDS[1])))
