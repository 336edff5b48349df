"""Fusion kernels (lowering/emit_fusion.py, lowering/elemental.py, lowering/tiling.py) against the interpreter.

Each test traces a program, runs the pass pipeline, then compiles every `fusion` op's kernel and
runs it on the operands the interpreter computed, comparing with the interpreter's results for
that op. Exact for integer, bool and non-transcendental float programs (the kernel IR rounds
f16/bf16 after every op, as the op table's references do); transcendental functions within the
math library's measured bounds (codegen/mathlib.py: at most 3.12 ulp); float sums and products
within the bound of a reordered sum (the interpreter uses numpy's pairwise order).
"""
import dataclasses
import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.lowering import emit_fusion
from cdnajit.codegen import amdgpu
from cdnajit.codegen.host import optimized_llvm_ir
from cdnajit.lowering.emitters import emit_kernel
from cdnajit.ir import kernel as K
from cdnajit.ir.interpreter import run_region
from cdnajit.ir.opdef import get_opdef
from cdnajit.ir.targets import get_target
from cdnajit.passes import run_pipeline
from cdnajit.lowering.tiling import launch_config
from cdnajit.runtime.launch import compile_kernel

RNG = np.random.default_rng(7)
TARGET = get_target()


def top_level_ops(module, args):
    """(op, operand arrays, result arrays) for each top-level op, as the interpreter computes them."""
    env = {id(p): np.asarray(a).astype(p.type.numpy_dtype) for p, a in zip(module.params, args)}
    for op in module.body.ops:
        attrs = dict(op.attrs)
        if op.regions:
            attrs["regions"] = [lambda *xs, r=r: run_region(r, xs, {}) for r in op.regions]
        results = get_opdef(op.name).reference(*(env[id(v)] for v in op.operands), **attrs)
        results = results if isinstance(results, (tuple, list)) else (results,)
        env.update({id(v): np.asarray(r) for v, r in zip(op.results, results)})
        yield op, [env[id(v)] for v in op.operands], [env[id(v)] for v in op.results]


def check_config(op):
    config = launch_config(op, TARGET)
    assert config.workgroup_size % 64 == 0 and config.workgroup_size <= TARGET.max_workgroup_size
    assert config.lds_bytes <= TARGET.max_lds_bytes_per_workgroup
    assert config.reasons and all(isinstance(r, str) for r in config.reasons)
    return config


def run_kernel(kernel, operands, results):
    """The kernel's outputs for these operands (flat buffers, one element for empty values)."""
    K.verify(kernel, TARGET.max_lds_bytes_per_workgroup)
    flat = lambda a: np.ascontiguousarray(a).reshape(-1) if a.size else np.zeros(1, a.dtype)
    outs = [np.zeros(max(r.size, 1), r.dtype) for r in results]
    compile_kernel(kernel)(*map(flat, operands), *outs)
    return [o[:r.size].reshape(r.shape) for o, r in zip(outs, results)]


def fused(f, *args, strategies=None):
    """[(kernel results, interpreter results, launch config)] for every fusion op of f's graph."""
    module = run_pipeline(cj.make_graph(f)(*args)).module
    checked = []
    for op, operands, results in top_level_ops(module, args):
        if op.name == "fusion":
            config = check_config(op)
            checked.append((run_kernel(emit_kernel(op, "k"), operands, results), results, config))
    assert checked, "the program made no fusion"
    if strategies is not None:
        assert {c.strategy for _, _, c in checked} == set(strategies)
    return checked


