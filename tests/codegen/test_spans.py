"""Spans (ir/kernel.py: ForSpan): a workgroup's consecutive elements, `per_item` per work-item, in the
backend's assignment. The host runs them k outermost (consecutive work-items on consecutive
elements); AMDGPU gives a work-item consecutive elements and turns its accesses at the span's
variable into 16-byte vector loads and stores (codegen/gpu_kernel.py). Results are exact: the
kernels copy, scale by 2 and add 1 (exact in every float dtype for these values), so the host is
compared bit for bit with numpy, over sizes around the workgroup and span boundaries and inputs
that start off any alignment (numpy views one element in). tests/gpu runs the GPU assignment's
PTX on an NVIDIA GPU."""
import dataclasses
import re

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.codegen import amdgpu
from cdnajit.codegen.host import compile_object
from cdnajit.ir import kernel as K
from cdnajit.ir.types import NUMPY_DTYPES
from cdnajit.passes import run_pipeline
from cdnajit.runtime.executable import emit_kernels
from cdnajit.runtime.launch import CompiledKernel
from cdnajit.runtime.perf_model import load_bytes_per_lane
from cdnajit.runtime.roofline import count
from cdnajit.survey import load_widths

N = K.ScalarParam("n", "i32")
WIDTH = 64


def span_kernel(per_item: int, dtype: str = "f32") -> K.Kernel:
    """y = x * 2 + 1 over n elements in spans of per_item x 64, the last moved back to end at n
    (n >= per_item x 64) as lowering/emit_fusion.py lays out loop fusions."""
    x = K.GlobalBuffer("x", dtype, N, readonly=True)
    y = K.GlobalBuffer("y", dtype, N)
    element = K.Var("element", "i32")
    span = per_item * WIDTH
    start = K.minimum(K.workgroup_id(0) * span, N - span)
    body = [K.ForSpan(element, start, per_item, [K.Store(y, element, x[element] * 2.0 + 1.0)])]
    return K.Kernel("span", params=[x, y, N], grid=(K.ceil_div(N, span),), workgroup_size=(WIDTH,), body=body)


@pytest.mark.parametrize("per_item", [1, 4])
def test_a_span_kernel_runs_every_size_on_the_host(per_item):
    kernel = span_kernel(per_item)
    K.verify(kernel)
    compiled = CompiledKernel(kernel, compile_object(kernel))
    rng = np.random.default_rng(1)
    for n in (per_item * WIDTH, per_item * WIDTH + 1, 1000, 4099):
        x = rng.standard_normal(n + 1).astype(np.float32)[1:]   # an input 4 bytes off its allocation
        y = np.full(n, np.nan, np.float32)
        compiled(x, y, n)
        np.testing.assert_array_equal(y, x * 2 + 1)


def test_the_printer_and_the_verifier():
    kernel = span_kernel(4)
    assert "  for span element: i32 in 4 per work-item from min((workgroup_id(0) * 256), (n - 256)) {" in str(kernel)
    element = K.Var("element", "i32")
    x, y = kernel.params[:2]
    store = K.Store(y, element, x[element])
    cases = [
        ([K.For(K.Var("k", "i32"), 0, 2, 1, [K.ForSpan(element, 0, 4, [store])])], "at the top level"),
        ([K.ForSpan(element, K.workitem_id(0), 4, [store])], "same for every work-item"),
        ([K.ForSpan(element, 0, 0, [store])], "at least 1"),
        ([K.ForSpan(element, 0, 4, [store, K.Barrier()])], "barrier, wave op or prefetch"),
    ]
    for body, message in cases:
        with pytest.raises(cj.VerifyError, match=message):
            K.verify(K.Kernel("k", params=[x, y, N], grid=(4,), workgroup_size=(WIDTH,), body=body))
    with pytest.raises(cj.VerifyError, match="1-D workgroup"):
        K.verify(K.Kernel("k", params=[x, y, N], grid=(4,), workgroup_size=(32, 2), body=[K.ForSpan(element, 0, 4,
                                                                                                    [store])]))


@pytest.mark.parametrize("dtype, per_item", [("f32", 4), ("f16", 8)])
def test_spans_are_sixteen_byte_accesses_on_amdgpu(dtype, per_item):
    kernel = span_kernel(per_item, dtype)
    assembly = amdgpu.assembly(kernel, "gfx942")
    assert load_widths(assembly) == (16, 16) and "global_store_dwordx4" in assembly
    assert "global_store_short" not in assembly and "global_store_dword " not in assembly
    # The model reads them as the GPU issues them: 16 bytes per lane, every segment used.
    counts = count(dataclasses.replace(kernel, arguments=(("n", 1 << 20),)))
    assert load_bytes_per_lane(counts) == 16
    assert all(a.segment_ratio == 1 for a in counts.accesses.values())


