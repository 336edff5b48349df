"""libs/fft: plans, the optimized IR's calls and the kernels' accuracy against numpy's pocketfft.

Error model (every accuracy assertion): a Stockham FFT of length N makes about log2(N) passes, each
adding a few roundings of the part dtype's eps relative to the data's L2 norm, and the twiddles are
within an ulp; Bluestein adds the error of three FFTs of its length M < 4N and the chirp's products.
So the relative L2 error to pocketfft in float64 is at most ERROR_FACTOR x eps x log2(max(N, 2)),
with N the plan's longest transform (M for Bluestein): the reference's own error is far below it
in float64, and an f32 transform is compared with the float64 answer of its (f32) input.
"""
import math
import re

import numpy as np
import pytest

import cdnajit as cj
from cdnajit import lax
from cdnajit.codegen import amdgpu
from cdnajit.ir.core import walk
from cdnajit.ir.ops.library import COMMON_ATTRS, LIBRARIES
from cdnajit.ir.targets import get_target
from cdnajit.ir.types import NUMPY_DTYPES
from cdnajit.libs.fft import kernels as fft_kernels
from cdnajit.libs.fft import plan as fft_plan
from cdnajit.libs.fft.butterfly import RADICES
from cdnajit.libs.fft.routines import ROUTINES
from cdnajit.passes.manager import DEFAULT_PIPELINE, run_pipeline
from cdnajit.passes.rewrite import build_op
from cdnajit.runtime.launch import compile_kernel

ERROR_FACTOR = 2.0
EPS = {np.complex64: np.finfo(np.float32).eps, np.complex128: np.finfo(np.float64).eps}


def rng_complex(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def relative_error(got, want) -> float:
    got, want = np.asarray(got).astype(np.complex128), np.asarray(want)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), np.finfo(np.float64).tiny))


def bound(length: int, dtype, part: str) -> float:
    plan = fft_plan.plan_for(length, part)
    longest = plan.inner.length if plan.kind == "bluestein" else length
    return ERROR_FACTOR * EPS[dtype] * math.log2(max(longest, 2))


def check_fft(length: int, dtype=np.complex128, batch=3, inverse=False):
    x = rng_complex((batch, length), dtype, seed=length)
    kind = "IFFT" if inverse else "FFT"
    got = cj.jit(lambda v: lax.fft(v, kind, (length,)))(x)
    want = (np.fft.ifft if inverse else np.fft.fft)(x.astype(np.complex128), axis=-1)
    part = "f32" if dtype == np.complex64 else "f64"
    assert np.asarray(got).dtype == dtype
    assert relative_error(got, want) <= bound(length, dtype, part), (length, relative_error(got, want))


# ---- plans -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("length,part,kind,name", [
    (1, "f64", "identity", "identity_len1"),
    (4096, "f32", "stockham", "stockham_len4096"),
    (4096, "f64", "two_pass", "two_pass_len4096"),      # c128 keeps 2048 in LDS
    (2 ** 20, "f32", "two_pass", "two_pass_len1048576"),
    (10007, "f64", "bluestein", "bluestein_len10007"),
    (17, "f32", "bluestein", "bluestein_len17"),
    (2 ** 25, "f32", "three_pass", "three_pass_len33554432"),   # 8192 x 4096
    (2 ** 31, "f32", None, None),                      # i32 twiddle exponents
    (2097169, "f64", "bluestein", "bluestein_len2097169"),   # through a three-pass M = 45 x 48 x 1944
    (2 ** 31 - 1, "f64", None, None),                  # a prime whose Bluestein M would pass 2^31
])
def test_plans_by_length(length, part, kind, name):
    plan = fft_plan.plan_for(length, part)
    assert (plan and plan.kind) == kind and (plan and plan.name) == name
    if plan is not None:
        assert fft_plan.plan_for(length, part) is plan             # the plan cache
        assert all(math.prod(node.radices) == node.length and set(node.radices) <= set(RADICES)
                   for node in plan.nodes)


def test_node_names_and_radices():
    assert fft_plan.Node(4096, (16, 16, 16)).name == "stockham_len4096_radix[16,16,16]"
    assert fft_plan.radices_of(1000) == (10, 10, 10) and fft_plan.radices_of(2 * 3 * 5 * 7 * 11 * 13) is not None
    assert fft_plan.radices_of(17) is None


