"""Eager mode: cdnajit.numpy and cdnajit.lax called outside jit compute at once, through the compiler.

The tables call every public function eagerly and inside `cj.jit` on the same inputs: numpy arrays
are the jitted function's arguments, everything else (Python scalars, shapes, callables) is closed
over. Both run the same traced module, so the results must be identical to the bit, NaNs and signed
zeros included: any difference is a bug of the eager path.
"""
import functools
import inspect
import os
from typing import Callable, NamedTuple

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.frontend.lax_unsupported import NOT_SUPPORTED

THIS_FILE = os.path.basename(__file__)

RNG = np.random.default_rng(6)
F = RNG.uniform(-0.9, 0.9, (2, 3))                       # f64, inside every inverse trig domain
G = RNG.uniform(-2.0, 2.0, (2, 3))
F32 = RNG.uniform(-3.0, 3.0, 3).astype(np.float32)
P = RNG.uniform(1.1, 4.0, (2, 3))                        # positive, above 1 (log, sqrt, arccosh)
I = RNG.integers(-5, 6, (2, 3))                          # i64
J = RNG.integers(1, 4, (2, 3))                           # positive: shift counts, divisors
I32 = np.array([3, -1, 2], np.int32)
U8 = np.array([1, 200, 7], np.uint8)
B = np.array([[True, False, True], [False, False, True]])
C = (F + 1j * G).astype(np.complex128)
BF16 = F32.astype(ml_dtypes.bfloat16)
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.5])
CUBE = RNG.uniform(-1, 1, (2, 3, 4))


def apply_call(fn, *args, **kwargs):
    return fn(*args, **kwargs)


def apply_index(grid, key):
    return grid[key]


class Record(NamedTuple):
    """How to call one function: its arguments, and how to apply them (a call, or indexing)."""
    args: tuple
    kwargs: dict
    apply: Callable = apply_call

    def run(self, fn):
        return self.apply(fn, *self.args, **self.kwargs)


def call(*args, **kwargs):
    return Record(args, kwargs)


def index(key):
    return Record((key,), {}, apply_index)


def family(names: str, *args, **kwargs) -> dict:
    """One record per name of a family of functions called alike."""
    return {name: call(*args, **kwargs) for name in names.split()}


# ---- cdnajit.numpy ---------------------------------------------------------------------------------

SCALAR_TYPES = "bfloat16 bool_ complex64 complex128 float16 float32 float64 int8 int16 int32 int64 int_ uint uint8 " \
               "uint16 uint32 uint64".split()
NUMPY_NOT_CALLED = {  # public names that are not array functions, and why
    **dict.fromkeys(SCALAR_TYPES, "a scalar type, a converter run on the host outside jit: tested by "
                                  "test_scalar_types_convert_numpy_values_as_they_convert_traced_ones"),
    **dict.fromkeys("dtype generic number integer signedinteger unsignedinteger inexact floating complexfloating"
                    .split(), "a dtype or an abstract scalar type"),
    **dict.fromkeys("e pi inf nan euler_gamma newaxis".split(), "a constant"),
    **dict.fromkeys("shape ndim size broadcast_shapes result_type promote_types can_cast issubdtype finfo iinfo"
                    .split(), "a host-only query, answered without tracing"),
    "ndarray": "the array type (tested below)",
    "ufunc": "the ufunc type (its instances are in the table)",
    **dict.fromkeys("base creation contractions dtypes_api elementwise reductions shaping indexing_funcs array_funcs "
                    "histograms setops numerical statistics functional type_aliases linalg_solver linalg_rules".split(),
                    "a family module of the package"),
    **dict.fromkeys("fft linalg".split(), "a namespace of its own, tested in tests/frontend/test_numpy_fft.py and "
                                          "test_numpy_linalg.py"),
    **dict.fromkeys("bool single double csingle cdouble float_ complex_ character flexible object_ ComplexWarning"
                    .split(), "another name of a scalar type, or numpy's own type"),
    **dict.fromkeys("s_ index_exp".split(), "an index expression: builds Python index tuples on the host"),
    **dict.fromkeys("iscomplexobj isrealobj isscalar iterable isdtype einsum_path".split(),
                    "a host-only query, answered without tracing"),
    **dict.fromkeys("array_repr array_str get_printoptions set_printoptions printoptions frombuffer fromstring "
                    "fromfile fromiter load save savez from_dlpack frompyfunc".split(),
                    "printing, files and buffers: host-side, as in JAX"),
    "vectorize": "builds a function; tested by tests/frontend/test_numpy_functional.py",
    "trim_zeros": "its result's length depends on the values: concrete input only (as in JAX); tested by "
                  "tests/frontend/test_numpy_arrays.py",
}

