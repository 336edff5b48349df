"""libs/dnn: convolutions, as MIOpen provides them.

routines.py   the routines conv_fwd (y = epilogue(conv(x, w) + bias)), conv_bwd_data (dx = conv(dy, rev(w))),
              conv_bwd_weights (dw = conv(x, dy)), pool (reduce_window max/min/sum),
              mha_fwd (fused attention) and im2col: attributes, shape rules, references.
matcher.py    the pattern table turning the graph's convolutions, and the bias and activation after them,
              into `library_call dnn.conv_fwd` (conv_bwd_* in the backward forms), and reduce_window into
              `library_call dnn.pool`.
subpixel.py   transposed (lhs-dilated) convolutions as their output phases' stride-1 convolutions.
problem.py    a call's problem (sizes, layouts, MIOpen's key) and its sizes as kernel scalar parameters.
solvers.py    the solvers (gemm_1x1, implicit_gemm, direct_blocked, depthwise, direct) of the convolution routines:
              applicability, cost model, pick.
winograd.py   Winograd F(2x2, 3x3) and F(4x4, 3x3): the graph rewrite (input and filter transforms, libs/blas's
              batched GEMM over the transform points, the output transform with the epilogue), its model.
fft_conv.py   FFT convolution: the graph rewrite (libs/fft's real transforms of x and w, libs/blas's batched GEMM
              per frequency, the inverse transform, a strided crop), its model.
im2col.py     im2col + GEMM: the graph rewrite (dnn.im2col, then a dot_general libs/blas takes) for
              ungrouped float convolutions with windows above 1x1.
direct.py, blocked.py   the direct solvers' kernels.
implicit_gemm.py   implicit_gemm's kernel: libs/blas's GEMM kernel on the convolution's operands (A gathered
              from x, D scattered into y), its solution libs/blas's pick (gemm_1x1 is libs/blas's GEMM kernel too).
pool.py       dnn.pool's applicability and kernel.
attention.py  the hand-written softmax(q k^T) v -> dnn.mha_fwd rule (where the logits would be large, or forced).
mha.py        dnn.mha_fwd's applicability and kernel (online softmax); nn.dot_product_attention's
              implementation="cudnn" calls it (the default "xla" formulation is faster on the host).
kernels.py    the answers to the compiler's questions about a call.
find_db.py    the find-db: the solvers the find mode (runtime/dnn_find.py, cj.libs.dnn.find) measured fastest.
This file registers the library (ir/ops/library.py's contract).
"""
from ...ir.ops.library import Library, register_library
from . import attention, find_db, kernels, matcher, routines, winograd

LIBRARY = register_library(Library(
    name="dnn", routines=routines.ROUTINES, rules=tuple(matcher.RULES), select=kernels.select, emit=kernels.emit,
    explain=kernels.explain, cache_stamp=lambda: find_db.stamp() + winograd.stamp() + attention.stamp()))