def test_the_optimized_ir_names_the_plan_nodes():
    x = rng_complex((2, 10007), np.complex128)
    text = str(run_pipeline(cj.make_graph(lambda v: lax.fft(v, "FFT", (10007,)))(x), DEFAULT_PIPELINE).module)
    assert 'solution = "bluestein_len10007_chirp"' in text
    assert 'solution = "stockham_len140_radix[10,7,2]_lanes8"' in text
    assert 'solution = "stockham_len144_radix[16,3,3]_lanes4"' in text
    assert "= fft(" not in text and "pointwise" not in text     # Bluestein's products fused into its passes


def library_calls(function, x) -> list[str]:
    """The fft library's calls of `function` on x in the optimized IR, in order, without the twiddle
    tables: a stockham call as its kernel, "per_group" (butterfly-major) or "lanes16" (8, 4)."""
    def kernel(op) -> str:
        variant = op.attrs["solution"].split("]_")[-1]
        return variant.rstrip("0123456789") if variant.startswith("per_group") else variant

    optimized = run_pipeline(cj.make_graph(function)(x), DEFAULT_PIPELINE).module
    return [kernel(op) if op.attrs["routine"] == "stockham" else op.attrs["routine"]
            for op in walk(optimized.body) if op.name == "library_call" and op.attrs["routine"] != "twiddles"]


BUTTERFLY_MAJOR = "per_group"
# (plan kind, transform, its lengths, input shape and dtype, 1 KiB LDS, the calls): every kind of plan
# node and edge, each forced by its length (the accuracy tests run them all)
PLAN_KINDS = [
    ("identity", "FFT", (1,), (3, 1), np.complex128, False, []),
    ("stockham", "FFT", (96,), (3, 96), np.complex128, False, [BUTTERFLY_MAJOR]),
    ("two_pass", "FFT", (4096,), (2, 4096), np.complex128, False, ["lanes16", "lanes16"]),
    ("three_pass", "FFT", (8192,), (2, 8192), np.complex64, True, ["lanes8", "lanes4", BUTTERFLY_MAJOR]),
    ("bluestein, stockham M", "FFT", (17,), (2, 17), np.complex128, False, ["chirp"] + [BUTTERFLY_MAJOR] * 3),
    ("bluestein, two_pass M in three kernels", "FFT", (1109,), (2, 1109), np.complex128, False,
     ["chirp", "lanes8", BUTTERFLY_MAJOR, "lanes8", "lanes8", "lanes8"]),
    ("bluestein, two_pass M in four kernels", "FFT", (37,), (2, 37), np.complex128, True,
     ["chirp"] + [BUTTERFLY_MAJOR] * 6),
    ("bluestein, three_pass M", "FFT", (521,), (2, 521), np.complex128, True,
     ["chirp"] + [BUTTERFLY_MAJOR] * 3 + (["pointwise"] + [BUTTERFLY_MAJOR] * 3) * 2 + ["pointwise"]),
    ("rfft, even", "RFFT", (16,), (2, 16), np.float64, False, [BUTTERFLY_MAJOR, "rfft_post"]),
    ("rfft, odd", "RFFT", (15,), (2, 15), np.float64, False, [BUTTERFLY_MAJOR, "pointwise"]),
    ("irfft, even", "IRFFT", (16,), (2, 9), np.complex128, False, ["irfft_pre", BUTTERFLY_MAJOR]),
    ("irfft, odd", "IRFFT", (15,), (2, 8), np.complex128, False, ["pointwise", BUTTERFLY_MAJOR]),
    ("n-D, trailing axes rotated", "FFT", (8, 8), (2, 8, 8), np.complex128, False, ["lanes8", "lanes8"]),
]


@pytest.mark.parametrize("kind,transform,lengths,shape,dtype,small,calls", PLAN_KINDS, ids=[c[0] for c in PLAN_KINDS])
def test_every_plan_kind_forced(request, kind, transform, lengths, shape, dtype, small, calls):
    if small:
        request.getfixturevalue("small_lds")
    if transform == "FFT" and len(lengths) == 1:
        plan = fft_plan.plan_for(lengths[0], "f32" if dtype == np.complex64 else "f64")
        assert kind.split(",")[0] == plan.kind and (plan.kind != "bluestein" or plan.inner.kind in kind), plan
    assert library_calls(lambda v: lax.fft(v, transform, lengths), np.ones(shape, dtype)) == calls


def check_report(function, x, solutions):
    """The kernel report names the plan's nodes, and no gfx942 kernel spills."""
    compiled = cj.jit(function).lower(x).compile()
    report = compiled.report()
    assert all(solution in report for solution in solutions), report
    for kernel in compiled.kernels:
        assert kernel.vgpr_spills == 0 and kernel.sgpr_spills == 0 and kernel.scratch_bytes == 0, kernel
    return compiled


