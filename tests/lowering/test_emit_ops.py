"""Generated kernels of the ops the fusion pass leaves on their own, against the interpreter.

Each case builds a one-op module, interprets it (the oracle), emits the op's kernel, verifies,
compiles and runs it, and compares: exactly where the kernel computes what the reference does in
the same order (indexing, sort, scans, window reductions, integer contractions), within a bound
derived from the accumulation order otherwise (float contractions). Compiled kernels are
cached by their text, so repeated shapes compile once. The ops a library takes (scans, convolutions)
run the one-op module through the whole pipeline instead, the library's kernels included.
"""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.lowering.emit_ops import index_dtype
from cdnajit.lowering.emitters import emit_kernel
from cdnajit.ir import kernel as K
from cdnajit.ir.core import Module, Region, Value, make_op
from cdnajit.ir.types import FLOATS, type_of_array
from cdnajit.runtime.executable import Executable
from cdnajit.runtime.launch import compile_kernel

RNG = np.random.default_rng(7)


def random_array(dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
    if dtype.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def one_op(opname, arrays, attrs):
    types = [type_of_array(np.asarray(a)) for a in arrays]
    params = [Value(t) for t in types]
    op = make_op(opname, params, attrs, cj.ir.infer_types(opname, types, attrs))
    return Module("one_op", Region(params, [op], list(op.results))), op


def as_buffer(array):
    """The kernel argument of an array: row-major elements (complex as interleaved parts), at least one."""
    array = np.ascontiguousarray(array)
    if array.dtype.kind == "c":
        array = array.view(array.real.dtype)
    flat = array.reshape(-1)
    return flat if flat.size else np.zeros(1, flat.dtype)


def compiled_and_expected(opname, arrays, **attrs):
    """(kernel results, interpreter results) of one op on `arrays`."""
    arrays = [np.asarray(a) for a in arrays]
    module, op = one_op(opname, arrays, attrs)
    expected = cj.ir.interpret(module, *arrays)
    kernel = emit_kernel(op, f"test_{opname}")
    K.verify(kernel)
    outputs = [as_buffer(np.zeros(e.shape, e.dtype)).copy() for e in expected]
    compile_kernel(kernel)(*[as_buffer(a) for a in arrays], *outputs)
    return [from_buffer(out, like) for out, like in zip(outputs, expected)], expected


def pipeline_and_expected(opname, arrays, **attrs):
    """(results of the one-op module compiled through the whole pipeline, interpreter results): for the
    ops that libraries take (cumulative: libs/prim; conv_general_dilated: libs/dnn)."""
    arrays = [np.asarray(a) for a in arrays]
    module, _ = one_op(opname, arrays, attrs)
    results = Executable.compile(module)(*arrays)
    return list(results) if isinstance(results, (tuple, list)) else [results], cj.ir.interpret(module, *arrays)


def from_buffer(buffer, like):
    """The array of `like`'s type that a kernel wrote to `buffer` (see `as_buffer`)."""
    parts = 2 if like.dtype.kind == "c" else 1
    return buffer[:parts * like.size].view(like.dtype).reshape(like.shape)


def check_exact(opname, arrays, through_pipeline=False, **attrs):
    run = pipeline_and_expected if through_pipeline else compiled_and_expected
    results, expected = run(opname, arrays, **attrs)
    for result, reference in zip(results, expected):
        assert result.dtype == reference.dtype and result.shape == reference.shape
        np.testing.assert_array_equal(result, reference)  # NaN equals NaN here, and -0.0 equals 0.0
        if cj.ir.dtype_name(result.dtype) in FLOATS:  # so compare the signs of zeros as well
            wide, wide_reference = result.astype(np.float64), reference.astype(np.float64)
            numbers = ~np.isnan(wide_reference)
            np.testing.assert_array_equal(np.signbit(wide[numbers]), np.signbit(wide_reference[numbers]))


# ---- dynamic_update_slice ---------------------------------------------------------------

def scalar(value, dtype):
    return np.array(value, dtype)


DYNAMIC_UPDATE_CASES = [  # (operand dtype, shape, update shape, starts)
    ("f32", (7, 9), (3, 2), [scalar(5, np.int32), scalar(-1, np.int8)]),      # clamped
    ("f16", (63,), (63,), [scalar(4, np.int64)]),                             # full update
    ("bool", (4, 5, 6), (2, 0, 3), [scalar(1, np.int32)] * 3),                # empty update
    ("i8", (), (), []),                                                       # 0-d
]


@pytest.mark.parametrize("dtype,shape,update_shape,starts", DYNAMIC_UPDATE_CASES)
def test_dynamic_update_slice(dtype, shape, update_shape, starts):
    np_dtype = cj.ir.numpy_dtype(dtype)
    check_exact("dynamic_update_slice", [random_array(np_dtype, shape), random_array(np_dtype, update_shape), *starts])


# ---- gather and scatter ------------------------------------------------------------------

GATHER_CASES = [  # (operand dtype, shape, indices) -- indices out of range are clamped
    ("f32", (5, 12), np.array([[0, 1], [4, 11], [-1, 20], [2, 2]], np.int32)),
    ("i8", (6, 7), np.array([[5], [0], [9], [-4], [3]], np.int64)),
    ("bf16", (3, 4), np.zeros((2, 0), np.int32)),                    # k = 0: every row is all of x
    ("f64", (4, 3), np.zeros((0, 1), np.int32)),                     # no rows
    ("i32", (0, 3), np.array([[0], [1]], np.int32)),                 # nothing to clamp into: zeros
    ("bool", (2, 3, 4), np.array([[[1, 2]], [[0, 0]], [[1, 9]]], np.uint8)),
]


@pytest.mark.parametrize("dtype,shape,indices", GATHER_CASES)
def test_gather(dtype, shape, indices):
    check_exact("gather", [random_array(cj.ir.numpy_dtype(dtype), shape), indices])


# Rows repeat (0 three times, 4 twice) and fall out of bounds (-1, 7): duplicates must combine in
# row order exactly as the reference's, out-of-bounds rows are dropped.
DUPLICATE_ROWS = np.array([[0], [4], [0], [7], [-1], [2], [0], [4]], np.int32)

SCATTER_CASES = [  # (reduction, dtype, operand shape, indices)
    *[(reduction, "f32", (5, 12), DUPLICATE_ROWS) for reduction in ("set", "add", "mul", "min", "max")],
    ("add", "bf16", (5, 3), DUPLICATE_ROWS),       # f16/bf16 sums and products accumulate in f32
    ("mul", "f16", (5, 3), DUPLICATE_ROWS),
    ("max", "bf16", (5, 3), DUPLICATE_ROWS),
    ("add", "i32", (6,), DUPLICATE_ROWS),
    ("mul", "i8", (5, 2), DUPLICATE_ROWS),         # wraps
    ("add", "bool", (5, 2), DUPLICATE_ROWS),       # or
    ("min", "bool", (5, 2), DUPLICATE_ROWS),       # and
    ("set", "f64", (3, 4), np.array([[0, 1], [2, 3], [0, 1], [3, 0]], np.int64)),   # scalar windows
    ("add", "f32", (2, 300), np.array([[1], [1], [0]], np.uint8)),                  # two workgroups of columns
    ("add", "i32", (), np.zeros((3, 0), np.int32)),                                 # k = 0, 0-d
    ("set", "f32", (4, 5), np.zeros((0, 1), np.int32)),                             # no rows: a copy
]


@pytest.mark.parametrize("reduction,dtype,shape,indices", SCATTER_CASES)
def test_scatter(reduction, dtype, shape, indices):
    np_dtype = cj.ir.numpy_dtype(dtype)
    x = random_array(np_dtype, shape)
    k = indices.shape[-1]
    updates = random_array(np_dtype, indices.shape[:-1] + shape[k:])
    if np_dtype.kind == "f":
        x.reshape(-1)[:1] = np.nan  # NaN propagates through every reduction
    check_exact("scatter", [x, indices, updates], reduction=reduction)


# ---- cumulative, argmax, argmin, reduce_window -------------------------------------------

def few_values(dtype, shape):
    """Values from {0, 1, 2, 3} (so ties are common), floats with the specials of `with_specials`."""
    np_dtype = cj.ir.numpy_dtype(dtype)
    return with_specials(RNG.integers(0, 2 if np_dtype.kind == "b" else 4, shape).astype(np_dtype))


def with_specials(x):
    """Floats get a NaN, a -0.0 and repeated values."""
    if x.dtype.kind == "f" and x.size >= 4:
        flat = x.reshape(-1)
        flat[1], flat[2], flat[3] = np.nan, -0.0, flat[0]
    return x


CUMULATIVE_CASES = [  # (reducer, dtype, shape, axis, reverse)
    ("sum", "f32", (3, 65), 1, False),
    ("sum", "bf16", (7, 5), 0, True),
    ("prod", "f16", (2, 7, 3), 1, False),
    ("max", "f64", (63,), 0, True),
    ("min", "f32", (4, 1, 6), 2, False),
    ("sum", "i8", (5, 9), 1, True),
    ("prod", "i32", (3, 7), 0, False),
    ("max", "bool", (6, 4), 0, False),
    ("min", "bool", (6, 4), 1, True),
    ("sum", "f32", (0, 5), 1, False),
]


@pytest.mark.parametrize("reducer,dtype,shape,axis,reverse", CUMULATIVE_CASES)
def test_cumulative(reducer, dtype, shape, axis, reverse):
    x = with_specials(random_array(cj.ir.numpy_dtype(dtype), shape))
    check_exact("cumulative", [x], through_pipeline=True, reducer=reducer, axis=axis, reverse=reverse)


ARG_CASES = [  # (op, dtype, shape, axis, index dtype)
    ("argmax", "f32", (3, 65), 1, "i32"),
    ("argmin", "f32", (7, 4, 3), 1, "i64"),
    ("argmax", "bf16", (127,), 0, "i32"),
    ("argmin", "i8", (9, 5), 0, "u8"),
    ("argmax", "bool", (4, 6), 1, "i32"),
    ("argmin", "f64", (1, 7), 1, "i16"),
]


@pytest.mark.parametrize("opname,dtype,shape,axis,index", ARG_CASES)
def test_arg_reductions(opname, dtype, shape, axis, index):
    x = few_values(dtype, shape)  # ties everywhere: the first extreme wins
    check_exact(opname, [x], axis=axis, index_dtype=index)


REDUCE_WINDOW_CASES = [  # (reducer, dtype, shape, window, strides, padding, base dilation, window dilation)
    ("sum", "f32", (9, 8), (3, 2), (2, 1), ((1, 1), (0, 0)), (1, 1), (1, 1)),
    ("max", "f32", (5, 7, 3), (2, 3, 1), (1, 2, 1), ((1, 2), (-1, 3), (0, 0)), (2, 1, 1), (1, 2, 1)),
    ("min", "bf16", (7,), (4,), (3,), ((2, 2),), (1,), (2,)),
    ("prod", "i32", (4, 4), (2, 2), (1, 1), ((0, 1), (1, 0)), (1, 1), (1, 1)),
    ("or", "bool", (6, 5), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 2), (1, 1)),
    ("sum", "f64", (), (), (), (), (), ()),
]


