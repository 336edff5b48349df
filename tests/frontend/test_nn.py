"""cdnajit.nn against JAX's answers (tests/frontend/data/nn_answers.npz, made by make_nn_answers.py).

Error model: each function is a short composition (at most ~10 operations) of correctly rounded
arithmetic and math-library calls (exp, expm1, log1p, tanh, erfc, logistic) accurate to a few ulps,
evaluated in the same order as JAX; two such evaluations differ by at most a few ulps of the dtype per
operation on the path, relative to the largest intermediate (O(|x|) here, |x| <= 40). The tolerance is
therefore 16 ulps of the result's dtype times max(1, |answer|), except for attention, whose sums of
S products accumulate rounding over S terms (see test_dot_product_attention).
"""
import json
import pathlib

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.nn as nn
from cdnajit.errors import TracingTypeError, TracingValueError

ANSWERS = np.load(pathlib.Path(__file__).parent / "data" / "nn_answers.npz")
DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
DTYPE_BY_NAME = {np.dtype(d).name: d for d in DTYPES.values()}
# name -> (cdnajit.nn function, keyword arguments), as make_nn_answers.py called jax.nn's.
ACTIVATIONS = {name: (lambda x, fn=fn, kwargs=kwargs: getattr(nn, fn)(x, **kwargs))
               for name, (fn, kwargs) in json.loads(str(ANSWERS["activation/table"])).items()}
AXIS_FUNCTIONS = {"softmax": nn.softmax, "log_softmax": nn.log_softmax, "logsumexp": nn.logsumexp,
                  "standardize": nn.standardize,
                  "standardize_stable": lambda x, axis: nn.standardize(x, axis, algorithm="stable")}
AXES = [-1, -1, 1, (0, 2), None]


def check(got, name, ulps=16, at_least=np.float64):
    """got has JAX's dtype and agrees with its answer to `ulps` ulps of that dtype, or of `at_least`
    where that is coarser (relative, floor 1)."""
    want, dtype = ANSWERS[f"{name}/out"], str(ANSWERS[f"{name}/dtype"])
    got = np.asarray(got)
    assert str(got.dtype) == dtype, f"{name}: dtype {got.dtype}, JAX gives {dtype}"
    assert got.shape == want.shape, f"{name}: shape {got.shape}, JAX gives {want.shape}"
    if not np.issubdtype(got.dtype, np.inexact) and dtype != "bfloat16":
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    got = got.astype(np.float64)
    eps = max(float(ml_dtypes.finfo(dtype).eps), float(ml_dtypes.finfo(at_least).eps))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=ulps * eps, atol=ulps * eps, err_msg=name)


@pytest.mark.parametrize("dname", DTYPES)
def test_activations_match_jax(dname):
    """Every activation of one dtype in one jitted program (one compile per dtype)."""
    x = ANSWERS["activation/x"].astype(DTYPES[dname])
    results = cj.jit(lambda x: {name: fn(x) for name, fn in ACTIVATIONS.items()})(x)
    for name in ACTIVATIONS:
        check(results[name], f"activation/{name}/{dname}")


def test_activations_of_integers_follow_jax_dtypes():
    ints = ANSWERS["activation/ints"]
    functions = dict(ACTIVATIONS, **{name: AXIS_FUNCTIONS[name] for name in ("softmax", "log_softmax", "standardize")},
                     logsumexp=nn.logsumexp)
    raising = [name for name in functions if str(ANSWERS[f"activation_int/{name}/dtype"]) == "TypeError"]
    assert raising == ["silu", "sigmoid"]
    for name in raising:
        with pytest.raises(TracingTypeError):
            cj.jit(functions[name])(ints)
    kept = [name for name in functions if name not in raising]
    results = cj.jit(lambda x: {name: functions[name](x) for name in kept})(ints)
    for name in kept:
        check(results[name], f"activation_int/{name}")


@pytest.mark.parametrize("dname", DTYPES)
def test_axis_functions_match_jax(dname):
    def all_cases(*xs):
        return [{name: fn(x, axis) for name, fn in AXIS_FUNCTIONS.items()} for x, axis in zip(xs, AXES)]
    xs = [ANSWERS[f"axis/{i}/x"].astype(DTYPES[dname]) for i in range(len(AXES))]
    results = cj.jit(all_cases)(*xs)
    for i, case in enumerate(results):
        for name in AXIS_FUNCTIONS:
            # standardize's "fast" variance, mean(x^2) - mean^2, cancels: its error is relative to
            # mean(x^2) / variance (up to ~10 here), not to the result.
            check(case[name], f"axis/{i}/{name}/{dname}", ulps=64 if name == "standardize" else 16)