def test_the_report_names_the_plan_nodes_without_spills():
    x = rng_complex((2, 17), np.complex64)
    compiled = check_report(lambda v: lax.fft(v, "FFT", (17,)), x, ["bluestein_len17_chirp", "stockham_len35_radix[7,5]"])
    assert relative_error(compiled(x), np.fft.fft(x.astype(np.complex128))) <= bound(17, np.complex64, "f32")


@pytest.mark.slow
@pytest.mark.parametrize("length,dtype", [(4096, np.complex64), (2048 * 13, np.complex128), (11 * 13 * 7, np.complex128),
                                          (10007, np.complex128), (128, np.complex128), (512, np.complex128),
                                          (2 ** 20, np.complex64)])
def test_large_nodes_do_not_spill(length, dtype):
    x = rng_complex((2, length), dtype)
    part = "f32" if dtype == np.complex64 else "f64"
    check_report(lambda v: lax.fft(v, "FFT", (length,)), x, [node.name for node in fft_plan.plan_for(length, part).nodes])


@pytest.mark.slow
def test_fused_bluestein_and_three_pass_kernels_do_not_spill(small_lds):
    """Every node kind's variants on gfx942: Bluestein's padded first and cropped last passes through a
    two-pass M, the three-pass plan's twiddled transposed middle pass."""
    for length, dtype in ((37, np.complex128), (8192, np.complex64)):
        part = "f32" if dtype == np.complex64 else "f64"
        plan = fft_plan.plan_for(length, part)
        assert plan.kind == ("bluestein" if length == 37 else "three_pass")
        check_report(lambda v: lax.fft(v, "FFT", (length,)), rng_complex((2, length), dtype),
                     [node.name for node in plan.nodes])


def stockham_selections(compiled) -> list[str]:
    return [kernel.selection for kernel in compiled.kernels if kernel.solution.startswith("stockham")]


# (shape, transform, dtype, lanes of each stockham call, the last first; 0: the butterfly-major kernel)
LANES_CASES = [
    ((8, 16, 24), "fftn", np.complex64, (16, 16, 16)),       # rows written transposed, M = 128, 192, 384
    ((3, 40, 8), "ifft2", np.complex128, (8, 8)),            # 16 x 40 f64 would not fit in LDS; M = 120, 24
    ((24, 16, 16), "fft01", np.complex64, (8, 16)),          # axes moved last: M = 24 (8 lanes), 256
    ((8, 16, 30), "rfftn", np.float32, (0, 16, 16)),         # the real last axis as rows; then columns
    ((2, 4096), "fft", np.complex128, (16, 16)),             # two_pass 64 x 64: twiddled columns, rows transposed
    ((2, 16384), "rfft", np.float32, (16, 16)),              # two_pass on real pairs, 64 x 128
    ((2, 5, 12), "ifftn", np.complex64, (0, 8, 4)),          # M = 10, 24, 60: none, 8 and 4 lanes
    # Bluestein through 140 x 144: the chirp's spectrum (its rows in place), then the padded first pass,
    # the rows convolved in place (M = 140: 4 lanes) and the inverse's cropped columns
    pytest.param((2, 10007), "fft", np.complex128, (8, 0, 8, 4, 8), marks=pytest.mark.slow),
    ((2, 37, 16), "fft12", np.complex128, (0, 0, 16, 16)),   # Bluestein through one kernel, C = 16 after it
    ((64, 128), "fft", np.complex64, (0,)),                  # rows in place
]
TRANSFORMS = {
    "fftn": (lambda v: cj.numpy.fft.fftn(v), np.fft.fftn),
    "ifftn": (lambda v: cj.numpy.fft.ifftn(v), np.fft.ifftn),
    "ifft2": (lambda v: cj.numpy.fft.ifft2(v), np.fft.ifft2),
    "fft01": (lambda v: cj.numpy.fft.fftn(v, axes=(0, 1)), lambda v: np.fft.fftn(v, axes=(0, 1))),
    "fft12": (lambda v: cj.numpy.fft.fftn(v, axes=(1, 2)), lambda v: np.fft.fftn(v, axes=(1, 2))),
    "rfftn": (lambda v: cj.numpy.fft.rfftn(v), np.fft.rfftn),
    "fft": (lambda v: cj.numpy.fft.fft(v), np.fft.fft),
    "rfft": (lambda v: cj.numpy.fft.rfft(v), np.fft.rfft),
}