@pytest.mark.parametrize("reducer,dtype,shape,window,strides,padding,base,dilation", REDUCE_WINDOW_CASES)
def test_reduce_window(reducer, dtype, shape, window, strides, padding, base, dilation):
    # The kernel loops over each window in the reference's order, so even float sums are identical.
    x = with_specials(random_array(cj.ir.numpy_dtype(dtype), shape))
    check_exact("reduce_window", [x], reducer=reducer, window_dimensions=window, window_strides=strides,
                padding=padding, base_dilation=base, window_dilation=dilation)


# ---- sort -----------------------------------------------------------------------------------

SORT_CASES = [  # (key dtypes then value dtypes, shape, dimension, num_keys)
    (["f32"], (1,), 0, 1),
    (["f32", "i32"], (3, 7), 1, 1),
    (["f16", "i8"], (63, 2), 0, 1),
    (["bool", "f64", "i32"], (2, 65), 1, 2),
    (["i8", "bf16", "u8"], (127,), 0, 3),
    (["f32"], (2, 0), 1, 1),
]


def sort_operands(dtypes, shape):
    # Few distinct keys, so the order among equal keys (stability) matters.
    return [few_values(dtype, shape) for dtype in dtypes]


@pytest.mark.parametrize("dtypes,shape,dimension,num_keys", SORT_CASES)
def test_sort(dtypes, shape, dimension, num_keys):
    check_exact("sort", sort_operands(dtypes, shape), dimension=dimension, is_stable=True, num_keys=num_keys)


