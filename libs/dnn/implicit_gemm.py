"""The implicit-GEMM solver's kernel: libs/blas's GEMM kernel (generator.py: Tensile-style staging
through LDS, MFMA math, the next tile staged during the math) on a convolution's operands. Per feature
group g, the batch of the GEMM:

    y[rows, cols] = A[rows, depth] @ B[depth, cols]      rows = (n, output position), cols = output
                                                          feature of g, depth = (tap, input feature)
    A[(n, o), (t, c)] = x[n, g*C + c, o*stride + t*rdil - pad]   (zero on padding and lhs-dilation holes)
    B[(t, c), k]      = w[g*K/G + k, c, t]       (t reversed where the problem flips w: backward data)

A's tiles are gathered from x as they are staged (ConvOperands.a): the im2col matrix is never
written to memory. The depth runs over w's input-feature and tap dimensions in w's memory order
(HWIO and OHWI: taps, then input features; OIHW: input features, then taps), so that B is w's
elements in order, K x cols (O innermost) or cols x K (O outermost) with stride 1 along its
contiguous dimension; a w whose O lies between its other dimensions is read through the general
index. Where x's input features are its innermost dimension and the depth's too, a run of GRVW depth
values from a multiple of GRVW (C a multiple of GRVW) is one tap's consecutive features: one vector
read, one validity check (GemmOperands.gathered_k_runs). D is scattered into y's layout, the bias
indexed by the output feature. Every size is a scalar parameter (problem.py), the GEMM's too.
"""
from __future__ import annotations

import math

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.targets import Target
from ...lowering.emit_ops import all_of
from ..blas.generator import GemmKernelBuilder, GemmOperands, GemmProblem
from ..blas.heuristic import Estimate, ranked
from ..blas.solutions import Solution
from .direct import tap_position
from .problem import ConvParams, ConvProblem


def depth_dims(p: ConvProblem) -> list[int]:
    """w's dimensions the depth runs over (its input features and taps), in w's memory order."""
    return sorted(d for d in p.rhs_spec[1:])


def features_last(p: ConvProblem) -> bool:
    """Whether x's input features are its innermost dimension and the depth's."""
    ndim = p.spatial + 2
    return p.lhs_spec[1] == ndim - 1 and depth_dims(p)[-1] == p.rhs_spec[1]


def gemm_problem(p: ConvProblem) -> GemmProblem:
    """The GEMM the kernel computes per feature group: (N * output positions) x K/G x (C * taps), batch G.
    A is read along the depth (trans_a False) where x's features are innermost, else along rows; B
    along the depth unless w's output features are innermost."""
    ndim = p.spatial + 2
    return GemmProblem(p.n * math.prod(p.out_size), p.k // p.groups, p.c * math.prod(p.window), p.groups,
                       trans_a=p.lhs_spec[1] != ndim - 1, trans_b=p.rhs_spec[0] != ndim - 1, in_dtype=p.in_dtype,
                       compute_dtype=p.acc_dtype, result_dtype=p.result_dtype, alpha=1.0, beta=0,
                       epilogue=p.epilogue, clamp=p.clamp)


def vector_runs(p: ConvProblem, solution: Solution) -> bool:
    """Whether A's runs of the solution's GRVW depth values are each one vector read of x."""
    width = solution.global_read_vector_width
    return width > 1 and features_last(p) and p.c % width == 0


def selection(p: ConvProblem, target: Target) -> Estimate:
    """libs/blas's model's fastest solution for the problem's GEMM among those whose A reads the kernel
    can make: a GRVW above 1 where A's vectors are x's (`vector_runs`), else GRVW 1. (About 2 ms: the
    few times a compile asks need no cache.)"""
    return next(e for e in ranked(gemm_problem(p), target)
                if e.solution.global_read_vector_width == 1 or vector_runs(p, e.solution))


