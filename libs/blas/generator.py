"""The GEMM kernel generator: a `library_call blas.*` and a `Solution` -> a kernel IR `Kernel`.

    D[b] = epilogue(alpha * op(A[b]) @ op(B[b]) + beta * C[b] + bias)        (routines.py)

One kernel per solution, not per problem: M, N, K, the batch count, alpha and beta are the
kernel's scalar parameters (i64 sizes; alpha and beta in the accumulation dtype), the operands'
element counts and the grid are extents of them (ir/kernel.py: runtime sizes), and the kernel's
`arguments` bind them to the library_call it was emitted for. So every problem that picks a
solution gets the same kernel text and the same object code: a new size costs no LLVM compile
(the compile cache keys object code by Kernel.code_text, which leaves the arguments out). What
the kernel still depends on is the solution's variant: the layouts (trans_a, trans_b), the
dtypes, the epilogue's terms (C, bias, activation) and whether N and K are multiples of the tile
(`Edges`). The host's walk of the grid (N first, or M first when M < N: N_FIRST, M_FIRST) is
chosen at launch. Operands are dense: the leading dimensions and batch strides follow from
M, N and K, at runtime too.

Workgroup (x, y, z) of the grid (ceil(N / MT1), ceil(M / MT0), batch) computes the macro tile of
D at rows m0 = y * MT0, columns n0 = x * MT1 of batch z; the host runs them along M first when A
is the smaller operand (M_FIRST). Main loop, over K in steps of DepthU:

    stage(tile 0 -> LDS buffer 0); barrier
    for t in 0 .. T-1:
        stage(tile min(t+1, T-1) -> LDS buffer (t+1) % 2)   # global reads overlap the math
        multiply the tiles in buffer t % 2 into the accumulators
        barrier

Each K step also prefetches, PREFETCH_TILES blocks ahead, the rows of the operands whose K step
moves to new rows (`prefetched`; ir/kernel.py: Prefetch, a hint the host follows).

The staging `if` is marked alongside (ir/kernel.py): it writes only the buffer the math does not
read, so the host runs each wave's share of it next to that wave's MFMAs: the loads of one wave's
share overlap math.

LDS layout, per operand (`Solution.row_major_lds`): a tile of R rows (M for A, N for B) and DepthU
K values is kept
  - K-major in groups of `k_pack` K values, element (r, k) at ((k // P) * (R + pad) + r) * P + k % P,
    P = k_pack: the values one MFMA lane reads are adjacent (one ds_read of P elements),
    consecutive lanes read consecutive rows (no bank conflicts), and `pad` rows of slack stagger
    consecutive K groups across banks; a packed tile (P > 1) whose rows are contiguous in global
    memory pads instead one entry after every B = lds_row_block rows of each K group, element
    (r, k) at ((k // P) * (R + R / B) + r + r // B) * P + k % P (staging writes it GRVW rows
    apart across lanes: the pad spreads those rows over the banks); or
  - row-major when K is contiguous in global memory (A not transposed, B transposed) and P is 1
    (f32, f64; Tensile's TransposeLDS): element (r, k) at r * (DepthU + W) + k, so staging copies
    rows as they lie instead of transposing them, W = Solution.local_read_vector_width (16 bytes
    of K values where DepthU allows, else 1): a lane reads W consecutive K values of its row at
    once (ds_read_b128), and the odd row stride in W-element units puts consecutive lanes' rows in
    different banks.

Staging: work-item (x, y, z) of the workgroup (X, Y, Z) moves the elements at GRVW * (x + X*u) + w
(w < GRVW: the vector it reads) along the operand's contiguous dimension in global memory (tile
rows, or K) and at y + Y * (z + Z*v) along the other, for every u, v that cover the tile: global
reads are consecutive across x (coalesced on the GPU, vector loads on the host). A packed tile
whose rows are contiguous takes K in runs of P (Solution.staging_k_run, where the tile has a
run for every work-item): the K position y + Y * (z + Z*v) numbers a K group, whose P values the
work-item loads in turn (P vectors), all loads before the stores, so that the backend writes
each of its rows' entries with one ds_write.
A tile entirely inside A or B reads without bounds checks; an edge tile reads zeros outside N and
K (checked, in the variant whose N or K ends inside a tile: Edges) and clamps A's rows to M
(a row past M reads the last row, whose products reach only rows of D that are not stored).

The MFMA kernels' workgroup is (16, 4, waves): lane x + 16 y of a wave is lane i of its run of m
lanes (a row of A, a column of B and D) with i = x + 16 (y mod m/16), in run y div (m/16).

Math, "mfma": wave z of the workgroup owns an (MT0 / waves_m) x (MT1 / waves_n) wave tile of
instruction blocks; per instruction K step, every lane loads its A and B fragments from LDS by
the instruction's lane layout (ir/kernel_mfma.py: row i of a block in lane x, its K group in
lane row y) and the wave issues one `Mfma` per block, accumulating in a private array. With
W > 1 the steps take K in a permuted order, the same for A and B (`fragment_k_group`): step
W t + e reads K value W (k t + run) + e, so a lane's W steps read W consecutive K values.
"valu": work-item (x, y) owns rows y + 16 p and columns x + 16 q of the macro tile (p, q over the
thread tile), an accumulator each, and per K reads its rows of A and columns of B from LDS.

Epilogue, per accumulator: alpha, then beta * C, then the bias, then the activation, in the
accumulation dtype, rounded once to D's dtype; a workgroup on the last rows checks each store
against M, and every workgroup checks against N in the variant whose N ends inside a tile.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

from ...ir import kernel as K
from ...ir.core import Op, Value, make_op
from ...ir.kernel_mfma import Mfma, PrivateSlice
from ...ir.opdef import compute_dtype, infer_types
from ...ir.types import COMPLEXES, TensorType, dtype_name, numpy_dtype
from ...lowering.emitters import operand_buffers
from .routines import CLAMP, gemm_sizes, split_epilogue
from .solutions import Solution, staging_slots

# How many K blocks ahead the operands read along new rows are prefetched (host: on 2 threads,
# 256x1024x1024 f32 alternating between weights that share L3 with the other's, as an MLP's
# layers do, took 1.75-1.78 ms at 2, 3 or 4 blocks ahead and 1.94-2.44 ms without).
PREFETCH_TILES = 3


@dataclass(frozen=True)
class GemmProblem:
    """The sizes, layouts, dtypes and epilogue of one library_call."""
    m: int
    n: int
    k: int
    batch: int
    trans_a: bool
    trans_b: bool
    in_dtype: str
    compute_dtype: str
    result_dtype: str
    alpha: object
    beta: object
    epilogue: str
    clamp: tuple = (None, None)     # the clamp epilogue's bounds (kernel arguments: not in the code)

    @classmethod
    def from_op(cls, op: Op) -> "GemmProblem":
        attrs = op.attrs
        a, b = op.operands[0].type, op.operands[1].type
        if a.dtype in COMPLEXES:
            raise NotImplementedError(f"blas: complex GEMM kernels ({a.dtype}); the graph's complex products "
                                      "reach the library as real GEMMs (passes/expand_complex.py)")
        m, k, _, n = gemm_sizes(a, b, attrs["trans_a"], attrs["trans_b"])
        return cls(m, n, k, math.prod(a.shape[:-2]), attrs["trans_a"], attrs["trans_b"], a.dtype,
                   attrs["compute_dtype"], attrs["result_dtype"], attrs["alpha"], attrs["beta"], attrs["epilogue"],
                   (attrs["clamp_min"], attrs["clamp_max"]))

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.m * self.n * self.k

    @property
    def k_contiguous(self) -> tuple[bool, bool]:
        """Whether A and B keep K contiguous in memory: A not transposed, B transposed."""
        return not self.trans_a, self.trans_b

    def describe(self) -> str:
        layout = ("T" if self.trans_a else "N") + ("T" if self.trans_b else "N")
        batch = f" batch {self.batch}" if self.batch > 1 else ""
        epilogue = f" {self.epilogue}" if self.epilogue != "none" else ""
        return f"{self.m}x{self.n}x{self.k}{batch} {layout} {self.in_dtype}->{self.result_dtype}{epilogue}"


class Operand(NamedTuple):
    """One GEMM operand as staging sees it: its LDS buffer and global buffer, its macro tile's rows
    (MT0 for A, MT1 for B) and the matrix's (M or N), this workgroup's first row, whether rows are
    the contiguous dimension in global memory, one LDS buffer's elements, elements per batch, and
    how rows past the matrix are kept out. A clamped row past M reads row M - 1: a value of A
    whose products only reach rows of D that are never stored, so no bounds check is needed.
    `at` gives the index of element (row, k) in `source` and when it is stored (GemmOperands)."""
    lds: K.LdsBuffer
    source: K.GlobalBuffer
    at: Callable[[K.Expr, K.Expr], tuple[K.Expr, K.Expr | None]]
    rows: int
    extent: K.Expr
    origin: K.Expr
    rows_contiguous: bool
    elements: int
    matrix: K.Expr
    edge: bool          # rows may end inside the tile, checked (B: the variant's N edge)
    clamped: bool       # rows may end inside the tile, read clamped to the last row (A: M, at runtime)


class Edges(NamedTuple):
    """Which of N and K may end inside a tile (MT1, DepthU): the solution's variant for a problem,
    as Tensile's size predicates make one, named in the reports (`name`). A dimension that is a
    multiple of its tile needs no bounds checks along it (the host's edge-free code vectorizes its
    stores and skips the guarded staging: a 1024^3 f32 GEMM runs about 10% faster), so the variant
    follows from the sizes' divisibility, never from the sizes themselves.
    M is never part of a variant: it is the rows of A and D, a model's batch, which changes from
    call to call while its widths (N, K) stay (the walk order that depends on it is chosen at
    launch); every kernel checks at runtime, once per workgroup, whether its macro tile ends inside
    M, and runs the interior tiles without bounds checks (the MLP at batch 100 then runs the
    kernels compiled for batch 256)."""
    n: bool
    k: bool

    @classmethod
    def of(cls, problem: GemmProblem, solution: Solution) -> "Edges":
        return cls(problem.n % solution.mt1 != 0, problem.k % solution.depth_u != 0)

    @property
    def name(self) -> str:
        """The variant's name: the dimensions whose edges the kernel checks ("MNK", "M": M alone)."""
        return "M" + "N" * self.n + "K" * self.k