def offsets_kernel(per_item: int, dtype: str = "f32") -> K.Kernel:
    """Workgroup g's span of per_item x 64 elements from g x span, at span offsets (SpanOffset):
    every element loaded, then, across a barrier, y = x * 2 + 1 stored at the same offsets, and the
    work-item's offsets' sum at its linear id (which depends on the assignment)."""
    x = K.GlobalBuffer("x", dtype, 4 * per_item * WIDTH, readonly=True)
    y = K.GlobalBuffer("y", dtype, 4 * per_item * WIDTH)
    offsets = K.GlobalBuffer("offsets", "u32", 4 * WIDTH)
    start = K.workgroup_id(0).cast("u32") * (per_item * WIDTH)
    values = [K.Var(f"x{k}", dtype) for k in range(per_item)]
    body = [K.Let(v, x[start + K.span_offset(per_item, k)]) for k, v in enumerate(values)] + [K.Barrier()]
    body += [K.Store(y, start + K.span_offset(per_item, k), v * 2.0 + 1.0) for k, v in enumerate(values)]
    total = sum((K.span_offset(per_item, k) for k in range(1, per_item)), K.span_offset(per_item, 0))
    body.append(K.Store(offsets, K.workgroup_id(0).cast("u32") * WIDTH + K.workitem_id(0).cast("u32"), total))
    return K.Kernel("offsets", params=[x, y, offsets], grid=(4,), workgroup_size=(WIDTH,), body=body)


@pytest.mark.parametrize("dtype, per_item", [("f32", 4), ("f16", 8)])
def test_span_offsets_are_consecutive_per_work_item_on_amdgpu_and_across_work_items_on_the_host(dtype, per_item):
    kernel = offsets_kernel(per_item, dtype)
    K.verify(kernel)
    assert f"x[((u32(workgroup_id(0)) * {per_item * WIDTH}:u32) + span_offset_u32({per_item}, 1))]" in str(kernel)
    x = (np.arange(4 * per_item * WIDTH) % 251).astype(NUMPY_DTYPES[dtype])
    y, offsets = np.zeros_like(x), np.zeros(4 * WIDTH, np.uint32)
    CompiledKernel(kernel, compile_object(kernel))(x, y, offsets)
    np.testing.assert_array_equal(y, x * 2 + 1)
    # The host's work-item i takes offsets i, i + 64, ...: their sum is per_item i + 64 (0 + 1 + ... + per_item - 1).
    lane = np.tile(np.arange(WIDTH), 4)
    np.testing.assert_array_equal(offsets, per_item * lane + WIDTH * per_item * (per_item - 1) // 2)
    # AMDGPU's work-item i takes offsets per_item i .. per_item i + per_item - 1: one 16-byte load and store.
    assembly = amdgpu.assembly(kernel, "gfx942")
    assert {"dwordx4"} == set(re.findall(r"global_load_(\w+)", assembly))
    assert "global_store_dwordx4" in assembly
    counts = count(kernel)
    assert load_bytes_per_lane(counts) == 16
    with pytest.raises(cj.VerifyError, match="0 <= k < per_item"):
        K.verify(dataclasses.replace(kernel, body=[K.Store(kernel.params[2], 0, K.span_offset(4, 4))]))


# ---- loop fusions through jit: odd sizes, offsets, dtypes, in place ------------------------------

SIZES = [0, 1, 7, 63, 65, 255, 257, 1023, 1025, 4099]
DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.uint16, np.int64, np.complex64]


def check_jit(dtype, n, offset):
    x = (np.arange(n + offset) % 97 - 40).astype(dtype)[offset:]
    y = (np.arange(n + offset) % 5).astype(dtype)[offset:]
    got = np.asarray(cj.jit(lambda a, b: a * 2 + b + 1)(x, y))
    np.testing.assert_array_equal(got, x * 2 + y + 1)


@pytest.mark.parametrize("dtype, n, offset", [(np.float32, 1025, 1), (np.float16, 65, 0)])
def test_loop_fusions_over_odd_sizes_and_offsets(dtype, n, offset):
    check_jit(dtype, n, offset)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_loop_fusions_over_odd_sizes_and_offsets_long(dtype, n):
    check_jit(dtype, n, 1)


@pytest.mark.slow
def test_bool_and_mixed_width_fusions_and_donated_inputs():
    x = np.arange(1, 3001, dtype=np.float64)[1:]
    mask = (np.arange(2999) % 3 == 0)
    got = np.asarray(cj.jit(lambda a, m: cnp.where(m, a, -a).astype(np.int8) > 0)(x % 100, mask))
    np.testing.assert_array_equal(got, np.where(mask, x % 100, -(x % 100)).astype(np.int8) > 0)
    donated = cj.jit(lambda a: a * 2 + 1, donate_argnums=0)
    source = np.arange(5000, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(donated(source.copy())), source * 2 + 1)


def test_loop_fusion_kernels_are_spans_of_sixteen_bytes_per_work_item():
    x = np.zeros(4099, np.float16)
    module = run_pipeline(cj.jit(lambda a: a * 2 + 1).lower(x).module).module
    (kernel,) = emit_kernels(module)
    (span,) = [s for s in kernel.body if isinstance(s, K.ForSpan)]
    assert span.per_item == 8 and kernel.workgroup_size == (256, 1, 1)