def assert_same(actual, expected):
    """Equal values and equal signs of zeros and infinities; a NaN's sign is not compared (IEEE 754
    leaves it unspecified: x86 propagates the first NaN operand, so a product of two NaNs of opposite
    signs takes the sign of whichever operand the vectorizer put first)."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)
    if expected.dtype.kind == "f":
        numbers = ~np.isnan(expected)
        np.testing.assert_array_equal(np.signbit(actual[numbers]), np.signbit(expected[numbers]))


def check_exact(f, *args, **kwargs):
    for actual, expected, _ in fused(f, *args, **kwargs):
        for a, e in zip(actual, expected):
            assert_same(a, e)


def check_close(f, *args, ulps=4, floor=0.0, strategies=None):
    """Within `ulps` units in the last place of the expected value, or of `floor` where the value
    is smaller (the error of a term of that size survives cancellation)."""
    for actual, expected, _ in fused(f, *args, strategies=strategies):
        for a, e in zip(actual, expected):
            assert a.dtype == e.dtype and a.shape == e.shape
            wide_a, wide_e = a.astype(np.float64), e.astype(np.float64)
            tolerance = ulps * float(np.finfo(e.dtype).eps) * np.maximum(np.abs(wide_e), floor)
            with np.errstate(invalid="ignore"):  # inf - inf
                close = np.abs(wide_a - wide_e) <= tolerance
            bad = ~(close | (np.isnan(wide_a) & np.isnan(wide_e)) | (wide_a == wide_e))
            assert not bad.any(), (wide_a[bad][:5], wide_e[bad][:5])


def random(shape, dtype, special=True):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(dtype)
    values = RNG.standard_normal(shape) * 3
    if special:
        values = np.where(RNG.random(shape) < 0.05, RNG.choice([0.0, -0.0, np.inf, -np.inf, np.nan], shape), values)
    return np.asarray(values).astype(dtype)


FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
SIZES = [(), (1,), (63,), (64,), (65,), (1000,), (3, 257)]


# ---- loop fusions ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SIZES)
def test_float_elementwise_chain_is_exact(dtype, shape):
    def f(x, y):
        h = x * y - x
        return cnp.where(h > y, cnp.maximum(h, y) / (y + 3), cnp.minimum(-h, cnp.abs(x)) % 1.5), h * h + h
    check_exact(f, random(shape, dtype), random(shape, dtype))


@pytest.mark.parametrize("dtype", INTS)
def test_integer_elementwise_chain_is_exact(dtype):
    bits = np.dtype(dtype).itemsize * 8

    def f(x, y):
        shifted = lax.shift_left(x, y % bits) ^ lax.shift_right_logical(x, y) | lax.shift_right_arithmetic(x, y)
        return lax.div(x, y) + lax.rem(x * y, y) - shifted, lax.clamp(dtype(3), x, dtype(50)), cnp.sign(x) + -x
    x, y = random((1000,), dtype), random((1000,), dtype)
    y[:4] = [0, 1, 0, 2]  # division by zero gives XLA's values
    check_exact(f, x, y)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.int64])
def test_integer_power(dtype):
    x = random((300,), dtype)
    y = RNG.integers(-3 if np.dtype(dtype).kind == "i" else 0, 9, 300).astype(dtype)
    x[:4], y[:4] = [1, 2, 0, 3], [0, 0, 0, 1]
    check_exact(lambda a, b: lax.pow(a, b), x, y)


def test_bool_logic_and_comparisons():
    def f(p, q, x):
        return (p & q) | ~p ^ q, cnp.where(p, x, -x), cnp.maximum(p, q), cnp.minimum(p, q), (x > 0) == p
    check_exact(f, random((130,), bool), random((130,), bool), random((130,), np.float32))


@pytest.mark.parametrize("source", [np.float64, np.float32, np.float16, ml_dtypes.bfloat16, np.int64, np.int8,
                                    np.uint32, np.bool_])
def test_converts(source):
    x = random((500,), source)
    if np.dtype(source).kind == "f":
        x = (x * 1e3).astype(source)
        with np.errstate(over="ignore"):  # 3e9 is inf in f16
            x[:6] = np.array([3e9, -3e9, 2.5, -2.5, np.nan, np.inf]).astype(source)
    targets = [np.float64, np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.int32, np.uint64, np.bool_]
    check_exact(lambda a: tuple(a.astype(t) for t in targets if np.dtype(t) != a.dtype), x)


MATH = [cnp.exp, cnp.exp2, cnp.log, cnp.log2, cnp.log10, cnp.log1p, cnp.expm1, cnp.tanh, cnp.sin, cnp.cos, cnp.tan,
        cnp.arcsin, cnp.arccos, cnp.arctan, cnp.sinh, cnp.cosh, cnp.cbrt, cnp.sqrt, lax.rsqrt, lax.logistic, lax.erf,
        cnp.floor, cnp.ceil, cnp.trunc, cnp.round]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", MATH, ids=lambda fn: fn.__name__)
def test_math_within_the_math_library_bounds(fn, dtype):
    # mathlib's worst measured error is 3.12 ulp; both sides round from the same f64/f32 input.
    x = random((777,), dtype)
    check_close(lambda a: fn(a), x, ulps=4)


@pytest.mark.parametrize("fn", [cnp.arcsinh, cnp.arccosh, cnp.arctanh], ids=lambda fn: fn.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_inverse_hyperbolic_formulas(fn, dtype):
    # log1p-based formulas: log1p's 1.5 ulp plus a few roundings of its argument (each at most
    # 1/2 ulp, damped by log1p's derivative): within 8 ulp.
    x = np.concatenate([random((400,), np.float64), RNG.uniform(-1, 1, 200), RNG.uniform(1, 1e4, 200),
                        [0.0, -0.0, 1.0, -1.0, 1e-30, 6e4]]).astype(dtype)
    check_close(lambda a: fn(a), x, ulps=8)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_math_is_computed_in_f32(dtype):
    # An f32 result within 3.12 ulp of f32 rounds to the same f16/bf16 value but near a tie: 1 ulp.
    check_close(lambda a: cnp.tanh(a * 1.5 + 0.25) * 0.5 + a, random((1000,), dtype), ulps=2, floor=1.0)


def test_w1_chain_and_vectorized_loop():
    x = random((4099,), np.float32)
    # tanh's 2.27 ulp of a value up to 1, halved by * 0.5, plus two roundings: within 4 ulp of
    # the result or of 1 (where + a cancels the tanh term).
    check_close(lambda a: cnp.tanh(a * 1.5 + 0.25) * 0.5 + a, x, ulps=4, floor=1.0, strategies=["loop"])
    module = run_pipeline(cj.make_graph(lambda a: cnp.tanh(a * 1.5 + 0.25) * 0.5 + a)(x)).module
    (op,) = [o for o in module.body.ops if o.name == "fusion"]
    text = optimized_llvm_ir(emit_kernel(op, "w1"))
    assert re.search(r"<(4|8|16) x float>", text), "no float vectors (SSE, AVX or AVX-512 widths)"


def test_clamp_bounds_computed_in_the_kernel():
    module = cj.ir.parse("""
