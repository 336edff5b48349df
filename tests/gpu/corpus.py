"""The GPU corpus: programs that exercise every kernel emitter and library solution kind that
exists (elementwise fusion, reductions, softmax rows, the BLAS GEMM solutions with MFMA in each
dtype, scans, sort, top_k, gather/scatter, loops; DNN's convolution solvers, FFT's plan nodes, PRIM's
sorts, scans and histogram, RAND's generators and SOLVER's factorizations), and hand-written kernels (LDS tree
sum with barriers, wave reduce/shuffle in every register type, every MFMA instruction), with sizes
that cross workgroup boundaries but keep compute-sanitizer's runs short.

Each case runs on the GPU (runtime/nvptx_runner.py) and on the CPU (the host backend) and must
agree bit for bit (NaNs equal): both backends lower the same kernel IR through the same base
(codegen/llvm_kernel.py) with the same math library, fused multiply-adds only where the IR asks
(codegen/nvptx.py: no contraction), IEEE division and square root, denormals kept, so every
operation rounds the same; a difference is a race, a missing barrier, an out-of-bounds read or a
backend bug, never rounding.

`python tests/gpu/corpus.py` runs the whole corpus once and prints one line per case and the
counts; tests/gpu/test_gpu.py runs it under compute-sanitizer's racecheck, synccheck and memcheck.
`python tests/gpu/corpus.py --fuzz N SEED` runs N random programs of tests/differential/fuzzing;
`--planted-race` runs the tree sum without its barriers (racecheck's control: it must report it).
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
import warnings

import ml_dtypes
import numpy as np

import cdnajit as cj
import cdnajit.numpy as cnp
import cdnajit.sparse as cs
from cdnajit.ir import kernel as K
from cdnajit.ir.kernel_mfma import INSTRUCTIONS
from cdnajit.runtime import nvptx_runner
from cdnajit.runtime.launch import compile_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "codegen"), os.path.join(HERE, "..", "differential")]
import test_amdgpu  # noqa: E402  (the hand-written kernels of the AMDGPU tests)
import test_mfma  # noqa: E402  (the MFMA layout kernels)

RNG = np.random.default_rng(32)
lax = cj.lax


def normal(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def conv2d(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))


def loop(x):
    return lax.fori_loop(0, 3, lambda i, v: cnp.tanh(v) * 1.5 + i, x)


def top_k_values(x):
    return lax.top_k(x, 5)[0]


def nhwc_conv(stride=(1, 1), padding="SAME", lhs_dilation=None, groups=1):
    return lambda x, w: lax.conv_general_dilated(x, w, stride, padding, lhs_dilation=lhs_dilation,
                                                 dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=groups)


def conv_bias_relu(x, w, b):
    return cj.nn.relu(nhwc_conv()(x, w) + b)


def complex_normal(*shape, dtype=np.complex64):
    return (normal(*shape) + 1j * normal(*shape)).astype(dtype)


def spd(n):
    a = normal(n, n, dtype=np.float64)
    return a @ a.T + n * np.eye(n)


# name -> (function, arguments) for each library solution kind: the comment names the solution the
# library picks for these shapes (the optimized IR's `library_call ..., solution = ...`).
def csr(m, n, per_row, dtype=np.float32):
    """(data, indices, indptr) of an m x n CSR matrix with `per_row` entries per row at sorted
    random columns, the last rows empty (csrmv writes them from its last chunk)."""
    rows = m - 3
    indices = np.sort(RNG.random((rows, n)).argsort(axis=1)[:, :per_row], axis=1).ravel().astype(np.int32)
    indptr = np.concatenate([np.arange(0, rows * per_row + 1, per_row), np.full(3, rows * per_row)]).astype(np.int32)
    return normal(rows * per_row, dtype=dtype), indices, indptr


def lower_triangle_csr(n):
    """A lower-triangular CSR matrix of n rows: a strong diagonal and up to 3 entries left of it."""
    dense = np.tril(np.where(RNG.random((n, n)) < 3 / n, normal(n, n), 0)) + 4 * np.eye(n, dtype=np.float32)
    rows, columns = np.nonzero(dense)
    return dense[rows, columns], columns.astype(np.int32), np.searchsorted(rows, np.arange(n + 1)).astype(np.int32)


def bsr(block_rows, block_columns, rows, width):
    """(data, indices, indptr) of a BSR matrix: csr's pattern of blocks, each rows x width."""
    _, indices, indptr = csr(block_rows, block_columns, 2)
    return normal(len(indices), rows, width), indices, indptr


def ell(m, width, n):
    return np.where(RNG.random((m, width)) < 0.8, RNG.integers(0, n, (m, width)), -1).astype(np.int32), normal(m, width)


