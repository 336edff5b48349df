"""libs/prim: the radix sort and the scans, differentially against numpy and the interpreter.

Sorts are exact: numpy's stable argsort (NaNs last, -0.0 equal to 0.0) gives the expected
permutation, and the sorted values are compared bit for bit (so -0.0 and NaN payloads must travel
in the stable order). Integer and max/min scans are exact. A float cumsum is reduce-then-scan, a
different association from numpy's sequential sum: by the standard bound on recursive summation,
each prefix differs from the exact sum by at most (n - 1) * eps * sum(|x|) over the prefix, for both
orders, so the two differ by at most twice that (tested with the f64 sum as the exact one). The
routines' references follow the kernels' order, so the interpreter agrees with the compiled code
bit for bit.

Sizes cross the layouts' boundaries: rows shorter than 1024 are left to the LDS merge sort, rows
up to 2^16 sort whole (a wave per row reading stripes of 64), longer ones pass through
memory per digit in runs of 4096 elements, a wave per run reading stripes of 64.
"""
import dataclasses
import re

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.numpy as cnp
from cdnajit.codegen import amdgpu, nvptx
from cdnajit.frontend.tracing import bind
from cdnajit.ir.targets import get_target
from cdnajit.libs.prim import routines as prim_routines
from cdnajit.lowering.emitters import emit_kernel
from cdnajit.passes.manager import DEFAULT_PIPELINE, run_pipeline

RUN, WORKGROUP, LONG_ROW = 4096, 4096 * 64, (1 << 16) + 1
TILE = prim_routines.lookback_tile(256)   # the single-pass scan's largest tile: 256 work-items x 64 elements
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
          ml_dtypes.bfloat16, "float32", "float64"]
FAST_DTYPES = ("int32", "float32")


def keys(shape, dtype, seed=0):
    """Random keys with many duplicates; floats with NaNs, infinities and zeros of both signs."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == bool:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True) // 3 * 3
    x = (rng.standard_normal(shape) * 4).round(1).astype(dtype)
    flat = x.reshape(-1)
    for every, value in [(7, np.nan), (11, -0.0), (13, 0.0), (17, np.inf), (19, -np.inf)]:
        flat[::every] = value
    return x


def expected_order(x, axis):
    wide = x.astype(np.float32) if x.dtype == ml_dtypes.bfloat16 else x
    return np.argsort(wide, axis=axis, kind="stable")


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def same_bits_but_nan_signs(a, b):
    """same_bits, but a NaN's sign and payload: an invalid operation (inf - inf) makes the CPU's
    default NaN, negative, and adding two NaNs keeps one of them, whichever operand order the
    compiler gave a commutative add (IEEE 754 leaves both unspecified)."""
    a, b = np.asarray(a), np.asarray(b)
    nan = np.isnan(a.astype(np.float64))
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(nan, np.isnan(b.astype(np.float64))) \
        and same_bits(np.where(nan, 0, a).astype(a.dtype), np.where(nan, 0, b).astype(a.dtype))


def check_sort(x, axis):
    order = expected_order(x, axis)
    assert same_bits(cj.jit(lambda a: cnp.sort(a, axis=axis))(x), np.take_along_axis(x, order, axis))
    np.testing.assert_array_equal(cj.jit(lambda a: cnp.argsort(a, axis=axis))(x), order)


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=() if d in FAST_DTYPES else pytest.mark.slow) for d in DTYPES],
                         ids=lambda d: np.dtype(d).name)
def test_every_key_dtype_sorts_as_numpy(dtype):
    check_sort(keys((3001, 2), dtype), axis=0)


@pytest.mark.parametrize("length", [1024, RUN + 1, LONG_ROW - 1, LONG_ROW, 17 * RUN + 17,
                                    pytest.param(WORKGROUP + 5, marks=pytest.mark.slow)])
def test_lengths_across_runs_and_workgroups(length):
    check_sort(keys(length, np.float32, seed=length), axis=0)


@pytest.mark.parametrize("dtype", ["int8", "float16", "float64"])
def test_long_rows_of_other_key_widths(dtype):
    check_sort(keys((LONG_ROW + 9, 2), dtype), axis=0)


@pytest.mark.parametrize("shape, axis", [((3, 1500, 2), 1), ((1100, 3), 0), ((5, 1200), -1), ((4, 0), 1), ((0, 2000), 1)])
def test_batched_rows_along_any_axis(shape, axis):
    check_sort(keys(shape, np.int32, seed=len(shape)), axis)


@pytest.mark.parametrize("length", [0, 1, 2])
def test_short_rows(length):
    check_sort(keys(length, np.float32), axis=0)


def test_several_keys_sort_as_lexsort():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 4, 3000).astype(np.int16), keys(3000, np.float64)
    c = np.arange(3000, dtype=np.int64)
    order = np.lexsort((b, a))
    results = cj.jit(lambda a, b, c: lax.sort((a, b, c), num_keys=2))(a, b, c)
    for result, operand in zip(results, (a, b, c)):
        assert same_bits(result, operand[order])
    np.testing.assert_array_equal(cj.jit(lambda a, b: cnp.lexsort((b, a)))(a, b), order)


def library_codes(compiled) -> set:
    codes = {kernel.code_text() for kernel in compiled.executable.kernels}
    return {code for code in codes if "rows: i32" in code}  # the library's (not the iota's)


def test_the_sort_is_library_calls_compiled_per_solution():
    texts = []
    for length in (LONG_ROW, LONG_ROW + 3 * RUN):
        compiled = cj.jit(lambda a: cnp.argsort(a)).lower(np.zeros(length, np.float32)).compile()
        optimized = compiled.as_text("optimized")
        assert optimized.count('routine = "radix_scatter"') == 4, optimized  # four 8-bit digits
        report = compiled.report()
        assert "LSD radix sort pass of f32 keys" in report
        assert "digit counters in LDS (256) counted by atomic adds" in report   # the block histogram
        texts.append(library_codes(compiled))
    # One histogram, one scatter and the two kernels of the counts' single-pass scan (its state's
    # init, the scan) serve every pass and both sizes.
    assert texts[0] == texts[1] and len(texts[0]) == 4


def test_rows_that_fit_sort_whole_in_one_kernel():
    texts = []
    for shape in ((3, 5000), (1000, 1200)):
        compiled = cj.jit(lambda a: cnp.sort(a, axis=1)).lower(np.zeros(shape, np.float32)).compile()
        assert compiled.as_text("optimized").count('routine = "radix_sort_rows"') == 1
        assert "segmented LSD radix sort, a wave per row" in compiled.report()
        texts.append(library_codes(compiled))
    assert texts[0] == texts[1] and len(texts[0]) == 1


def test_whole_rows_of_2_16_elements_of_one_digit():
    """The row sort's counters at rows of 2^16 elements: a digit held by every element counts to
    2^16, or by all but one; with payloads (argsort) and -0.0 against 0.0."""
    rows = np.zeros((4, LONG_ROW - 1), np.float32)
    rows[1] = -0.0
    rows[2, 7] = 3.0
    rows[3, ::2] = -0.0
    rows[3, 100] = np.nan
    check_sort(rows, axis=1)


def sorted_rows(*operands, num_keys):
    """prim.radix_sort_rows called directly (the matcher leaves rows shorter than 1024 to the merge
    sort): the sorted operands."""
    attrs = {"library": "prim", "solution": "", "routine": "radix_sort_rows", "num_keys": num_keys}
    return bind("library_call", list(operands), attrs)[:len(operands)]


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=() if d in FAST_DTYPES else pytest.mark.slow) for d in DTYPES],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("length", [1, 63, 64, 65, 1000 + 37])
def test_whole_rows_across_stripes_of_a_wave(dtype, length):
    """The row sort's wave reads stripes of 64: rows of one element, of a stripe but one, of one,
    of one and one element, of many and a part; keys with NaNs, both zeros and many duplicates, an
    index payload (the stable order)."""
    x = keys((3, length), dtype, seed=length)
    index = np.broadcast_to(np.arange(length, dtype=np.int32), x.shape).copy()
    got_keys, got_index = cj.jit(lambda a, b: sorted_rows(a, b, num_keys=1))(x, index)
    order = expected_order(x, axis=1)
    assert same_bits(np.asarray(got_keys), np.take_along_axis(x, order, axis=1))
    np.testing.assert_array_equal(got_index, order)


def test_whole_rows_of_several_keys_of_mixed_widths():
    """num_keys = 2 of different widths (a u8 key of one pass, an f64 key of eight: the kernel's
    LDS holds a column per pass of the widest) and an i64 payload, rows as numpy's lexsort."""
    rng = np.random.default_rng(12)
    a = rng.integers(0, 3, (2, 1500)).astype(np.uint8)
    b, c = keys((2, 1500), np.float64, seed=12), rng.integers(-9, 9, (2, 1500)).astype(np.int64)
    results = cj.jit(lambda a, b, c: sorted_rows(a, b, c, num_keys=2))(a, b, c)
    order = np.stack([np.lexsort((b[r], a[r])) for r in range(2)])
    for result, operand in zip(results, (a, b, c)):
        assert same_bits(np.asarray(result), np.take_along_axis(operand, order, axis=1))