NUMPY_CALLS = {
    **family("abs absolute fabs negative positive sign signbit ceil floor fix trunc rint isfinite isinf "
             "isnan isneginf isposinf cbrt reciprocal exp exp2 expm1 sin cos tan sinh cosh tanh sinc "
             "deg2rad degrees rad2deg radians logical_not modf real imag conj conjugate angle copy ravel",
             SPECIAL),
    **family("arccos arcsin arctan arctanh acos asin atan atanh arcsinh asinh", F),
    **family("log log10 log1p log2 sqrt arccosh acosh", P),
    **family("add subtract multiply divide true_divide floor_divide mod remainder fmod divmod power pow "
             "float_power maximum minimum fmax fmin arctan2 atan2 hypot copysign heaviside logaddexp logaddexp2 "
             "equal not_equal greater greater_equal less less_equal isclose allclose", F, G),
    **family("logical_and logical_or logical_xor", B, I),
    **family("bitwise_and bitwise_or bitwise_xor", I, I32),
    **family("left_shift right_shift bitwise_left_shift bitwise_right_shift", I, J),
    **family("invert bitwise_not bitwise_invert", U8),
    **family("sum prod nansum nanprod max min amax amin nanmax nanmin mean nanmean std var median ptp "
             "argmax argmin all any count_nonzero", G, axis=1),
    **family("cumsum cumprod nancumsum nancumprod cumulative_sum cumulative_prod", I, axis=0),
    **family("sort argsort", G, axis=0),
    **family("atleast_1d atleast_2d atleast_3d", np.float32(2.5)),
    **family("fliplr flipud tril transpose diagonal trace", G),
    **family("hstack vstack row_stack dstack column_stack", (G, F)),
    **family("dot matmul", G, F.T),
    "inner": call(G, F),
    "square": call(BF16),
    "around": call(G * 10, 1),
    "round": call(G, decimals=2),
    "nan_to_num": call(SPECIAL, nan=-1.0, posinf=9.0),
    "clip": call(G, -1, 1.5),
    "where": call(B, G, 0.5),
    "average": call(G, axis=0, weights=np.array([1.0, 3.0])),
    "percentile": call(G, 30, axis=1),
    "quantile": call(G, np.array([0.1, 0.9])),
    "outer": call(F32, I32),
    "vdot": call(C[0], C[1]),
    "tensordot": call(CUBE, G, axes=([0, 1], [0, 1])),
    "einsum": call("ijk,ij->k", CUBE, G),
    "array": call([[1, 2], [3, 4]], dtype=np.float32),
    "asarray": call(I, dtype=cnp.float16),
    "astype": call(G, np.int32),
    "arange": call(2, 11, 3),
    "linspace": call(0.0, 1.0, 7, endpoint=False),
    "logspace": call(0, 2, 5),
    "geomspace": call(1, 1000, 4),
    "eye": call(3, 4, k=1),
    "identity": call(3, dtype=np.int32),
    "tri": call(3, 2, -1),
    "zeros": call((2, 3), np.int8),
    "ones": call(3),
    "empty": call((2,)),
    "full": call((2, 2), 7.5, cnp.bfloat16),
    "zeros_like": call(I),
    "ones_like": call(G, dtype=np.bool_),
    "empty_like": call(F32),
    "full_like": call(I32, 4.0),
    "indices": call((2, 3)),
    "meshgrid": call(F32, I32, indexing="ij"),
    "mgrid": index((slice(0, 3), slice(0, 1, 3j))),
    "ogrid": index((slice(1, 4), slice(0, 2))),
    "triu": call(G, 1),
    "diag": call(F32, -1),
    "reshape": call(G, (3, 2)),
    "permute_dims": call(CUBE, (2, 0, 1)),
    "moveaxis": call(CUBE, 0, -1),
    "swapaxes": call(CUBE, 0, 2),
    "expand_dims": call(G, (0, 3)),
    "squeeze": call(G[:, :1], 1),
    "flip": call(CUBE, (0, 2)),
    "rot90": call(G, 3),
    "roll": call(G, -1, axis=1),
    "broadcast_to": call(F32, (2, 3)),
    "broadcast_arrays": call(F32, G),
    "tile": call(I32, (2, 2)),
    "repeat": call(G, 2, axis=1),
    "concatenate": call((G, I), axis=1),
    "concat": call([F32, F32]),
    "stack": call([F, G], axis=-1),
    "append": call(I32, F32),
    "insert": call(F32, 1, 9.0),
    "delete": call(G, 1, axis=1),
    "pad": call(G, ((1, 0), (0, 2)), constant_values=-1.0),
    "split": call(CUBE, [1, 3], axis=2),
    "array_split": call(np.arange(7.0), 3),
    "hsplit": call(G, 3),
    "vsplit": call(G, 2),
    "dsplit": call(CUBE, 2),
    # index functions: value-dependent lengths get a static size under jit
    **family("nonzero flatnonzero argwhere", I, size=4),
    "extract": call(B, G, size=3),
    "compress": call(np.array([True, False, True]), G, axis=1, size=2),
    **family("take take_along_axis", G, np.array([[2, -1, 5]]), axis=1),
    "put_along_axis": call(G, np.array([[0], [2]]), 9.0, 1, inplace=False),
    "put": call(G, np.array([0, 5]), np.array([7.0, 8.0]), inplace=False),
    "place": call(G, B, np.array([1.0, 2.0]), inplace=False),
    "choose": call(np.array([0, 1, 1]), [F32, I32], mode="clip"),
    "select": call([B, ~B], [F, G], -1.0),
    "piecewise": call(G, [G < 0, G > 1], [lambda v: v * 2, 7.0, -1.0]),
    **family("tril_indices triu_indices", 3, 1, 4),
    **family("tril_indices_from triu_indices_from", G),
    "diag_indices": call(3, 3),
    "diag_indices_from": call(np.ones((3, 3))),
    "mask_indices": call(3, cnp.triu, 1, size=3),
    "unravel_index": call(np.array([-1, 4, 9]), (2, 3)),
    "ravel_multi_index": call((np.array([0, 1, 5]), np.array([2, 1, -1])), (2, 3), mode="wrap"),
    "ix_": call(np.array([0, 1]), I32),
    "fill_diagonal": call(np.zeros((3, 4)), 2.0, inplace=False),
    "r_": index((slice(1, 4), F32, 7)),
    "c_": index((F32, I32)),
    # building and comparing
    "resize": call(G, (4, 2)),
    "block": call([[G, F], [I, G]]),
    "diagflat": call(F32, 1),
    "unstack": call(CUBE, axis=1),
    "rollaxis": call(CUBE, 2),
    "matrix_transpose": call(CUBE),
    "fromfunction": call(lambda i, j: i * 10 + j, (2, 3)),
    **family("array_equal array_equiv", G, G),
    **family("iscomplex isreal", C),
    "vecdot": call(C, C),
    "matvec": call(CUBE, np.arange(4.0)),
    "vecmat": call(F32[:2], G),
    # histograms and set operations
    "searchsorted": call(np.sort(F32), G, side="right"),
    "digitize": call(G, np.array([-1.0, 0.0, 1.0])),
    "bincount": call(np.array([0, 3, 1, 3]), length=5),
    "histogram": call(G, 4, range=(-2.0, 2.0)),
    "histogram_bin_edges": call(G, 5),
    "histogram2d": call(F32, I32, bins=2),
    "histogramdd": call(CUBE.reshape(8, 3), bins=2),
    "unique": call(I, return_index=True, return_inverse=True, return_counts=True, size=8),
    **family("unique_all unique_counts unique_inverse unique_values", I, size=8),
    "isin": call(I, I32),
    **family("union1d intersect1d setdiff1d setxor1d", I, I32, size=5),
    "lexsort": call((I[0], I[1])),
    **family("partition argpartition", G, 1, axis=1),
    "sort_complex": call(C[0]),
    # numerical
    "diff": call(I, n=2, axis=1),
    "ediff1d": call(G, to_begin=np.array([0.5])),
    "gradient": call(G),
    "trapezoid": call(G, dx=0.5),
    "interp": call(G, np.array([-2.0, 0.0, 2.0]), np.array([1.0, 3.0, 2.0])),
    "unwrap": call(CUBE * 5),
    "kron": call(G, I32),
    "cross": call(np.array([1.0, 2.0, 3.0]), CUBE[0, :, :3]),
    "vander": call(F32, 4),
    **family("convolve correlate", F32, G[0], mode="full"),
    "polyval": call(F32, G),
    **family("polyadd polysub polymul", F32, I32[:2]),
    "polydiv": call(np.array([1.0, 3.0, 2.0]), np.array([1.0, 1.0])),
    "polyder": call(F32, 2),
    "polyint": call(F32, 2, k=1.0),
    "poly": call(F32),
    "polyfit": call(F32, F32, 1),
    "roots": call(F32, strip_zeros=False),   # strip_zeros=True needs a concrete p (as in JAX)
    **family("bartlett blackman hamming hanning", 5),
    "kaiser": call(6, 2.5),
    "i0": call(G * 10),
    **family("gcd lcm", I, J),
    "ldexp": call(G, J),
    "frexp": call(SPECIAL),
    **family("nextafter", F32, 1.0),
    "spacing": call(F32),
    "bitwise_count": call(I),
    "packbits": call(B, axis=1),
    "unpackbits": call(U8),
    # statistics
    **family("cov corrcoef", G),
    **family("nanvar nanstd nanmedian nanargmax nanargmin", np.where(B, np.nan, G), axis=1),
    **family("nanquantile nanpercentile", np.where(B, np.nan, G), 0.3, axis=0),
    # function transforms
    "apply_along_axis": call(cnp.cumsum, 1, G),
    "apply_over_axes": call(cnp.sum, CUBE, [0, 2]),
}