LIBRARY_PROGRAMS = {
    "dnn_im2col_gemm_epilogue": (conv_bias_relu, (normal(2, 9, 11, 8), normal(3, 3, 8, 40), normal(40))),   # im2col + GEMM
    "dnn_direct_blocked": (conv_bias_relu, (normal(2, 9, 11, 8), normal(3, 3, 8, 12), normal(12))),   # 8 + 4 features a block
    "dnn_gemm_1x1": (nhwc_conv(), (normal(2, 7, 9, 16), normal(1, 1, 16, 24))),
    "dnn_depthwise": (nhwc_conv(groups=12), (normal(2, 9, 10, 12), normal(3, 3, 1, 12))),
    "dnn_transposed": (nhwc_conv(padding=((1, 2), (1, 2)), lhs_dilation=(2, 2)), (normal(2, 6, 7, 8), normal(3, 3, 8, 8))),
    "dnn_implicit_gemm": (lambda x, w: lax.conv_general_dilated(x, w, (2, 2), "SAME", feature_group_count=2),
                          (normal(2, 6, 13, 11), normal(8, 3, 3, 3))),
    "fft_c128_mixed_radix": (lambda x: cnp.fft.fft(x), (complex_normal(3, 360, dtype=np.complex128),)),   # [10,6,6]
    "fft_two_pass": (lambda x: cnp.fft.fft(x), (complex_normal(1, 65536),)),   # 256 x 256 with large twiddles
    "fft_bluestein": (lambda x: cnp.fft.ifft(x), (complex_normal(2, 1009),)),   # chirp, pointwise products
    "fft_real_round_trip": (lambda x: cnp.fft.irfft(cnp.fft.rfft(x)), (normal(3, 512),)),   # rfft_post, irfft_pre
    "fft2": (lambda x: cnp.fft.fft2(x), (complex_normal(2, 48, 40),)),
    "prim_radix_sort": (lambda x: cnp.sort(x), (normal(5000),)),
    # rows up to 2^16: the row sort's wave (LDS atomic counts, a DPP scan, WaveMatchRank), ties in
    # order, a last stripe cut short
    "prim_radix_argsort_rows": (lambda x: cnp.argsort(x, axis=-1), (np.round(normal(3, 2037) * 8),)),
    # rows past 2^16: histogram, scan and the scatter's wave ranking (WaveMatchRank), ties kept in order
    "prim_radix_argsort_runs": (lambda x: cnp.argsort(x), (np.round(normal(70_000) * 8),)),
    "prim_scan": (lambda x: cnp.cumsum(x), (normal(20_000),)),   # scan_rows, run_totals, scan_runs
    "prim_histogram": (lambda x: cnp.histogram(x, bins=37)[0], (normal(10_000),)),   # bin_counts
    "random_normal_threefry": (lambda key: cj.random.normal(key, (3000,)), (np.asarray(cj.random.PRNGKey(3)),)),
    "rand_philox": (lambda: cj.libs.rand.generate("philox4x32_10", (1000,), "normal", seed=42), ()),
    "rand_sobol": (lambda: cj.libs.rand.generate("sobol32", (4, 500), "uniform", seed=0), ()),
    "solver_batched_solve": (lambda a, b: cnp.linalg.solve(a, b),
                             (normal(50, 4, 4) + 4 * np.eye(4, dtype=np.float32), normal(50, 4, 1))),
    "solver_blocked_lu": (lambda a, b: cnp.linalg.solve(a, b),   # getrf panels, laswp, trsm, GEMM updates
                          (normal(300, 300, dtype=np.float64) + 30 * np.eye(300), normal(300, 3, dtype=np.float64))),
    "solver_blocked_cholesky": (lambda a: cnp.linalg.cholesky(a), (spd(300),)),
    "solver_inv_det": (lambda a: (cnp.linalg.inv(a), cnp.linalg.det(a)), (normal(7, 33, 33, dtype=np.float64),)),
    "solver_qr_jacobi": (lambda a: (cnp.linalg.qr(a)[1], cnp.linalg.eigvalsh(a + a.T), cnp.linalg.svd(a, compute_uv=False)),
                         (normal(20, 20, dtype=np.float64),)),   # geqrf, syevj, gesvdj
    "solver_recursive_qr": (lambda a: cnp.linalg.qr(a), (normal(300, 200, dtype=np.float64),)),   # compact WY, orgqr
    "solver_expm": (lambda a: cj.scipy.linalg.expm(a), (normal(3, 12, 12, dtype=np.float64) / 4,)),
    "dnn_pool": (lambda x: lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
                 (normal(2, 15, 17, 24),)),
    "dnn_transposed_stride2": (lambda x, w: lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
                               (normal(2, 7, 6, 8), normal(3, 3, 8, 8))),   # sub-pixel phases
    "dnn_mha_fwd": (lambda q, k, v: cj.nn.dot_product_attention(q, k, v, is_causal=True, implementation="cudnn"),
                    (normal(2, 70, 4, 16), normal(2, 70, 2, 16), normal(2, 70, 2, 16))),
    "prim_top_k_rows": (lambda x: lax.top_k(x, 7), (normal(3, 2000),)),
    "prim_segment_sum": (lambda v, ids: cj.ops.segment_sum(v, ids, num_segments=40), (normal(5000), RNG.integers(0, 40, 5000))),
    "prim_compaction": (lambda x: cnp.nonzero(x > 0.5, size=3000, fill_value=-1)[0], (normal(5000),)),
    "prim_cumlogsumexp": (lambda x: lax.cumlogsumexp(x, axis=0), (normal(20_000),)),
    "rand_xorwow": (lambda: cj.libs.rand.generate("xorwow", (5000,), "uniform", seed=7), ()),
    "rand_mrg32k3a": (lambda: cj.libs.rand.generate("mrg32k3a", (5000,), "normal", seed=7), ()),
    "rand_mtgp32": (lambda: cj.libs.rand.generate("mtgp32", (5000,), "uniform", seed=7, offset=300), ()),
    "sparse_csrmv": (lambda d, i, p, x: cs.BCSR((d, i, p), shape=(300, 500)) @ x,   # 3 chunks, carries
                     (*csr(300, 500, 7), normal(500))),
    "sparse_bsrmv": (lambda d, i, p, x: cs.bsr_matvec(d, i, p, x), (*bsr(60, 40, 2, 3), normal(40 * 3))),
    "sparse_ellmv": (lambda c, v, x: cs.ell_matvec(c, v, x), (*ell(200, 5, 90), normal(90))),
    "sparse_csrmm": (lambda d, i, p, b: cs.BCSR((d, i, p), shape=(130, 80)) @ b,
                     (*csr(130, 80, 6, dtype=np.float64), normal(80, 70, dtype=np.float64))),
    "sparse_sddmm": (lambda i, p, a, b: cs.sddmm(cs.BCSR((np.ones(len(i), np.float32), i, p), shape=(100, 90)),
                                                  a, b).data,
                     (*csr(100, 90, 4)[1:], normal(100, 16), normal(16, 90))),
    "sparse_conversions": (lambda d, i, p: (cs.BCSR((d, i, p), shape=(70, 50)).T.todense(),   # csr2coo, sort, coo2csr
                                            cs.BCSR((d, i, p), shape=(70, 50)).todense()),
                           csr(70, 50, 5)),
    "sparse_csrsv": (lambda d, i, p, b: cs.spsolve_triangular(cs.BCSR((d, i, p), shape=(150, 150)), b),   # levels
                     (*lower_triangle_csr(150), normal(150))),
}