def test_the_interpreter_runs_the_routines_as_the_kernels():
    x = keys((2, LONG_ROW), np.float32, seed=5)
    fn = lambda a: (cnp.argsort(a, axis=1), cnp.sort(a[:, :5000], axis=1), cnp.cumsum(a, axis=1))
    compiled, interpreted = cj.jit(fn)(x), cj.jit(fn, backend="interpret")(x)
    for same, got, want in zip((same_bits, same_bits, same_bits_but_nan_signs), compiled, interpreted):
        assert same(np.asarray(got), np.asarray(want))


SCANS = {"cumsum": (cnp.cumsum, np.cumsum), "cumprod": (cnp.cumprod, np.cumprod),
         "cummax": (lambda a, axis: lax.cummax(a, axis=axis), np.maximum.accumulate),
         "cummin": (lambda a, axis: lax.cummin(a, axis=axis), np.minimum.accumulate)}


@pytest.mark.parametrize("name", list(SCANS))
@pytest.mark.parametrize("shape, axis", [((3 * RUN + 5,), 0), ((3, 2 * RUN + 1), 1), ((300, 7), 0), ((1,), 0), ((0, 3), 0)])
def test_integer_scans_are_exact(name, shape, axis):
    x = np.random.default_rng(len(shape)).integers(-3, 4, shape).astype(np.int32)
    ours, theirs = SCANS[name]
    np.testing.assert_array_equal(cj.jit(lambda a: ours(a, axis=axis))(x), theirs(x, axis=axis))


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_float_max_min_scans_are_exact(name):
    x = keys((2, 3 * RUN + 3), np.float32, seed=9)
    ours, theirs = SCANS[name]
    assert same_bits(cj.jit(lambda a: ours(a, axis=1))(x), theirs(x, axis=1))


@pytest.mark.parametrize("length", [RUN - 1, 5 * RUN + 3, pytest.param(WORKGROUP * 2 + 1, marks=pytest.mark.slow)])
def test_float_cumsum_within_the_summation_bound(length):
    x = np.random.default_rng(length).standard_normal(length).astype(np.float32)
    got = cj.jit(cnp.cumsum)(x).astype(np.float64)
    exact = np.cumsum(x.astype(np.float64))
    bound = 2 * (np.arange(length) + 1) * np.finfo(np.float32).eps * np.cumsum(np.abs(x.astype(np.float64)))
    assert np.all(np.abs(got - exact) <= bound)


def single_pass_scan(x, reducer, exclusive, workgroup=256):
    """The plan of the single-pass scan, written as the matcher writes it for rows longer than RUN
    (tiles of `workgroup` work-items)."""
    attrs = {"library": "prim", "solution": "", "reducer": reducer, "exclusive": exclusive, "workgroup": workgroup}
    (state,) = bind("library_call", [x], {**attrs, "routine": "lookback_init"})
    return bind("library_call", [x, state], {**attrs, "routine": "lookback_scan"})[0]


def numpy_scan(x, reducer, exclusive):
    ufunc = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[reducer]
    inclusive = ufunc.accumulate(x, axis=1, dtype=x.dtype)
    if not exclusive:
        return inclusive
    identity = np.full((x.shape[0], 1), prim_routines.scan_identity(reducer, x.dtype), x.dtype)
    return np.concatenate([identity, inclusive[:, :-1]], axis=1)


