"""The jax.nn.initializers calls whose results generate_jax_initializers.py stores
(jax_initializers.json) and test_jax_initializers.py compares: each case is a function of the
initializers module (jax.nn.initializers or cdnajit.nn.initializers) and a raw key, and how its
results must agree:

  exact         bit for bit: uniform samples (exact on both sides) times a scale rounded the same
                way, and constants.
  eps N S       |difference| <= N eps max(S, |JAX's value|), S the samples' scale (the stddev the
                standard samples are multiplied by): the sampler's own bound (random_cases.py's
                xla_error: 4 eps for the f32 normal, 8 for the f32 truncated normal, 16 in f64)
                plus 1 for the scaling product, rounded on each side. Complex samples in a disk
                take XLA's sqrt, log, cos and sin on one side, cdnajit's on the other: a few eps,
                but XLA's f64 log is up to 63 eps off (random_cases.py), so 64 for complex128's
                truncated normal (the modulus sqrt(-log(1 - t))).
  close R       |difference| <= R max|JAX's value|: orthogonal matrices, whose QR (Householder in
                XLA, Gram-Schmidt twice in cdnajit) are each within a few n eps of the exact
                factor (n <= 6 here); R is about 32 eps (1e-14 in f64, 4e-6 in f32).
  error         JAX raises; the stored answer is the exception's class name.
"""
from __future__ import annotations

import math

SEEDS = (0, 42, 2 ** 31 + 7)
TRUNCATED_NORMAL_STDDEV = .87962566103423978   # JAX's, as nn_initializers.py


def variance_scaling_stddev(scale: float, fan: float, distribution: str) -> float:
    """The stddev the standard samples are scaled by (for the uniform: the half-width)."""
    root = math.sqrt(scale / fan)
    return {"truncated_normal": root / TRUNCATED_NORMAL_STDDEV, "normal": root,
            "uniform": math.sqrt(3) * root}[distribution]


