"""The convolution solvers, as MIOpen's: each with an applicability test (None when it applies, else
the reason it does not), a cost model on the target, and its kernel. The heuristic picks the
applicable solver of least modelled time; a find-mode winner (find_db.py) comes first.

The same solvers serve the three routines (conv_fwd, conv_bwd_data, conv_bwd_weights): a backward
routine is the graph's convolution it replaced (routines.py), which its kernels compute as written,
conv_bwd_data's reading w's taps reversed (problem.py: ConvProblem.flip). So backward data and weights
run as MIOpen's implicit-GEMM and direct backward solvers do: GEMMs over (N*H*W) x C x (K*R*S) and
K x (C*R*S) x (N*Ho*Wo) with the patches formed on the fly, or a work-item per dx or dw element.

The cost model: time = max(flops / (peak * efficiency), bytes / bandwidth), where efficiency is the
solver's share of the target's vector peak its kernel reaches, and bytes count the operands each
kernel reads from memory as it reads them (the direct kernels re-read x once per output feature
group of a wave; the blocked one once per block of output features). implicit_gemm's efficiency is
libs/blas's model's time for its GEMM (which counts the GEMM's traffic through LDS, L2 and HBM, and
can exceed the vector peak: its solutions multiply by MFMA), its bytes x, w and y once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ...ir.targets import Target
from ...ir.types import FLOATS, NUMPY_DTYPES
from ..blas import kernels as blas_kernels
from ..blas.generator import gemm_call
from . import blocked, find_db
from .direct import direct_kernel
from . import implicit_gemm
from .problem import ConvProblem


@dataclass(frozen=True)
class Solver:
    name: str
    refuse: Callable[[ConvProblem], str | None]    # None when the solver applies, else why not
    efficiency: Callable[[ConvProblem, Target], float]
    traffic: Callable[[ConvProblem], float]        # elements read and written
    emit: Callable                                 # (op, problem, name, target) -> Kernel
    doc: str
    details: Callable[[ConvProblem, Target], str] | None = None     # the kernel's parameters, for the report


def element_bytes(p: ConvProblem) -> int:
    return NUMPY_DTYPES[p.in_dtype].itemsize


def sizes(p: ConvProblem) -> tuple[int, int, int]:
    """Elements of x, w and y."""
    x = p.n * p.batch_groups * p.c * p.groups * math.prod(p.in_size)
    w = p.k * p.c * math.prod(p.window)
    y = p.n * p.k * math.prod(p.out_size)
    return x, w, y


# ---- 1x1 as a GEMM -----------------------------------------------------------------------------

def is_feature_last(spec, ndim) -> bool:
    """Whether the features lie last and the batch and spatial dimensions in their own order before them."""
    return spec[1] == ndim - 1 and list(spec[:1]) + list(spec[2:]) == list(range(ndim - 1))


def gemm_1x1_refuse(p: ConvProblem) -> str | None:
    ndim = p.spatial + 2
    if any(r != 1 for r in p.window):
        return f"the window is {'x'.join(map(str, p.window))}, not 1x1"
    if p.groups != 1 or p.batch_groups != 1:
        return "the convolution is grouped"
    if any(s != 1 for s in p.stride) or any(pad != (0, 0) for pad in p.pad) or any(d != 1 for d in p.lhs_dilation):
        return "strides, padding or input dilation make the input rows not a matrix"
    if not (is_feature_last(p.lhs_spec, ndim) and is_feature_last(p.out_spec, ndim)):
        return f"layout {p.layout()}: the features of x and y are not their innermost dimension (NHWC-like)"
    if p.in_dtype not in ("f64", "f32", "f16", "bf16"):
        return f"{p.in_dtype} operands: the BLAS kernels take floats"
    return None


def gemm_1x1_call(p: ConvProblem):
    """y[rows, K] = x[rows, C] @ w[C, K] (w[K, C] transposed when O comes before I), rows = N * H * W."""
    rows = p.n * math.prod(p.in_size)
    return gemm_call(rows, p.k, p.c, p.in_dtype, p.result_dtype, trans_b=p.rhs_spec[0] < p.rhs_spec[1],
                     epilogue=p.epilogue, clamp_min=p.clamp[0], clamp_max=p.clamp[1])


def gemm_1x1_emit(op, p, name, target):
    return blas_kernels.emit(gemm_1x1_call(p), name, target)


def gemm_1x1_efficiency(p, target):
    return 0.7


# ---- the solver table ----------------------------------------------------------------------------

def direct_refuse(p: ConvProblem) -> str | None:
    return None


def depthwise_refuse(p: ConvProblem) -> str | None:
    if p.c != 1:
        return f"each output feature reads {p.c} input features (depthwise needs 1: feature_group_count = C)"
    return None


def implicit_gemm_refuse(p: ConvProblem) -> str | None:
    if p.batch_groups != 1:
        return "batch groups (the backward-weights form) are not a GEMM of one batch"
    if p.in_dtype not in FLOATS:
        return f"{p.in_dtype} operands: the tiled kernels accumulate floats"
    rows, depth = p.n * math.prod(p.out_size), p.c * math.prod(p.window)
    if max(rows, depth) >= 2**31:
        return f"the GEMM's {rows} rows or {depth} depth reach 2**31 (the kernel divides them in 32 bits)"
    return None


def implicit_gemm_efficiency(p: ConvProblem, target: Target) -> float:
    """The share of the target's peak (modelled_time's) that libs/blas's model gives the GEMM's solution
    (its time counts the operands' traffic through LDS, L2 and HBM too)."""
    return p.flops / (target.peak(p.in_dtype) * implicit_gemm.selection(p, target).seconds)


SOLVERS = {solver.name: solver for solver in [
    Solver("gemm_1x1", gemm_1x1_refuse, gemm_1x1_efficiency,
           lambda p: sum(sizes(p)), gemm_1x1_emit,
           "a 1x1 convolution of NHWC-like layouts is one GEMM: libs/blas's solution for it"),
    Solver("implicit_gemm", implicit_gemm_refuse, implicit_gemm_efficiency,
           lambda p: sum(sizes(p)), implicit_gemm.implicit_gemm_kernel,
           "libs/blas's GEMM kernel of output positions x output features over C*R*S per group, A's tiles "
           "gathered from x as they are staged (the im2col never in memory)", implicit_gemm.describe),
    Solver("direct_blocked", blocked.refuse, lambda p, t: 0.25,
           lambda p: (lambda x, w, y: y + x * math.ceil(p.k / blocked.BLOCK)
                      + w * p.n * math.prod(p.out_size) / blocked.POSITIONS)(*sizes(p)),
           lambda op, p, name, target: blocked.blocked_kernel(op, p, name),
           f"one work-item per output position and {blocked.BLOCK} output features (accumulators in registers), "
           "for small convolutions"),
    Solver("depthwise", depthwise_refuse, lambda p, t: 0.1,
           lambda p: sum(sizes(p)), lambda op, p, name, target: direct_kernel(op, p, name, depthwise=True),
           "one work-item per output, its window's taps of its one input feature"),
    Solver("direct", direct_refuse, lambda p, t: 0.05,
           lambda p: (lambda x, w, y: y + x * math.prod(p.window) + w * (p.n * math.prod(p.out_size)) / 64)(*sizes(p)),
           lambda op, p, name, target: direct_kernel(op, p, name, depthwise=False),
           "one work-item per output, every tap and input feature of its group"),
]}


def modelled_time(solver: Solver, p: ConvProblem, target: Target) -> float:
    peak = target.peak(p.in_dtype if p.in_dtype in FLOATS else "f32")
    compute = p.flops / (peak * solver.efficiency(p, target))
    memory = solver.traffic(p) * element_bytes(p) / target.hbm_bandwidth
    return max(compute, memory)


def applicable(p: ConvProblem) -> list[Solver]:
    return [s for s in SOLVERS.values() if s.refuse(p) is None]


def pick(p: ConvProblem, target: Target) -> tuple[Solver, str]:
    """The find-db's winner for the problem (when it still applies), else the applicable solver of least
    modelled time; and why."""
    recorded = find_db.recorded_solver(p, target)
    if recorded in SOLVERS and SOLVERS[recorded].refuse(p) is None:
        return SOLVERS[recorded], f"find-db: the fastest measured for {p.describe()} (cj.libs.dnn.find)"
    ranked = sorted(applicable(p), key=lambda s: modelled_time(s, p, target))
    best = ranked[0]
    others = ", ".join(f"{s.name} {modelled_time(s, p, target) * 1e6:.3g} us" for s in ranked[1:]) or "none"
    return best, (f"heuristic: least modelled time on {target.name} ({modelled_time(best, p, target) * 1e6:.3g} us) "
                  f"of the applicable solvers (others: {others}) for {p.describe()}")


def solver_named(name: str, p: ConvProblem) -> Solver:
    """The solver `name`, which must apply to `p`: NotImplementedError says why it does not."""
    if name not in SOLVERS:
        raise NotImplementedError(f"dnn: no convolution solver {name!r} (solvers: {', '.join(SOLVERS)})")
    reason = SOLVERS[name].refuse(p)
    if reason is not None:
        raise NotImplementedError(f"dnn: solver {name!r} does not apply to {p.describe()}: {reason}")
    return SOLVERS[name]
