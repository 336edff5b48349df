"""The problems whose kernels the library ships prebuilt (`python -m cdnajit warm`, runtime/warm.py),
as rocBLAS's and hipBLASLt's kernels are built with the library rather than on first use.

A kernel serves every problem that picks its solution and variant (generator.py), so a set of
common problems stands for the kernels a program is likely to need: square products from 128 to
4096 (1000 among them, whose N and K end inside the tiles: the other variant); the layers of a
model (batch 256 times a width from 256 to 4096, the plain product and the epilogues the matcher
fuses: bias, bias and relu, bias and the tanh GELU; a 10-wide head); and attention's two batched
products (scores, sequence x sequence x head size, and their weighting of the values, sequence x
head size x sequence, over 16 batch-heads, for sequences of 512 to 2048 and heads of 64 and 128).
Each comes in the layouts `a @ b` and `a @ b.T` (a linear layer either way), for each input dtype
the library takes and the result dtypes it computes from it (matcher.SUPPORTED). A new batch size
then costs nothing: M and the batch count are not part of a kernel's variant.
"""
from __future__ import annotations

from ...ir.core import Op
from .generator import gemm_call
from .matcher import SUPPORTED
from .routines import ACTIVATIONS, split_epilogue

SQUARE_SIZES = (128, 256, 512, 1000, 1024, 2048, 4096)   # 1000: N and K past the tiles (Edges)
LAYER_BATCH = 256
LAYER_WIDTHS = (256, 512, 1024, 4096)
HEAD_WIDTH = 10
LAYER_EPILOGUES = ("none", "bias", "bias_relu", "bias_gelu_tanh")
ATTENTION_BATCH = 16                          # batch x heads
ATTENTION_SEQUENCES = (512, 1024, 2048)
ATTENTION_HEAD_SIZES = (64, 128)
LAYOUTS = ((False, False), (False, True))    # (trans_a, trans_b): a @ b, a @ b.T


def takes_epilogue(epilogue: str, result_dtype: str) -> bool:
    activation = split_epilogue(epilogue)[1]
    return activation is None or result_dtype in ACTIVATIONS[activation][1]


def common_calls(in_dtype: str) -> list[Op]:
    """The library_calls of the common problems (module docstring) of `in_dtype` inputs."""
    calls = []
    for result_dtype in SUPPORTED[in_dtype]:
        for trans_a, trans_b in LAYOUTS:
            shapes = [(size, size, size, "none") for size in SQUARE_SIZES]
            shapes += [(LAYER_BATCH, width, width, epilogue) for width in LAYER_WIDTHS for epilogue in LAYER_EPILOGUES]
            shapes += [(LAYER_BATCH, HEAD_WIDTH, width, "bias") for width in LAYER_WIDTHS]
            calls += [gemm_call(m, n, k, in_dtype, result_dtype, trans_a=trans_a, trans_b=trans_b, epilogue=epilogue)
                      for m, n, k, epilogue in shapes if takes_epilogue(epilogue, result_dtype)]
            attention = [(s, s, d) for s in ATTENTION_SEQUENCES for d in ATTENTION_HEAD_SIZES]
            attention += [(s, d, s) for s in ATTENTION_SEQUENCES for d in ATTENTION_HEAD_SIZES]
            calls += [gemm_call(m, n, k, in_dtype, result_dtype, batch=ATTENTION_BATCH, trans_a=trans_a,
                                trans_b=trans_b) for m, n, k in attention]
    return calls


def prebuilt_dtypes() -> tuple[str, ...]:
    """The input dtypes the library has kernels for, but complex ones (they run as real GEMMs)."""
    return tuple(dtype for dtype in SUPPORTED if not dtype.startswith("c"))