def gemm_call(m: int, n: int, k: int, in_dtype: str, result_dtype: str, *, batch: int = 1, trans_a: bool = False,
              trans_b: bool = False, alpha=1, beta=0, epilogue: str = "none", clamp_min: float | None = None,
              clamp_max: float | None = None) -> Op:
    """A lone `library_call` of a GEMM problem, as the matcher (matcher.py) builds one from a traced
    program: operands A and B, then C when beta != 0 and the bias when the epilogue has one. For
    tuning, tests and reports on a problem without tracing a program."""
    lead = (batch,) if batch > 1 else ()
    types = [TensorType(in_dtype, lead + ((k, m) if trans_a else (m, k))),
             TensorType(in_dtype, lead + ((n, k) if trans_b else (k, n)))]
    if beta != 0:
        types.append(TensorType(result_dtype, lead + (m, n)))
    if split_epilogue(epilogue)[0]:
        types.append(TensorType(result_dtype, (n,)))
    scalar = numpy_dtype(result_dtype).type
    attrs = dict(library="blas", routine="strided_batched_gemm" if batch > 1 else "gemv" if 1 in (m, n) else "gemm",
                 solution="", trans_a=trans_a, trans_b=trans_b, alpha=scalar(alpha).item(), beta=scalar(beta).item(),
                 epilogue=epilogue, result_dtype=result_dtype,
                 compute_dtype=dtype_name(compute_dtype(numpy_dtype(result_dtype))), clamp_min=clamp_min,
                 clamp_max=clamp_max)
    return make_op("library_call", [Value(t) for t in types], attrs, infer_types("library_call", types, attrs))