SINGLE_PASS_CASES = [   # dtype, (rows, length), reducer, exclusive
    ("int32", (1, 16 * TILE + 7), "sum", True),     # 17 tiles on the host pool's threads
    ("float32", (2, 3 * TILE + 5), "sum", True),
    *[pytest.param(*case, marks=pytest.mark.slow) for case in [
        ("int64", (3, 5 * TILE), "max", False), ("int8", (2, 2 * TILE + 1), "prod", True),
        ("uint64", (1, 75 * TILE + 1), "sum", False), ("uint16", (4, TILE + 1), "min", True),
        ("float64", (3, 5 * TILE - 1), "sum", False), ("float64", (1, 65 * TILE + 3), "sum", True),
        ("float32", (2, 4 * TILE + 2), "max", True), ("float32", (1, 2 * TILE + 9), "min", False),
        ("float32", (1, 3 * TILE + 1), "prod", False), ("float16", (2, 2 * TILE + 3), "sum", False),
        (ml_dtypes.bfloat16, (1, 3 * TILE), "sum", True), ("float32", (1, 75 * TILE + 5), "sum", False)]]]


@pytest.mark.parametrize("dtype, shape, reducer, exclusive", SINGLE_PASS_CASES,
                         ids=lambda v: np.dtype(v).name if isinstance(v, type) else str(v))
def test_single_pass_scan_is_its_reference(dtype, shape, reducer, exclusive):
    """lookback_init + lookback_scan over sizes crossing tiles (of TILE elements), rows and host
    threads. Exact: the results equal the routine's reference (with NaN, infinities, both zeros),
    which follows the kernel's association (tiles folded in order, whatever the look-back found),
    and for integers numpy's scan; the reference of a float sum is within the
    recursive-summation bound (n eps sum|x| for each order, so twice that) of the f64 sum.
    (logaddexp, whose exp and log1p may round an ulp apart from numpy's, is held to its error model
    by test_cumlogsumexp_is_a_logaddexp_scan, whose long rows are single-pass scans.)"""
    x = keys(shape, dtype, seed=shape[1])
    if reducer == "prod" and np.dtype(dtype).kind == "f":
        x = np.exp2(np.random.default_rng(1).integers(-2, 3, shape)).astype(dtype)   # exact products
    got = np.asarray(cj.jit(lambda a: single_pass_scan(a, reducer, exclusive))(x))
    want = prim_routines.lookback_scan(x, None, reducer=reducer, exclusive=exclusive, workgroup=256)
    assert same_bits_but_nan_signs(got, want)
    if np.dtype(dtype).kind in "iu":
        assert same_bits(got, numpy_scan(x, reducer, exclusive))
    elif reducer == "sum" and dtype in ("float32", "float64"):
        finite = np.where(np.isfinite(x), x, 0).astype(np.float64)
        got = cj.jit(lambda a: single_pass_scan(a, reducer, False))(finite.astype(dtype)).astype(np.float64)
        bound = 2 * np.arange(1, shape[1] + 1) * np.finfo(dtype).eps * np.cumsum(np.abs(finite), axis=1)
        assert np.all(np.abs(got - np.cumsum(finite, axis=1)) <= bound)


def test_long_scans_are_single_pass():
    compiled = cj.jit(cnp.cumsum).lower(np.ones(2 * TILE + 1, np.float32)).compile()
    optimized = compiled.as_text("optimized")
    assert 'routine = "lookback_init"' in optimized and 'routine = "lookback_scan"' in optimized
    assert 'routine = "run_totals"' not in optimized
    assert "decoupled look-back folding predecessors' aggregates in tile order" in compiled.report()


def test_single_pass_tiles_cover_the_cus():
    """Tiles of 256 work-items where they are at least the target's CUs, of fewer where only fewer
    are: a cumsum of 2^22 f32 runs 512 tiles of 128 (256 of 256 would leave 48 of gfx942's 304 CUs
    idle); a row too short for 304 tiles of 64 keeps 256. The matcher writes the choice in the
    calls, and the kernel's grid follows it."""
    cus = get_target().compute_units
    assert cus == 304
    assert [prim_routines.lookback_workgroup(rows, length, cus) for rows, length in
            [(1, 1 << 24), (1, 1 << 22), (2, 1 << 22), (1, 1 << 21), (1, 1 << 20), (1, 5000)]] == \
        [256, 128, 256, 64, 256, 256]
    graph = cj.make_graph(cnp.cumsum)(np.ones(1 << 22, np.float32))
    calls = [op for op in run_pipeline(graph, DEFAULT_PIPELINE).module.body.ops if op.name == "library_call"]
    assert [call.attrs["workgroup"] for call in calls] == [128, 128]
    kernel = emit_kernel(calls[1], "k")
    assert kernel.launch_grid() == (512, 1, 1) and kernel.workgroup_size == (128, 1, 1)


SMALLER_TILE_CASES = [   # workgroup, dtype, (rows, length), exclusive, segmented
    (128, "float32", (2, 3 * 128 * 64 + 64), False, False),   # whole runs, a partial tile
    (64, "float32", (1, 5 * 64 * 64 + 5), True, True),        # a partial run
    *[pytest.param(*case, marks=pytest.mark.slow) for case in [
        (128, "float64", (1, 4 * 128 * 64), True, False), (64, "int32", (3, 2 * 64 * 64 + 1), False, False),
        (128, "float32", (1, 4 * 128 * 64), False, True), (64, "int16", (2, 3 * 64 * 64), True, True)]]]


@pytest.mark.parametrize("workgroup, dtype, shape, exclusive, segmented", SMALLER_TILE_CASES)
def test_single_pass_scan_of_smaller_tiles_is_its_reference(workgroup, dtype, shape, exclusive, segmented):
    """The single-pass scans with tiles of 128 and 64 work-items (64: a wave, no fold of waves)
    over rows of whole and partial runs: the reference's bits, which follow the tile."""
    x = keys(shape, dtype, seed=shape[1])
    heads = tile_edge_heads(shape, 0.002, seed=shape[1])
    if segmented:
        got = cj.jit(lambda a, h: segmented_single_pass_scan(a, h, "sum", exclusive, workgroup))(x, heads)
        want = prim_routines.segmented_lookback_scan(x, heads, None, reducer="sum", exclusive=exclusive,
                                                     workgroup=workgroup)
    else:
        got = cj.jit(lambda a: single_pass_scan(a, "sum", exclusive, workgroup))(x)
        want = prim_routines.lookback_scan(x, None, reducer="sum", exclusive=exclusive, workgroup=workgroup)
    assert same_bits_but_nan_signs(np.asarray(got), want)
    if np.dtype(dtype).kind in "iu":
        assert same_bits(np.asarray(got), segmented_reference(x, heads, "sum", exclusive, 1).astype(x.dtype)
                         if segmented else numpy_scan(x, "sum", exclusive))