def split_arrays(record: Record):
    """The record's numpy arrays (the jitted function's arguments) and a function of them."""
    leaves, tree = cj.tree_flatten((record.args, record.kwargs))
    is_array = [isinstance(leaf, (np.ndarray, np.generic)) for leaf in leaves]

    def with_arrays(fn):
        def traced(*arrays):
            array_iter = iter(arrays)
            args, kwargs = cj.tree_unflatten(
                tree, [next(array_iter) if a else leaf for leaf, a in zip(leaves, is_array)])
            return record.apply(fn, *args, **kwargs)
        # Named as the eager call's module is: the same program text, compiled once (the compile cache).
        traced.__name__ = getattr(fn, "__name__", "traced")
        return traced

    return [leaf for leaf, a in zip(leaves, is_array) if a], with_arrays


def assert_identical(eager, jitted):
    eager_leaves, eager_tree = cj.tree_flatten(eager)
    jitted_leaves, jitted_tree = cj.tree_flatten(jitted)
    assert eager_tree == jitted_tree
    for e, j in zip(eager_leaves, jitted_leaves):
        assert isinstance(e, np.ndarray), type(e)
        assert (e.dtype, e.shape) == (j.dtype, j.shape)
        np.testing.assert_array_equal(e, j)
        assert e.tobytes() == j.tobytes()  # bitwise: signed zeros and NaN payloads too