@pytest.mark.parametrize("shape,transform,dtype,lanes", LANES_CASES)
def test_strided_transforms_run_side_by_side(shape, transform, dtype, lanes):
    """Columns and rows written transposed take the lanes kernel when a group of 16 (8, 4) transforms
    is evenly spaced and fits in LDS; the report says which and why. Accuracy as every plan's."""
    rng = np.random.default_rng(3)
    x = rng_complex(shape, dtype) if np.dtype(dtype).kind == "c" else rng.standard_normal(shape).astype(dtype)
    ours, numpy_transform = TRANSFORMS[transform]
    compiled = cj.jit(ours).lower(x).compile()
    selections = stockham_selections(compiled)
    assert [int(s.split(" transforms per workgroup side by side")[0].split("(")[-1]) if "side by side" in s else 0
            for s in selections] == list(lanes), selections
    complex_dtype = np.complex64 if np.dtype(dtype) in (np.float32, np.complex64) else np.complex128
    part = "f32" if complex_dtype == np.complex64 else "f64"
    want = numpy_transform(x.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64))
    longest = shape[-1] // 2 if transform == "rfft" else max(shape)
    assert relative_error(compiled(x), want) <= len(shape) * bound(longest, complex_dtype, part)


def test_lanes_kernels_do_not_spill():
    """The lanes kernels on gfx942: 16 lanes (twiddled columns, a scaled inverse written transposed)
    and 8."""
    for shape, lengths in (((2, 4096), (4096,)), ((3, 40, 8), (40, 8))):
        compiled = check_report(lambda v: lax.fft(v, "IFFT", lengths), rng_complex(shape, np.complex128),
                                ["stockham_len64_radix[16,4]"] if len(lengths) == 1 else ["stockham_len40_radix[10,4]"])
        assert all("side by side" in s for s in stockham_selections(compiled))


def kernels_of(batch, length=96):
    """The fft library's kernels of an IFFT of `length` over `batch` rows, as the pipeline emits them."""
    module = cj.make_graph(lambda v: lax.fft(v, "IFFT", (length,)))(rng_complex((batch, length), np.complex64))
    optimized = run_pipeline(module, DEFAULT_PIPELINE).module
    return [LIBRARIES["fft"].emit(op, "k", get_target()) for op in walk(optimized.body) if op.name == "library_call"]


def test_a_new_batch_compiles_no_kernel():
    """Compiled per plan node and batch class, never per problem: the kernels of batches 3 and 5 have
    one code text; of 27 points, 3 and 5 (8 transforms per workgroup) one, and 20000 (37) another."""
    three, five = kernels_of(3), kernels_of(5)
    assert len(three) == 2 and [k.code_text() for k in three] == [k.code_text() for k in five]
    assert [k.arguments for k in three] != [k.arguments for k in five]
    three, five, many = kernels_of(3, 27), kernels_of(5, 27), kernels_of(20000, 27)
    assert three[1].code_text() == five[1].code_text() != many[1].code_text()


@pytest.mark.parametrize("transforms,radices,target,per_group", [
    (65536, (16, 4), "gfx942", 16),     # many short transforms: 16 a workgroup still make 4096 workgroups
    (20000, (16, 6), "gfx942", 10),     # 1024 // 96 a workgroup, 2000 workgroups
    (10000, (3, 3, 3), "gfx942", 32),   # 37 of 27 would make 271 workgroups of the 304 CUs: 32 make 313
    (2500, (10, 10), "gfx942", 8),      # 250 workgroups of 10 of 100; 8 make 313
    (2500, (10, 10), "gfx90a", 10),     # ... gfx90a has 220 CUs
    (1000, (3, 3, 3), "gfx942", 8),     # a batch below the CUs: 8 of 27 keep a wave of radix-3 butterflies
    (3, (3, 3, 3), "gfx942", 8),
    (1000, (16, 4), "gfx942", 16),      # a radix-16 pass of 64: 16 transforms make one wave of it
    (10, (16,), "gfx942", 64),          # one butterfly per transform: 64 make a wave
    (500, (16, 16, 2), "gfx942", 2),    # 512: 2 a workgroup, whatever the batch
    (512, (16, 16, 16), "gfx942", 1),   # one long transform a workgroup, whatever the batch
    (0, (16,), "gfx942", 64),
])
def test_transforms_per_workgroup_by_batch(transforms, radices, target, per_group):
    assert fft_kernels.per_group_by_batch(transforms, radices, get_target(target)) == per_group


def stockham_call(function, x):
    """The optimized module's first stockham call of `function` on x, with its operands' arrays."""
    optimized = run_pipeline(cj.make_graph(function)(x), DEFAULT_PIPELINE).module
    op = next(op for op in walk(optimized.body) if op.name == "library_call" and op.attrs["routine"] == "stockham")
    twiddles = op.operands[1].producer
    table = ROUTINES["twiddles"].reference(**{k: v for k, v in twiddles.attrs.items() if k not in COMMON_ATTRS})
    return op, [rng_complex(op.operands[0].type.shape, x.dtype, seed=5), table]