def clamp_parameters(problem: GemmProblem, acc_dtype: str) -> tuple[tuple | None, list]:
    """The clamp epilogue's bounds as scalar parameters in the accumulator's dtype (an unbounded side
    clamps at infinity) and their arguments; (None, []) for another epilogue."""
    if split_epilogue(problem.epilogue)[1] != CLAMP:
        return None, []
    low, high = problem.clamp
    bounds = (K.ScalarParam("clamp_min", acc_dtype), K.ScalarParam("clamp_max", acc_dtype))
    return bounds, [("clamp_min", -math.inf if low is None else low), ("clamp_max", math.inf if high is None else high)]


def activation_expr(name: str | None, x: K.Expr, bounds: tuple | None = None) -> K.Expr:
    """The epilogue's activation in kernel IR, as routines.py's ACTIVATIONS define them; the clamp's
    `bounds` are (low, high) expressions."""
    if name is None:
        return x
    if name == CLAMP:
        low, high = bounds
        return K.minimum(K.maximum(x, low), high)
    if name == "relu":
        return K.maximum(x, K.Const(0, x.dtype))
    if name == "relu6":
        return K.minimum(K.maximum(x, K.Const(0, x.dtype)), K.Const(6, x.dtype))
    if name == "sigmoid":
        return K.math("logistic", x)
    if name == "tanh":
        return K.math("tanh", x)
    if name == "silu":
        return x * K.math("logistic", x)
    if name == "gelu_tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * (x * (x * x)))
        return x * (0.5 * (1.0 + K.math("tanh", inner)))
    if name == "gelu_erf":
        return (x * (K.math("erf", x / math.sqrt(2)) + 1.0)) / 2.0
    raise NotImplementedError(f"blas: epilogue activation {name!r}")