def without_location(error: Exception) -> str:
    return str(error).split(" (at ")[0]


def check_eager_matches_jit(fn, record: Record):
    """The eager call returns what the jitted call returns; a feature jit lacks, eager lacks too."""
    arrays, with_arrays = split_arrays(record)
    try:
        jitted = cj.jit(with_arrays(fn))(*arrays)
    except NotImplementedError as jit_error:
        with pytest.raises(NotImplementedError) as eager_error:
            record.run(fn)
        assert without_location(eager_error.value) == without_location(jit_error)
        pytest.xfail(f"not implemented inside jit either: {jit_error}")
    assert_identical(record.run(fn), jitted)
    assert_identical(record.run(fn), jitted)  # from the eager cache


def public_names(namespace):
    return sorted(n for n in dir(namespace) if not n.startswith("_"))


def test_the_numpy_table_covers_every_public_name():
    missing = set(public_names(cnp)) - set(NUMPY_CALLS) - set(NUMPY_NOT_CALLED)
    assert not missing, f"cdnajit.numpy functions without a record in NUMPY_CALLS: {sorted(missing)}"
    assert not set(NUMPY_CALLS) & set(NUMPY_NOT_CALLED)
    assert not set(NUMPY_CALLS) - set(public_names(cnp))


# make test checks every other function (in name order); make test-all all of them.
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if i % 2 else n
                                  for i, n in enumerate(sorted(NUMPY_CALLS))])
def test_numpy_function_eager_matches_jit(name):
    check_eager_matches_jit(getattr(cnp, name), NUMPY_CALLS[name])


@pytest.mark.parametrize("name", SCALAR_TYPES)
def test_scalar_types_convert_numpy_values_as_they_convert_traced_ones(name):
    convert, values = getattr(cnp, name), np.abs(G) * 10
    assert_identical(convert(values), cj.jit(convert)(values))


@pytest.mark.parametrize("name", ["uint8", "int8", "int32"])
def test_scalar_types_saturate_out_of_range_numpy_values_as_traced_ones(name):
    convert, values = getattr(cnp, name), np.array([300.0, -200.0, 3e9, np.nan, -np.inf])
    assert_identical(convert(values), cj.jit(convert)(values))
    info = np.iinfo(convert.dtype)
    assert convert(300.0) == min(300, info.max) and convert(-1e10) == info.min  # Python floats too


@pytest.mark.parametrize("name, method, record", [
    ("add", "outer", call(F32, I32)), ("maximum", "outer", call(G, F32)), ("multiply", "reduce", call(G, axis=1)),
    ("minimum", "reduce", call(I)), ("add", "accumulate", call(I, 1)), ("multiply", "accumulate", call(G)),
    ("add", "at", call(F32, np.array([0, 2, 0]), 1.5, inplace=False)),
])
def test_ufunc_methods_eager_match_jit(name, method, record):
    check_eager_matches_jit(getattr(getattr(cnp, name), method), record)


# ---- cdnajit.lax -----------------------------------------------------------------------------------

LAX_NOT_CALLED = {
    "ConvDimensionNumbers": "a type", "RoundingMethod": "an enum",
    "padtype_to_pads": "a host-only query on shapes", "conv_dimension_numbers": "a host-only query on shapes",
    **dict.fromkeys("eager lax_arrays lax_bitcast lax_bits lax_contract lax_control lax_conv lax_elementwise lax_fft lax_gather "
                    "lax_program lax_reduce lax_scans lax_shape lax_unsupported".split(), "a module of the package"),
    **dict.fromkeys("FftType GatherDimensionNumbers GatherScatterMode Precision ScatterDimensionNumbers".split(),
                    "a type"),
    **dict.fromkeys("broadcast_shapes dtype conv_general_permutations conv_shape_tuple conv_general_shape_tuple "
                    "conv_transpose_shape_tuple reduce_window_shape_tuple shape_as_value".split(),
                    "a host-only query on shapes or dtypes"),
    "composite": "returns a function", "dce_sink": "returns None",
    **dict.fromkeys(NOT_SUPPORTED, "not supported: raises NotImplementedError (test_lax_coverage.py)"),
    "collectives": "a module of the package",
    **dict.fromkeys("all_gather all_to_all axis_index pmax pmean pmin ppermute psum psum_scatter".split(),
                    "a collective: runs inside shard_map only (tests/frontend/test_sharding.py)"),
}


