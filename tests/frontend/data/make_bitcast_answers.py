"""Generates bitcast_answers.npz, known answers of tests/frontend/test_bitcast.py from JAX 0.10.2
(jax_enable_x64): lax.reduce_precision over each float dtype and several formats, and lax.nextafter and
jnp.spacing over special values. Every array is stored as its bit pattern (unsigned integers), so NaN
signs and payloads survive. Run once, with JAX installed:  python tests/frontend/data/make_bitcast_answers.py
"""
import pathlib

import jax
import ml_dtypes
import numpy as np

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
# (exponent_bits, mantissa_bits): f16, bf16, fp8 e4m3 and e5m2 layouts, f64 and f32 (no change for the
# narrower dtypes), and small formats where rounding carries into the exponent and everything overflows.
FORMATS = [(5, 10), (8, 7), (4, 3), (5, 2), (3, 1), (2, 0), (11, 52), (8, 23), (10, 40), (1, 5)]
rng = np.random.default_rng(11)
arrays = {}


def bits(array):
    return np.ascontiguousarray(array).view(f"u{array.dtype.itemsize}")


def special_values(dtype):
    info = ml_dtypes.finfo(dtype)
    values = [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 1.5, 0.1, -3.0, 65504.0, 65520.0, 1e-30, -1e-30, 1e30,
              float(info.max), -float(info.max), float(info.tiny), -float(info.tiny), float(info.smallest_subnormal),
              -float(info.smallest_subnormal), float(info.tiny) / 3, float(info.eps)]
    array = np.array(values, np.float64).astype(dtype)
    width = array.dtype.itemsize * 8
    exponent_mask = int(bits(np.array([np.inf], dtype))[0])
    nans = np.array([exponent_mask | 1 << (width - 2 - k) for k in range(2)] + [exponent_mask | 1], f"u{width // 8}")
    nans = np.concatenate([nans, nans | np.array(1 << (width - 1), nans.dtype)])   # quiet, payload, signalling; +-
    return np.concatenate([array, nans.view(dtype)])


for name, dtype in DTYPES.items():
    width = np.dtype(dtype).itemsize * 8
    random_bits = rng.integers(0, 2 ** width, 200, dtype=np.uint64).astype(f"u{width // 8}").view(dtype)
    magnitudes = (rng.standard_normal(200) * 10.0 ** rng.uniform(-40, 40, 200)).astype(dtype)
    x = np.concatenate([special_values(dtype), random_bits, magnitudes])
    arrays[f"reduce_precision/{name}/x"] = bits(x)
    for e, m in FORMATS:
        arrays[f"reduce_precision/{name}/{e}_{m}"] = bits(np.asarray(lax.reduce_precision(x, e, m)))
    specials = special_values(dtype)
    a, b = np.meshgrid(specials, specials, indexing="ij")
    arrays[f"nextafter/{name}/a"], arrays[f"nextafter/{name}/b"] = bits(a.ravel()), bits(b.ravel())
    arrays[f"nextafter/{name}/out"] = bits(np.asarray(lax.nextafter(a.ravel(), b.ravel())))
    arrays[f"spacing/{name}/x"] = bits(specials)
    arrays[f"spacing/{name}/out"] = bits(np.asarray(jnp.spacing(specials)))

np.savez_compressed(pathlib.Path(__file__).parent / "bitcast_answers.npz", **arrays)