class GemmOperands:
    """Where a kernel finds its operands and puts D, as index expressions: here dense matrices (the
    library_call's), element (row, k) of A[b] at b*M*K + row*K + k (k*M + row transposed), (column,
    k) of B[b] at b*K*N + k*N + column (column*K + k transposed), (row, column) of C[b] and D[b] at
    (b*M + row)*N + column, the bias's at column. The sizes M, N, K and the batch count are scalar
    parameters (module docstring). A solver whose operands are not dense matrices gives a subclass
    with its own buffers, scalar parameters and index expressions (libs/dnn's implicit GEMM: A
    gathered from a convolution's input, D scattered into its output). `a` and `b` give, with the
    index, a bool expression for whether the element is stored at all (None: always; elsewhere it
    reads zero), and `gathered` says whether A's elements are anything but a dense matrix's: such a
    kernel prefetches nothing. `gathered_k_runs`: whether A's runs of GRVW K values from a multiple of
    GRVW lie consecutively in memory, stored alike (then the kernel computes one index and check per
    vector, and the loads merge into one vector load)."""
    gathered = False
    gathered_k_runs = False

    def __init__(self, op: Op, problem: GemmProblem):
        self.m, self.n, self.k, self.batches = (K.ScalarParam(name, "i64") for name in ("m", "n", "k", "batch"))
        p = problem
        has_bias = split_epilogue(p.epilogue)[0]
        matrix = {"a": self.m * self.k, "b": self.k * self.n, "d": self.m * self.n}
        counts = [self.batches * matrix["a"], self.batches * matrix["b"]] \
            + [self.batches * matrix["d"]] * (p.beta != 0) + [self.n] * has_bias + [self.batches * matrix["d"]]
        self.buffers = [K.GlobalBuffer(b.name, b.dtype, count, b.readonly)
                        for b, count in zip(operand_buffers(op), counts)]
        self.c_buf = self.buffers[2] if p.beta != 0 else None
        self.bias_buf = self.buffers[-2] if has_bias else None
        self.scalars = [self.m, self.n, self.k, self.batches]
        self.arguments = [("m", p.m), ("n", p.n), ("k", p.k), ("batch", p.batch)]
        self.trans_a, self.trans_b = p.trans_a, p.trans_b

    def a(self, batch: K.Expr, row: K.Expr, k: K.Expr) -> tuple[K.Expr, K.Expr | None]:
        base = batch * (self.m * self.k)
        return base + (k * self.m + row if self.trans_a else row * self.k + k), None

    def b(self, batch: K.Expr, column: K.Expr, k: K.Expr) -> tuple[K.Expr, K.Expr | None]:
        base = batch * (self.k * self.n)
        return base + (column * self.k + k if self.trans_b else k * self.n + column), None

    def d(self, batch: K.Expr, row: K.Expr, column: K.Expr) -> K.Expr:
        """Element (row, column) of D[batch] (and of C[batch])."""
        return (batch * self.m + row) * self.n + column

    def bias(self, batch: K.Expr, column: K.Expr) -> K.Expr:
        return column