GATHER_ROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
SCATTER_ROWS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                           scatter_dims_to_operand_dims=(0,))


def double_while_small(carry):
    return lax.lt(carry[0], 5)


def double_body(carry):
    count, x = carry
    return lax.add(count, 1), lax.mul(x, 2.0)


def scan_step(total, row):
    total = lax.add(total, row)
    return total, lax.mul(total, 0.5)


def fori_body(i, x):
    return lax.add(x, lax.convert_element_type(i, np.float64))


def row_sum(row):
    return lax.reduce_sum(row, (0,))


def plus_one(x):
    return lax.add(x, 1.0)


LAX_CALLS = {
    **family("abs ceil floor neg sign square is_finite round stop_gradient", SPECIAL),
    **family("real imag conj", C),
    **family("sin cos tan sinh cosh tanh exp exp2 expm1 logistic erf asin acos atan atanh asinh cbrt", F),
    **family("log log1p sqrt rsqrt reciprocal acosh", P),
    **family("add sub mul div rem pow max min atan2 eq ne lt le gt ge complex", F, G),
    **family("bitwise_and bitwise_or bitwise_xor shift_left shift_right_arithmetic shift_right_logical", I, J),
    "bitwise_not": call(U8),
    **family("cumsum cumprod cummax cummin", G, 1, True),
    **family("reduce_sum reduce_prod reduce_max reduce_min", G, (0,)),
    **family("reduce_and reduce_or", B, (1,)),
    **family("argmax argmin", G, 1, np.int32),
    "integer_pow": call(G, 3),
    "clamp": call(-0.5, F, 0.5),
    "select": call(B, F, G),
    "convert_element_type": call(G * 10, np.int16),
    "iota": call(np.int32, 5),
    "broadcasted_iota": call(np.float32, (2, 3), 1),
    "full": call((2, 2), 3, np.int8),
    "full_like": call(F32, 2),
    "broadcast": call(F32, (2,)),
    "broadcast_in_dim": call(F32, (3, 2), (0,)),
    "reshape": call(CUBE, (4, 6), (2, 0, 1)),
    "collapse": call(CUBE, 1),
    "expand_dims": call(G, (0, 3)),
    "squeeze": call(G[None], (0,)),
    "transpose": call(CUBE, (1, 2, 0)),
    "rev": call(G, (1,)),
    "concatenate": call([G, F], 1),
    "pad": call(G, -1.0, [(1, 0, 1), (0, -1, 0)]),
    "slice": call(CUBE, (0, 1, 0), (2, 3, 4), (1, 1, 2)),
    "slice_in_dim": call(G, 1, 3, axis=1),
    "index_in_dim": call(G, -1, 0, False),
    "dynamic_slice": call(CUBE, (np.int32(1), 0, np.int64(2)), (1, 2, 2)),
    "dynamic_slice_in_dim": call(G, np.int32(1), 2, 1),
    "dynamic_index_in_dim": call(G, np.int32(1), 1, False),
    "dynamic_update_slice": call(G, np.zeros((1, 2)), (np.int32(1), 1)),
    "dynamic_update_slice_in_dim": call(G, np.ones((2, 1)), 2, 1),
    "dynamic_update_index_in_dim": call(G, np.ones(3), np.int32(0), 0),
    "sort": call(G, 0),
    "sort_key_val": call(I32, F32),
    "dot": call(G, F.T),
    "dot_general": call(CUBE, G, (((0, 1), (0, 1)), ((), ()))),
    "conv": call(CUBE, np.ones((2, 3, 2)), (1,), "SAME"),
    "conv_general_dilated": call(CUBE, np.ones((2, 3, 2)), (2,), "VALID", dimension_numbers=("NCW", "OIW", "NCW")),
    "reduce": call(G, 0.0, lax.add, (1,)),
    "reduce_window": call(G, -np.inf, lax.max, (1, 2), (1, 1), "SAME"),
    "cond": call(True, plus_one, lax.neg, G),
    "switch": call(np.int32(1), [plus_one, lax.neg, lax.abs], G),
    "while_loop": call(double_while_small, double_body, (np.int32(0), F32)),
    "fori_loop": call(0, 4, fori_body, G),
    "scan": call(scan_step, np.zeros(3), G),
    "map": call(row_sum, G),
    **family("lgamma digamma erfc", P),
    "erf_inv": call(F),
    **family("bessel_i0e bessel_i1e", G),
    **family("zeta polygamma", P, P),
    "select_n": call(I32, F32, F32 * 2, F32 * 3),
    **family("population_count clz", I),
    "mulhi": call(I, J),
    "bitcast_convert_type": call(F32, np.uint8),
    "nextafter": call(F, G),
    "reduce_precision": call(G, 5, 10),
    "split": call(G, (1, 2), 1),
    "stack": call([G, F], 1),
    "unstack": call(G, 1),
    "tile": call(G, (2, 1)),
    "index_take": call(G, (np.array([1, 0]), np.array([2, 2])), (0, 1)),
    "broadcast_to_rank": call(F32, 3),
    "broadcast_like": call(F32, G),
    "empty": call((2, 3), np.float32),
    "batch_matmul": call(CUBE, CUBE.transpose(0, 2, 1)),
    "gather": call(G, np.array([[1], [0]]), GATHER_ROWS, (1, 3)),
    **family("scatter scatter_add scatter_sub scatter_mul scatter_min scatter_max", G, np.array([[1], [0]]), F,
             SCATTER_ROWS),
    "scatter_apply": call(G, np.array([[1], [1]]), plus_one, SCATTER_ROWS, update_shape=(2, 3)),
    "associative_scan": call(lax.add, G, axis=1),
    "cumlogsumexp": call(G, 1, True),
    "reduce_xor": call(I, (1,)),
    **family("top_k approx_max_k approx_min_k", G, 2),
    "conv_with_general_padding": call(CUBE, np.ones((2, 3, 2)), (1,), [(1, 0)], (2,), (1,)),
    "conv_transpose": call(CUBE, np.ones((2, 4, 3)), (2,), "SAME"),
    "conv_general_dilated_patches": call(CUBE, (2,), (1,), "VALID"),
    "conv_general_dilated_local": call(CUBE, np.ones((2, 6, 3)), (1,), "VALID", (2,)),
    "ragged_dot": call(G.T, CUBE[:, :2, :], np.array([1, 2], np.int32)),
    "fft": call(C, "FFT", (3,)),
    **family("optimization_barrier stage", G),
    "with_sharding_constraint": call(G, None),
    "platform_dependent": call(G, default=plus_one),
    "custom_root": call(plus_one, G, lambda f, x: f(x), None),
    "custom_linear_solve": call(plus_one, G, lambda f, x: f(x)),
}