def run_variant(op, arrays, solution):
    """The stockham call's kernel of the named `solution` run on `arrays`, and the routine's reference."""
    attrs = {**op.attrs, "solution": solution}
    named = build_op("library_call", op.operands, attrs)
    kernel = LIBRARIES["fft"].emit(named, "forced", get_target())
    result = np.empty(named.result.type.shape, NUMPY_DTYPES[named.result.type.dtype])
    part = arrays[1].dtype   # the kernel's buffers hold the parts of complex values
    compile_kernel(kernel)(*(a.view(part) for a in arrays), result.view(part))
    reference = ROUTINES["stockham"].reference(*arrays, **{k: v for k, v in attrs.items() if k not in COMMON_ATTRS})
    return kernel, LIBRARIES["fft"].explain(named, get_target()), result, reference


@pytest.mark.parametrize("function,shape,variants", [
    # rows in place, 5 transforms of 96: one, three and ten (the most) a workgroup
    (lambda v: lax.fft(v, "FFT", (96,)), (5, 96), ("per_group1", "per_group3", "per_group10")),
    # rows of 24 written transposed, M = 128: 16, 8 and 4 lanes, and the butterfly-major kernel
    (lambda v: cj.numpy.fft.fftn(v), (8, 16, 24), ("lanes16", "lanes8", "lanes4", "per_group2")),
])
def test_each_stockham_variant_forced_by_its_solution(function, shape, variants):
    """A call whose solution names a variant runs it: each gives the routine's reference, and the
    report says it was named."""
    op, arrays = stockham_call(function, rng_complex(shape, np.complex64))
    node = fft_plan.Node(math.prod(op.attrs["radices"]), tuple(op.attrs["radices"])).name
    for variant in variants:
        kernel, (solution, reason), got, want = run_variant(op, arrays, f"{node}_{variant}")
        count = int(variant.split("lanes")[-1].split("per_group")[-1])
        assert solution == f"{node}_{variant}"
        assert kernel.lds[0].count == count * math.prod(op.attrs["radices"])   # the workgroup's transforms in LDS
        assert (f"{count} transforms per workgroup side by side" in reason) == variant.startswith("lanes"), reason
        assert ("named by the call's solution" in reason) == (solution != op.attrs["solution"]), reason
        assert relative_error(got, want) <= bound(math.prod(op.attrs["radices"]), np.complex64, "f32"), variant


@pytest.mark.slow
def test_batch_variants_do_not_spill():
    """The butterfly-major kernel's batch classes on gfx942: one, two and sixteen transforms of 64 per
    workgroup (64 and 256 work-items), in f32 and f64."""
    for dtype in (np.complex64, np.complex128):
        op, _ = stockham_call(lambda v: lax.fft(v, "FFT", (64,)), rng_complex((4, 64), dtype))
        for count in (1, 2, 16):
            solution = f"stockham_len64_radix[16,4]_per_group{count}"
            named = build_op("library_call", op.operands, {**op.attrs, "solution": solution})
            resources = amdgpu.compile_kernel(LIBRARIES["fft"].emit(named, "forced", get_target())).resources
            assert resources.vgpr_spill_count == resources.sgpr_spill_count == resources.scratch_bytes == 0, resources


@pytest.mark.parametrize("function,shape,variant,message", [
    (lambda v: lax.fft(v, "FFT", (96,)), (5, 96), "lanes16", "spread (0)"),          # rows in place
    (lambda v: lax.fft(v, "FFT", (96,)), (5, 96), "per_group43", "1 to 42 transforms of 96 per workgroup fit"),
    (lambda v: cj.numpy.fft.fftn(v), (8, 16, 24), "lanes32", "lanes run (16, 8, 4)"),
    (lambda v: lax.fft(v, "FFT", (96,)), (5, 96), "per_group", "is not a variant of"),
])
def test_a_named_solution_the_call_cannot_run(function, shape, variant, message):
    op, arrays = stockham_call(function, rng_complex(shape, np.complex64))
    node = fft_plan.Node(math.prod(op.attrs["radices"]), tuple(op.attrs["radices"])).name
    named = build_op("library_call", op.operands, {**op.attrs, "solution": f"{node}_{variant}"})
    with pytest.raises(ValueError, match=re.escape(message)):
        LIBRARIES["fft"].emit(named, "forced", get_target())


