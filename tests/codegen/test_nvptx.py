"""NVPTX codegen without a GPU: every kernel of the GPU corpus (tests/gpu/corpus.py: each emitter,
each GEMM solution kind with MFMA, scans, sort, conv, fft, hand-written wave-op and MFMA kernels)
lowers to PTX for sm_90 that LLVM verified, calls nothing external, fuses no multiply-add the IR
did not ask for, and synchronises its wave ops on the wave's named barrier. (tests/gpu runs the
same PTX on an NVIDIA GPU.)"""
import os
import re
import sys

import pytest

import cdnajit as cj
from cdnajit.codegen import nvptx
from cdnajit.ir import kernel as K
from cdnajit.ir.targets import get_target
from cdnajit.passes.manager import run_pipeline
from cdnajit.runtime.executable import emit_kernels

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))
import corpus  # noqa: E402

HOPPER_SHARED_LIMIT = 227 * 1024     # sm_90's dynamic shared memory per block, opted in
# Programs checked by `make test`; the rest of the corpus is slow (a GEMM kernel takes ~2 s of LLVM).
QUICK = ["elementwise_f16_bf16", "softmax", "matmul_f16", "cumsum", "sort", "conv2d", "fft", "scatter_add"]
NAMED_BARRIER = re.compile(r"bar\.sync %r\d+, %r\d+;")


def program_kernels(name):
    fn, args = corpus.PROGRAMS[name]
    return emit_kernels(run_pipeline(cj.jit(fn).lower(*args).module, None, target=get_target()).module)


def check_ptx(kernel):
    text = nvptx.ptx(kernel)
    assert ".target sm_90" in text and f".visible .entry {kernel.name}(" in text
    x, y, z = kernel.workgroup_size
    assert f".reqntid {x}, {y}, {z}" in text
    assert ".extern .func" not in text, "a function the driver cannot link"
    defined = set(re.findall(r"^(?:\.visible )?\.func\s+(?:\([^)]*\)\s*)?([\w$]+)", text, re.M))
    assert set(re.findall(r"call\.uni\s+(?:\([^)]*\),\s*)?([\w$]+)", text)) <= defined
    # f32/f64 adds and multiplies carry .rn, which ptxas never contracts into an fma (an atomic's
    # `atom.global.add.f32` is no arithmetic instruction of its own).
    assert not re.search(r"(?<![\w.])(add|sub|mul)\.f(32|64)\b", text)
    assert nvptx.shared_bytes(kernel) <= HOPPER_SHARED_LIMIT
    return text


@pytest.mark.parametrize("name", QUICK)
def test_corpus_programs_lower_to_ptx(name):
    kernels = program_kernels(name)
    assert kernels
    for kernel in kernels:
        check_ptx(kernel)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in corpus.PROGRAMS if n not in QUICK])
def test_whole_corpus_lowers_to_ptx(name):
    for kernel in program_kernels(name):
        check_ptx(kernel)


@pytest.mark.parametrize("name", corpus.KERNELS)
def test_hand_written_kernels_lower_to_ptx(name):
    kernel, arrays = corpus.KERNELS[name]()
    text = check_ptx(kernel)
    if "waves" in name or "mfma" in name:
        # Each wave op: two named barriers of the wave's 64 threads (before and after the exchange).
        assert len(NAMED_BARRIER.findall(text)) >= 2
        assert "bar.sync 0;" not in text.replace("\t", " ")


def test_gemm_solution_uses_mfma_emulation_and_block_barriers():
    (kernel,) = program_kernels("matmul_f32")
    text = check_ptx(kernel)
    assert re.search(r"bar\.sync\s+0;", text)                   # the kernel's own LDS barriers
    assert NAMED_BARRIER.search(text) and "fma.rn.f32" in text   # MFMA through the wave's tiles
    assert nvptx.shared_bytes(kernel) > kernel.lds_bytes


def test_a_workgroup_of_sixteen_waves_synchronises_wave_ops_on_the_block_barrier():
    """PTX has 15 named barriers besides the block's: 16 waves take barrier 0 for their wave ops."""
    x, out = K.GlobalBuffer("x", "f32", 1024, readonly=True), K.GlobalBuffer("out", "f32", 1024)
    t, total = K.Var("t", "i32"), K.Var("total", "f32")
    body = [K.Let(t, K.workitem_id(0)), K.WaveReduce(total, "sum", x[t]), K.Store(out, t, total)]
    kernel = K.Kernel("sixteen_waves", params=[x, out], grid=(1,), workgroup_size=(1024,), body=body)
    text = check_ptx(kernel)
    assert not NAMED_BARRIER.search(text) and len(re.findall(r"bar\.sync\s+0;", text)) == 2


def test_lds_and_wave_scratch_share_one_dynamic_block():
    kernel, _ = corpus.KERNELS["kernel_tree_sum"]()
    assert nvptx.shared_bytes(kernel) == kernel.lds_bytes   # no wave ops: no scratch
    wave, _ = corpus.KERNELS["kernel_waves_f32"]()
    scratch = nvptx.wave_scratch(wave)
    assert (scratch.offset, scratch.per_wave, scratch.waves) == (0, 64 * 8, 2)
    assert ".extern .shared .align 16 .b8 " in nvptx.ptx(wave)


def test_scalar_parameters_are_kernel_params():
    n = K.ScalarParam("n", "i32")
    scale = K.ScalarParam("scale", "f16")
    x = K.GlobalBuffer("x", "f16", n)
    i = K.Var("i", "i32")
    body = [K.Let(i, K.workgroup_id(0) * 64 + K.workitem_id(0)), K.If(i < n, [K.Store(x, i, x[i] * scale)])]
    kernel = K.Kernel("scaled", params=[x, n, scale], grid=((n + 63) / 64,), workgroup_size=(64,), body=body,
                      arguments=(("n", 100), ("scale", 2.0)))
    text = check_ptx(kernel)
    assert re.search(r"\.param \.u64 .*scaled_param_0", text)
    assert re.search(r"\.param \.(u|b)32 scaled_param_1", text) and re.search(r"\.param \.(u|b)16 scaled_param_2", text)