def test_the_lax_table_covers_every_public_name():
    missing = set(public_names(lax)) - set(LAX_CALLS) - set(LAX_NOT_CALLED)
    assert not missing, f"cdnajit.lax functions without a record in LAX_CALLS: {sorted(missing)}"
    assert not set(LAX_CALLS) & set(LAX_NOT_CALLED)
    assert not set(LAX_CALLS) - set(public_names(lax))


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if i % 2 else n
                                  for i, n in enumerate(sorted(LAX_CALLS))])
def test_lax_function_eager_matches_jit(name):
    check_eager_matches_jit(getattr(lax, name), LAX_CALLS[name])


# ---- the cache: a loop of eager calls compiles once ------------------------------------------------

def test_a_loop_of_100_eager_calls_with_one_signature_traces_once():
    x = np.zeros(13, np.uint16)                      # a signature no other test uses
    before = cnp.add.trace_count
    for i in range(100):
        x = cnp.add(x, np.uint16(i))                 # numpy scalars are parameters, not constants
    assert cnp.add.trace_count == before + 1
    np.testing.assert_array_equal(x, np.full(13, sum(range(100)), np.uint16))
    before = cnp.sum.trace_count
    totals = [cnp.sum(np.full((3, 5), i, np.int16), axis=1, keepdims=True) for i in range(100)]
    assert cnp.sum.trace_count == before + 1
    np.testing.assert_array_equal(totals[7], np.full((3, 1), 35))


def test_control_flow_with_the_same_callables_traces_once():
    before = lax.fori_loop.trace_count
    for _ in range(20):
        got = lax.fori_loop(0, 3, fori_body, CUBE)
    assert lax.fori_loop.trace_count == before + 1
    np.testing.assert_array_equal(got, CUBE + 0.0 + 1.0 + 2.0)


def test_new_static_values_trace_again_and_the_cache_stays_bounded(monkeypatch):
    monkeypatch.setattr(cnp.multiply.eager_call.cache, "size", 4)   # white box: the bound itself
    x = np.arange(5.0)
    before = cnp.multiply.trace_count
    for i in range(10):
        np.testing.assert_array_equal(cnp.multiply(x, float(i)), x * i)   # a Python scalar is a constant
    assert cnp.multiply.trace_count == before + 10
    assert len(cnp.multiply.eager_call.cache) <= 4
    before = lax.cond.trace_count
    for _ in range(2):
        np.testing.assert_array_equal(lax.cond(True, lambda a: lax.neg(a), lax.abs, F), -F)
    assert lax.cond.trace_count == before + 2       # a fresh lambda is a new static value, as in JAX


