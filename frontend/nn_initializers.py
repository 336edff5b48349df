"""cdnajit.nn.initializers: jax.nn.initializers, each a builder returning `init(key, shape, dtype)`.

Each init is JAX's definition (jax/_src/nn/initializers.py) written with cdnajit.random and
cdnajit.numpy: the same sampler on the same key, then the same scaling in the same dtype and order
(the variance rounded to dtype first, its square root taken in dtype), so results match JAX's bit
for bit where the sampler does (uniform) and to the sampler's rounding otherwise. dtype=None is
cdnajit's default float, float64 (JAX's under jax_enable_x64). Called eagerly, an init returns a
numpy array; called inside `jit` (the key traced, the shape static), it is traced into the program.
"""
from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from ..errors import TracingValueError
from ..ir.types import NUMPY_DTYPES
from . import cnp
from . import random
from .cnp.base import DEFAULT_FLOAT, to_dtype_name
from .random.continuous import canonical_shape
from .tracing import located

__all__ = ["Initializer", "zeros", "ones", "constant", "uniform", "normal", "truncated_normal", "variance_scaling",
           "glorot_uniform", "glorot_normal", "xavier_uniform", "xavier_normal", "lecun_uniform", "lecun_normal",
           "he_uniform", "he_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal"]

# The standard deviation of a standard normal truncated to (-2, 2), and of a complex standard normal
# whose modulus is truncated to 2: variance_scaling divides by them so that the truncated samples have
# the asked variance (JAX's constants).
TRUNCATED_NORMAL_STDDEV = .87962566103423978
COMPLEX_TRUNCATED_NORMAL_STDDEV = .95311164380491208

MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


class Initializer(Protocol):
    """What the builders return: init(key, shape, dtype) -> an array of that shape and dtype."""
    def __call__(self, key, shape, dtype=None):
        ...


def dtype_or_default(dtype) -> np.dtype:
    return NUMPY_DTYPES[DEFAULT_FLOAT if dtype is None else to_dtype_name(dtype)]


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def real_part_dtype(dtype: np.dtype) -> np.dtype:
    return dtype.type(0).real.dtype


def typed(value, dtype: np.dtype):
    """jnp.array(value, dtype): a Python number rounded to dtype once."""
    return cnp.asarray(value, dtype=dtype)


def zeros(key, shape, dtype=None):
    """An array of zeros; the key is ignored."""
    return cnp.zeros(shape, dtype_or_default(dtype))


def ones(key, shape, dtype=None):
    """An array of ones; the key is ignored."""
    return cnp.ones(shape, dtype_or_default(dtype))


def constant(value, dtype=None) -> Initializer:
    """Arrays full of `value`."""
    def init(key, shape, dtype=dtype):
        return cnp.full(shape, value, dtype=dtype_or_default(dtype))
    return init


def uniform(scale=1e-2, dtype=None) -> Initializer:
    """Uniform floats in [0, scale)."""
    def init(key, shape, dtype=dtype):
        dtype = dtype_or_default(dtype)
        return cnp.multiply(random.uniform(key, shape, dtype), typed(scale, dtype))
    return init


def normal(stddev=1e-2, dtype=None) -> Initializer:
    """Normal floats of mean 0 and standard deviation `stddev`."""
    def init(key, shape, dtype=dtype):
        dtype = dtype_or_default(dtype)
        return cnp.multiply(random.normal(key, shape, dtype), typed(stddev, dtype))
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0) -> Initializer:
    """A standard normal truncated to (lower, upper), then scaled by `stddev` (uncorrected for the
    truncation, as JAX's)."""
    def init(key, shape, dtype=dtype):
        dtype = dtype_or_default(dtype)
        return cnp.multiply(random.truncated_normal(key, lower, upper, shape, dtype), typed(stddev, dtype))
    return init


def axes_size(what: str, shape: tuple[int, ...], axes) -> int:
    """The size of an axis, or the product of a sequence of axes' sizes, of shape."""
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    for axis in axes:
        if not -len(shape) <= axis < len(shape):
            raise TracingValueError(located(f"variance_scaling: {what} {axis} is out of range for shape {shape}"))
    return math.prod(shape[axis] for axis in axes)