class ConvOperands(GemmOperands):
    """A convolution's x, w (bias) and y as the GEMM's A, B (bias) and D (module docstring)."""
    gathered = True

    def __init__(self, op: Op, p: ConvProblem, solution: Solution):
        self.conv = params = ConvParams(op, p)
        self.problem = p
        self.m, self.k = K.ScalarParam("rows", "i64"), K.ScalarParam("depth", "i64")
        self.n, self.batches = params.k_per_group, params.groups
        self.buffers = params.buffers
        self.c_buf = None
        self.bias_buf = params.buffers[2] if len(params.buffers) == 4 else None
        # The clamp's bounds are the GEMM kernel's own parameters.
        clamp = ("clamp_min", "clamp_max")
        self.scalars = [s for s in params.scalars if s.name not in clamp] + [self.m, self.k]
        self.arguments = [(name, value) for name, value in params.arguments if name not in clamp] \
            + [("rows", p.n * math.prod(p.out_size)), ("depth", p.c * math.prod(p.window))]
        self.gathered_k_runs = vector_runs(p, solution)
        role = {dim: role for role, dim in enumerate(p.rhs_spec)}    # 1: input feature, 2 + j: spatial j
        self.depth_roles = [role[d] for d in depth_dims(p)]
        sizes = {1: params.c, **{2 + j: size for j, size in enumerate(params.spatial["window"])}}
        self.depth_sizes = [sizes[r] for r in self.depth_roles]
        # w's O outermost or innermost: the depth dimensions are contiguous, depth value d at d * stride.
        ndim = p.spatial + 2
        self.depth_stride = params.w_strides[depth_dims(p)[-1]] if p.rhs_spec[0] in (0, ndim - 1) else None

    def rows_of(self, row: K.Expr) -> list[K.Expr]:
        """(n, output position...) of a GEMM row."""
        return unravel([self.conv.n] + self.conv.spatial["out_size"], row)

    def depth_of(self, k: K.Expr) -> dict[int, K.Expr]:
        """w's coordinates of depth value k, by role (1: input feature, 2 + j: tap along spatial j)."""
        return dict(zip(self.depth_roles, unravel(self.depth_sizes, k)))

    def a(self, batch, row, k):
        p, params = self.problem, self.conv
        n, *out = self.rows_of(row)
        coords = self.depth_of(k)
        w_taps = [coords[2 + j] for j in range(p.spatial)]
        taps = params.w_taps(w_taps)    # w's taps reversed are the convolution's (backward data)
        valid, x_coords = [], []
        for j in range(p.spatial):
            ok, coord = tap_position(params, j, out[j], taps[j], p.dilated)
            valid.append(ok)
            x_coords.append(coord)
        index = params.offset([n, batch * params.c + coords[1]] + x_coords, params.x_strides, p.lhs_spec)
        return index, all_of(valid)

    def b(self, batch, column, k):
        p, params = self.problem, self.conv
        feature = batch * self.n + column
        if self.depth_stride is not None:
            return feature * params.w_strides[p.rhs_spec[0]] + k * self.depth_stride, None
        coords = self.depth_of(k)
        return params.offset([feature, coords[1]] + [coords[2 + j] for j in range(p.spatial)], params.w_strides,
                             p.rhs_spec), None

    def d(self, batch, row, column):
        n, *out = self.rows_of(row)
        return self.conv.offset([n, batch * self.n + column] + out, self.conv.y_strides, self.problem.out_spec)

    def bias(self, batch, column):
        return batch * self.n + column


def unravel(sizes, index: K.Expr) -> list[K.Expr]:
    """The row-major coordinates of `index` over runtime `sizes`, as i64 expressions, divided in 32 bits
    (the rows and the depth are below 2**31: implicit_gemm_refuse): a 64-bit division by a runtime
    value is several times the instructions of a 32-bit one on the GPU, and slower on the host."""
    coords, inner = [], index.cast("i32")
    for size in reversed(sizes[1:]):
        coords.insert(0, (inner % size.cast("i32")).cast("i64"))
        inner = inner / size.cast("i32")
    return [inner.cast("i64")] + coords


def implicit_gemm_kernel(op: Op, p: ConvProblem, name: str, target: Target) -> K.Kernel:
    return solution_kernel(op, p, selection(p, target).solution, name)


def solution_kernel(op: Op, p: ConvProblem, solution: Solution, name: str) -> K.Kernel:
    """The kernel of GEMM solution `solution` computing the convolution call `op`."""
    return GemmKernelBuilder(gemm_problem(p), solution, name, ConvOperands(op, p, solution)).build()


def describe(p: ConvProblem, target: Target) -> str:
    """The solution the kernel runs and its modelled figures."""
    return f"GEMM {gemm_problem(p).describe()}, {selection(p, target).describe()}"