def single_pass_assembly(length: int, dtype, segmented: bool) -> str:
    import cdnajit.ops as ops
    x, heads = np.ones(length, dtype), np.ones(length, bool)
    graph = cj.make_graph(ops.segmented_scan)(x, heads) if segmented else cj.make_graph(cnp.cumsum)(x)
    (call,) = [op for op in run_pipeline(graph, DEFAULT_PIPELINE).module.body.ops
               if op.name == "library_call" and "lookback_scan" in op.attrs["routine"]]
    return amdgpu.assembly(emit_kernel(call, "k"), get_target("gfx942"))


def global_widths(asm: str, kind: str) -> set:
    return set(re.findall(rf"global_{kind}_(\w+)", asm))


def test_whole_runs_load_and_store_sixteen_bytes_per_lane_on_gfx942():
    """Rows of whole runs (a multiple of 64 elements) take the variant that reads and writes each
    run a group of 16 bytes at a time: global_load_dwordx4 and global_store_dwordx4 only (rocPRIM's
    block_load_vectorize); a row with a partial run keeps element-by-element loads for it."""
    whole = single_pass_assembly(1 << 16, np.float32, segmented=False)
    assert global_widths(whole, "load") == {"dwordx4"} and global_widths(whole, "store") == {"dwordx4"}
    assert "dword" in global_widths(single_pass_assembly((1 << 16) + 1, np.float32, segmented=False), "load")


@pytest.mark.slow
@pytest.mark.parametrize("dtype, segmented", [(np.float64, False), (np.float16, False), (np.float32, True)])
def test_whole_runs_of_other_dtypes_load_sixteen_bytes_of_values_per_lane(dtype, segmented):
    """2 f64 or 8 f16 a group; a segmented scan's heads come a group of values at a time too (4
    bools, a dword; LLVM merges some groups' into wider loads)."""
    asm = single_pass_assembly(1 << 16, dtype, segmented)
    loads = global_widths(asm, "load")
    assert "dwordx4" in loads and (loads <= {"dword", "dwordx2", "dwordx3", "dwordx4"} if segmented
                                   else loads == {"dwordx4"})
    assert global_widths(asm, "store") == {"dwordx4"}


@pytest.mark.slow
@pytest.mark.parametrize("dtype, segmented", [(np.float64, False), (np.int64, False), (np.float16, False),
                                              (np.float32, True), (np.int64, True)])
def test_single_pass_scan_builds_for_the_gpus(dtype, segmented):
    """gfx942: no spills, the look-back's atomics as global atomics, the wave scans' moves (of the
    values, and of the segmented scan's heads) as DPP row shifts and row broadcasts (rocPRIM's
    GFX9 warp scan: no LDS round trip); NVPTX: the same kernel lowers."""
    import cdnajit.ops as ops
    x, heads = np.ones(2 * TILE + 1, dtype), np.ones(2 * TILE + 1, bool)
    graph = cj.make_graph(ops.segmented_scan)(x, heads) if segmented else cj.make_graph(cnp.cumsum)(x)
    calls = [op for op in run_pipeline(graph, DEFAULT_PIPELINE).module.body.ops if op.name == "library_call"]
    assert {call.attrs["routine"] for call in calls} == \
        {"lookback_init", "segmented_lookback_scan" if segmented else "lookback_scan"}
    for call in calls:
        kernel = emit_kernel(call, "k")
        resources = amdgpu.resources(kernel, get_target("gfx942"))
        assert resources.vgpr_spill_count == 0 and resources.sgpr_spill_count == 0
        if call.attrs["routine"] != "lookback_init":
            asm = amdgpu.assembly(kernel, get_target("gfx942"))
            assert "global_atomic_swap_x2" in asm   # the look-back
            moves = {move for line in asm.splitlines() if "_dpp " in line
                     for move in re.findall(r"row_shr:\d+|row_bcast:\d+", line)}
            assert moves == {"row_shr:1", "row_shr:2", "row_shr:4", "row_shr:8", "row_bcast:15", "row_bcast:31"}
            assert "ds_bpermute" not in asm
            assert "atom" in nvptx.ptx(kernel)


@pytest.mark.slow
@pytest.mark.parametrize("program, dtype, routine", [
    (cnp.sort, np.float32, "radix_histogram"), (cnp.sort, np.int64, "radix_histogram"),
    (lambda a: cnp.histogram(a, bins=37, range=(-4, 4))[0], np.float32, "bin_counts"),
    (lambda a: cnp.histogram(a, bins=np.linspace(-4, 4, 300))[0], np.float64, "bin_counts")])
def test_block_histograms_count_in_lds_on_the_gpus(program, dtype, routine):
    """gfx942: the radix sort's digit histogram and the histogram's counts are block histograms,
    LDS counters incremented by ds_add (no global atomics), with no spills."""
    graph = cj.make_graph(program)(np.ones(LONG_ROW, dtype))
    calls = [op for op in run_pipeline(graph, DEFAULT_PIPELINE).module.body.ops
             if op.name == "library_call" and op.attrs["routine"] == routine]
    assert calls
    for call in calls:
        kernel = emit_kernel(call, "k")
        resources = amdgpu.resources(kernel, get_target("gfx942"))
        assert resources.vgpr_spill_count == 0 and resources.sgpr_spill_count == 0
        asm = amdgpu.assembly(kernel, get_target("gfx942"))
        assert "ds_add_u32" in asm or "ds_add_rtn_u32" in asm, asm[:3000]
        assert "global_atomic" not in asm


def library_kernel(program, x, routine: str):
    """The kernel of the first call of a prim routine in the optimized program, as emitted."""
    graph = cj.make_graph(program)(x)
    calls = [op for op in run_pipeline(graph, DEFAULT_PIPELINE).module.body.ops
             if op.name == "library_call" and op.attrs["routine"] == routine]
    assert calls
    return emit_kernel(calls[0], "k")


@pytest.mark.parametrize("program, dtype", [(cnp.sort, np.float32),
                                            pytest.param(cnp.argsort, np.int64, marks=pytest.mark.slow)])
