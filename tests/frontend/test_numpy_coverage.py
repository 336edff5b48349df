"""Every public name of jax.numpy is either in cdnajit.numpy or in the README's "Not yet supported"
list (### jax.numpy), with its reason; and that list stays true: its names are missing, or are
stubs that raise NotImplementedError."""
import os

import numpy as np
import pytest

import cdnajit.numpy as cnp

# dir(jax.numpy) without private names and submodules (fft, linalg), generated once from JAX 0.10.2
# (jax_enable_x64): sorted(n for n in dir(jnp) if not n.startswith("_") and not a module).
JAX_NUMPY_NAMES = (
    'ComplexWarning abs absolute acos acosh add all allclose amax amin angle any append apply_along_axis '
    'apply_over_axes arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argpartition argsort '
    'argwhere around array array_equal array_equiv array_repr array_split array_str asarray asin asinh astype atan '
    'atan2 atanh atleast_1d atleast_2d atleast_3d average bartlett bfloat16 bincount bitwise_and bitwise_count '
    'bitwise_invert bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor blackman block bool '
    'bool_ broadcast_arrays broadcast_shapes broadcast_to c_ can_cast cbrt cdouble ceil character choose clip '
    'column_stack complex128 complex64 complex_ complexfloating compress concat concatenate conj conjugate convolve '
    'copy copysign corrcoef correlate cos cosh count_nonzero cov cross csingle cumprod cumsum cumulative_prod '
    'cumulative_sum deg2rad degrees delete diag diag_indices diag_indices_from diagflat diagonal diff digitize divide '
    'divmod dot double dsplit dstack dtype e ediff1d einsum einsum_path empty empty_like equal euler_gamma exp exp2 '
    'expand_dims expm1 extract eye fabs fill_diagonal finfo flatnonzero flexible flip fliplr flipud float16 float32 '
    'float4_e2m1fn float64 float6_e2m3fn float6_e3m2fn float8_e3m4 float8_e4m3 float8_e4m3b11fnuz float8_e4m3fn '
    'float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz float8_e8m0fnu float_ float_power floating floor floor_divide fmax '
    'fmin fmod frexp from_dlpack frombuffer fromfile fromfunction fromiter frompyfunc fromstring full full_like gcd '
    'generic geomspace get_printoptions gradient greater greater_equal hamming hanning heaviside histogram '
    'histogram2d histogram_bin_edges histogramdd hsplit hstack hypot i0 identity iinfo imag index_exp indices inexact '
    'inf inner insert int1 int16 int2 int32 int4 int64 int8 int_ integer interp intersect1d invert isclose iscomplex '
    'iscomplexobj isdtype isfinite isin isinf isnan isneginf isposinf isreal isrealobj isscalar issubdtype iterable '
    'ix_ kaiser kron lcm ldexp left_shift less less_equal lexsort linspace load log log10 log1p log2 logaddexp '
    'logaddexp2 logical_and logical_not logical_or logical_xor logspace mask_indices matmul matrix_transpose matvec '
    'max maximum mean median meshgrid mgrid min minimum mod modf moveaxis multiply nan nan_to_num nanargmax nanargmin '
    'nancumprod nancumsum nanmax nanmean nanmedian nanmin nanpercentile nanprod nanquantile nanstd nansum nanvar '
    'ndarray ndim negative newaxis nextafter nonzero not_equal number object_ ogrid ones ones_like outer packbits pad '
    'partition percentile permute_dims pi piecewise place poly polyadd polyder polydiv polyfit polyint polymul '
    'polysub polyval positive pow power printoptions prod promote_types ptp put put_along_axis quantile r_ rad2deg '
    'radians ravel ravel_multi_index real reciprocal remainder repeat reshape resize result_type right_shift rint '
    'roll rollaxis roots rot90 round s_ save savez searchsorted select set_printoptions setdiff1d setxor1d shape sign '
    'signbit signedinteger sin sinc single sinh size sort sort_complex spacing split sqrt square squeeze stack std '
    'subtract sum swapaxes take take_along_axis tan tanh tensordot tile trace transpose trapezoid tri tril '
    'tril_indices tril_indices_from trim_zeros triu triu_indices triu_indices_from true_divide trunc ufunc uint uint1 '
    'uint16 uint2 uint32 uint4 uint64 uint8 union1d unique unique_all unique_counts unique_inverse unique_values '
    'unpackbits unravel_index unsignedinteger unstack unwrap vander var vdot vecdot vecmat vectorize vsplit vstack '
    'where zeros zeros_like'
).split()

NARROW_FLOAT_REASON = "a dtype the IR does not have (ir/types.py has bool, ints, f16, bf16, f32, f64, c64, c128)"
NOT_SUPPORTED = {
    **dict.fromkeys("float4_e2m1fn float6_e2m3fn float6_e3m2fn float8_e3m4 float8_e4m3 float8_e4m3b11fnuz "
                    "float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz float8_e8m0fnu int1 int2 int4 uint1 "
                    "uint2 uint4".split(), NARROW_FLOAT_REASON),
    "fromfile": "not supported by JAX either (impure); use asarray(np.fromfile(...))",
    "fromiter": "not supported by JAX either (impure); use asarray(np.fromiter(...))",
    "from_dlpack": "cdnajit arrays are numpy arrays; use np.from_dlpack",
    "frompyfunc": "needs vmap for a user ufunc; use vectorize",
}

# Stubs of NOT_SUPPORTED that exist, so that calling them names the reason: one call each.
STUB_CALLS = {
    "fromfile": ("data.bin",),
    "fromiter": ([1, 2],),
    "from_dlpack": (np.ones(2),),
    "frompyfunc": (abs, 1, 1),
}

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def test_every_jax_numpy_name_is_present_or_listed_as_not_supported():
    missing = [n for n in JAX_NUMPY_NAMES if not hasattr(cnp, n) and n not in NOT_SUPPORTED]
    assert not missing, f"jax.numpy names neither in cdnajit.numpy nor in NOT_SUPPORTED: {missing}"


def test_the_not_supported_list_is_true():
    assert set(NOT_SUPPORTED) <= set(JAX_NUMPY_NAMES)
    present = {n for n in NOT_SUPPORTED if hasattr(cnp, n)}
    assert present == set(STUB_CALLS), "a listed name became available: remove it from NOT_SUPPORTED and README"


@pytest.mark.parametrize("name", sorted(STUB_CALLS))
def test_the_stubs_raise_not_implemented(name):
    with pytest.raises(NotImplementedError):
        getattr(cnp, name)(*STUB_CALLS[name])


def test_the_readme_lists_every_name_not_supported():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    assert "## Not yet supported" in text and "### jax.numpy" in text
    section = text.split("### jax.numpy", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    unlisted = [n for n in NOT_SUPPORTED if f"`{n}`" not in section]
    assert not unlisted, f"README's jax.numpy list lacks {unlisted}"