def test_static_scalars_that_compare_equal_are_told_apart():
    zero = np.array([-0.0])
    assert np.signbit(cnp.add(zero, 0.0)[0]) == np.signbit(zero + 0.0)[0]
    assert np.signbit(cnp.add(zero, -0.0)[0]) == np.signbit(zero + -0.0)[0]    # -0.0 == 0.0 in Python
    ints = np.array([1, 2], np.int8)
    assert cnp.multiply(ints, 2).dtype == np.int8        # weak int
    assert cnp.multiply(ints, 2.0).dtype == np.float64   # 2.0 == 2, but a weak float makes it float
    assert cnp.multiply(ints, True).dtype == np.int8
    np.testing.assert_array_equal(cnp.full(2, np.nan), [np.nan, np.nan])


class Scale:
    """A callable that defines equality but no hash: it cannot key the cache."""

    def __init__(self, factor):
        self.factor = factor

    def __eq__(self, other):
        return isinstance(other, Scale) and other.factor == self.factor

    def __call__(self, row):
        return lax.mul(row, self.factor)


def test_unhashable_static_values_are_traced_every_call():
    before = lax.map.trace_count
    np.testing.assert_array_equal(lax.map(Scale(2.0), G), G * 2)
    np.testing.assert_array_equal(lax.map(Scale(3.0), G), G * 3)
    assert lax.map.trace_count == before + 2


# ---- arrays whose values are needed ----------------------------------------------------------------

CONCRETE_CALLS = [  # (function, record): a function needs the value of an array argument
    (cnp.zeros, call(np.int64(3))),
    (cnp.arange, call(np.int64(1), np.int32(7))),
    (cnp.reshape, call(G, np.array([3, 2]))),
    (cnp.repeat, call(G, np.array([1, 0, 2]), axis=1)),
    (cnp.sum, call(G, axis=np.int64(1))),
    (cnp.cumsum, call(G, axis=np.int64(0))),
    (cnp.delete, call(G, np.array([0, 2]), axis=1)),
    (cnp.round, call(G, np.int64(1))),
    (lax.iota, call(np.int32, np.int64(4))),
]


@pytest.mark.parametrize("fn, record", CONCRETE_CALLS, ids=[fn.__name__ for fn, _ in CONCRETE_CALLS])
def test_array_values_a_function_needs_are_used_as_constants(fn, record):
    """As in JAX, eager values are concrete: the call equals jit with the arrays closed over."""
    jitted = cj.jit(lambda: record.run(fn))()
    assert_identical(record.run(fn), jitted)


def test_constant_arrays_are_cached_by_their_contents():
    repeats = np.array([1, 0, 2])
    before = cnp.repeat.trace_count
    np.testing.assert_array_equal(cnp.repeat(F32, repeats), np.repeat(F32, repeats))
    np.testing.assert_array_equal(cnp.repeat(F32, repeats), np.repeat(F32, repeats))
    assert cnp.repeat.trace_count == before + 2        # as parameters (fails), then as constants
    repeats[0] = 3                                     # same signature, new contents
    np.testing.assert_array_equal(cnp.repeat(F32, repeats), np.repeat(F32, repeats))
    assert cnp.repeat.trace_count == before + 3


# ---- bad input: the traced errors, naming the caller's line --------------------------------------------

def test_eager_shape_error_names_both_shapes_and_this_line():
    line = inspect.currentframe().f_lineno
    with pytest.raises(cj.TracingValueError, match=r"\(3,\), \(4,\)") as caught:
        cnp.add(np.ones(3), np.ones(4))
    assert f"{THIS_FILE}:{line + 2})" in str(caught.value)


def branch_with_python_if(a):
    return a if a[0] > 0 else -a


BAD_CALLS = [  # (function, record, error): the error raised eagerly and inside jit alike
    (cnp.add, call(np.ones(3), np.ones(4)), cj.TracingValueError),
    (cnp.matmul, call(G, G), cj.TracingValueError),
    (cnp.reshape, call(G, (4, 2)), cj.TracingValueError),
    (cnp.sum, call(G, axis=2), cj.TracingValueError),
    (cnp.sin, call(np.array(["a"])), cj.TracingTypeError),
    (cnp.sin, call("a"), cj.TracingTypeError),
    (cnp.bitwise_and, call(G, I), cj.TracingTypeError),
    (lax.add, call(F32, G[0]), cj.TracingTypeError),
    (lax.cond, call(True, branch_with_python_if, lax.neg, G), cj.ConcretizationError),
    (lax.fori_loop, call(0, 2.5, fori_body, G), cj.TracingTypeError),
    (cnp.where, call(B, G), cj.TracingTypeError),
]