# ---- dot_general and conv_general_dilated ------------------------------------------------

def check_contraction(opname, lhs, rhs, through_pipeline=False, **attrs):
    """Float results within depth * eps(accumulator) * sum |a||b| of the reference (another
    summation order), plus one rounding of the result; integer results exactly."""
    run = pipeline_and_expected if through_pipeline else compiled_and_expected
    results, (expected,) = run(opname, [lhs, rhs], **attrs)
    (result,) = results
    assert result.dtype == expected.dtype and result.shape == expected.shape
    if expected.dtype.kind in "iu":
        np.testing.assert_array_equal(result, expected)
        return
    magnitudes = cj.ir.OPS[opname].reference(np.abs(lhs).astype(np.float64), np.abs(rhs).astype(np.float64),
                                             **{**attrs, "preferred_element_type": None})
    depth = max(lhs.size * rhs.size // max(expected.size, 1), 1)   # an upper bound of the terms per result
    accumulator_eps = np.finfo(np.float64 if expected.dtype == np.float64 else np.float32).eps
    bound = depth * accumulator_eps * magnitudes + np.finfo(expected.dtype).eps * np.abs(expected.astype(np.float64))
    assert np.all(np.abs(result.astype(np.float64) - expected.astype(np.float64)) <= bound)


DOT_CASES = [  # (dtype, lhs shape, rhs shape, (lc, rc), (lb, rb), preferred)
    ("f32", (7, 65), (65, 63), ((1,), (0,)), ((), ()), None),
    ("f32", (127, 1), (1, 17), ((1,), (0,)), ((), ()), None),
    ("f64", (3, 7, 5, 2), (5, 3, 9, 2), ((2, 3), (0, 3)), ((0,), (1,)), None),   # batch, two contracting dims
    ("f16", (33, 40), (20, 33), ((0,), (1,)), ((), ()), None),                   # transposed operands
    ("bf16", (2, 17, 9), (9, 2, 5), ((2,), (0,)), ((0,), (1,)), "f32"),
    ("i8", (17, 40), (40, 3), ((1,), (0,)), ((), ()), "i32"),
    ("i32", (4, 5, 6), (4, 6), ((2,), (1,)), ((0,), (0,)), None),
    ("f32", (7,), (7,), ((0,), (0,)), ((), ()), None),                           # 0-d result
    ("f32", (3, 0), (0, 4), ((1,), (0,)), ((), ()), None),                       # empty contraction: zeros
    ("f32", (0, 5), (5, 4), ((1,), (0,)), ((), ()), None),                       # empty result
]


@pytest.mark.parametrize("dtype,lhs_shape,rhs_shape,contracting,batch,preferred", DOT_CASES)
def test_dot_general(dtype, lhs_shape, rhs_shape, contracting, batch, preferred):
    np_dtype = cj.ir.numpy_dtype(dtype)
    check_contraction("dot_general", random_array(np_dtype, lhs_shape), random_array(np_dtype, rhs_shape),
                      lhs_contracting=contracting[0], rhs_contracting=contracting[1], lhs_batch=batch[0],
                      rhs_batch=batch[1], preferred_element_type=preferred)


def conv_attrs(n, strides=None, padding=None, lhs_dilation=None, rhs_dilation=None, specs=None, groups=1,
               batch_groups=1, preferred=None):
    default = tuple(range(n + 2))
    lhs_spec, rhs_spec, out_spec = specs or (default, default, default)
    return dict(window_strides=strides or (1,) * n, padding=padding or ((0, 0),) * n,
                lhs_dilation=lhs_dilation or (1,) * n, rhs_dilation=rhs_dilation or (1,) * n, lhs_spec=lhs_spec,
                rhs_spec=rhs_spec, out_spec=out_spec, feature_group_count=groups, batch_group_count=batch_groups,
                preferred_element_type=preferred)


CONV_CASES = [  # (dtype, lhs shape, rhs shape, attributes)
    ("f32", (2, 3, 9), (4, 3, 3), conv_attrs(1)),
    ("f32", (2, 6, 9, 8), (4, 3, 3, 2), conv_attrs(2, strides=(2, 1), padding=((1, -1), (2, 0)), lhs_dilation=(1, 2),
                                                    rhs_dilation=(2, 1), groups=2)),
    # NHWC input, HWIO kernel, an output laid out (W, H, C, N), batch groups.
    ("f32", (9, 4, 2, 8), (3, 2, 8, 4), conv_attrs(2, padding=((0, 0), (1, 1)), batch_groups=2,
                                                    specs=((2, 3, 0, 1), (3, 2, 0, 1), (3, 2, 1, 0)))),
    ("f16", (1, 2, 7), (3, 2, 7), conv_attrs(1, padding=((3, 3),))),
    ("i32", (1, 2, 3, 3, 3), (2, 2, 2, 2, 2), conv_attrs(3, padding=((1, 0), (0, 1), (1, 1)))),
    ("bf16", (2, 4, 5), (2, 4, 2), conv_attrs(1, strides=(3,), preferred="f32")),
    ("f64", (1, 1, 3), (1, 1, 5), conv_attrs(1)),                                # window larger than input: empty
]


@pytest.mark.parametrize("dtype,lhs_shape,rhs_shape,attrs", CONV_CASES)
def test_conv_general_dilated(dtype, lhs_shape, rhs_shape, attrs):
    np_dtype = cj.ir.numpy_dtype(dtype)
    check_contraction("conv_general_dilated", random_array(np_dtype, lhs_shape), random_array(np_dtype, rhs_shape),
                      through_pipeline=True, **attrs)


# ---- traced programs, complex dtypes, index width ----------------------------------------

TRACED_CASES = [  # (function, argument arrays, the op to take)
    (lambda a, b: a @ b, [random_array(np.float32, (5, 7)), random_array(np.float32, (7, 3))], "dot_general"),
    (lambda a: cnp.sort(a, axis=0), [random_array(np.float32, (9, 2))], "sort"),
    (lambda a: cnp.argsort(a), [random_array(np.float32, (2, 9))], "sort"),
    (lambda a, i: a.at[i].add(1.0), [random_array(np.float32, (4, 3)), np.array([0, 3, 0])], "scatter"),
    (lambda a, i: a[i], [random_array(np.int32, (4, 3)), np.array([[1, 2], [3, 0]])], "gather"),
    (lambda a: cnp.argmax(a, axis=0), [random_array(np.float32, (7, 3))], "argmax"),
]

@pytest.mark.parametrize("fn,args,opname", TRACED_CASES)
def test_ops_of_traced_programs(fn, args, opname):
    """The op as the frontend makes it, fed random operands of its types."""
    check_op_of_module(cj.make_graph(fn)(*args), opname)


def check_op_of_module(module, opname):
    op = next(op for op in cj.ir.walk(module.body) if op.name == opname)
    operands = [random_array(cj.ir.numpy_dtype(v.type.dtype), v.type.shape) for v in op.operands]
    if opname in ("dot_general",):
        check_contraction(opname, *operands, **op.attrs)
    else:
        check_exact(opname, operands, **op.attrs)


@pytest.mark.parametrize("opname,arrays,attrs", [
    ("dot_general", [np.ones((2, 2), np.complex64)] * 2,
     dict(lhs_contracting=(1,), rhs_contracting=(0,), lhs_batch=(), rhs_batch=(), preferred_element_type=None)),
    ("sort", [np.ones(3, np.complex128)], dict(dimension=0, is_stable=True, num_keys=1)),
    ("gather", [np.ones(3, np.complex64), np.zeros((1, 1), np.int32)], {}),
])
def test_complex_operands_are_named_as_unsupported(opname, arrays, attrs):
    _, op = one_op(opname, arrays, attrs)
    with pytest.raises(NotImplementedError, match=rf"{opname}.*complex dtype c(64|128)"):
        emit_kernel(op, "complex")


def test_index_arithmetic_widens_for_large_arrays():
    assert index_dtype(2 ** 31 - 1, 5) == "i32"
    assert index_dtype(7, 2 ** 31) == "i64"