# name -> (function, arguments): each a program of the frontend, compiled as a user compiles it.
PROGRAMS = {
    "elementwise_f32": (lambda x, y: cnp.tanh(x) * y + cnp.exp(-x * x), (normal(1000), normal(1000))),
    "elementwise_f16_bf16": (lambda x: (x.astype(np.float16) * 3).astype(ml_dtypes.bfloat16) + 1, (normal(777),)),
    "elementwise_f64_int": (lambda x, n: cnp.sin(x) + (n % 7).astype(np.float64), (normal(513, dtype=np.float64),
                                                                              RNG.integers(-99, 99, 513))),
    "broadcast_where": (lambda x, y: cnp.where(x > 0, x, y[:, None] * 2), (normal(65, 129), normal(65))),
    "sum_rows": (lambda x: cnp.sum(x, axis=1), (normal(37, 1000),)),
    "sum_columns": (lambda x: cnp.sum(x, axis=0), (normal(300, 77),)),
    # 16 bytes of consecutive columns per work-item at its span offsets (lowering/tiling.py: column_vector)
    "sum_columns_vector": (lambda x: cnp.sum(x, axis=0), (normal(300, 256),)),
    "mean_max_columns_f16": (lambda x: cnp.mean(x, axis=1) + cnp.max(x, axis=1), (normal(5, 40, 512, dtype=np.float16),)),
    "max_all": (lambda x: cnp.max(x), (normal(100_003),)),
    "argmax_rows": (lambda x: cnp.argmax(x, axis=-1), (normal(33, 515),)),
    "softmax": (test_amdgpu.softmax, (normal(19, 1030),)),
    "mean_f16": (lambda x: cnp.mean(x, axis=-1), (normal(21, 301, dtype=np.float16),)),
    "matmul_f32": (lambda a, b: a @ b, (normal(100, 70), normal(70, 90))),
    "matmul_f32_large": (lambda a, b: a @ b, (normal(130, 260), normal(260, 200))),
    "matmul_f16": (lambda a, b: a @ b, (normal(96, 64, dtype=np.float16), normal(64, 80, dtype=np.float16))),
    "matmul_bf16": (lambda a, b: a @ b, (normal(70, 33).astype(ml_dtypes.bfloat16), normal(33, 65).astype(ml_dtypes.bfloat16))),
    "matmul_f64": (lambda a, b: a @ b, (normal(50, 40, dtype=np.float64), normal(40, 30, dtype=np.float64))),
    "matmul_i8": (lambda a, b: a @ b, (RNG.integers(-128, 128, (64, 48)).astype(np.int8),
                                       RNG.integers(-128, 128, (48, 40)).astype(np.int8))),
    "batched_matmul": (lambda a, b: cnp.einsum("bij,bjk->bik", a, b), (normal(3, 40, 50), normal(3, 50, 30))),
    "matvec": (lambda a, x: a @ x, (normal(300, 200), normal(200))),
    "cumsum": (lambda x: cnp.cumsum(x, axis=-1), (normal(7, 1500),)),
    "cumsum_columns": (lambda x: cnp.cumsum(x, axis=0), (normal(300, 5),)),
    "cummax": (lambda x: lax.cummax(x, axis=0), (normal(1030),)),
    "sort": (lambda x: cnp.sort(x, axis=-1), (normal(5, 1000),)),
    "argsort_int": (lambda x: cnp.argsort(x), (RNG.integers(0, 50, 700),)),
    "top_k": (top_k_values, (normal(9, 300),)),
    "conv2d": (conv2d, (normal(2, 3, 17, 19), normal(8, 3, 3, 3))),
    "fft": (lambda x: lax.fft(x, "FFT", (256,)), ((normal(4, 256) + 1j * normal(4, 256)).astype(np.complex64),)),
    "rfft_odd": (lambda x: lax.fft(x, "RFFT", (100,)), (normal(3, 100),)),
    "gather_take": (lambda x, i: cnp.take(x, i, axis=0), (normal(50, 33), RNG.integers(0, 50, 70))),
    "scatter_add": (lambda x, i, v: x.at[i].add(v), (normal(100), RNG.integers(0, 100, 300), normal(300))),
    "transpose_concat": (lambda x, y: cnp.concatenate([x.T, y], axis=0), (normal(40, 70), normal(3, 40))),
    "reduce_window": (lambda x: lax.reduce_window(x, -np.inf, lax.max, (3, 3), (2, 2), "VALID"), (normal(45, 61),)),
    "fori_loop": (loop, (normal(999),)),
    "matmul_transposed": (lambda a, b: a.T @ b.T, (normal(45, 77), normal(66, 45))),
    "var_columns": (lambda x: cnp.var(x, axis=0), (normal(500, 37),)),
    "argmin_3d": (lambda x: cnp.argmin(x, axis=1), (normal(5, 300, 9),)),
    "cumsum_long": (lambda x: cnp.cumsum(x), (normal(20_000),)),
    "sort_long": (lambda x: cnp.sort(x), (normal(5000),)),
    "conv1d_f16": (lambda x, w: lax.conv(x, w, (2,), "VALID"), (normal(2, 4, 50, dtype=np.float16),
                                                                  normal(6, 4, 5, dtype=np.float16))),
    **LIBRARY_PROGRAMS,
}