def test_the_report_says_the_batch_class():
    """A short batch spreads its transforms (8 of 27 a workgroup keep a wave of butterflies in each
    pass), a long one packs them (about 1024 elements)."""
    for batch, variant, reason in ((3, "per_group8", "a batch of 3: 8 per workgroup, not 37"),
                                   (20000, "per_group37", "many transforms: 37 per")):
        compiled = cj.jit(lambda v: lax.fft(v, "FFT", (27,))).lower(rng_complex((batch, 27), np.complex64)).compile()
        (kernel,) = [k for k in compiled.kernels if k.solution.startswith("stockham")]
        assert kernel.solution == f"stockham_len27_radix[3,3,3]_{variant}" and reason in kernel.selection, kernel.selection


# (shape, kind, lengths, dtype): primes whose Bluestein M has a two-pass plan with lanes for both passes
THREE_KERNEL_CASES = [
    ((2, 1109), "FFT", (1109,), np.complex128),             # M = 2240 = 40 x 56, 8 lanes each
    ((2, 1031, 4), "FFT", (1031, 4), np.complex128),        # M = 2100 = 42 x 50, lanes over C = 4 after the axis
    pytest.param((2, 1109), "IFFT", (1109,), np.complex128, marks=pytest.mark.slow),
    pytest.param((3, 2111), "FFT", (2111,), np.complex64, marks=pytest.mark.slow),   # M = 4320 = 60 x 72
    pytest.param((2, 1109), "RFFT", (1109,), np.float64, marks=pytest.mark.slow),    # a real input, padded
    pytest.param((2, 555), "IRFFT", (1109,), np.complex128, marks=pytest.mark.slow),  # a real output, cropped
]


@pytest.mark.parametrize("shape,kind,lengths,dtype", THREE_KERNEL_CASES)
def test_bluestein_in_three_kernels(shape, kind, lengths, dtype):
    """Bluestein through a two-pass M whose passes run side by side takes three kernels over the batch:
    the padded columns, the rows convolved in place with the spectrum (kept in the row pass's order),
    the inverse columns cropped to N positions of M. Accuracy as every plan's."""
    rng = np.random.default_rng(11)
    x = rng_complex(shape, dtype) if np.dtype(dtype).kind == "c" else rng.standard_normal(shape).astype(dtype)
    compiled = cj.jit(lambda v: lax.fft(v, kind, lengths)).lower(x).compile()
    n = lengths[-1] if len(lengths) == 1 else lengths[0]
    complex_dtype = np.complex64 if np.dtype(dtype) in (np.float32, np.complex64) else np.complex128
    part = "f32" if complex_dtype == np.complex64 else "f64"
    size = fft_plan.plan_for(n, part).inner.length
    selections = stockham_selections(compiled)
    assert sum("times a spectrum" in s for s in selections) == 1, selections
    assert sum(f"positions of {size}" in s for s in selections) == 1, selections
    assert len(selections) == 5 + len(lengths) - 1, selections   # two for the spectrum, three over the batch
    reference = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn, "IRFFT": np.fft.irfftn}[kind]
    axes = tuple(range(len(shape) - len(lengths), len(shape)))
    want = reference(x.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64), s=lengths, axes=axes)
    assert relative_error(compiled(x), want) <= len(lengths) * bound(n, complex_dtype, part)


@pytest.mark.slow
def test_three_kernel_bluestein_does_not_spill():
    """The convolution (two sets of passes in one kernel) and the cropped columns on gfx942, in f64."""
    plan = fft_plan.plan_for(1109, "f64")
    check_report(lambda v: lax.fft(v, "FFT", (1109,)), rng_complex((2, 1109), np.complex128),
                 ["bluestein_len1109_chirp"] + [node.name for node in plan.nodes])


def test_three_kernel_bluestein_interpreted():
    """The convolution's and the cropped columns' references (routines.py) give the plan's result."""
    x = rng_complex((2, 1109), np.complex128)
    optimized = run_pipeline(cj.make_graph(lambda v: lax.fft(v, "FFT", (1109,)))(x), DEFAULT_PIPELINE).module
    assert sum(op.attrs.get("spectrum") == "plain" for op in walk(optimized.body) if op.name == "library_call") == 1
    (got,) = cj.ir.interpret(optimized, x)
    assert relative_error(got, np.fft.fft(x)) <= 1e-14


@pytest.fixture
def small_lds(monkeypatch):
    """A 1 KiB LDS budget: lengths above 64 (c64) or 32 (c128) need two passes, above 4096 (c64) or
    1024 (c128) three, so that the multi-pass plans of every axis and kind run at small sizes."""
    monkeypatch.setattr(fft_plan, "LDS_BYTES", 1024)
    fft_plan.plan_for.cache_clear()
    yield
    fft_plan.plan_for.cache_clear()


