"""The matrix-vector kernel (rocBLAS's gemv): a `library_call blas.*` whose M or N is 1 and whose
matrix operand is contiguous along K (y = A x with A [M, K] row-major, or x^T B with B transposed).

A GEMM macro tile spends its work on a 1-wide D as on a 16- or 64-wide one, and its grid has a
workgroup per MT0 rows only (64 workgroups for 4096 rows: 64 of gfx942's 304 CUs); a
matrix-vector product reads each element of the matrix once and is bound by that read.
Workgroup (WAVE, ROWS): wave y owns one output row; its lane x sums the products at k = x,
x + WAVE, ... in order (consecutive lanes read consecutive elements), and a WaveReduce sums the
lanes' partial sums (a pairwise tree of WAVE leaves). Grid: ceil(rows / ROWS) x batch. The last
workgroup's rows past the end read the last row (clamped: the wave op stands under uniform
control flow, so no bounds check around it) and store nothing.

Compiled per solution, never per problem: the output length, K and the batch count are scalar
parameters (i64), alpha and beta too (in the accumulation dtype). The variant is the dtypes and
the epilogue's terms. The epilogue is the GEMM kernels' (generator.py): alpha, beta * C, the bias
(N elements: one value when N is 1, else one per output), the activation, in the accumulation
dtype, rounded once to D's dtype.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emitters import operand_buffers
from .generator import GemmProblem, activation_expr, clamp_parameters
from .routines import split_epilogue

WAVE = 64           # the lanes that share one output row (a CDNA wave: the WaveReduce spans it)
ROWS = 4            # output rows per workgroup: 4 waves


@dataclass(frozen=True)
class GemvSolution:
    """The matrix-vector solution: WAVE lanes per output row, ROWS rows per workgroup."""

    @property
    def name(self) -> str:
        return f"Gemv_DOT_W{WAVE}x{ROWS}"


GEMV = GemvSolution()


def takes_gemv(problem: GemmProblem) -> bool:
    """Whether a problem runs the matrix-vector kernel: M or N is 1 and the matrix is contiguous
    along K. The other layout (the matrix contiguous along the output) stays with the GEMM solutions:
    a kernel of work-items over output columns each walking K ran 5-8x slower than the GEMM's on the
    host (4096x512 f32, x^T B)."""
    return (problem.m == 1 or problem.n == 1) and matrix_k_contiguous(problem)


def gemv_solution_by_name(name: str) -> GemvSolution | None:
    return GEMV if name == GEMV.name else None


def output_along_m(problem: GemmProblem) -> bool:
    """Whether the output runs along M (N is 1: the matrix is A) rather than along N (the matrix is B)."""
    return problem.n == 1


def matrix_k_contiguous(problem: GemmProblem) -> bool:
    a_k, b_k = problem.k_contiguous
    return a_k if output_along_m(problem) else b_k


class GemvKernelBuilder:
    def __init__(self, op: Op, solution: GemvSolution, name: str):
        self.problem = p = GemmProblem.from_op(op)
        self.solution = solution
        self.name = name
        self.acc_dtype = p.compute_dtype
        self.along_m = output_along_m(p)
        self.out, self.k, self.batches = (K.ScalarParam(n, "i64") for n in ("out", "k", "batch"))
        self.alpha = K.ScalarParam("alpha", self.acc_dtype)
        self.beta = K.ScalarParam("beta", self.acc_dtype) if p.beta != 0 else None
        has_bias, self.activation = split_epilogue(p.epilogue)
        matrix, vector = self.batches * self.out * self.k, self.batches * self.k
        counts = ([matrix, vector] if self.along_m else [vector, matrix]) + [self.batches * self.out] * (p.beta != 0) \
            + [1 if self.along_m else self.out] * has_bias + [self.batches * self.out]
        self.params = [K.GlobalBuffer(b.name, b.dtype, c, b.readonly) for b, c in zip(operand_buffers(op), counts)]
        self.matrix_buf, self.vector_buf = (self.params[0], self.params[1]) if self.along_m else \
            (self.params[1], self.params[0])
        self.c_buf = self.params[2] if p.beta != 0 else None
        self.bias_buf = self.params[-2] if has_bias else None
        self.d_buf = self.params[-1]
        self.clamp, clamp_arguments = clamp_parameters(p, self.acc_dtype)
        self.scalars = [self.out, self.k, self.batches, self.alpha] + [self.beta] * (p.beta != 0) + list(self.clamp or ())
        self.arguments = [("out", p.m if self.along_m else p.n), ("k", p.k), ("batch", p.batch), ("alpha", p.alpha)] \
            + [("beta", p.beta)] * (p.beta != 0) + clamp_arguments
        self.batch = K.workgroup_id(1).cast("i64")
        self.x, self.y = K.workitem_id(0).cast("i64"), K.workitem_id(1).cast("i64")

    def widened(self, value: K.Expr) -> K.Expr:
        return value if value.dtype == self.acc_dtype else value.cast(self.acc_dtype)

    def product(self, matrix_index: K.Expr, k: K.Expr) -> K.Expr:
        return (self.widened(self.matrix_buf[self.batch * self.out * self.k + matrix_index])
                * self.widened(self.vector_buf[self.batch * self.k + k]))

    def stored(self, i: K.Expr, total: K.Expr) -> list[K.Stmt]:
        """D[batch, i] = epilogue(total), for an output i inside the output."""
        at = self.batch * self.out + i
        value = total * self.alpha
        if self.c_buf is not None:
            value = value + self.widened(self.c_buf[at]) * self.beta
        if self.bias_buf is not None:
            value = value + self.widened(self.bias_buf[K.Const(0, "i64") if self.along_m else i])
        value = activation_expr(self.activation, value, self.clamp)
        return [K.Store(self.d_buf, at, value.cast(self.problem.result_dtype))]

    def dot_body(self) -> list[K.Stmt]:
        row = K.workgroup_id(0).cast("i64") * ROWS + self.y
        read_row = K.minimum(row, self.out - 1)     # uniform within the wave's reduction
        partial, total, kk = K.Var("partial", self.acc_dtype), K.Var("total", self.acc_dtype), K.Var("kk", "i64")
        k = kk + self.x
        return [K.Let(partial, K.Const(0, self.acc_dtype)),
                K.For(kk, 0, self.k, WAVE, [
                    K.If(k < self.k, [K.Assign(partial, partial + self.product(read_row * self.k + k, k))])],
                    uniform=True),
                K.WaveReduce(total, "sum", partial),
                K.If((self.x.eq(K.Const(0, "i64"))) & (row < self.out), self.stored(row, total))]

    def build(self) -> K.Kernel:
        return K.Kernel(self.name, params=self.params + self.scalars,
                        grid=(K.ceil_div(self.out, ROWS), self.batches, 1), workgroup_size=(WAVE, ROWS, 1),
                        body=self.dot_body(), arguments=self.arguments)


def gemv_kernel(op: Op, solution: GemvSolution, name: str) -> K.Kernel:
    """The kernel of a matrix-vector `solution` computing the library_call `op`."""
    return GemvKernelBuilder(op, solution, name).build()