def mfma_case(name):
    inst = INSTRUCTIONS[name]
    a, b, c = test_mfma.random_operands(inst)
    tables = [test_mfma.source_table(inst, m).ravel() for m in "abd"]
    return test_mfma.mfma_kernel(inst), [a.ravel(), b.ravel(), c.ravel(), np.zeros(c.size, c.dtype), *tables]


def elementwise_case():
    kernel = dataclasses.replace(test_amdgpu.elementwise_kernel(), arguments=(("scale", 0.75),))
    return kernel, [normal(1000), np.zeros(1000, np.float32)]


def racy_tree_sum_case():
    """The tree sum with its barriers removed: a planted race that racecheck must report."""
    kernel = test_amdgpu.tree_sum_kernel()
    body = [s for s in kernel.body if not isinstance(s, K.Barrier)]
    body = [dataclasses.replace(s, body=[t for t in s.body if not isinstance(t, K.Barrier)], uniform=False)
            if isinstance(s, K.For) else s for s in body]
    return dataclasses.replace(kernel, name="racy_tree_sum", body=tuple(body)), [normal(1000), np.zeros(4, np.float32)]


def tree_sum_case():
    return test_amdgpu.tree_sum_kernel(), [normal(1000), np.zeros(4, np.float32)]


def waves_case(dtype):
    x = RNG.standard_normal(384) * 50
    array = x.astype(cj.ir.numpy_dtype(dtype))
    return test_amdgpu.wave_kernel(dtype), [array, np.zeros_like(array)]