@pytest.mark.parametrize("fn, record, error", BAD_CALLS, ids=[fn.__name__ for fn, _, _ in BAD_CALLS])
def test_eager_errors_are_the_traced_errors(fn, record, error):
    arrays, with_arrays = split_arrays(record)
    with pytest.raises(error) as in_jit:
        cj.jit(with_arrays(fn))(*arrays)
    with pytest.raises(error) as eager:
        record.run(fn)
    assert type(eager.value) is type(in_jit.value)
    assert THIS_FILE in str(eager.value)


# ---- eager code and jitted functions together -------------------------------------------------------

def test_eager_loop_around_a_jitted_step():
    @cj.jit
    def step(x, scale):
        return cnp.tanh(x) * scale

    def run(x):
        totals = []
        for _ in range(4):
            x = step(x, 0.5)
            totals.append(cnp.sum(x))          # eager on a jitted function's result
        return cnp.stack(totals), x

    totals, x = run(F32)
    assert isinstance(totals, np.ndarray) and totals.dtype == np.float32 and totals.shape == (4,)
    assert step.trace_count == 1
    assert_identical((totals, x), cj.jit(run)(F32))   # the same ops, all traced into one module


def test_jitted_function_called_from_a_jitted_function_is_inlined():
    inner = cj.jit(lambda a: cnp.exp(a) - 1)
    outer = cj.jit(lambda a: inner(a) * 2)
    np.testing.assert_array_equal(outer(F), inner(F) * 2)
    assert outer.trace_count == 1 and inner.trace_count == 1     # inner traced once: for its own call


def test_partial_jit_with_static_argnums_as_a_decorator():
    @functools.partial(cj.jit, static_argnums=1)
    def power_sum(x, n):
        total = x
        for _ in range(n - 1):             # Python control flow on the static n
            total = total * x
        return cnp.sum(total)

    assert power_sum(G, 3) == cnp.sum(G * G * G)
    assert power_sum(G, 2) == cnp.sum(G * G)
    power_sum(G, 3)
    assert power_sum.trace_count == 2


def test_namespace_functions_inside_jit_trace_and_compile_nothing():
    before = cnp.sin.trace_count
    out = cj.jit(lambda a: cnp.sin(a) + cnp.sin(np.ones(3)))(F32)
    assert cnp.sin.trace_count == before
    np.testing.assert_array_equal(out, cnp.sin(F32) + cnp.sin(np.ones(3)))


# ---- results and types ------------------------------------------------------------------------------

@pytest.mark.parametrize("fn, record, tree_type", [
    (cnp.split, call(np.arange(6.0), 3), list),
    (cnp.divmod, call(I, J), tuple),
    (lax.sort_key_val, call(I32, F32), tuple),
    (lax.scan, call(scan_step, np.zeros(3), G), tuple),
    (lax.while_loop, call(double_while_small, double_body, (np.int32(0), F32)), tuple),
])
def test_multi_output_functions_return_pytrees_of_numpy_arrays(fn, record, tree_type):
    out = record.run(fn)
    assert isinstance(out, tree_type)
    assert all(isinstance(leaf, np.ndarray) for leaf in cj.tree_leaves(out))


def test_results_are_fresh_numpy_arrays():
    x = np.arange(6.0)
    for out in (cnp.asarray(x), cnp.reshape(x, (2, 3)), cnp.sum(x), lax.stop_gradient(x)):
        assert isinstance(out, np.ndarray)
        assert not np.shares_memory(out, x)
    assert type(cnp.sum(x)) is np.ndarray and cnp.sum(x).shape == ()   # 0-d arrays, not numpy scalars


def test_ndarray_covers_numpy_arrays_and_tracers():
    assert isinstance(np.ones(2), cnp.ndarray) and isinstance(cnp.ones(2), cnp.ndarray)
    assert not isinstance([1.0], cnp.ndarray)

    @cj.jit
    def f(x: cnp.ndarray) -> cnp.ndarray:
        assert isinstance(x, cnp.ndarray) and isinstance(x + 1, cnp.ndarray)
        return x

    f(F32)
    assert isinstance(cnp.add, cnp.ufunc)


@pytest.mark.parametrize("value, dtype", [
    ([1, 2], np.int64), ([1.0], np.float64), (True, np.bool_), ([1, 2.5], np.float64), (1 + 2j, np.complex128),
    ([[1], [2]], np.int64), (np.float32(1.5), np.float32), (np.arange(3, dtype=np.uint8), np.uint8),
    ([np.int8(1), 2], np.int8),
])
@pytest.mark.parametrize("convert", [cnp.array, cnp.asarray])
def test_array_and_asarray_return_numpy_arrays_with_jax_dtypes(convert, value, dtype):
    out = convert(value)
    assert isinstance(out, np.ndarray) and out.dtype == dtype
    np.testing.assert_array_equal(out, np.asarray(value))
    target = np.complex64 if np.iscomplexobj(value) else np.float32
    assert convert(value, dtype=target).dtype == target