def compute_fans(shape: tuple[int, ...], in_axis, out_axis, batch_axis) -> tuple[float, float]:
    """(fan_in, fan_out): the input and output sizes, each times the receptive field (the product of
    the axes that are none of in_axis, out_axis, batch_axis: a convolution's spatial axes)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise TracingValueError(located(
            f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor with default "
            f"in_axis. Must be at least 2D or specify in_axis explicitly."))
    in_size = axes_size("in_axis", shape, in_axis)
    out_size = axes_size("out_axis", shape, out_axis)
    batch_size = axes_size("batch_axis", shape, batch_axis)
    if 0 in shape:   # JAX divides by zero
        raise TracingValueError(located(f"variance_scaling: shape {shape} has a zero-sized axis, so a fan is 0"))
    receptive_field_size = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field_size, out_size * receptive_field_size


def fan_denominator(mode: str, fan_in: float, fan_out: float) -> float:
    return {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
            "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]


def complex_uniform(key, shape, dtype: np.dtype):
    """Complex values uniform in the disk of radius sqrt(2) (mean 0, variance 1)."""
    keys = random.split(key)
    real = real_part_dtype(dtype)
    r = cnp.sqrt(cnp.multiply(2, random.uniform(keys[0], shape, real))).astype(dtype)
    theta = cnp.multiply(2 * np.pi, random.uniform(keys[1], shape, real).astype(dtype))
    return cnp.multiply(r, cnp.exp(cnp.multiply(1j, theta)))


def complex_truncated_normal(key, upper: float, shape, dtype: np.dtype):
    """A complex normal of variance 1 whose modulus is truncated to `upper`, by inverting the
    modulus' CDF 1 - exp(-r^2)."""
    keys = random.split(key)
    real = real_part_dtype(dtype)
    mass = cnp.subtract(1, cnp.exp(typed(-(upper ** 2), dtype)))
    t = cnp.multiply(mass, random.uniform(keys[0], shape, real).astype(dtype))
    r = cnp.sqrt(cnp.negative(cnp.log(cnp.subtract(1, t))))
    theta = cnp.multiply(2 * np.pi, random.uniform(keys[1], shape, real).astype(dtype))
    return cnp.multiply(r, cnp.exp(cnp.multiply(1j, theta)))


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    """Samples of mean 0 and variance scale / n, n the fan `mode` names (in, out, their arithmetic or
    geometric mean); the truncated normal is cut at 2 standard deviations, the uniform (a disk for
    complex dtypes) spans sqrt(3 variance)."""
    if mode not in MODES:
        raise TracingValueError(located(f"invalid mode for variance scaling initializer: {mode}"))
    if distribution not in DISTRIBUTIONS:
        raise TracingValueError(located(f"invalid distribution for variance scaling initializer: {distribution}"))

    def init(key, shape, dtype=dtype):
        shape = canonical_shape(shape)
        dtype = dtype_or_default(dtype)
        fan_in, fan_out = compute_fans(shape, in_axis, out_axis, batch_axis)
        variance = typed(scale / fan_denominator(mode, fan_in, fan_out), dtype)
        if distribution == "truncated_normal" and not is_complex(dtype):
            stddev = cnp.divide(cnp.sqrt(variance), typed(TRUNCATED_NORMAL_STDDEV, dtype))
            return cnp.multiply(random.truncated_normal(key, -2, 2, shape, dtype), stddev)
        if distribution == "truncated_normal":
            stddev = cnp.divide(cnp.sqrt(variance), typed(COMPLEX_TRUNCATED_NORMAL_STDDEV, dtype))
            return cnp.multiply(complex_truncated_normal(key, 2, shape, dtype), stddev)
        if distribution == "normal":
            return cnp.multiply(random.normal(key, shape, dtype), cnp.sqrt(variance))
        if not is_complex(dtype):
            return cnp.multiply(random.uniform(key, shape, dtype, -1), cnp.sqrt(cnp.multiply(3, variance)))
        return cnp.multiply(complex_uniform(key, shape, dtype), cnp.sqrt(variance))
    return init


# The named special cases of variance_scaling: (scale, mode, distribution).
def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    """Glorot and Bengio (2010): variance_scaling(1, fan_avg, uniform)."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    """Glorot and Bengio (2010): variance_scaling(1, fan_avg, truncated_normal)."""
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    """LeCun et al. (1998): variance_scaling(1, fan_in, uniform)."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    """LeCun et al. (1998): variance_scaling(1, fan_in, truncated_normal)."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    """He et al. (2015): variance_scaling(2, fan_in, uniform)."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    """He et al. (2015): variance_scaling(2, fan_in, truncated_normal)."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None) -> Initializer:
    """Matrices with orthonormal columns along `column_axis` (every other axis flattened into rows),
    times `scale`: jax.random.orthogonal's sample, reshaped."""
    def init(key, shape, dtype=dtype):
        shape = canonical_shape(shape)
        dtype = dtype_or_default(dtype)
        if len(shape) < 2:
            raise TracingValueError(located(f"orthogonal initializer requires at least a 2D shape, got {shape}"))
        if 0 in shape:
            return cnp.zeros(shape, dtype)
        n_cols = shape[column_axis]
        q = random.orthogonal(key, math.prod(shape) // n_cols, (), dtype, n_cols)
        q = cnp.reshape(q, tuple(int(d) for d in np.delete(shape, column_axis)) + (n_cols,))
        return cnp.multiply(typed(scale, dtype), cnp.moveaxis(q, -1, column_axis))
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None) -> Initializer:
    """Xiao et al. (2018): a convolution kernel (3, 4 or 5 dimensions, spatial axes first) that is an
    orthogonal matrix (drawn as `orthogonal` draws it) at the spatial center and zero elsewhere."""
    def init(key, shape, dtype=dtype):
        shape = canonical_shape(shape)
        if len(shape) not in (3, 4, 5):
            raise TracingValueError(located(f"Delta orthogonal initializer requires a 3D, 4D or 5D shape, got {shape}"))
        if shape[-1] < shape[-2]:
            raise TracingValueError(located(f"`fan_in` must be less or equal than `fan_out`, got shape {shape}"))
        matrix = orthogonal(scale, column_axis, dtype)(key, shape[-2:])
        # The matrix at index (k - 1) // 2 of each spatial axis of length k, zeros around it.
        spatial = [((k - 1) // 2, k - 1 - (k - 1) // 2) for k in shape[:-2]]
        return cnp.pad(cnp.reshape(matrix, (1,) * len(spatial) + shape[-2:]), spatial + [(0, 0), (0, 0)])
    return init