def cases():
    """name -> (check, function of (initializers module, key))."""
    c = {}
    c["zeros"] = ("exact", lambda i, k: i.zeros(k, (2, 3)))
    c["ones(float32)"] = ("exact", lambda i, k: i.ones(k, (4,), "float32"))
    c["constant(-7, bfloat16)"] = ("exact", lambda i, k: i.constant(-7, "bfloat16")(k, (2, 3)))
    c["constant(0.1)(dtype=float32)"] = ("exact", lambda i, k: i.constant(0.1)(k, (3,), "float32"))

    c["uniform()"] = ("exact", lambda i, k: i.uniform()(k, (5, 7)))
    c["uniform(10, float32)"] = ("exact", lambda i, k: i.uniform(10.0, "float32")(k, (5, 7)))
    c["uniform(3)(float16)"] = ("exact", lambda i, k: i.uniform(3.0)(k, (33,), "float16"))
    c["normal()"] = ("eps 17 0.01", lambda i, k: i.normal()(k, (5, 7)))
    c["normal(5, float32)"] = ("eps 5 5", lambda i, k: i.normal(5.0, "float32")(k, (5, 7)))
    c["truncated_normal(2, float32)"] = ("eps 9 2", lambda i, k: i.truncated_normal(2.0, "float32")(k, (5, 7)))
    c["truncated_normal(1, lower=-1, upper=3)"] = (
        "eps 17 1", lambda i, k: i.truncated_normal(1.0, lower=-1.0, upper=3.0)(k, (40,)))

    # variance_scaling: every mode and distribution, over a conv kernel (3, 3, 4, 6) whose receptive
    # field is 9: fan_in 36, fan_out 54.
    fans = {"fan_in": 36, "fan_out": 54, "fan_avg": 45, "fan_geo_avg": math.sqrt(36 * 54)}
    sampler_error = {("truncated_normal", "float32"): 9, ("truncated_normal", "float64"): 17,
                     ("normal", "float32"): 5, ("normal", "float64"): 17}
    for mode, fan in fans.items():
        for distribution in ("truncated_normal", "normal", "uniform"):
            for dtype in ("float32", "float64"):
                s = variance_scaling_stddev(2.0, fan, distribution)
                check = "exact" if distribution == "uniform" else f"eps {sampler_error[distribution, dtype]} {s!r}"
                c[f"variance_scaling(2, {mode}, {distribution}, {dtype})"] = (
                    check, lambda i, k, m=mode, d=distribution, t=dtype: i.variance_scaling(2.0, m, d)(k, (3, 3, 4, 6), t))
    c["variance_scaling(uniform, bfloat16)"] = (
        "exact", lambda i, k: i.variance_scaling(1.0, "fan_avg", "uniform")(k, (17, 5), "bfloat16"))
    c["variance_scaling(axes)"] = (
        "exact", lambda i, k: i.variance_scaling(1.0, "fan_avg", "uniform", in_axis=(0, 1), out_axis=3,
                                                 batch_axis=2)(k, (2, 3, 4, 5), "float32"))
    c["variance_scaling(in_axis=0, 1-D)"] = (
        "exact", lambda i, k: i.variance_scaling(1.0, "fan_in", "uniform", in_axis=0, out_axis=0)(k, (9,), "float32"))
    c["variance_scaling(normal, complex64)"] = (
        f"eps 5 {math.sqrt(1 / 4)!r}", lambda i, k: i.variance_scaling(1.0, "fan_in", "normal")(k, (4, 5), "complex64"))
    c["variance_scaling(uniform, complex64)"] = (
        f"eps 4 {math.sqrt(1 / 4)!r}", lambda i, k: i.variance_scaling(1.0, "fan_in", "uniform")(k, (4, 5), "complex64"))
    c["variance_scaling(truncated_normal, complex128)"] = (
        f"eps 64 {math.sqrt(1 / 4)!r}",
        lambda i, k: i.variance_scaling(1.0, "fan_in", "truncated_normal")(k, (4, 5), "complex128"))

    # The named cases: glorot/xavier, lecun, he/kaiming.
    for name in ("glorot_uniform", "xavier_uniform", "lecun_uniform", "he_uniform", "kaiming_uniform"):
        c[f"{name}(float32)"] = ("exact", lambda i, k, n=name: getattr(i, n)()(k, (6, 10), "float32"))
    for name, scale, mode in (("glorot_normal", 1.0, "fan_avg"), ("xavier_normal", 1.0, "fan_avg"),
                              ("lecun_normal", 1.0, "fan_in"), ("he_normal", 2.0, "fan_in"),
                              ("kaiming_normal", 2.0, "fan_in")):
        s = variance_scaling_stddev(scale, {"fan_in": 6, "fan_avg": 8}[mode], "truncated_normal")
        c[f"{name}(float32)"] = (f"eps 9 {s!r}", lambda i, k, n=name: getattr(i, n)()(k, (6, 10), "float32"))
    c["he_uniform(dtype=float64, batch_axis=0)"] = (
        "exact", lambda i, k: i.he_uniform(batch_axis=0, dtype="float64")(k, (2, 5, 3)))

    c["orthogonal()"] = ("close 1e-14", lambda i, k: i.orthogonal()(k, (6, 4)))
    c["orthogonal(2, float32)"] = ("close 4e-6", lambda i, k: i.orthogonal(2.0, dtype="float32")(k, (3, 5)))
    c["orthogonal(column_axis=0)"] = ("close 1e-14", lambda i, k: i.orthogonal(column_axis=0)(k, (3, 2, 4)))
    c["orthogonal(zero-sized)"] = ("exact", lambda i, k: i.orthogonal()(k, (0, 3), "float32"))
    c["delta_orthogonal()"] = ("close 1e-14", lambda i, k: i.delta_orthogonal()(k, (3, 3, 4)))
    c["delta_orthogonal(float32)"] = ("close 4e-6", lambda i, k: i.delta_orthogonal()(k, (2, 3, 2, 3), "float32"))
    c["delta_orthogonal(5-D, scale 3)"] = (
        "close 1e-14", lambda i, k: i.delta_orthogonal(3.0, dtype="float64")(k, (1, 3, 2, 2, 2)))

    c["glorot_uniform(1-D)"] = ("error", lambda i, k: i.glorot_uniform()(k, (5,)))
    c["variance_scaling(bad mode)"] = ("error", lambda i, k: i.variance_scaling(1.0, "fan", "normal")(k, (2, 3)))
    c["variance_scaling(bad distribution)"] = (
        "error", lambda i, k: i.variance_scaling(1.0, "fan_in", "cauchy")(k, (2, 3)))
    c["orthogonal(1-D)"] = ("error", lambda i, k: i.orthogonal()(k, (4,)))
    c["delta_orthogonal(2-D)"] = ("error", lambda i, k: i.delta_orthogonal()(k, (3, 3)))
    c["delta_orthogonal(fan_in > fan_out)"] = ("error", lambda i, k: i.delta_orthogonal()(k, (3, 4, 2)))
    return c