def test_radix_scatter_ranks_by_lane_match_on_the_gpus(program, dtype):
    """gfx942: the scatter's wave ranks each stripe's digits by rocPRIM's match_any, a ballot per
    digit bit (a compare into an SGPR pair) and v_mbcnt, its counters in LDS, with no spills; PTX
    builds too."""
    kernel = library_kernel(program, np.ones(LONG_ROW, dtype), "radix_scatter")
    assert kernel.workgroup_items == 64
    resources = amdgpu.resources(kernel, get_target("gfx942"))
    assert (resources.vgpr_spill_count, resources.sgpr_spill_count) == (0, 0)
    asm = amdgpu.assembly(kernel, get_target("gfx942"))
    ballots = [line for line in asm.splitlines() if "v_cmp" in line and " s[" in line]
    assert len(ballots) >= 8, asm[:3000]
    assert "v_mbcnt_hi_u32_b32" in asm and "ds_read" in asm and "ds_write" in asm
    assert "global_atomic" not in asm and "ds_add" not in asm
    assert "popc.b64" in nvptx.ptx(kernel)


@pytest.mark.parametrize("program, dtype", [(cnp.sort, np.float32),
                                            pytest.param(cnp.argsort, np.float64, marks=pytest.mark.slow)])
def test_whole_row_sort_ranks_by_lane_match_on_the_gpus(program, dtype):
    """gfx942: the row sort's wave counts digits by LDS atomic adds, scans the counts by DPP moves,
    ranks each stripe's digits by rocPRIM's match_any (a ballot per digit bit, v_mbcnt) against
    its counters in LDS, with no spills and no scratch; PTX builds too."""
    kernel = library_kernel(lambda a: program(a, axis=-1), np.ones((3, 5000), dtype), "radix_sort_rows")
    assert kernel.workgroup_items == 64
    resources = amdgpu.resources(kernel, get_target("gfx942"))
    assert (resources.vgpr_spill_count, resources.sgpr_spill_count, resources.scratch_bytes) == (0, 0, 0)
    asm = amdgpu.assembly(kernel, get_target("gfx942"))
    ballots = [line for line in asm.splitlines() if "v_cmp" in line and " s[" in line]
    passes = 8 if dtype == np.float64 else 4
    assert len(ballots) >= 8 * passes, asm[:3000]
    assert asm.count("v_mbcnt_hi_u32_b32") >= passes and "ds_read" in asm and "ds_write" in asm
    assert "ds_add_u32" in asm and "row_shr:1" in asm and "row_bcast:31" in asm
    assert "global_atomic" not in asm and "ds_bpermute" not in asm
    assert "popc.b64" in nvptx.ptx(kernel)


@pytest.mark.parametrize("length", [LONG_ROW + 3 * RUN + 37, 5000 + 37])
def test_rows_of_few_digits_keep_their_order(length):
    """The scatters' lane groups at their extremes: every lane of every stripe in one group (one
    key), two groups alternating lane by lane, and a run's or row's last stripe cut short (argsort:
    the payload shows the order); long rows (the per-digit passes) and whole rows (the row sort)."""
    x = np.zeros((3, length), np.float32)
    x[1, ::2] = -0.0
    x[1, 1::2] = 1.0
    x[2, 5::64] = np.nan
    check_sort(x, axis=1)


def test_reverse_scan():
    x = np.random.default_rng(2).integers(-9, 9, (2, 2 * RUN + 7)).astype(np.int64)
    np.testing.assert_array_equal(cj.jit(lambda a: lax.cumsum(a, axis=1, reverse=True))(x),
                                  np.flip(np.cumsum(np.flip(x, 1), axis=1), 1))