func @f(%0: f32[300], %1: f32[]) -> (f32[300]) {
  %2 = exp(%1) : f32[]
  %3 = neg(%2) : f32[]
  %4 = clamp(%3, %0, %2) : f32[300]
  return %4
}""")
    x = random((300,), np.float32)
    for s in [np.float32(0.5), np.float32(-np.inf), np.float32(np.nan)]:
        (op, operands, results), = top_level_ops(run_pipeline(module).module, [x, s])
        assert_same(run_kernel(emit_kernel(op, "k"), operands, results)[0], results[0])


def test_broadcasting_scalars_and_zero_d():
    def f(a, b, s):
        return a + b * s, cnp.float32(2.5) * s + a.sum() * 0
    check_close(f, random((5, 1), np.float32), random((1, 7), np.float32), np.float32(3.0), ulps=0)
    check_exact(lambda a, b: a * b + 1, np.float64(2.0), np.float64(-3.5))


def test_data_movement_inside_fusions():
    def f(x, y):
        moved = cnp.concatenate([x[::-1, 1:], y.T[:3, 1::2]], axis=0)        # rev, slice, transpose
        padded = cnp.pad(x, ((1, 2), (0, 3)), constant_values=-1.0)           # pad by bounds
        interior = lax.pad(x, np.float32(9), [(-1, 2, 1), (2, -1, 2)])         # interior and cropping pads
        return moved * 2, padded + 1, interior - 1, cnp.reshape(x, (3, 2, 4)).transpose(2, 0, 1) + 0.5
    check_exact(f, random((6, 4), np.float32), random((7, 6), np.float32))


def test_iota_and_constants():
    def f(x):
        small = x + np.array([1.0, -2.0, 3.0, 0.5, -0.0], np.float32)        # a select tree
        table = x + np.linspace(0, 1, 100, dtype=np.float32)[:, None]        # an LDS table
        return small, table, lax.broadcasted_iota(np.int32, (100, 5), 0) * 3
    check_exact(f, random((100, 5), np.float32))


def fusion_op(f, *args):
    (op,) = [o for o in run_pipeline(cj.make_graph(f)(*args)).module.body.ops if o.name == "fusion"]
    return op


def floyd_warshall_step(d, k):
    return cnp.minimum(d, d[:, k, None] + d[None, k, :])


def test_a_fusion_reading_through_components_is_laid_out_by_rows():
    d, k = random((300, 300), np.float32), np.int32(7)
    op = fusion_op(floyd_warshall_step, d, k)
    config = launch_config(op, TARGET)
    assert (config.strategy, config.grid, config.grid_rows, config.workgroup_size) == ("loop_by_rows", 5, 300, 64)
    assert "300 rows of 300 f32" in config.reasons[0] and "overlapping the previous one by 20" in config.reasons[1]
    kernel = emit_kernel(op, "k")
    assert kernel.grid == (5, 300, 1) and kernel.workgroup_size == (64, 1, 1)
    # The row is the second grid dimension and the column a chunk's start plus the lane: no element
    # divides its linear index by the row length.
    text = str(kernel)
    assert "workgroup_id(1)" in text and "/ 300" not in text and "% 300" not in text
    assert re.search(r"<(4|8|16) x float>", optimized_llvm_ir(kernel)), "no float vectors"


@pytest.mark.parametrize("f, shapes", [
    (lambda a, b: a * b - a, [(300, 300), (300, 300)]),                    # same-shape elementwise
    (lambda a, s: a * s + 1, [(300, 300), ()]),                            # a scalar broadcast: flat
    (lambda a: cnp.reshape(a, (300, 300)) + 1, [(90000,)]),                 # a reshape: the linear index
    (lambda a, b: a + b[None, :], [(300, 40), (40,)]),                      # rows shorter than a wave
    (lambda a: a[1:] + a[:-1], [(5001,)]),                                 # one dimension
])
def test_flat_fusions_keep_the_flat_loop(f, shapes):
    op = fusion_op(f, *(random(shape, np.float32) for shape in shapes))
    config = launch_config(op, TARGET)
    assert config.strategy == "loop" and config.grid_rows == 1
    assert emit_kernel(op, "k").grid[1:] == (1, 1)


@pytest.mark.parametrize("length, chunks, width", [(64, 1, 64), (65, 2, 64), (200, 2, 128), (256, 1, 256),
                                                   (300, 5, 64), (1000, 4, 256), (1024, 4, 256)])
def test_rows_split_into_chunks_of_the_fewest_work_items(length, chunks, width):
    op = fusion_op(lambda a, b: a + b[None, :], random((3, length), np.float32), random((length,), np.float32))
    config = launch_config(op, TARGET)
    assert (config.strategy, config.grid, config.grid_rows, config.workgroup_size) == (
        "loop_by_rows", chunks, 3, width)


def iota_product(shape):
    return lax.broadcasted_iota(np.float32, shape, 0) * lax.broadcasted_iota(np.float32, shape, 1)


# (shapes of the operands, program): broadcasts from either side, dynamic slices, transposes, iota,
# over rows shorter and longer than a workgroup, odd sizes, 3-D results, one row or one column.
BY_ROWS_PROGRAMS = [
    ([(300, 300), ()], floyd_warshall_step),
    ([(7, 65), (65,)], lambda a, b: a + b[None, :]),
    ([(3, 257), (3,)], lambda a, b: a * b[:, None]),
    ([(5, 129), (5, 1), (1, 129)], lambda a, b, c: cnp.maximum(a - b, c)),
    ([(64, 1000)], lambda a: a - a[:, :1] + a[3]),
    ([(70, 70)], lambda a: a.T * 2 + a),
    ([(2, 3, 300), (300,), (2, 3, 1)], lambda a, b, c: a * b + c),
    ([(4, 5, 97)], lambda a: cnp.transpose(a, (1, 0, 2))[::-1] + 1),
    ([(1, 300), (300, 1)], lambda a, b: a + b),                              # one row plus one column
    ([(300, 1), (1, 300)], lambda a, b: a * b - b),
    ([(9, 511)], lambda a: a + iota_product(a.shape)),
    ([(40, 200), ()], lambda a, k: lax.dynamic_slice(a, (k, k * 2), (30, 130)) + 1),
    ([(6, 130)], lambda a: cnp.pad(a, ((1, 2), (3, 0)), constant_values=-1.0)[1:, :] * a[0, 0]),
]


@pytest.mark.parametrize("case", range(len(BY_ROWS_PROGRAMS)))
def test_by_rows_kernels_match_the_interpreter(case):
    shapes, f = BY_ROWS_PROGRAMS[case]
    args = [random(shape, np.float32) if shape else np.int32(15) for shape in shapes]  # 15: a clamped start
    strategies = {c.strategy for _, _, c in fused(f, *args)}
    assert "loop_by_rows" in strategies
    check_exact(f, *args)


# (shapes, dtype, program): transposed operands staged in LDS tiles (lowering/tiling.py:
# transpose_tiles) over shapes with partial edge tiles, two transposed operands, one read directly.
TRANSPOSE_PROGRAMS = [
    ([(64, 32)], np.float32, lambda a: a.T + 1),
    ([(100, 37)], np.float16, lambda a: a.T * a.T - 2),
    ([(33, 70), (70, 33)], np.float64, lambda a, b: a.T * 3 + b),
    ([(45, 50), (45, 50), ()], np.int32, lambda a, b, c: a.T - b.T * c),
    ([(40, 96)], np.bool_, lambda a: ~a.T),
]


@pytest.mark.parametrize("case", [0, 1, pytest.param(2, marks=pytest.mark.slow),
                                  pytest.param(3, marks=pytest.mark.slow), 4])
def test_transposed_operands_go_through_lds_tiles(case):
    shapes, dtype, f = TRANSPOSE_PROGRAMS[case]
    args = [random(shape, dtype) if shape else dtype(3) for shape in shapes]
    check_exact(f, *args, strategies=["transpose_tiles"])


def test_a_transpose_read_elsewhere_or_sliced_keeps_the_rows_layout():
    x = random((70, 70), np.float32)
    for f in (lambda a: a.T * 2 + a, lambda a: a.T[::-1] + 1):
        module = run_pipeline(cj.make_graph(f)(x)).module
        (op,) = [o for o in module.body.ops if o.name == "fusion"]
        assert launch_config(op, TARGET).strategy == "loop_by_rows"


def test_several_elements_per_work_item():
    x = random((1000,), np.float32)
    module = run_pipeline(cj.make_graph(lambda a: a * 2 + 1)(x)).module
    op, operands, results = next(t for t in top_level_ops(module, [x]) if t[0].name == "fusion")
    config = dataclasses.replace(launch_config(op), elements_per_item=4, workgroup_size=64, grid=4)
    builder = emit_fusion.FusionKernel(op, "k", config, TARGET)
    emit_fusion.BUILDERS["loop"](builder)
    assert_same(run_kernel(builder.kernel(), operands, results)[0], results[0])


# (operand shape, slice sizes, start values, start dtype): the kernel computes each start as s - 1
# (wrapping below zero for unsigned dtypes), then clamps it as the op's reference does.
DYNAMIC_SLICE_CASES = [
    ((7,), (3,), [6], np.int32),                              # clamped high
    ((5, 12), (3, 4), [-3, 100], np.int8),                    # clamped low and high
    ((3, 300), (2, 257), [2, 21], np.uint16),                 # a row crossing 256-work-item workgroups
    ((1000,), (999,), [2 ** 40], np.uint64),                  # a start past u32
    ((65, 1), (64, 1), [-(2 ** 40), 1], np.int64),
    ((130, 65), (1, 65), [0, 0], np.uint32),                  # 0 - 1 wraps to the largest u32: clamped high
    ((4, 0, 3), (2, 0, 2), [1, 5, 1], np.uint8),              # empty
    ((513,), (300,), [-1], np.int16),
    ((), (), [], np.int32),                                   # 0-d
]
SLICED_DTYPES = [np.float32, np.bool_, np.int8, np.uint16, np.int64, np.float16, ml_dtypes.bfloat16, np.uint64,
                 np.float64]


@pytest.mark.parametrize("case", range(len(DYNAMIC_SLICE_CASES)))
def test_dynamic_slice_with_computed_starts_fuses_into_its_reader(case):
    shape, sizes, starts, start_dtype = DYNAMIC_SLICE_CASES[case]
    dtype = SLICED_DTYPES[case % len(SLICED_DTYPES)]

    def f(x, *starts):
        window = lax.dynamic_slice(x, [s - 1 for s in starts], sizes)
        return ~window if window.dtype == np.bool_ else window * 2
    args = [random(shape, dtype), *(np.array(s, start_dtype) for s in starts)]
    module = run_pipeline(cj.make_graph(f)(*args)).module
    assert [op.name for op in module.body.ops] == ["fusion"]
    assert "dynamic_slice" in {op.name for op in module.body.ops[0].regions[0].ops}
    check_exact(f, *args)


def test_indexing_rows_and_elements_fuses_into_the_arithmetic():
    # x[i - 1] and x[i, j] (negative indices normalised in the kernel) read by one elementwise kernel.
    def f(x, i, j):
        return x[i - 1] * 2 + x[i, j], x[:, j] - x[-1, j]
    for i, j in [(0, 0), (3, -2), (-5, 64)]:
        args = [random((5, 65), np.float32), np.int32(i), np.int32(j)]
        module = run_pipeline(cj.make_graph(f)(*args)).module
        assert "dynamic_slice" not in {op.name for op in module.body.ops}
        check_exact(f, *args)


def test_complex_values_cross_kernels_as_interleaved_parts():
    # passes/expand_complex.py leaves real/imag of complex parameters and complex(re, im) results;
    # their buffers hold numpy's layout: 2 x size parts, (re, im) interleaved.
    x = (RNG.standard_normal(10) + 1j * RNG.standard_normal(10)).astype(np.complex64)
    module = run_pipeline(cj.make_graph(lambda a: (cnp.conj(a) + a[::-1], cnp.imag(a)))(x)).module
    (op,) = [o for o in module.body.ops if o.name == "fusion"]
    kernel = emit_kernel(op, "k")
    outputs = [np.zeros(v.type.shape, v.type.numpy_dtype) for v in op.results]
    as_parts = lambda a: a.view(np.float32)  # a complex64 array's parts; float32 ones stay as they are
    assert [(p.dtype, p.count) for p in kernel.params] == [("f32", a.view(np.float32).size) for a in [x] + outputs]
    compile_kernel(kernel)(as_parts(x), *map(as_parts, outputs))
    expected = {np.dtype(np.complex64): np.conj(x) + x[::-1], np.dtype(np.float32): x.imag}
    for output in outputs:
        assert_same(output, expected[output.dtype])


# ---- reduction fusions ----------------------------------------------------------------------------

def softmax(x):
    e = cnp.exp(x - cnp.max(x, axis=-1, keepdims=True))
    return e / cnp.sum(e, axis=-1, keepdims=True)


def layernorm(x):
    d = x - cnp.mean(x, axis=-1, keepdims=True)
    return d / cnp.sqrt(cnp.mean(d * d, axis=-1, keepdims=True) + 1e-5)


ROW_SHAPES = [((4096, 1024), "row_per_workgroup"), ((7, 1000), "row_per_workgroup"), ((3, 5), "row_per_item"),
              ((2, 3000), "row_per_workgroup"), ((5, 64), "row_per_workgroup")]


@pytest.mark.parametrize("shape, strategy", [((9, 1000), "row_per_workgroup"), ((6, 5), "row_per_item")])
def test_rows_read_at_computed_starts_feed_row_reductions(shape, strategy):
    # The rows' start (i - 1, normalised and clamped in the kernel) is read in every phase; the
    # tolerance is test_softmax_and_layernorm_over_rows' (a reordered row sum).
    def f(x, i):
        return softmax(lax.dynamic_slice(x, (i - 1, 0), (3, shape[1])))
    for i in [0, 4, -2, 100]:
        for actual, expected, _ in fused(f, random(shape, np.float32, special=False), np.int32(i),
                                         strategies=[strategy]):
            np.testing.assert_allclose(actual[0], expected[0], rtol=1024 * 2 ** -23, atol=1024 * 2 ** -23)


@pytest.mark.parametrize("n, m", [(10, 20), (300, 700), (2000, 2100)])
def test_a_start_computed_from_a_reduce_is_read_after_its_phase(n, m):
    # The slice's start is a first reduction's result; a second reduction and a per-row result read
    # the slice (and a slice of it): one kernel, two phases.
    def f(x, y):
        total = cnp.sum(x) % 13
        window = lax.dynamic_slice(y, (total,), (n,))
        return cnp.sum(window * x), window[total % 5] + total
    args = [RNG.integers(-5, 9, n).astype(np.int32), RNG.integers(-9, 9, m).astype(np.int32)]
    assert len(fused(f, *args)) == 1
    check_exact(f, *args)


@pytest.mark.parametrize("shape, strategy", ROW_SHAPES)
@pytest.mark.parametrize("fn", [softmax, layernorm])
def test_softmax_and_layernorm_over_rows(fn, shape, strategy):
    # A row of n f32 sums in another order than numpy's pairwise sum: at most n eps relative, so
    # 1024 eps (= 1.2e-4) covers the sum, the few-ulp exp and the division.
    x = random(shape, np.float32, special=False)
    for actual, expected, config in fused(fn, x, strategies=[strategy]):
        np.testing.assert_allclose(actual[0], expected[0], rtol=1024 * 2 ** -23, atol=1024 * 2 ** -23)


def test_row_kernels_stream_their_rows_and_the_host_prefetches_the_next():
    """A row kernel over trailing axes declares that workgroup g reads row g of each full-shaped
    input (Kernel.streams); the host prefetches row g + 1 while g runs. A reduction over a leading
    axis reads strided columns: no stream."""
    x = random((7, 1000), np.float32, special=False)
    module = run_pipeline(cj.make_graph(softmax)(x)).module
    op = next(op for op in module.body.ops if op.name == "fusion")
    kernel = emit_kernel(op, "k")
    assert kernel.streams == (("in0", 1000),) and "stream in0: 1000 elements per workgroup" in str(kernel)
    assert "call void @llvm.prefetch" in optimized_llvm_ir(kernel)
    columns = run_pipeline(cj.make_graph(lambda a: cnp.sum(a, axis=0))(x)).module
    op = next(op for op in columns.body.ops if op.name == "fusion")
    assert emit_kernel(op, "k").streams == ()


def test_rows_longer_than_the_registers_loop_over_the_row():
    x = random((3, 12000), np.float32, special=False)   # longer rows are split in two (split_reductions)
    (actual, expected, config), = fused(lambda a: (cnp.sum(cnp.exp(a), axis=1), cnp.max(a, axis=1)), x)
    assert not config.unrolled  # past 16 elements x 1024 work-items: each work-item loops over the row
    np.testing.assert_allclose(actual[0], expected[0], rtol=12000 * 2 ** -23)  # a reordered sum (see below)
    assert_same(actual[1], expected[1])


def test_multi_phase_rows_in_a_loop_recompute_each_phase():
    x = random((7, 1000), np.float32, special=False)
    module = run_pipeline(cj.make_graph(softmax)(x)).module
    op, operands, results = next(t for t in top_level_ops(module, [x]) if t[0].name == "fusion")
    config = dataclasses.replace(launch_config(op), unrolled=False, workgroup_size=256, elements_per_item=4,
                                 lds_bytes=64)
    builder = emit_fusion.FusionKernel(op, "k", config, TARGET)
    emit_fusion.BUILDERS["row_per_workgroup"](builder)
    (actual,) = run_kernel(builder.kernel(), operands, results)
    np.testing.assert_allclose(actual, results[0], rtol=1024 * 2 ** -23, atol=1024 * 2 ** -23)


def test_an_unrolled_row_max_runs_as_independent_chains_and_stays_exact():
    """Max takes ACCUMULATOR_CHAINS accumulators in turn (max is exact in any order); a float sum
    keeps one per span offset of the work-item (4 f32 of 16 bytes), added in an order of offsets."""
    x = random((8, 1000), np.float32, special=False)
    for k in range(8):  # row k: a NaN in the work-items' k-th elements (chain k % 4)
        x[k, k * 64 + 5] = np.nan
    f = lambda a: (cnp.max(a, axis=1), cnp.sum(a, axis=1))
    module = run_pipeline(cj.make_graph(f)(x)).module
    op = next(op for op in module.body.ops if op.name == "fusion")
    config = launch_config(op)
    assert config.unrolled and config.vector == 4
    text = str(emit_kernel(op, "k"))
    max_chains = set(re.findall(r"(acc\d+) = max\(", text))
    sum_chains = set(re.findall(r"(acc\d+) = \(acc\d+ \+", text))
    assert len(max_chains) == emit_fusion.ACCUMULATOR_CHAINS and len(sum_chains) == config.vector, text
    (actual, expected, _), = fused(f, x)
    assert_same(actual[0], expected[0])
    assert np.isnan(actual[0]).all()


@pytest.mark.parametrize("shape, dtype, vector, unrolled", [
    ((3, 12288), np.float32, 4, False), ((2, 12000), np.float16, 8, False), ((3, 7000), np.float64, 2, False),
    ((8, 1000), np.float32, 4, True), ((5, 1000), np.float16, 8, True)])
def test_row_reductions_take_consecutive_elements_as_sixteen_byte_loads(shape, dtype, vector, unrolled):
    """A row reduction gives each work-item `vector` consecutive row elements at a time on the GPU
    (16 bytes of them, ir/kernel.py: SpanOffset): global_load_dwordx4 on gfx942, in a loop over a
    long row or unrolled. The last group of a row that is not a whole number of them moves back to
    end at the row's end (12000, 7000 and 1000 elements). Sums within a reordered sum's bound,
    maxima exact."""
    x = random(shape, dtype, special=False)
    f = lambda a: (cnp.sum(a, axis=1), cnp.max(a, axis=1))
    (actual, expected, config), = fused(f, x, strategies=["row_per_workgroup"])
    assert config.vector == vector and config.unrolled == unrolled
    assert any(f"{vector} consecutive at a time" in r for r in config.reasons)
    np.testing.assert_allclose(actual[0].astype(np.float64), expected[0].astype(np.float64),
                               atol=float(reduction_bound(x, 1).max()) + float(np.finfo(dtype).eps) * 4)
    assert_same(actual[1], expected[1])
    module = run_pipeline(cj.make_graph(f)(x)).module
    kernel = emit_kernel(next(op for op in module.body.ops if op.name == "fusion"), "k", TARGET)
    assert f"span_offset_u32({vector}, {vector - 1})" in str(kernel)
    assert set(re.findall(r"global_load_(\w+)", amdgpu.assembly(kernel, TARGET.name))) == {"dwordx4"}


@pytest.mark.parametrize("f, shape, dtype", [(softmax, (7, 1000), np.float32), (softmax, (3, 1024), np.float16),
                                             (layernorm, (5, 4096), np.float32), (layernorm, (2, 300), ml_dtypes.bfloat16),
                                             (softmax, (2, 20000), np.float32)])
def test_row_kernels_round_alike_in_the_gpu_and_the_host_assignment(f, shape, dtype):
    """softmax and layernorm store elementwise results at the span offsets and sum in an order of
    offsets (lowering/emit_fusion.py: lane_partials), so the kernel gives the same bits whichever
    work-item takes which offset: run on the host in the GPU's assignment (consecutive elements per
    work-item, ir/kernel.py: span_offsets_resolved) it equals the host's own. On gfx942 its loads
    and stores of the rows are 16 bytes per lane."""
    x = random(shape, dtype, special=False)
    module = run_pipeline(cj.make_graph(f)(x)).module
    for op, operands, results in top_level_ops(module, [x]):
        if op.name != "fusion" or launch_config(op).strategy != "row_per_workgroup":
            continue
        kernel = emit_kernel(op, "k", TARGET)
        host = run_kernel(kernel, operands, results)
        gpu_order = run_kernel(K.span_offsets_resolved(kernel, item_major=True), operands, results)
        for a, b in zip(host, gpu_order):
            assert_same(a, b)
        config = launch_config(op)
        if shape[-1] % (config.workgroup_size * config.vector) == 0:  # whole groups: no guarded element
            assembly = amdgpu.assembly(kernel, TARGET.name)
            assert set(re.findall(r"global_(?:load|store)_(\w+)", assembly)) == {"dwordx4"}


def test_rows_read_through_a_transpose_take_one_element_at_a_time():
    """A split column sum's second kernel reads its partials transposed: consecutive row elements
    are not consecutive in memory, so a work-item takes one at a time (tiling.row_inputs_bytes)."""
    module = run_pipeline(cj.make_graph(lambda a: cnp.sum(a, axis=0))(np.zeros((4096, 1024), np.float32))).module
    first, second = [launch_config(op) for op in module.body.ops if op.name == "fusion"]
    assert first.strategy == "row_per_item" and second.strategy == "row_per_workgroup" and second.vector == 1


def reduction_bound(x, axis):
    """Twice the worst-case error of a reordered float sum: n eps sum |x| (f32 eps for f16/bf16, which accumulate in f32)."""
    wide = np.abs(x.astype(np.float64))
    n = np.prod([x.shape[a] for a in np.atleast_1d(axis)]) if axis is not None else x.size
    return 2 * n * 2 ** -23 * wide.sum(axis=axis)


@pytest.mark.parametrize("shape, axis", [((5, 6), 0), ((300, 70), 0), ((4, 5, 6), 1), ((4, 5, 6), (0, 2)),
                                         ((2, 3, 4), None), ((16000,), None), ((7, 1000), 1), ((3, 0), 1),
                                         ((0, 3), 0), ((3, 1), 0)])
def test_sum_and_max_over_any_axes(shape, axis):
    x = random(shape, np.float32, special=False)
    checked = fused(lambda a: (cnp.sum(a, axis=axis), cnp.max(a * 2, axis=axis, initial=-np.inf)), x)
    (actual, expected, _), = checked
    assert (np.abs(actual[0].astype(np.float64) - expected[0]) <= reduction_bound(x, axis)).all()
    assert_same(actual[1], expected[1])  # max is exact in any order


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64])
@pytest.mark.parametrize("shape, axis", [((5, 300), 1), ((2, 3000), 1), ((37, 5), 0), ((3, 5), 1)])
def test_integer_reductions_are_exact(dtype, shape, axis):
    x = random(shape, dtype)
    check_exact(lambda a: (cnp.sum(a, axis=axis), cnp.prod(a % 3 + 1, axis=axis), cnp.min(a, axis=axis),
                           lax.reduce_and(a, (axis,)), lax.reduce_or(a, (axis,))), x)


@pytest.mark.parametrize("shape", [(4, 100), (2, 2000), (9, 7)])
def test_bool_reductions(shape):
    x = RNG.random(shape) < 0.97
    check_exact(lambda a: (cnp.all(a, axis=1), cnp.any(~a, axis=1), cnp.max(a, axis=1), cnp.min(a, axis=1)), x)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_sums_accumulate_in_f32(dtype):
    # Both sum in f32 and round once: the f32 sums differ by at most the reordering bound, which
    # is far below half a half-precision ulp of the sum, so rounding differs only near a tie: 1 ulp.
    x = random((6, 500), dtype, special=False)
    for actual, expected, _ in fused(lambda a: (cnp.sum(a, axis=1), cnp.max(a, axis=1)), x):
        ulp = np.abs(np.spacing(expected[0].astype(np.float32))) * (2 ** 13 if dtype == np.float16 else 2 ** 16)
        assert (np.abs(actual[0].astype(np.float64) - expected[0].astype(np.float64)) <= ulp + 1e-3).all()
        assert_same(actual[1], expected[1])


def test_multi_output_reduction_with_per_row_and_full_results():
    def f(x):
        mean = cnp.mean(x, axis=1)
        centered = x - mean[:, None]
        return mean, centered * 2, cnp.sqrt(cnp.sum(centered * centered, axis=1))
    x = random((33, 1500), np.float32, special=False)
    (actual, expected, config), = fused(f, x)
    assert config.lds_bytes > 0  # 1500 elements: several waves combine their partials in LDS
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1500 * 2 ** -23, atol=1500 * 2 ** -23 * 3)


# ---- random programs ---------------------------------------------------------------------------

# Every step maps integers to integers and its result is clipped to +-2^10 (STEP_BOUND), so a
# product stays below 2^20 and a sum (at most 729 terms) below 2^20: exact in f32's 24 bits, so the
# kernel and the interpreter agree bit for bit in any summation order.
UNARY = [lambda a: a * 3 + 1, lambda a: cnp.maximum(a, 0.0), lambda a: -a, lambda a: cnp.abs(a) - 1,
         lambda a: cnp.where(a > 0, a, a * 2)]
STEP_BOUND = 2.0 ** 10
BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: cnp.minimum(a, b), lambda a, b: a - b * 2]
REDUCTIONS = [lambda a, axis: cnp.sum(a, axis=axis, keepdims=True),
              lambda a, axis: cnp.max(a, axis=axis, keepdims=True, initial=-np.inf)]


@st.composite
def programs(draw):
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=1, max_size=3)))
    steps = draw(st.lists(st.tuples(st.sampled_from(["unary", "binary", "reduce"]), st.integers(0, 4),
                                    st.integers(0, len(shape) - 1)), min_size=1, max_size=6))
    return shape, steps


@settings(max_examples=25, deadline=None)
@given(programs())
def test_random_elementwise_and_reduction_programs(program):
    shape, steps = program

    def f(x, y):
        values = [x, y]
        for kind, choice, axis in steps:
            a, b = values[-1], values[-2]
            if kind == "unary":
                values.append(UNARY[choice % len(UNARY)](a))
            elif kind == "binary":
                values.append(BINARY[choice % len(BINARY)](a, b))
            else:
                values.append(a - REDUCTIONS[choice % len(REDUCTIONS)](a, axis))  # a row broadcast back
            values[-1] = cnp.clip(values[-1], -STEP_BOUND, STEP_BOUND)
        return values[-1], cnp.sum(values[-1], axis=steps[0][2])

    # Small integers in f32, kept small by the clip: every sum and product is exact, in any order.
    x = RNG.integers(-8, 8, shape).astype(np.float32)
    y = RNG.integers(-8, 8, shape).astype(np.float32)
    module = run_pipeline(cj.make_graph(f)(x, y)).module
    expected = cj.ir.interpret(module, x, y)
    for op, operands, results in top_level_ops(module, [x, y]):
        if op.name == "fusion":
            check_config(op)
            for a, e in zip(run_kernel(emit_kernel(op, "k"), operands, results), results):
                assert_same(a, e)
    assert len(expected) == 2


@pytest.mark.parametrize("columns", [1, 150, 192, 320, 1000])
def test_column_reductions_take_whole_waves_as_their_workgroups_shrink(columns):
    """row_per_item shrinks its workgroups until the grid reaches the target's CUs, always in whole
    waves (150 or 192 columns would otherwise halve to 96, then 48 work-items)."""
    x = random((5, columns), np.float32, special=False)
    (actual, expected, config), = fused(lambda a: cnp.max(a, axis=0), x, strategies=["row_per_item"])
    assert config.workgroup_size % 64 == 0
    assert_same(actual[0], expected[0])



@pytest.mark.parametrize("f, shape, axes, dtype, vector", [
    (lambda a: cnp.sum(a, axis=0), (37, 256), (0,), np.float32, 4),
    (lambda a: cnp.sum(a, axis=1), (5, 9, 512), (1,), np.float16, 8),
    (lambda a: cnp.max(a, axis=(0, 1)), (3, 4, 128), (0, 1), ml_dtypes.bfloat16, 2),
    (lambda a: cnp.mean(a * a, axis=0) + cnp.min(a, axis=0), (70, 320), (0,), np.float32, 1),
    (lambda a: cnp.mean(a * a, axis=0) + cnp.min(a, axis=0), (70, 512), (0,), np.float32, 4)])
def test_column_reductions_take_sixteen_bytes_of_columns_per_work_item(f, shape, axes, dtype, vector):
    """A column reduction's work-item takes `vector` consecutive columns (16 bytes where the last
    axis is a multiple of a wave's) at its span offsets, with an accumulator each, in one uniform
    loop over the rows. Each column's elements are added in row order whichever work-item takes it:
    the host's assignment and the GPU's (ir/kernel.py: span_offsets_resolved) give the same bits,
    within a reordered sum's bound of the interpreter; the gfx942 code loads `vector` elements per
    lane at once."""
    x = random(shape, dtype, special=False)
    module = run_pipeline(cj.make_graph(f)(x)).module
    (op, operands, results), = [t for t in top_level_ops(module, [x]) if t[0].name == "fusion"]
    config = launch_config(op)
    assert (config.strategy, config.vector) == ("row_per_item", vector)
    kernel = emit_kernel(op, "k", TARGET)
    host = run_kernel(kernel, operands, results)
    for a, b in zip(host, run_kernel(K.span_offsets_resolved(kernel, item_major=True), operands, results)):
        assert_same(a, b)
    wide = x.astype(np.float64)
    bound = reduction_bound(np.abs(wide) + wide * wide, axes) + np.abs(results[0].astype(np.float64)) * (
        2 ** -10 if dtype == np.float16 else 2 ** -7 if dtype == ml_dtypes.bfloat16 else 0)
    assert np.all(np.abs(host[0].astype(np.float64) - results[0].astype(np.float64)) <= bound)
    if vector > 1:
        assert any(isinstance(s, K.For) and s.uniform for s in K.walk(kernel.body))
        width = {4: "dword", 8: "dwordx2", 16: "dwordx4"}[vector * x.dtype.itemsize]
        assert set(re.findall(r"global_load_(\w+)", amdgpu.assembly(kernel, TARGET.name))) == {width}