# name -> () -> (kernel, one array per buffer): hand-written kernel IR, run as it is.
KERNELS = {
    "kernel_elementwise": elementwise_case,
    "kernel_tree_sum": tree_sum_case,
    **{f"kernel_waves_{dtype}": (lambda dtype=dtype: waves_case(dtype))
       for dtype in ("f32", "f64", "f16", "bf16", "i32", "i64", "u8")},
    **{f"kernel_{name}": (lambda name=name: mfma_case(name)) for name in INSTRUCTIONS},
}


def difference(got, want, what: str) -> str | None:
    """None when the arrays agree bit for bit (NaNs of any payload equal), else what differs."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{what}: {got.dtype}{got.shape} on the GPU, {want.dtype}{want.shape} on the CPU"
    if got.dtype.kind == "V":   # ml_dtypes' bfloat16 and float8 types: exactly held in f32
        got, want = got.astype(np.float32), want.astype(np.float32)
    if got.dtype.kind in "fc":
        same = (got == want) & (np.signbit(got.real) == np.signbit(want.real)) if got.dtype.kind == "f" else got == want
        same |= np.isnan(got) & np.isnan(want)
    else:
        same = got == want
    if same.all():
        return None
    first = np.argwhere(~same)[0]
    return (f"{what}: {int((~same).sum())} of {same.size} elements differ, first at {tuple(int(i) for i in first)}: "
            f"GPU {got[tuple(first)]!r}, CPU {want[tuple(first)]!r}")


def check_program(fn, args) -> str | None:
    compiled = cj.jit(fn).lower(*args).compile()
    want = compiled(*args)
    got = nvptx_runner.run_program(compiled, *args)
    want, got = (want if isinstance(want, (tuple, list)) else [want]), (got if isinstance(got, (tuple, list)) else [got])
    for n, (g, w) in enumerate(zip(got, want)):
        problem = difference(g, w, f"output {n}")
        if problem:
            return problem
    return None


def check_kernel(make) -> str | None:
    kernel, arrays = make()
    cpu = [np.array(a) for a in arrays]
    compile_kernel(kernel)(*cpu)
    gpu = [np.array(a) for a in arrays]
    nvptx_runner.run_kernel(kernel, *gpu)
    for buffer, g, c in zip(kernel.buffers, gpu, cpu):
        problem = difference(g, c, f"buffer {buffer.name}")
        if problem:
            return problem
    return None


def check_case(name: str) -> str | None:
    if name in KERNELS:
        return check_kernel(KERNELS[name])
    return check_program(*PROGRAMS[name])


def check_random_program(seed: int) -> str | None:
    """A program of the random-program tester (its inputs, its function), GPU against CPU; None
    also where the CPU refuses it (the tester's oracle judges those, not this comparison)."""
    from fuzzing.programs import arguments, as_function, generate
    program = generate(seed, quick=True)
    fn, args = as_function(program), arguments(program)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cj.jit(fn)(*args)
        except Exception:   # noqa: BLE001 - the tester's oracle judges what the CPU refuses
            return None
        return check_program(fn, args)


def main(argv) -> int:
    failures, start = 0, time.time()
    if argv[:1] == ["--planted-race"]:   # GPU only: what racecheck must catch (tests/gpu/test_gpu.py)
        kernel, arrays = racy_tree_sum_case()
        nvptx_runner.run_kernel(kernel, *arrays)
        print("planted race ran", flush=True)
        return 0
    if argv[:1] == ["--fuzz"]:
        count, seed = int(argv[1]), int(argv[2])
        names = [seed * 1_000_003 + i for i in range(count)]
        check = check_random_program
    else:
        names = [n for n in [*PROGRAMS, *KERNELS] if not argv or n in argv]
        check = check_case
    for name in names:
        try:
            problem = check(name)
        except Exception as error:   # noqa: BLE001 - reported with the case it broke
            problem = f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"
        failures += problem is not None
        print(f"{name}: {problem or 'ok'}", flush=True)
    print(f"{len(names)} cases, {failures} failures, {time.time() - start:.0f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