@pytest.mark.parametrize("length", [0, 1, RUN + 3, pytest.param(WORKGROUP + 7, marks=pytest.mark.slow)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_histogram_counts_as_numpy(length, dtype):
    """Counts are exact; values on edges, at the closed last edge, outside the range and NaN included."""
    x = (np.random.default_rng(length).standard_normal(length) * 3).round(1).astype(dtype)
    if dtype != np.int32 and length > 10:
        x[::97] = np.nan
    counts, edges = cj.jit(lambda a: cnp.histogram(a, bins=37, range=(-4, 4)))(x)
    finite = x[~np.isnan(x)] if dtype != np.int32 else x
    np.testing.assert_array_equal(counts, np.histogram(finite, bins=37, range=(-4, 4))[0])
    compiled = cj.jit(lambda a: cnp.histogram(a, bins=37, range=(-4, 4))).lower(x).compile()
    assert 'routine = "bin_counts"' in compiled.as_text("optimized")
    assert length == 0 or "counting into LDS bins by atomic adds" in compiled.report()


def test_weighted_histogram_of_uneven_edges():
    """Each bin sums its weights per run in element order, then the runs' sums: within
    (n - 1) * eps * sum(w) of numpy's (both orders are recursive sums of positive weights)."""
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal(3 * RUN).astype(np.float32), rng.random(3 * RUN).astype(np.float32)
    edges = np.array([-3, -1, 0, 0.5, 2.0], np.float32)
    counts, _ = cj.jit(lambda a, w: cnp.histogram(a, bins=edges, weights=w))(x, w)
    want = np.histogram(x, bins=edges, weights=w.astype(np.float64))[0]
    np.testing.assert_allclose(counts, want, rtol=0, atol=2 * x.size * np.finfo(np.float32).eps * w.sum())


@pytest.mark.slow
def test_more_edges_than_lds_bins_count_per_run():
    """Beyond histogram.BLOCK_SLOTS slots the counts take the per-run kernel; exact as numpy's."""
    x = np.random.default_rng(8).standard_normal(3 * RUN + 5).astype(np.float32)
    edges = np.linspace(-3, 3, 5001).astype(np.float32)
    counts = cj.jit(lambda a: cnp.histogram(a, bins=edges)[0])
    assert "each summing into its own row" in counts.lower(x).compile().report()
    np.testing.assert_array_equal(counts(x), np.histogram(x, bins=edges)[0])


def test_equal_bins_and_their_edges_given_count_alike():
    """The equal-bins kernel (an estimate corrected against the edges) and the binary search agree
    on the same edges, values beyond both ends and on the closed last edge included, in every run."""
    x = (np.random.default_rng(6).standard_normal(3 * RUN) * 2.5).astype(np.float32)
    x[::101] = 4.0
    even = cj.jit(lambda a: cnp.histogram(a, bins=64, range=(-4.0, 4.0)))
    counts, edges = even(x)
    assert 'even = true' in even.lower(x).compile().as_text("optimized")
    searched = cj.jit(lambda a: cnp.histogram(a, bins=edges)[0])
    np.testing.assert_array_equal(counts, searched(x))


@pytest.mark.parametrize("dtype, shape, axis, reverse", [
    (np.float32, (3, 2 * RUN + 1), 1, False),          # few long rows: reduce-then-scan
    (np.float64, (2 * RUN + 3,), 0, True),
    pytest.param(np.float16, (300, 7), 0, False, marks=pytest.mark.slow),   # a row per work-item
    pytest.param(ml_dtypes.bfloat16, (5, 9), 1, True, marks=pytest.mark.slow),
    (np.float32, (0, 3), 0, False), (np.float64, (1,), 0, False)])
def test_cumlogsumexp_is_a_logaddexp_scan(dtype, shape, axis, reverse):
    """lax.cumlogsumexp of real floats is prim's scan with a logaddexp reducer, against numpy's
    logaddexp.accumulate in f64 (with -inf, inf and NaN). Error model: logaddexp's derivative in each
    operand is at most 1, so errors add: each step rounds max + log1p(exp(-gap)) to within
    eps |result| + 3 eps (log1p and exp within an ulp each, the sum once), in the accumulator (f32 for
    f16/bf16), plus one rounding to the dtype: n (eps_acc (|r| + 3)) + eps_dtype |r| with r the largest result."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 8).astype(dtype)
    flat = x.reshape(-1)
    flat[::97] = -np.inf
    flat[5::331] = np.inf
    flat[7::1013] = np.nan
    f = cj.jit(lambda a: lax.cumlogsumexp(a, axis=axis, reverse=reverse))
    assert 'reducer = "logaddexp"' in f.lower(x).compile().as_text("optimized")
    got = f(x)
    wide = np.flip(x, axis).astype(np.float64) if reverse else x.astype(np.float64)
    with np.errstate(invalid="ignore"):   # inf - inf in numpy's logaddexp: NaN, as the kernel's
        want = np.logaddexp.accumulate(wide, axis=axis) if x.size else wide
    want = np.flip(want, axis) if reverse else want
    assert got.dtype == x.dtype and got.shape == x.shape
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(got.astype(np.float64)), finite)
    np.testing.assert_array_equal(got.astype(np.float64)[~finite], want[~finite])
    if finite.any():
        n, r = shape[axis], np.abs(want[finite]).max()
        eps_acc = np.finfo(np.float64 if dtype == np.float64 else np.float32).eps
        tolerance = n * eps_acc * (r + 3) + float(np.finfo(dtype).eps) * r
        assert np.abs(got.astype(np.float64)[finite] - want[finite]).max() <= tolerance


@pytest.mark.parametrize("dtype, n, size, density", [
    ("int32", 3 * RUN + 5, 5000, 0.3),             # runs of one workgroup, size cutting the selection
    ("float64", 65 * RUN + 3, 65 * RUN + 9, 0.5),  # across workgroups, size past the count: a filled tail
    pytest.param("int8", RUN, RUN, 1.0, marks=pytest.mark.slow),
    pytest.param("uint64", 1001, 2, 0.01, marks=pytest.mark.slow),
    pytest.param(ml_dtypes.bfloat16, 5000, 7000, 0.9, marks=pytest.mark.slow),
    pytest.param("complex64", 5000, 4000, 0.7, marks=pytest.mark.slow),   # each part compacted on its own
    ("bool", 0, 3, 0.5), ("float32", 100, 0, 0.5)])
def test_stream_compaction_serves_nonzero_and_compress(dtype, n, size, density):
    """cnp.nonzero / compress with size= are prim.select_runs: numpy's selection in order, cut to size,
    then the fill (exact: values only move)."""
    rng = np.random.default_rng(5)
    condition = rng.random(n) < density
    values = keys((n, 2), dtype, seed=6)
    f = cj.jit(lambda c, v: (cnp.nonzero(c, size=size, fill_value=-1)[0],
                             cnp.compress(c, v, axis=0, size=size, fill_value=3)))
    calls = 3 if np.dtype(dtype).kind == "c" else 2      # a complex array's parts compact one by one
    assert f.lower(condition, values).compile().as_text("optimized").count('routine = "select_runs"') == calls
    got_index, got_values = f(condition, values)
    want_index = np.full(size, -1)
    selected = np.flatnonzero(condition)[:size]
    want_index[:selected.size] = selected
    want_values = np.full((size, 2), 3, values.dtype)
    want_values[:selected.size] = values[selected]
    np.testing.assert_array_equal(got_index, want_index)
    assert got_values.dtype == values.dtype and same_bits(got_values, want_values)


@pytest.mark.parametrize("dtype, shape, axis, k", [
    ("float32", (100_003,), 0, 7),                # a long row: 256 chunks' top k, then their candidates' top k
    ("int32", (70, 1100), 1, 32),                 # rows across workgroups (64 rows each)
    pytest.param("float32", (5000,), 0, 7, marks=pytest.mark.slow),
    pytest.param("float64", (1500, 3), 0, 1, marks=pytest.mark.slow),
    pytest.param("float16", (2, 1024), 1, 0, marks=pytest.mark.slow),
    pytest.param("uint8", (4, 3000), 1, 20, marks=pytest.mark.slow),
    pytest.param(ml_dtypes.bfloat16, (1030,), 0, 5, marks=pytest.mark.slow)])
def test_top_k_is_one_ordered_pass(dtype, shape, axis, k):
    """lax.top_k of rows of 1024 or more (k <= 32) is prim.top_k_rows: numpy's stable descending
    order (NaN largest, -0.0 equal to 0.0, equal values in index order) cut to k; exact."""
    x = keys(shape, dtype, seed=8)
    moved = np.moveaxis(x, axis, -1)
    f = cj.jit(lambda a: lax.top_k(cnp.moveaxis(a, axis, -1), k))
    assert 'routine = "top_k_rows"' in f.lower(x).compile().as_text("optimized")
    values, indices = f(x)
    wide = moved.astype(np.float64)
    n = moved.shape[-1]
    order = np.stack([np.lexsort((np.arange(n), -np.nan_to_num(row, nan=0.0), ~np.isnan(row)))
                      for row in wide.reshape(-1, n)]).reshape(moved.shape)[..., :k]
    np.testing.assert_array_equal(indices, order.astype(np.int32))
    assert same_bits(values, np.take_along_axis(moved, order, axis=-1))


def segmented_reference(x, heads, reducer, exclusive, axis):
    """Each segment scanned alone by numpy along axis, in f64 for floats (the exact sums)."""
    ufunc = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum, "logaddexp": np.logaddexp}[reducer]
    x, heads = np.moveaxis(x, axis, -1), np.moveaxis(heads, axis, -1).copy()
    wide = x.astype(np.float64) if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16 else x
    identity = {"sum": 0, "prod": 1, "max": -np.inf, "min": np.inf, "logaddexp": -np.inf}[reducer]
    if wide.dtype.kind in "iu" and reducer in ("max", "min"):
        info = np.iinfo(wide.dtype)
        identity = info.min if reducer == "max" else info.max
    out = np.empty(wide.shape, wide.dtype)
    heads[..., :1] = True
    for row in np.ndindex(wide.shape[:-1]):
        starts = list(np.flatnonzero(heads[row])) + [wide.shape[-1]]
        for a, b in zip(starts[:-1], starts[1:]):
            scanned = ufunc.accumulate(wide[row][a:b])
            out[row][a:b] = np.concatenate([[identity], scanned[:-1]]) if exclusive else scanned
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("dtype, shape, axis, reducer, exclusive", [
    ("float32", (2 * RUN + 5,), 0, "sum", True),
    pytest.param("float32", (2 * RUN + 5,), 0, "sum", False, marks=pytest.mark.slow),
    pytest.param("int32", (3, RUN + 7), 1, "max", True, marks=pytest.mark.slow),
    pytest.param("float64", (3 * RUN + 1,), 0, "sum", False, marks=pytest.mark.slow),
    pytest.param("int64", (300, 5), 0, "prod", False, marks=pytest.mark.slow),
    pytest.param("float16", (700, 2), 0, "min", True, marks=pytest.mark.slow),
    pytest.param("float32", (2 * RUN + 1,), 0, "logaddexp", False, marks=pytest.mark.slow),
    pytest.param("float32", (0,), 0, "sum", True, marks=pytest.mark.slow)])
def test_segmented_scan_restarts_at_each_head(dtype, shape, axis, reducer, exclusive):
    """cdnajit.ops.segmented_scan: prim's segmented scan (one pass for rows up to 4096, else
    reduce-then-scan whose carries cross runs, heads in some runs and none in others). Integers,
    max and min exact; float sums within the recursive-summation bound over each segment (module
    docstring); logaddexp within a few eps of each result per term; the interpreter runs the
    routines' references, the kernels' order, so it agrees bit for bit (logaddexp: to the
    kernel's exp and log1p, an ulp per term)."""
    import cdnajit.ops as ops
    rng = np.random.default_rng(7)
    x = (rng.integers(-3, 4, shape) if dtype.startswith("int") else rng.standard_normal(shape)).astype(dtype)
    if reducer == "prod":
        x = np.where(x == 0, 1, x)
    heads = rng.random(shape) < 0.0005
    if heads.size:
        heads[tuple(s // 2 for s in shape)] = True    # one head at least, mid-row
    f = lambda a, h: ops.segmented_scan(a, h, reducer=reducer, exclusive=exclusive, axis=axis)
    got = cj.jit(f)(x, heads)
    want = segmented_reference(x, heads, reducer, exclusive, axis)
    assert got.dtype == x.dtype and got.shape == x.shape
    if dtype.startswith("int") or reducer in ("max", "min"):
        np.testing.assert_array_equal(got, want.astype(x.dtype))
    else:
        eps = float(ml_dtypes.finfo(x.dtype).eps)
        length = shape[axis]
        if reducer == "logaddexp":
            np.testing.assert_allclose(got, want, rtol=4 * length * eps, atol=4 * length * eps)
        else:
            magnitude = segmented_reference(np.abs(x).astype(np.float64), heads, "sum", exclusive, axis)
            assert np.all(np.abs(got - want) <= 2 * length * eps * magnitude + eps)
    interpreted = cj.jit(f, backend="interpret")(x, heads)
    if reducer == "logaddexp":   # the kernel's exp and log1p are not numpy's: an ulp per term
        np.testing.assert_allclose(interpreted, got, rtol=4 * shape[axis] * float(np.finfo(x.dtype).eps))
    else:
        np.testing.assert_array_equal(interpreted, got)


def segmented_single_pass_scan(x, heads, reducer, exclusive, workgroup=256):
    """The plan of the single-pass segmented scan, written as the matcher writes it for few rows
    longer than RUN (tiles of `workgroup` work-items)."""
    attrs = {"library": "prim", "solution": "", "reducer": reducer, "exclusive": exclusive, "workgroup": workgroup}
    (state,) = bind("library_call", [x], {**attrs, "routine": "lookback_init"})
    return bind("library_call", [x, heads, state], {**attrs, "routine": "segmented_lookback_scan"})[0]


def tile_edge_heads(shape, density, seed):
    """Random heads of `density`, plus heads where the kernel's pieces meet: the first and last
    element of tiles, of waves and of work-items' runs, in some rows."""
    rng = np.random.default_rng(seed)
    heads = rng.random(shape) < density
    run = prim_routines.LOOKBACK_ITEMS
    wave = run * prim_routines.LOOKBACK_WAVE
    edges = np.concatenate([np.arange(0, shape[1], TILE), np.arange(TILE - 1, shape[1], TILE),
                            np.arange(wave, shape[1], 3 * wave), np.arange(run * 5 - 1, shape[1], 7 * wave + run)])
    heads[0, edges] = True
    return heads


SEGMENTED_SINGLE_PASS_CASES = [
    ("int32", (1, 16 * TILE + 7), "sum", False, 0.0005),   # 17 tiles on the host pool's threads
    ("float32", (2, 3 * TILE + 5), "sum", True, 0.01),
    *[pytest.param(*case, marks=pytest.mark.slow) for case in [
        ("float64", (1, 5 * TILE - 1), "sum", False, 0.3), ("int8", (2, 2 * TILE + 1), "prod", True, 0.001),
        ("uint16", (3, TILE + 1), "min", False, 0.0), ("float32", (1, 4 * TILE + 2), "max", True, 1.0),
        ("float16", (2, 2 * TILE + 3), "sum", False, 0.001), ("int64", (1, 75 * TILE + 1), "sum", True, 1e-5),
        ("float32", (1, 2 * TILE + 9), "logaddexp", False, 0.002)]]]


@pytest.mark.parametrize("dtype, shape, reducer, exclusive, density", SEGMENTED_SINGLE_PASS_CASES)
def test_segmented_single_pass_scan_is_its_reference(dtype, shape, reducer, exclusive, density):
    """lookback_init + segmented_lookback_scan over sizes crossing tiles, rows and host threads,
    heads dense, sparse, absent from rows and on the tiles', waves' and work-items' edges. Exact:
    the results equal the routine's reference (with NaN, infinities, both zeros), which joins
    (value, head) pairs in the kernel's association, and for integers numpy's scan of each segment."""
    x = keys(shape, dtype, seed=shape[1])
    if reducer == "prod" and np.dtype(dtype).kind == "f":
        x = np.exp2(np.random.default_rng(1).integers(-2, 3, shape)).astype(dtype)
    if reducer == "logaddexp":
        x = np.random.default_rng(2).standard_normal(shape).astype(dtype)
    heads = tile_edge_heads(shape, density, seed=shape[1])
    got = np.asarray(cj.jit(lambda a, h: segmented_single_pass_scan(a, h, reducer, exclusive))(x, heads))
    want = prim_routines.segmented_lookback_scan(x, heads, None, reducer=reducer, exclusive=exclusive, workgroup=256)
    if reducer == "logaddexp":   # the kernel's exp and log1p are not numpy's: an ulp per term
        np.testing.assert_allclose(got, want, rtol=4 * shape[1] * float(np.finfo(x.dtype).eps))
    else:
        assert same_bits_but_nan_signs(got, want)
    if np.dtype(dtype).kind in "iu":
        assert same_bits(got, segmented_reference(x, heads, reducer, exclusive, 1).astype(x.dtype))


@pytest.mark.parametrize("segmented", [False, True])
def test_look_back_folds_published_aggregates_in_tile_order(segmented):
    """The look-back's fold of aggregates, which a run of the host's pool takes only when a tile
    overtakes its predecessor: the last tile of a row scanned alone (a grid of one workgroup) over
    the state a whole scan left, with the tiles before it set back to AGGREGATE (keeping their
    HEAD bits) but the first, so it walks back to tile 0 and folds every aggregate after it. Its
    results are the whole scan's, bit for bit: the combination order does not depend on what the
    look-back found. Float sums, heads in some tiles (segmented) and none in others."""
    from cdnajit.libs.prim import lookback
    from cdnajit.runtime.launch import compile_kernel
    tiles = 6
    x = np.random.default_rng(3).standard_normal((1, tiles * TILE)).astype(np.float32)
    heads = np.zeros(x.shape, bool)
    heads[0, [TILE + 5, 3 * TILE + 700, 3 * TILE + 2000]] = True    # tiles 1 and 3 hold heads
    plan = (lambda a, h: segmented_single_pass_scan(a, h, "sum", False)) if segmented else \
        (lambda a, h: single_pass_scan(a, "sum", False))
    graph = cj.make_graph(plan)(x, heads)
    (call,) = [op for op in graph.body.ops if op.name == "library_call" and "lookback_scan" in op.attrs["routine"]]
    kernel = emit_kernel(call, "k")
    inputs = [x, heads] if segmented else [x]
    state = np.zeros(1 + 3 * tiles, np.uint64)
    whole = np.zeros_like(x)
    compile_kernel(kernel)(*inputs, state, whole)
    flags = state[1:1 + tiles]
    assert np.all(flags & lookback.STATE_BITS == lookback.PREFIX)
    assert [bool(f & lookback.HEAD) for f in flags] == ([False, True, False, True, False, False] if segmented
                                                         else [False] * tiles)
    state[0] = tiles - 1                                                 # the next ticket: the last tile
    state[2:tiles] = (state[2:tiles] & ~np.uint64(lookback.STATE_BITS)) | np.uint64(lookback.AGGREGATE)
    state[tiles] = lookback.INVALID
    alone = np.zeros_like(x)
    compile_kernel(dataclasses.replace(kernel, grid=(1,)))(*inputs, state, alone)
    assert same_bits(alone[:, -TILE:], whole[:, -TILE:])
    assert same_bits(whole, prim_routines.lookback_reference(x, "sum", False, 256, heads if segmented else None))


def test_long_segmented_scans_are_single_pass():
    import cdnajit.ops as ops
    compiled = cj.jit(lambda a, h: ops.segmented_scan(a, h)).lower(np.ones(2 * TILE + 1, np.float32),
                                                                   np.ones(2 * TILE + 1, bool)).compile()
    optimized = compiled.as_text("optimized")
    assert 'routine = "segmented_lookback_scan"' in optimized and 'routine = "segmented_run_totals"' not in optimized
    assert "single-pass inclusive segmented (head flags, joined as pairs) sum scan" in compiled.report()


def test_segmented_scan_bad_input():
    import cdnajit.ops as ops
    with pytest.raises(cj.TracingValueError, match=r"heads of shape \(2,\) must have x's shape \(3,\)"):
        ops.segmented_scan(np.ones(3), np.ones(2, bool))
    with pytest.raises(cj.TracingValueError, match="reducer must be one of"):
        ops.segmented_scan(np.ones(3), np.ones(3, bool), reducer="mean")
    with pytest.raises(NotImplementedError, match="segmented_scan of c64 data"):
        ops.segmented_scan(np.ones(3, np.complex64), np.ones(3, bool))


@pytest.mark.parametrize("dtype, n, m, side, method", [
    ("float32", 3000, 9000, "left", "sort"),
    pytest.param("float64", 4096, 1 << 16, "right", "scan", marks=pytest.mark.slow),   # the heuristic's choice
    pytest.param("int8", 70000, 300000, "right", "sort", marks=pytest.mark.slow),        # across workgroups
    pytest.param("uint64", 5, 0, "left", "sort", marks=pytest.mark.slow),
    pytest.param("float16", 0, 7, "right", "sort", marks=pytest.mark.slow)])
def test_searchsorted_by_merge_path(dtype, n, m, side, method):
    """searchsorted of many queries (or method='sort'): the queries sorted, prim.merge_search (a
    merge path, diagonals of 4096 steps per work-item, storing each index at its query's position);
    exact against numpy's searchsorted (NaNs last, -0.0 equal to 0.0), duplicates in both arrays."""
    rng = np.random.default_rng(8)
    kind = np.dtype(dtype).kind
    draw = (lambda k: rng.integers(0, 50, k)) if kind == "u" else (lambda k: rng.integers(-60, 60, k))
    a, v = np.sort(draw(n).astype(dtype)), draw(m).astype(dtype)
    if kind == "f" and n and m:
        a[:3], v[:5], v[5:8] = np.nan, np.nan, -0.0
        a = np.sort(a)
    f = lambda a, v: cnp.searchsorted(a, v, side=side, method=method)
    compiled = cj.jit(f).lower(a, v).compile()
    assert 'routine = "merge_search"' in compiled.as_text("optimized")
    got = compiled(a, v)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.searchsorted(a, v, side=side))
    np.testing.assert_array_equal(cj.jit(f, backend="interpret")(a, v), got)
