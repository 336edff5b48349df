"""Generates nn_answers.npz, known answers of tests/frontend/test_nn.py from JAX 0.10.2
(jax_enable_x64). Run once, with JAX installed:  python tests/frontend/data/make_nn_answers.py

Inputs are stored as f32 and cast to each case's dtype by the test as here; outputs as f64 (exact for
every dtype used), with the dtype JAX gave as a string.
"""
import json
import pathlib

import jax
import ml_dtypes
import numpy as np

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import nn  # noqa: E402

rng = np.random.default_rng(24)
arrays = {}
DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def store(name, out):
    out = np.asarray(out)
    arrays[f"{name}/out"] = out.astype(np.float64)
    arrays[f"{name}/dtype"] = np.array(str(out.dtype))


# Elementwise activations: values over [-8, 8] with the special points -1, 0, 1, 6 and large ones.
# name -> (jax.nn function, keyword arguments); stored so that the test calls cdnajit.nn's the same way.
ACTIVATIONS = {name: (name, {}) for name in (
    "relu", "relu6", "leaky_relu", "elu", "celu", "selu", "gelu", "silu", "sigmoid", "log_sigmoid", "softplus",
    "soft_sign", "hard_tanh", "hard_sigmoid", "hard_silu", "mish", "squareplus")}
ACTIVATIONS.update(gelu_exact=("gelu", {"approximate": False}), celu_alpha=("celu", {"alpha": 0.5}),
                   elu_alpha=("elu", {"alpha": 2.0}), leaky_relu_slope=("leaky_relu", {"negative_slope": 0.2}))
arrays["activation/table"] = np.array(json.dumps(ACTIVATIONS))
x = np.concatenate([rng.uniform(-8, 8, 61), [-1, 0, 1, 6, -6, 3, -3, 40, -40, 1e-3]]).astype(np.float32)
arrays["activation/x"] = x
for name, (fn, kwargs) in ACTIVATIONS.items():
    for dname, dtype in DTYPES.items():
        store(f"activation/{name}/{dname}", getattr(nn, fn)(jnp.asarray(x.astype(dtype)), **kwargs))
ints = np.arange(-5, 6, dtype=np.int32)
arrays["activation/ints"] = ints
INT_FUNCTIONS = dict(ACTIVATIONS, **{name: (name, {}) for name in ("softmax", "log_softmax", "logsumexp", "standardize")})
for name, (fn, kwargs) in INT_FUNCTIONS.items():  # integers: the dtype JAX gives, or TypeError (sigmoid, silu)
    try:
        store(f"activation_int/{name}", getattr(nn, fn)(jnp.asarray(ints), **kwargs))
    except TypeError:
        arrays[f"activation_int/{name}/dtype"] = np.array("TypeError")

# Axis functions: (shape, axis) over f32/f64/f16/bf16.
AXIS_CASES = [((7,), -1), ((3, 5), -1), ((4, 6, 5), 1), ((2, 3, 4), (0, 2)), ((3, 5), None)]
for i, (shape, axis) in enumerate(AXIS_CASES):
    a = (rng.standard_normal(shape) * 3).astype(np.float32)
    arrays[f"axis/{i}/x"] = a
    for dname, dtype in DTYPES.items():
        xa = jnp.asarray(a.astype(dtype))
        store(f"axis/{i}/softmax/{dname}", nn.softmax(xa, axis))
        store(f"axis/{i}/log_softmax/{dname}", nn.log_softmax(xa, axis))
        store(f"axis/{i}/logsumexp/{dname}", nn.logsumexp(xa, axis))
        store(f"axis/{i}/standardize/{dname}", nn.standardize(xa, axis))
        store(f"axis/{i}/standardize_stable/{dname}", nn.standardize(xa, axis, algorithm="stable"))

# where= and b= forms.
a = (rng.standard_normal((4, 6)) * 2).astype(np.float32)
where = rng.random((4, 6)) < 0.7
b = rng.uniform(-1, 2, (4, 6)).astype(np.float32)
arrays["masked/x"], arrays["masked/where"], arrays["masked/b"] = a, where, b
store("masked/softmax", nn.softmax(a, -1, where=where))
store("masked/log_softmax", nn.log_softmax(a, -1, where=where))
store("masked/logsumexp_where", nn.logsumexp(a, 1, where=where))
store("masked/logsumexp_b", nn.logsumexp(a, 1, b=b))
out, sign = nn.logsumexp(a, 0, b=b, keepdims=True, return_sign=True)
store("masked/logsumexp_sign_out", out)
store("masked/logsumexp_sign_sign", sign)
store("masked/glu", nn.glu(a, -1))
store("masked/glu0", nn.glu(a, 0))

labels = np.array([[0, 3, 2], [1, 4, -1]], dtype=np.int32)
arrays["one_hot/labels"] = labels
store("one_hot/default", nn.one_hot(labels, 4))
store("one_hot/axis0", nn.one_hot(labels, 5, axis=0, dtype=jnp.float32))

# Attention: (B, T, S, N, K, H, dtype, options).
ATTENTION = [
    (2, 5, 7, 2, 2, 8, "f32", {}),
    (1, 9, 9, 4, 2, 16, "f32", {"is_causal": True}),
    (2, 6, 5, 3, 1, 4, "f64", {"scale": 0.3, "bias": True}),
    (2, 4, 6, 2, 2, 8, "f32", {"mask": True}),
    (2, 7, 7, 2, 2, 8, "f16", {"is_causal": True, "bias": True}),
    (2, 5, 8, 2, 2, 8, "bf16", {"seqlens": True}),
    (1, 8, 8, 2, 1, 4, "f32", {"local_window_size": (2, 1)}),
]
for i, (B, T, S, N, K, H, dname, options) in enumerate(ATTENTION):
    dtype = DTYPES[dname]
    q, k, v = (rng.standard_normal(shape).astype(np.float32)
               for shape in ((B, T, N, H), (B, S, K, H), (B, S, K, H)))
    arrays[f"attention/{i}/q"], arrays[f"attention/{i}/k"], arrays[f"attention/{i}/v"] = q, k, v
    kwargs = {key: value for key, value in options.items() if key in ("is_causal", "scale", "local_window_size")}
    arrays[f"attention/{i}/static"] = np.array(json.dumps(kwargs))  # the test reads its case from these entries
    if options.get("bias"):
        kwargs["bias"] = arrays[f"attention/{i}/bias"] = rng.standard_normal((1, N, T, S)).astype(np.float32)
    if options.get("mask"):
        mask = rng.random((B, 1, T, S)) < 0.8
        mask[..., 0] = True
        kwargs["mask"] = arrays[f"attention/{i}/mask"] = mask
    if options.get("seqlens"):
        kwargs["query_seq_lengths"] = arrays[f"attention/{i}/qlen"] = np.array([T, T - 2], np.int32)
        kwargs["key_value_seq_lengths"] = arrays[f"attention/{i}/kvlen"] = np.array([S - 3, S], np.int32)
    store(f"attention/{i}", nn.dot_product_attention(*(jnp.asarray(t.astype(dtype)) for t in (q, k, v)), **kwargs))

np.savez_compressed(pathlib.Path(__file__).with_name("nn_answers.npz"), **arrays)