@pytest.mark.parametrize("shape,lengths,kind,dtype", [
    ((3, 96), (96,), "FFT", np.complex64),
    ((2, 80, 3), (80, 3), "IFFT", np.complex128),        # two passes on an axis with C = 3 after it
    ((4, 256), (256,), "RFFT", np.float64),              # the N / 2 = 128 pairs in two passes
    ((4, 129), (256,), "IRFFT", np.complex64),
    ((2, 77), (77,), "RFFT", np.float32),                # odd: the full plan of 77 = 7 x 11
    ((2, 39), (77,), "IRFFT", np.complex128),
    ((2, 37), (37,), "FFT", np.complex128),              # Bluestein through a two-pass M = 75
    ((2, 37, 3), (37, 3), "IFFT", np.complex64),         # ... on an axis with C = 3 after it
    ((2, 37), (37,), "RFFT", np.float32),                # ... with a real input
    ((2, 19), (37,), "IRFFT", np.complex128),            # ... with a real output
    ((2, 8192), (8192,), "FFT", np.complex64),           # three passes, 128 (8 x 16) x 64
    ((2, 3072, 3), (3072, 3), "IFFT", np.complex128),    # three passes on an axis with C = 3 after it
    pytest.param((2, 16384), (16384,), "RFFT", np.float32, marks=pytest.mark.slow),   # 8192 pairs, three passes
])
def test_multi_pass_plans(small_lds, shape, lengths, kind, dtype):
    rng = np.random.default_rng(7)
    x = rng_complex(shape, dtype) if np.dtype(dtype).kind == "c" else rng.standard_normal(shape).astype(dtype)
    compiled = cj.jit(lambda v: lax.fft(v, kind, lengths)).lower(x).compile()
    assert "twiddles_len" in compiled.as_text("optimized") and "_large" in compiled.as_text("optimized")
    reference = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn, "IRFFT": np.fft.irfftn}[kind]
    axes = tuple(range(len(shape) - len(lengths), len(shape)))
    want = reference(x.astype(np.complex128 if kind != "RFFT" else np.float64), s=lengths, axes=axes)
    complex_dtype = np.complex64 if np.dtype(dtype) in (np.float32, np.complex64) else np.complex128
    assert relative_error(compiled(x), want) <= ERROR_FACTOR * EPS[complex_dtype] * math.log2(4 * max(lengths)) * 2


@pytest.mark.parametrize("length,dtype,inverse", [(521, np.complex128, False),
                                                  pytest.param(521, np.complex128, True, marks=pytest.mark.slow),
                                                  pytest.param(2053, np.complex64, False, marks=pytest.mark.slow)])
def test_three_pass_bluestein(small_lds, length, dtype, inverse):
    """A prime whose Bluestein M is above LDS^2 (1050 > 32^2 in c128, 4116 > 64^2 in c64): M's three-pass
    plan, the chirp's products, padding and crop as pointwise kernels around it."""
    part = "f32" if dtype == np.complex64 else "f64"
    plan = fft_plan.plan_for(length, part)
    assert plan.kind == "bluestein" and plan.inner.kind == "three_pass"
    check_fft(length, dtype, batch=2, inverse=inverse)


@pytest.mark.slow
def test_three_pass_bluestein_at_full_lds():
    assert fft_plan.plan_for(2097169, "f64").inner.kind == "three_pass"
    check_fft(2097169, np.complex128, batch=1)


# ---- accuracy ------------------------------------------------------------------------------------

# Every generated radix, a Bluestein length (17, 97) and large single-kernel plans; the others under test-all.
SAMPLE_LENGTHS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 97, 100, 1000, 4096,
                  *(pytest.param(n, marks=pytest.mark.slow) for n in (31, 64, 143, 243, 256, 625, 1024, 2048))]


@pytest.mark.parametrize("length", SAMPLE_LENGTHS)
def test_c128_lengths(length):
    check_fft(length)


@pytest.mark.slow
@pytest.mark.parametrize("length", range(1, 4097))
def test_every_length_to_4096(length):
    check_fft(length, batch=1)


@pytest.mark.parametrize("length,inverse", [(8, True), (60, False), (1331, True), (4096, False), (8192, True),
                                            (101, False)])
def test_c64_lengths(length, inverse):
    check_fft(length, np.complex64, inverse=inverse)