class GemmKernelBuilder:
    """Builds the kernel of one (problem, solution) on `operands` (dense ones by default); see the
    module docstring."""

    def __init__(self, problem: GemmProblem, solution: Solution, name: str, operands: GemmOperands):
        self.problem = p = problem
        self.solution = s = solution
        self.name = name
        self.operands_at = operands
        self.acc_dtype = p.compute_dtype
        self.edges = Edges.of(p, s)
        # 64-bit index arithmetic: the host vectorizes the staging and fragment loops only when
        # addresses are affine in the work-item id, which 32-bit math (wrapping, sign-extended) hides.
        self.dtype = "i64"
        # The problem's sizes and scalars: kernel parameters, bound by `arguments` (module docstring).
        self.m, self.n, self.k, self.batches = operands.m, operands.n, operands.k, operands.batches
        self.alpha = K.ScalarParam("alpha", self.acc_dtype)
        self.beta = K.ScalarParam("beta", self.acc_dtype) if p.beta != 0 else None
        self.activation = split_epilogue(p.epilogue)[1]
        self.params = operands.buffers
        self.a_buf, self.b_buf = self.params[0], self.params[1]
        self.c_buf, self.bias_buf, self.d_buf = operands.c_buf, operands.bias_buf, self.params[-1]
        self.clamp, clamp_arguments = clamp_parameters(p, self.acc_dtype)
        self.scalars = operands.scalars + [self.alpha] + [self.beta] * (p.beta != 0) + list(self.clamp or ())
        self.arguments = operands.arguments + [("alpha", p.alpha)] + [("beta", p.beta)] * (p.beta != 0) \
            + clamp_arguments
        # Ids and tile origins are expressions, not variables: every region recomputes them from
        # the ids (on the host, a variable read in several regions would live in a per-work-item
        # array, and addresses loaded from memory stop the work-item loops from vectorizing).
        self.x, self.y, self.z = (K.workitem_id(d).cast(self.dtype) for d in range(3))
        if s.kind == "mfma":
            # A wave's lane is x + 16 y: its place in its run of m lanes (a row of A, a column of
            # B and D) and which run it is in (its K group of A and B, its row group of D).
            runs_per_y = s.spec.m // s.workgroup_size[0]
            self.run_rows = s.workgroup_size[0] * (self.y % runs_per_y) if runs_per_y > 1 else self.const(0)
            self.lane_in_run = self.x + self.run_rows if runs_per_y > 1 else self.x
            self.run = self.y / runs_per_y if runs_per_y > 1 else self.y
        self.n0 = K.workgroup_id(0).cast(self.dtype) * s.mt1
        self.m0 = K.workgroup_id(1).cast(self.dtype) * s.mt0
        self.batch = K.workgroup_id(2).cast(self.dtype)
        self.a_elements, self.b_elements = s.lds_elements(*p.k_contiguous)
        self.a_lds = K.LdsBuffer("a_lds", p.in_dtype, 2 * self.a_elements)
        self.b_lds = K.LdsBuffer("b_lds", p.in_dtype, 2 * self.b_elements)
        self.acc = K.PrivateArray("acc", self.acc_dtype, s.accumulators())

    def const(self, value) -> K.Const:
        return K.Const(value, self.dtype)

    # -- staging: global -> LDS --

    def lds_index(self, tile_rows: int, row: K.Expr, k_group: K.Expr, within: K.Expr | int, k_contiguous: bool,
                  aligned_row: K.Expr | None = None) -> K.Expr:
        """Where element (row, k) of an operand tile lies in one LDS buffer (module docstring), with
        k = k_group * k_pack + within (whose parts the fragment loads know without dividing).
        `aligned_row`, when given, is `row` less the work-item's x (a multiple of the workgroup's 16
        x lanes): the padding after every lds_row_block rows then follows from it alone, and the
        index stays affine in x (the host's work-item loops vectorize such accesses)."""
        s = self.solution
        stride = s.lds_stride(tile_rows, k_contiguous)
        if s.row_major_lds(k_contiguous):
            return row * stride + k_group + within   # k_pack is 1
        block = s.lds_row_block(k_contiguous)
        if block is None:
            entry = row
        elif aligned_row is not None and block % s.workgroup_size[0] == 0:
            entry = row + aligned_row / block
        else:
            entry = row + row / block
        return k_group * stride + entry * s.k_pack + within

    def lds_index_of_k(self, tile_rows: int, row: K.Expr, k: K.Expr, k_contiguous: bool,
                       aligned_row: K.Expr | None = None) -> K.Expr:
        pack = self.solution.k_pack
        if pack == 1:
            return self.lds_index(tile_rows, row, k, 0, k_contiguous, aligned_row)
        return self.lds_index(tile_rows, row, k / pack, k % pack, k_contiguous, aligned_row)

    def operands(self) -> list[Operand]:
        p, s = self.problem, self.solution
        at = self.operands_at
        return [Operand(self.a_lds, self.a_buf, lambda row, k: at.a(self.batch, row, k), s.mt0, self.m, self.m0,
                        p.trans_a, self.a_elements, self.m * self.k, False, True),
                Operand(self.b_lds, self.b_buf, lambda column, k: at.b(self.batch, column, k), s.mt1, self.n,
                        self.n0, not p.trans_b, self.b_elements, self.k * self.n, self.edges.n, False)]

    def stage(self, operand: Operand, tile: K.Expr, buffer: K.Expr, guarded: bool, clamp: bool) -> list[K.Stmt]:
        """Statements moving K block `tile` of one operand into LDS buffer `buffer` (0 or 1), with
        bounds checks (`guarded`) and clamped rows (`clamp`) where the operand's edges need them."""
        p, s = self.problem, self.solution
        lds, source, at, rows, extent, origin, rows_contiguous, elements, matrix, edge, clamped = operand
        wx, wy, wz = s.workgroup_size
        grvw = s.global_read_vector_width
        stmts, loads, entry_stores = [], [], []
        k0 = tile * s.depth_u
        along_yz = self.y + wy * self.z if wz > 1 else self.y
        # x runs along the contiguous dimension (so the global reads are consecutive, and for
        # rows the LDS writes too), y and z along the other, where that is K in runs of k_run
        # consecutive K values: a work-item then writes each of its rows' runs whole.
        k_run = s.staging_k_run(rows, not rows_contiguous)
        runs = source is self.a_buf and self.operands_at.gathered_k_runs
        x_extent, yz_extent = (rows, s.depth_u // k_run) if rows_contiguous else (s.depth_u, rows)
        slots = staging_slots(x_extent, yz_extent, (wx, wy, wz), grvw)
        for slot, j, w in ((slot, j, w) for slot in slots for j in range(k_run) for w in range(grvw)):
            if slot.flat is None:
                along_vectors = self.x + wx * slot.u
                across = along_yz + wy * wz * slot.v
            else:
                # A block narrower than the workgroup's x (or shorter than its y z): the
                # work-items, numbered flat, take consecutive vectors of its rows in turn.
                vector = self.x + wx * along_yz + slot.flat
                along_vectors = vector % (x_extent // grvw)
                across = vector / (x_extent // grvw)
            along_x = along_vectors * grvw + w if grvw > 1 else along_vectors
            # Rows x + X*u: the rows less x are X*u.
            aligned_row = self.const(wx * slot.u) if rows_contiguous and slot.flat is None and grvw == 1 else None
            if k_run > 1:
                # `across` numbers the K group, whose value j this is.
                row_local, k_local = along_x, across * k_run + j
                target = self.lds_index(rows, row_local, across, j, False, aligned_row)
            elif not rows_contiguous and s.k_pack > 1 and grvw % s.k_pack == 0:
                # The vector's K groups and places in them, known without dividing its K.
                row_local, k_local = across, along_x
                groups = along_vectors * (grvw // s.k_pack) if grvw > s.k_pack else along_vectors
                target = self.lds_index(rows, row_local, groups + w // s.k_pack, w % s.k_pack, True)
            else:
                row_local, k_local = (along_x, across) if rows_contiguous else (across, along_x)
                target = self.lds_index_of_k(rows, row_local, k_local, not rows_contiguous, aligned_row)
            row, k = origin + row_local, k0 + k_local
            read = K.minimum(row, extent - 1) if clamp and clamped else row
            if w > 0 and runs and not rows_contiguous:
                # The vector's K values lie consecutively from its first one's, stored alike.
                index, stored = first[0] + w, first[1]
            else:
                index, stored = first = at(read, k)
            target = buffer * elements + target
            value = source[index]
            checks = ([row < extent] if guarded and edge else []) + ([k < self.k] if guarded and self.edges.k else [])
            if checks or stored is not None:
                inside = all_of(checks + ([stored] if stored is not None else []))
                stmts.append(K.If(inside, [K.Store(lds, target, value)],
                                  [K.Store(lds, target, K.Const(0, p.in_dtype))]))
            elif k_run > 1:
                # Every value loaded before the first store, the loads vector by vector and the
                # stores entry by entry: the backend merges a run's stores into one wide ds_write
                # only when no global load lies between them, and looks for them among nearby
                # stores (LLVM's load-store vectorizer scans 64 instructions).
                loaded = K.Var(f"{lds.name}_staged{len(loads)}", p.in_dtype)
                loads.append(K.Let(loaded, value))
                entry_stores.append(((slot, w, j), K.Store(lds, target, loaded)))
            else:
                stmts.append(K.Store(lds, target, value))
        return loads + [store for _, store in sorted(entry_stores, key=lambda pair: pair[0])] + stmts

    def batch_base(self, matrix: K.Expr) -> K.Expr:
        """This workgroup's first element in an operand of `matrix` elements per batch."""
        return self.batch * matrix

    def block_inside(self, operand: Operand, tile: K.Expr, rows: bool = True) -> K.Expr | None:
        """Whether K block `tile` of an operand's macro tile lies inside the matrix (along K only,
        without `rows`); None where the variant (Edges) says it always does."""
        return all_of(([operand.origin + operand.rows <= operand.extent] if rows and (operand.edge or operand.clamped)
                       else []) + ([(tile + 1) * self.solution.depth_u <= self.k] if self.edges.k else []))

    def staged(self, tile: K.Expr, buffer: K.Expr) -> list[K.Stmt]:
        """stage() for A, then for B, each without bounds checks when its DepthU x macro-tile block
        lies inside the matrix (two uniform ifs: on the host, two work-item loops that vectorize
        on their own, the contiguous one fully). An operand whose blocks are all inside (Edges)
        still gets a uniform if of its own, on a true condition: in one work-item loop with the
        other operand's staging, LLVM vectorizes the pair only behind runtime pointer checks
        (a 1024^3 f32 GEMM ran 40% slower so).
        A's rows are clamped (Operand): when they run across the work-items, clamping costs one
        minimum per row, and every tile runs the clamped copy; when they are the contiguous
        dimension, it would stop the loads from being consecutive, and only the last tile runs it."""
        stmts = []
        for operand in self.operands():
            clamp_always = operand.clamped and not operand.rows_contiguous
            inside = self.block_inside(operand, tile, rows=not clamp_always)
            unguarded = self.stage(operand, tile, buffer, False, clamp_always)
            checked = self.edges.k or operand.edge
            stmts.append(K.If(K.Const(True, "bool"), unguarded, uniform=True) if inside is None else
                         K.If(inside, unguarded, self.stage(operand, tile, buffer, checked, True), uniform=True))
        return stmts

    def prefetched(self, tile: K.Expr) -> list[K.Stmt]:
        """Prefetches of K block `tile` of each operand whose K step moves to new rows of global
        memory (B not transposed, A transposed): a run of MT elements in each of DepthU rows, which
        the host's hardware prefetcher does not see coming. An operand read along K (A not
        transposed) streams each row, which it does follow."""
        depth = self.solution.depth_u
        stmts = []
        for operand in self.operands():
            if operand.rows_contiguous and not self.operands_at.gathered:
                start = self.batch_base(operand.matrix) + tile * depth * operand.extent + operand.origin
                prefetch = K.Prefetch(operand.source, start, depth, operand.extent, operand.rows)
                inside = self.block_inside(operand, tile)
                stmts.append(prefetch if inside is None else K.If(inside, [prefetch], uniform=True))
        return stmts

    # -- the kernel --

    def build(self) -> K.Kernel:
        s = self.solution
        d = self.dtype
        steps = K.ceil_div(self.k, s.depth_u)
        t = K.Var("t", d)
        math_step = self.mfma_step if s.kind == "mfma" else self.valu_step
        body = [K.Store(self.acc, r, K.Const(0, self.acc_dtype)) for r in range(self.acc.count)]
        body += [K.If(self.k > 0, [
            *self.staged(self.const(0), self.const(0)), K.Barrier(),
            K.For(t, 0, steps, 1, [
                K.If(t + PREFETCH_TILES < steps, self.prefetched(t + PREFETCH_TILES), uniform=True),
                # The next tile goes to the other LDS buffer, which the math does not read. The
                # last trip stages the last tile again, unread: every trip stages, so the loop body
                # has one path and the GPU's MFMAs accumulate in place (a path without staging
                # left the accumulators in other registers at the join: a copy of each per trip).
                K.If(K.Const(True, "bool"), self.staged(K.minimum(t + 1, steps - 1), (t + 1) % 2), uniform=True,
                     alongside=True),
                *math_step(t % 2),
                K.Barrier()], uniform=True)], uniform=True)]
        body += self.epilogue()
        x, y, z = s.workgroup_size
        return K.Kernel(self.name, params=self.params + self.scalars,
                        grid=(K.ceil_div(self.n, s.mt1), K.ceil_div(self.m, s.mt0), self.batches),
                        workgroup_size=(x, y, z), body=body, lds=[self.a_lds, self.b_lds], private=[self.acc],
                        grid_order=N_FIRST, alternate_grid_order=(self.m < self.n, M_FIRST),
                        arguments=self.arguments)

    def widened(self, value: K.Expr) -> K.Expr:
        return value if value.dtype == self.acc_dtype else value.cast(self.acc_dtype)

    def mfma_step(self, buffer: K.Expr) -> list[K.Stmt]:
        """Fragments of the DepthU block from LDS, then one Mfma per instruction K step and block."""
        s = self.solution
        inst = s.spec
        pack, (blocks_m, blocks_n) = s.k_pack, s.blocks
        a_k_contiguous, b_k_contiguous = self.problem.k_contiguous
        wave_m, wave_n = self.z / s.waves[1], self.z % s.waves[1]
        loads, issues = [], []
        for step in range(s.depth_u // inst.k):
            fragments = {}
            for operand, lds, rows, count, wave_origin, elements, k_contiguous in (
                    ("a", self.a_lds, s.mt0, blocks_m, wave_m * s.wave_tile[0], self.a_elements, a_k_contiguous),
                    ("b", self.b_lds, s.mt1, blocks_n, wave_n * s.wave_tile[1], self.b_elements, b_k_contiguous)):
                for block in range(count):
                    row = wave_origin + block * inst.m + self.lane_in_run
                    aligned_row = wave_origin + block * inst.m + self.run_rows
                    k_group, k_offset = self.fragment_k_group(step)
                    values = []
                    for e in range(pack):
                        var = K.Var(f"{operand}{block}_{step}_{e}", self.problem.in_dtype)
                        if s.row_major_lds(k_contiguous):
                            # The constant last: the backend sees a lane's W values at one address
                            # plus 0 .. W-1 and reads them at once.
                            index = self.lds_index(rows, row, k_group, k_offset, k_contiguous)
                        else:
                            index = self.lds_index(rows, row, k_group + k_offset, e, k_contiguous, aligned_row)
                        index = buffer * elements + index
                        loads.append(K.Let(var, lds[index]))
                        values.append(var)
                    fragments[operand, block] = values
            for bm in range(blocks_m):
                for bn in range(blocks_n):
                    accumulator = PrivateSlice(self.acc, (bm * blocks_n + bn) * inst.d_elements, inst.d_elements)
                    issues.append(Mfma(inst.name, accumulator, fragments["a", bm], fragments["b", bn], accumulator))
        return loads + issues

    def fragment_k_group(self, step: int) -> tuple[K.Expr, int]:
        """The K group (of k_pack values) this lane reads for instruction K step `step`, as a term of
        the lane's run and a constant: its run + step * k / k_pack, or, with a
        local_read_vector_width W > 1, element e = step % W of the W consecutive K values its run
        reads at once for W steps: W * run + t * W * k + e for t = step // W. The sum over K is the
        same in any order, and A and B read alike."""
        s = self.solution
        inst, width = s.spec, s.local_read_vector_width
        if width == 1:
            return self.run, step * (inst.k // s.k_pack)
        t, e = divmod(step, width)
        return width * self.run, t * width * inst.k + e

    def valu_step(self, buffer: K.Expr) -> list[K.Stmt]:
        s = self.solution
        rows, columns = s.thread_tile
        wx, wy = s.workgroup_size[:2]
        stmts = []
        a_k_contiguous, b_k_contiguous = self.problem.k_contiguous
        for k in range(s.depth_u):
            a = [self.widened(self.a_lds[buffer * self.a_elements
                                         + self.lds_index_of_k(s.mt0, self.y + wy * i, self.const(k), a_k_contiguous)])
                 for i in range(rows)]
            b = [self.widened(self.b_lds[buffer * self.b_elements
                                         + self.lds_index_of_k(s.mt1, self.x + wx * j, self.const(k), b_k_contiguous)])
                 for j in range(columns)]
            stmts += [K.Store(self.acc, i * columns + j, self.acc[i * columns + j] + a[i] * b[j])
                      for i in range(rows) for j in range(columns)]
        return stmts

    # -- the epilogue --

    def accumulator_positions(self):
        """(accumulator index, row in the macro tile, column in it) of each accumulator value."""
        s = self.solution
        if s.kind == "valu":
            rows, columns = s.thread_tile
            wx, wy = s.workgroup_size[:2]
            for i in range(rows):
                for j in range(columns):
                    yield i * columns + j, self.y + wy * i, self.x + wx * j
            return
        inst = s.spec
        height = 1 if inst.out_dtype == "f64" else 4
        groups = inst.wave_size // inst.n
        wave_m, wave_n = self.z / s.waves[1], self.z % s.waves[1]
        for r in range(inst.d_elements):
            # D[i][j] of register r in lane j + n * g: i = H*R*(r // H) + H*g + r % H.
            for g in range(groups):
                assert inst.d_layout(0, height * groups * (r // height) + height * g + r % height, 0) == (inst.n * g, r)
            i_of_r = height * groups * (r // height) + r % height
            for bm in range(s.blocks[0]):
                for bn in range(s.blocks[1]):
                    index = (bm * s.blocks[1] + bn) * inst.d_elements + r
                    row = wave_m * s.wave_tile[0] + bm * inst.m + self.run * height + i_of_r
                    yield index, row, wave_n * s.wave_tile[1] + bn * inst.n + self.lane_in_run

    def epilogue(self) -> list[K.Stmt]:
        """The stores of D: a workgroup whose macro tile ends inside M (checked once, at runtime:
        Edges) stores every row without checking it, one on the last rows checks each. (One copy
        that checks every store compiles 5-20% faster, but ran a 2048^3 f32 GEMM 13% slower.)"""
        return [K.If(self.m0 + self.solution.mt0 <= self.m, self.stores(rows_checked=False),
                     self.stores(rows_checked=True), uniform=True)]

    def stores(self, rows_checked: bool) -> list[K.Stmt]:
        p = self.problem
        stmts = []
        for index, row_local, column_local in self.accumulator_positions():
            row, column = self.m0 + row_local, self.n0 + column_local
            at = self.operands_at.d(self.batch, row, column)
            # Multiplying by an alpha or beta of 1 changes no value (x * 1 is x, for -0, inf and NaN too).
            value = self.acc[index] * self.alpha
            if self.c_buf is not None:
                value = value + self.widened(self.c_buf[at]) * self.beta
            if self.bias_buf is not None:
                value = value + self.widened(self.bias_buf[self.operands_at.bias(self.batch, column)])
            value = activation_expr(self.activation, value, self.clamp)
            inside = all_of(([row < self.m] if rows_checked else []) + ([column < self.n] if self.edges.n else []))
            if inside is not None:
                stmts.append(K.If(inside, [K.Store(self.d_buf, at, value.cast(p.result_dtype))]))
                continue
            # Each value a variable of its own, so that the host stores it in a work-item loop of
            # its own (codegen/host.py: split_regions): one loop holding every row's store would
            # have to prove that rows N apart never overlap, which it cannot for a runtime N, and
            # stays scalar (a 2048^3 f32 GEMM ran 14% slower so).
            result = K.Var(f"d{index}", p.result_dtype)
            stmts += [K.Let(result, value.cast(p.result_dtype)), K.Store(self.d_buf, at, result)]
        return stmts


def all_of(conditions: list[K.Expr]) -> K.Expr | None:
    """The conjunction of bool conditions; None for none."""
    return functools.reduce(lambda a, b: a & b, conditions) if conditions else None


# The orders the host runs a GEMM's workgroups in (Kernel.grid_order): consecutive workgroups share
# the panel of the operand read once, and the other operand is read again for each of them. The
# smaller operand is the one read again: its reuse distance is then its own size, which stays in
# cache better than the larger one's. So the grid walks the tiles along N first (sharing A's panel)
# by default, and along M first (sharing B's) when A is the smaller, M < N: an alternate order the
# kernel chooses at launch (Kernel.alternate_grid_order), so that M stays out of its variant.
N_FIRST, M_FIRST = (0, 1, 2), (1, 0, 2)


def gemm_kernel(op: Op, solution: Solution, name: str) -> K.Kernel:
    """The kernel of `solution` computing the library_call `op`."""
    problem = GemmProblem.from_op(op)
    return GemmKernelBuilder(problem, solution, name, GemmOperands(op, problem)).build()