def test_masked_and_weighted_forms_match_jax():
    x, where, b = ANSWERS["masked/x"], ANSWERS["masked/where"], ANSWERS["masked/b"]

    def forms(x, where, b):
        out, sign = nn.logsumexp(x, 0, b=b, keepdims=True, return_sign=True)
        return {"softmax": nn.softmax(x, -1, where=where), "log_softmax": nn.log_softmax(x, -1, where=where),
                "logsumexp_where": nn.logsumexp(x, 1, where=where), "logsumexp_b": nn.logsumexp(x, 1, b=b),
                "logsumexp_sign_out": out, "logsumexp_sign_sign": sign, "glu": nn.glu(x, -1), "glu0": nn.glu(x, 0)}
    results = cj.jit(forms)(x, where, b)
    for name, got in results.items():
        check(got, f"masked/{name}")


def test_one_hot_matches_jax():
    labels = ANSWERS["one_hot/labels"]
    check(nn.one_hot(labels, 4), "one_hot/default")
    check(cj.jit(lambda x: nn.one_hot(x, 5, axis=0, dtype=np.float32))(labels), "one_hot/axis0")


# The cases beyond a plain and a masked one compile their own programs (~5 s each): slow.
@pytest.mark.parametrize("case", [0, 3] + [pytest.param(c, marks=pytest.mark.slow) for c in (1, 2, 4, 5, 6)])
def test_dot_product_attention_matches_jax(case):
    """Tolerance: the logits sum H products and the output S; with |q|,|k|,|v| ~ 1 each sum's rounding
    is at most (terms) ulps of its magnitude (~sqrt(terms)), so 4 * (H + S) ulps of the operands' dtype
    bounds the difference from JAX's order of summation; f32 ulps at least, since the softmax runs in f32."""
    dtype = DTYPE_BY_NAME[str(ANSWERS[f"attention/{case}/dtype"])]
    q, k, v = (ANSWERS[f"attention/{case}/{t}"].astype(dtype) for t in "qkv")
    H, S = q.shape[-1], k.shape[1]
    kwargs = json.loads(str(ANSWERS[f"attention/{case}/static"]))
    if "local_window_size" in kwargs:
        kwargs["local_window_size"] = tuple(kwargs["local_window_size"])
    names = {"bias": "bias", "mask": "mask", "qlen": "query_seq_lengths", "kvlen": "key_value_seq_lengths"}
    arrays = {argument: ANSWERS[f"attention/{case}/{entry}"] for entry, argument in names.items()
              if f"attention/{case}/{entry}" in ANSWERS}
    got = cj.jit(lambda q, k, v, arrays: nn.dot_product_attention(q, k, v, **arrays, **kwargs))(q, k, v, arrays)
    check(got, f"attention/{case}", ulps=4 * (H + S), at_least=np.float32)


def test_dot_product_attention_of_rank3_operands_gets_a_batch_of_one():
    q, k, v = (ANSWERS[f"attention/0/{t}"][0] for t in "qkv")
    got = nn.dot_product_attention(q, k, v)
    assert got.shape == q.shape
    np.testing.assert_allclose(got, ANSWERS["attention/0/out"][0], rtol=1e-5, atol=1e-5)


def test_bad_input_names_the_shapes():
    q = np.zeros((1, 4, 3, 8), np.float32)
    k = np.zeros((1, 4, 2, 8), np.float32)
    with pytest.raises(TracingValueError, match=r"heads \(3\) must be a multiple of the key/value heads \(2\)"):
        cj.jit(nn.dot_product_attention)(q, k, k)
    with pytest.raises(TracingValueError, match=r"value must have shape \(1, 4, 2, 8\), got \(1, 5, 2, 8\)"):
        cj.jit(nn.dot_product_attention)(q[:, :, :2], k, np.zeros((1, 5, 2, 8), np.float32))
    with pytest.raises(TracingTypeError, match="mask must be bool"):
        cj.jit(lambda q, k, m: nn.dot_product_attention(q, k, k, mask=m))(k, k, np.zeros((1, 1, 4, 4), np.float32))
    with pytest.raises(NotImplementedError, match="pallas"):
        nn.dot_product_attention(k, k, k, implementation="pallas")
    with pytest.raises(TracingValueError, match=r"size is 5 \(odd\) in shape \(2, 5\)"):
        cj.jit(nn.glu)(np.zeros((2, 5), np.float32))
    with pytest.raises(TracingValueError, match="unknown algorithm 'exact'"):
        cj.jit(lambda x: nn.standardize(x, algorithm="exact"))(np.zeros(3, np.float32))