@pytest.mark.slow
@pytest.mark.parametrize("length", [*range(1, 257), *range(257, 4097, 61), *(2 ** e for e in range(9, 13))])
def test_c64_length_classes(length):
    """f32 in float32's eps over the README accuracy table's classes to 4096 (benchmarks/fft_accuracy.py):
    every length to 256, every 61st to 4096, the powers of two; the longer classes are in
    test_powers_of_two and test_primes_and_mixed_radices."""
    check_fft(length, np.complex64, batch=1)


@pytest.mark.slow
@pytest.mark.parametrize("exponent", range(13, 23))
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_powers_of_two(exponent, dtype):
    check_fft(2 ** exponent, dtype, batch=1)


@pytest.mark.slow
@pytest.mark.parametrize("length", [4099, 7919, 10007, 2 * 3 * 5 * 7 * 11 * 13, 17 * 19, 2 ** 12 * 3])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_primes_and_mixed_radices(length, dtype):
    check_fft(length, dtype, batch=2)


@pytest.mark.parametrize("length", [1, 2, 3, 8, 15, 34, 1000,
                                    *(pytest.param(n, marks=pytest.mark.slow) for n in (16, 100, 243))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_real_round_trips(length, dtype):
    """rfft against pocketfft, and irfft(rfft(x)) = x (even N: the N / 2 plan with rfft_post /
    irfft_pre; odd N: the real and hermitian edges of the N plan)."""
    x = np.random.default_rng(length).standard_normal((2, length)).astype(dtype)
    spectrum = cj.jit(lambda v: lax.fft(v, "RFFT", (length,)))(x)
    back = cj.jit(lambda v: lax.fft(v, "IRFFT", (length,)))(spectrum)
    complex_dtype = np.complex64 if dtype == np.float32 else np.complex128
    tolerance = 2 * bound(max(length // 2, 1), complex_dtype, "f32" if dtype == np.float32 else "f64")
    assert np.asarray(spectrum).dtype == complex_dtype and np.asarray(back).dtype == dtype
    assert relative_error(spectrum, np.fft.rfft(x.astype(np.float64))) <= tolerance
    assert relative_error(back, x.astype(np.float64)) <= 2 * tolerance


@pytest.mark.parametrize("length", [6, 9])
def test_irfft_ignores_the_imaginary_parts_numpy_ignores(length):
    """numpy's c2r reads only the real parts of the DC term and (even N) the Nyquist term."""
    half = np.fft.rfft(np.random.default_rng(0).standard_normal((2, length)))
    half[:, 0] += 3j
    half[:, -1] += 5j
    got = cj.jit(lambda v: lax.fft(v, "IRFFT", (length,)))(half)
    assert relative_error(got, np.fft.irfft(half, length)) <= 4 * bound(length, np.complex128, "f64")


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_round_trip_3d(dtype):
    x = rng_complex((2, 12, 10, 17), dtype)
    fn = cj.jit(lambda v: lax.fft(lax.fft(v, "FFT", (12, 10, 17)), "IFFT", (12, 10, 17)))
    assert relative_error(fn(x), x) <= 4 * bound(17, dtype, "f32" if dtype == np.complex64 else "f64")


def test_the_interpreter_runs_the_matched_module():
    """The routines' references (libs/fft/routines.py) give the plan's result when interpreted."""
    x = rng_complex((2, 6, 37), np.complex128)
    module = cj.make_graph(lambda v: lax.fft(v, "FFT", (6, 37)))(x)
    optimized = run_pipeline(module, DEFAULT_PIPELINE).module
    (got,) = cj.ir.interpret(optimized, x)
    assert relative_error(got, np.fft.fftn(x, axes=(1, 2))) <= 1e-14


def test_empty_batches():
    for x in (np.zeros((0, 8), np.complex64), np.zeros((3, 0, 5), np.complex128)):
        got = cj.jit(lambda v: lax.fft(v, "FFT", (x.shape[-1],)))(x)
        assert np.asarray(got).shape == x.shape


def test_axes_pass_views_not_copies():
    """Between the passes of an n-D transform, values are reshaped views: no copy kernel. The trailing
    axes' passes each read rows and write transposed (matcher.rotated_axes)."""
    module = cj.make_graph(lambda v: lax.fft(v, "FFT", (8, 8, 8)))(rng_complex((8, 8, 8), np.complex64))
    ops = run_pipeline(module, DEFAULT_PIPELINE).module.body.ops
    names = [op.name for op in ops]
    assert "fusion" not in names and names.count("library_call") == 4, names
    passes = [op for op in ops if op.name == "library_call" and op.attrs["routine"] == "stockham"]
    assert all(op.attrs["transpose"] and op.operands[0].type.shape[-1] == 1 for op in passes)
