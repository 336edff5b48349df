"""Kernel IR: one structured SIMT program, written per work-item, as a HIP kernel is.

The graph->kernel lowering (lowering/) and the libraries emit this IR; the backends
(codegen/llvm_kernel.py's KernelBuilder and its siblings: the host CPU's, AMDGPU's) lower the
very same objects, so every target computes the same results. DESIGN.md ("Kernel IR and the
execution model") is the specification; this module is the data model, printed by
`ir/kernel_printer.py` and checked by `ir/kernel_verifier.py`.

Building a kernel (an elementwise `y = exp(x)` over n elements, with a tail):

    from cdnajit.ir import kernel as K
    x = K.GlobalBuffer("x", "f32", n, readonly=True)
    y = K.GlobalBuffer("y", "f32", n)
    i = K.Var("i", "i32")
    body = [K.Let(i, K.workgroup_id(0) * 64 + K.workitem_id(0)),
            K.If(i < n, [K.Store(y, i, K.exp(x[i]))])]
    kernel = K.Kernel("exp", params=[x, y], grid=(-(-n // 64),), workgroup_size=(64,), body=body)
    K.verify(kernel); print(kernel)

Semantics
- Every work-item of every workgroup runs `body`. Variables (`Var`) are per-work-item mutable
  locals, block scoped as in C: `Let` defines one, `Assign` changes it.
- Memory: global buffers (the kernel's buffer parameters, `count` elements each), LDS buffers
  (one per workgroup, shared by its work-items) and private arrays (one per work-item).
  Indices are element indices of any integer dtype; out-of-range access is undefined.
- Expressions are typed scalar trees; `Expr.dtype` is their dtype. Python numbers combine with
  an expression as weakly typed constants of the expression's dtype (`i + 1`, `x * 0.5`).
  `==`/`!=` keep Python's meaning (identity); compare with `.eq()` / `.ne()`.
- f16 and bf16 values are computed in f32 and rounded to their dtype after every operation,
  so a kernel gives the same bits as the graph interpreter, which rounds after each op.
  Integer arithmetic wraps; integer division follows the graph IR's `div`/`rem` (x/0 = -1,
  x%0 = x); float->int casts saturate and map NaN to 0, as the graph IR's `convert`. `Bitcast`
  reads a value's bits as another non-bool dtype of the same width, NaN payloads and all.
- `For(var, start, stop, step)` runs var = start, start+step, ... while var < stop (step > 0).
  `expected_trips`, where the bounds are data (a CSR row's entries), is the trips its producer
  expects a work-item to run: an extent of the scalar parameters, a cost hint for choosing where a
  launch runs (runtime/launch.py: statements_per_item); no result or code depends on it.
  `ForSpan(var, start, per_item, body)` runs body for the workgroup's per_item x size elements
  from start, per_item per work-item, in an assignment the backend picks (its docstring).
  `SpanOffset(per_item, k)` is that assignment as an expression: where the work-item's k-th
  element lies in such a span, for kernels that keep what they compute per element across barriers
  and wave ops (a row reduction's elements, held in registers from phase to phase); its `part`
  "row" or "column" is that offset's place in the span seen as per_item rows of workgroup-size
  elements (libs/dnn/winograd.py: rows of tiles, columns of features).
  `uniform=True` on a `For` or `If` promises every work-item of the workgroup takes the same
  path; only then may its body hold a `Barrier` or a wave op (the verifier checks both).
- Between workgroups: `AtomicRMW` (add or exchange on an integer element of a written global
  buffer, sequentially consistent, giving the old value; or a relaxed add, of floats too) and `While` (a loop while a condition
  holds, with no barrier or wave op inside) let a work-item take an ordered ticket and wait for a
  word another workgroup publishes. A launch promises no order or concurrency of workgroups, so a
  workgroup may wait only for one that has started: one whose ticket came before its own
  (libs/prim/lookback.py). Within a workgroup: `AtomicRMW` on an LDS buffer, indivisible against
  the workgroup's other atomics on that element but ordered with its other accesses only by a
  barrier (a block histogram's counters: libs/prim/histogram.py).
- Wave ops (`WaveOp` subclasses) are collective over the W lanes of a wave (lane = linear
  work-item id % W), W being `Kernel.wave_size`: the target's, 64 on every CDNA accelerator.
  `WaveReduce` combines with a xor butterfly, offsets W/2, W/4, ..., 1 (lane l takes
  op(v[l], v[l ^ offset]) at each step), so every lane holds the same result, identical to a
  pairwise tree v[:W/2] op v[W/2:], then halves again, ...; f16/bf16 values are combined in f32
  and rounded once. `WaveShuffle` reads `value` from lane `src_lane % W` of the same wave
  (HIP's `__shfl`); `WaveMove` reads it from a lane a fixed pattern names (`WAVE_MOVES`: GFX9's
  DPP row shifts and row broadcasts, with which rocPRIM scans a wave). `WaveBallot` gives every
  lane the u64 mask of the lanes whose predicate holds (bit l for lane l: HIP's `__ballot`), and `WaveCountBelow` each lane the number of set bits of a
  u64 mask in the lanes below its own (`v_mbcnt_lo/hi`): together a lane's rank among the lanes
  that hold a flag, as rocPRIM's stream compaction and block radix rank compute it. `WaveMatchRank`
  groups the lanes by the low bits of an integer (rocPRIM's match_any) and gives each lane its rank
  in its group and whether it is the group's last lane: a stable ranking of digits across the wave.
  All three need W = 64.

Extension point for wave-level matrix ops (MFMA): subclass `WaveOp`, list the Vars it
defines in `defines()` and the per-lane expressions it reads in `reads()`, give the verifier its
type rule in `check(error, wave_size)`, and register each backend's lowering
(`codegen.host.register_wave_op(cls, lower)`, which sees all the wave's lanes at once, and
`codegen.amdgpu.register_wave_op(cls, lower)`, which runs per work-item).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .targets import get_target
from .types import FLOATS, INTS, NUMPY_DTYPES, SIGNED_INTS, UNSIGNED_INTS

DTYPES = ("bool",) + INTS + FLOATS


# ---- expressions ------------------------------------------------------------------------

def as_expr(value, dtype: str) -> "Expr":
    """`value` if it is an expression, else a constant of `dtype` (weak typing of Python numbers)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        return Const(value, dtype)
    raise TypeError(f"kernel IR: cannot use {value!r} of type {type(value).__name__} as an expression")


def fold_integer(op: str, a: "Expr", b: "Expr") -> "Expr | None":
    """`a op b` of integers without an instruction where the answer is plain: constants combined
    (wrapping, as the kernel's arithmetic does), x + 0, x - 0, x * 1, x * 0, x / 1, x % 1. Index
    arithmetic is full of them (a tile's first row is 0 * stride + ...), and each would cost a
    backend instruction to build and optimize away. None where there is nothing to fold."""
    ca = a.value if isinstance(a, Const) else None
    cb = b.value if isinstance(b, Const) else None
    if ca is not None and cb is not None and op in ("add", "sub", "mul"):
        dtype = NUMPY_DTYPES[a.dtype]
        with np.errstate(all="ignore"):
            x, y = np.array(ca, dtype), np.array(cb, dtype)
            return Const((x + y) if op == "add" else (x - y) if op == "sub" else (x * y), a.dtype)
    if op == "add":
        return b if ca == 0 else a if cb == 0 else None
    if op == "sub":
        return a if cb == 0 else None
    if op == "mul":
        if ca == 0 or cb == 0:
            return Const(0, a.dtype)
        return b if ca == 1 else a if cb == 1 else None
    if op == "div":
        return a if cb == 1 else None
    if op == "rem":
        return Const(0, a.dtype) if cb == 1 else None
    return None


class Expr:
    """A typed scalar expression. Subclasses are frozen dataclasses with a `dtype`."""
    dtype: str

    def _binary(self, op, other, swap=False):
        other = as_expr(other, self.dtype)
        a, b = (other, self) if swap else (self, other)
        folded = fold_integer(op, a, b) if a.dtype in INTS and b.dtype == a.dtype else None
        return Binary(op, a, b) if folded is None else folded

    def __add__(self, other): return self._binary("add", other)
    def __radd__(self, other): return self._binary("add", other, swap=True)
    def __sub__(self, other): return self._binary("sub", other)
    def __rsub__(self, other): return self._binary("sub", other, swap=True)
    def __mul__(self, other): return self._binary("mul", other)
    def __rmul__(self, other): return self._binary("mul", other, swap=True)
    def __truediv__(self, other): return self._binary("div", other)
    def __rtruediv__(self, other): return self._binary("div", other, swap=True)
    def __mod__(self, other): return self._binary("rem", other)
    def __and__(self, other): return self._binary("and", other)
    def __or__(self, other): return self._binary("or", other)
    def __xor__(self, other): return self._binary("xor", other)
    def __lshift__(self, other): return self._binary("shift_left", other)

    def __rshift__(self, other):  # as C: arithmetic for signed integers, logical for unsigned
        logical = self.dtype in UNSIGNED_INTS
        return self._binary("shift_right_logical" if logical else "shift_right_arithmetic", other)

    def __neg__(self): return Unary("neg", self)
    def __invert__(self): return Unary("not", self)
    def __lt__(self, other): return Compare("lt", self, as_expr(other, self.dtype))
    def __le__(self, other): return Compare("le", self, as_expr(other, self.dtype))
    def __gt__(self, other): return Compare("gt", self, as_expr(other, self.dtype))
    def __ge__(self, other): return Compare("ge", self, as_expr(other, self.dtype))
    def eq(self, other): return Compare("eq", self, as_expr(other, self.dtype))
    def ne(self, other): return Compare("ne", self, as_expr(other, self.dtype))

    def cast(self, dtype: str) -> "Expr":
        return Cast(self, dtype)

    def bitcast(self, dtype: str) -> "Expr":
        return Bitcast(self, dtype)

    def __bool__(self):
        # Python's `and`, `or`, `not`, `if` and chained comparisons (`0 <= i < n` is `0 <= i and i < n`)
        # would ask for a truth value and silently keep one side of a condition.
        raise TypeError("a kernel expression has no truth value when the kernel is built: combine conditions "
                        "with `&`, `|` and `~`, and write `(0 <= i) & (i < n)` for a chained comparison")

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: bool | int | float
    dtype: str

    def __post_init__(self):
        # Hold the value as the dtype stores it (0.1 in f32 is not 0.1), as a Python scalar.
        if self.dtype in DTYPES:
            with np.errstate(all="ignore"):
                stored = np.array(self.value).astype(NUMPY_DTYPES[self.dtype])
            object.__setattr__(self, "value", float(stored) if self.dtype in FLOATS else stored.item())


@dataclass(frozen=True, eq=False)
class Var(Expr):
    """A per-work-item variable; `Var("i", "i32")` anywhere names the same variable `i`."""
    name: str
    dtype: str


@dataclass(frozen=True, eq=False)
class ScalarParam(Expr):
    """A scalar kernel argument, passed by value and the same for every work-item."""
    name: str
    dtype: str


UNARY_OPS = ("neg", "not")  # not: logical on bool, bitwise on integers
ARITHMETIC_OPS = ("add", "sub", "mul", "div", "rem", "max", "min")
# Shifts by an amount outside [0, bits) give 0 (or the sign for an arithmetic right shift).
SHIFT_OPS = ("shift_left", "shift_right_arithmetic", "shift_right_logical")
BITWISE_OPS = ("and", "or", "xor") + SHIFT_OPS
COMPARE_OPS = ("lt", "le", "gt", "ge", "eq", "ne")


@dataclass(frozen=True, eq=False)
class Unary(Expr):
    op: str
    x: Expr

    @property
    def dtype(self): return self.x.dtype


@dataclass(frozen=True, eq=False)
class Binary(Expr):
    op: str
    a: Expr
    b: Expr

    @property
    def dtype(self): return self.a.dtype


@dataclass(frozen=True, eq=False)
class Compare(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: ClassVar[str] = "bool"


@dataclass(frozen=True, eq=False)
class Select(Expr):
    cond: Expr
    on_true: Expr
    on_false: Expr

    @property
    def dtype(self): return self.on_true.dtype


@dataclass(frozen=True, eq=False)
class Cast(Expr):
    x: Expr
    dtype: str


@dataclass(frozen=True, eq=False)
class Bitcast(Expr):
    """x's bits read as `dtype`, a non-bool dtype of x's width (the graph IR's `bitcast_convert`
    of equal widths; kernels build different widths from integer shifts and casts of these)."""
    x: Expr
    dtype: str


# Math functions by name: arity and the dtypes they take (the result has the operand dtype,
# but for is_finite). Names are the graph IR's op names; codegen/mathlib.py implements them.
MATH_FUNCTIONS: dict[str, tuple[int, tuple[str, ...]]] = {
    **{name: (1, FLOATS) for name in (
        "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "tanh", "logistic", "erf",
        "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "cbrt", "sqrt", "rsqrt",
        "floor", "ceil", "trunc", "round", "is_finite")},
    "abs": (1, SIGNED_INTS + UNSIGNED_INTS + FLOATS),
    "sign": (1, SIGNED_INTS + UNSIGNED_INTS + FLOATS),
    "atan2": (2, FLOATS),
    "pow": (2, FLOATS),
    "fma": (3, ("f32", "f64")),   # a*b + c rounded once (the complex product's parts)
}


@dataclass(frozen=True, eq=False)
class Math(Expr):
    fn: str
    args: tuple[Expr, ...]

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))

    @property
    def dtype(self): return "bool" if self.fn == "is_finite" else self.args[0].dtype


def math(fn: str, *args) -> Math:
    first = next((a for a in args if isinstance(a, Expr)), None)
    dtype = first.dtype if first is not None else "f32"
    return Math(fn, tuple(as_expr(a, dtype) for a in args))


def _math_constructor(fn):
    def build(*args):
        return math(fn, *args)
    build.__name__ = build.__qualname__ = fn
    build.__doc__ = f"`{fn}` of the arguments (see codegen/mathlib.py for its error bound)."
    return build


# exp(x), log(x), pow(x, y), ... as module-level constructors.
globals().update({fn: _math_constructor(fn) for fn in MATH_FUNCTIONS})


def maximum(a, b) -> Binary:
    """NaN-propagating maximum (the graph IR's `max`)."""
    return a._binary("max", b) if isinstance(a, Expr) else as_expr(b, "f32")._binary("max", a, swap=True)


def minimum(a, b) -> Binary:
    return a._binary("min", b) if isinstance(a, Expr) else as_expr(b, "f32")._binary("min", a, swap=True)


def select(cond, on_true, on_false) -> Select:
    dtype = next((v.dtype for v in (on_true, on_false) if isinstance(v, Expr)), "f32")
    return Select(cond, as_expr(on_true, dtype), as_expr(on_false, dtype))


SPECIAL_KINDS = ("workitem_id", "workgroup_id", "workgroup_size", "num_workgroups")


@dataclass(frozen=True, eq=False)
class Special(Expr):
    """A launch index or extent along dimension `dim` (0, 1 or 2), as an i32."""
    kind: str
    dim: int
    dtype: ClassVar[str] = "i32"


def workitem_id(dim: int = 0) -> Special: return Special("workitem_id", dim)
def workgroup_id(dim: int = 0) -> Special: return Special("workgroup_id", dim)
def workgroup_size(dim: int = 0) -> Special: return Special("workgroup_size", dim)
def num_workgroups(dim: int = 0) -> Special: return Special("num_workgroups", dim)


@dataclass(frozen=True, eq=False)
class SpanOffset(Expr):
    """Where the work-item's k-th element lies in a span of `per_item` x workgroup-size consecutive
    elements (1-D workgroups), as an offset from the span's start: the assignment ForSpan's backends
    pick, here an expression a kernel can index with anywhere (beside barriers and wave ops).
    AMDGPU gives a work-item consecutive elements (linear id x per_item + k: its loads of the
    `per_item` offsets merge into one 16-byte vector access), the host consecutive work-items
    consecutive elements (k x workgroup size + linear id: its work-item loop vectorizes). The
    producer promises that its results do not depend on which work-item takes which offset: it
    stores elementwise results there, or keeps a partial result per (work-item, k) that it combines
    in an order of offsets, not of work-items (lowering/emit_fusion.py: a row's float sums).

    `part` "row" and "column" are the offset's quotient and remainder by the workgroup size: the
    span as `per_item` rows of workgroup-size elements, of which AMDGPU gives a work-item `per_item`
    consecutive elements of one row and the host the work-item's column of each row (the row is k,
    the same for every work-item of its work-item loop)."""
    per_item: int
    k: int
    dtype: str
    part: str = "offset"

    def offset(self, workgroup_items: int, item_major: bool) -> Expr:
        """The offset (or its row or column) in one backend's assignment: consecutive per work-item
        (`item_major`, AMDGPU's) or across work-items (the host's)."""
        lane = workitem_id(0).cast(self.dtype)
        if not item_major:
            return {"offset": lane + self.k * workgroup_items, "row": Const(self.k, self.dtype), "column": lane}[self.part]
        offset = lane * self.per_item + self.k
        return {"offset": offset, "row": offset / workgroup_items, "column": offset % workgroup_items}[self.part]


def span_offset(per_item: int, k: int, dtype: str = "u32", part: str = "offset") -> SpanOffset:
    return SpanOffset(per_item, k, dtype, part)


# ---- memory -----------------------------------------------------------------------------

class Buffer:
    """An array in one memory space; `buf[i]` loads element i."""
    name: str
    dtype: str
    count: int
    space: ClassVar[str]

    def __getitem__(self, index) -> "Load":
        return Load(self, as_expr(index, "i32"))

    @property
    def nbytes(self) -> int:
        if not isinstance(self.count, int):
            raise TypeError(f"buffer {self.name}: its size is a launch's ({self.count!r}); ask Kernel.launch_count")
        return self.count * NUMPY_DTYPES[self.dtype].itemsize


@dataclass(frozen=True, eq=False)
class GlobalBuffer(Buffer):
    """A buffer parameter of the kernel (global memory). `count` is a number of elements, or an
    integer expression of the kernel's scalar parameters (a launch extent, see Kernel): the kernel
    then holds for any size the launch gives, and a backend may claim nothing that depends on it."""
    name: str
    dtype: str
    count: "int | Expr"
    readonly: bool = False
    space: ClassVar[str] = "global"


@dataclass(frozen=True, eq=False)
class LdsBuffer(Buffer):
    """Local data share: one array per workgroup, shared by its work-items."""
    name: str
    dtype: str
    count: int
    space: ClassVar[str] = "lds"


@dataclass(frozen=True, eq=False)
class PrivateArray(Buffer):
    """An array private to each work-item (registers or scratch on the GPU)."""
    name: str
    dtype: str
    count: int
    space: ClassVar[str] = "private"


@dataclass(frozen=True, eq=False)
class Load(Expr):
    buffer: Buffer
    index: Expr

    @property
    def dtype(self): return self.buffer.dtype


# ---- statements -------------------------------------------------------------------------

class Stmt:
    """A statement; compound statements hold their bodies as tuples of statements."""

    def children(self) -> tuple[tuple["Stmt", ...], ...]:
        return ()


def _tuple_field(stmt, name):
    object.__setattr__(stmt, name, tuple(getattr(stmt, name)))


@dataclass(frozen=True, eq=False)
class Let(Stmt):
    var: Var
    value: Expr


@dataclass(frozen=True, eq=False)
class Assign(Stmt):
    var: Var
    value: Expr


def coerce_element_write(stmt) -> None:
    """A Store's or an AtomicRMW's index and value as expressions (an int index is i32, a number
    value of the buffer's dtype)."""
    object.__setattr__(stmt, "index", as_expr(stmt.index, "i32"))
    object.__setattr__(stmt, "value", as_expr(stmt.value, stmt.buffer.dtype))


@dataclass(frozen=True, eq=False)
class Store(Stmt):
    buffer: Buffer
    index: Expr
    value: Expr

    __post_init__ = coerce_element_write


@dataclass(frozen=True, eq=False)
class For(Stmt):
    var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    uniform: bool = False
    expected_trips: Expr | None = None   # an extent, where start and stop are data (module docstring)

    def __post_init__(self):
        for name in ("start", "stop", "step"):
            object.__setattr__(self, name, as_expr(getattr(self, name), self.var.dtype))
        if self.expected_trips is not None:
            object.__setattr__(self, "expected_trips", as_expr(self.expected_trips, "i64"))
        _tuple_field(self, "body")

    def children(self):
        return (self.body,)


@dataclass(frozen=True, eq=False)
class ForSpan(Stmt):
    """The workgroup's span of `per_item` x workgroup-size consecutive elements from `start` (the same
    for every work-item): every work-item runs `body` for `per_item` of them, `var` the element.
    Which work-item takes which is the backend's: AMDGPU gives a work-item `per_item` consecutive
    elements (start + linear work-item id x per_item + k), so that its loads and stores of the
    buffers indexed by `var` alone become 16-byte vector accesses; the host keeps consecutive
    work-items on consecutive elements (start + k x workgroup size + linear id, k outermost), which
    its vectorization across work-items needs. The producer promises that the elements' bodies are
    independent (none reads what another's writes), so any such assignment and any interleaving of
    the bodies gives the same results. Elements at or past `stop` (None: no end; else the same for
    every work-item) are skipped. The workgroup is 1-D; no barrier, wave op or prefetch inside."""
    var: Var
    start: Expr
    per_item: int
    body: tuple[Stmt, ...]
    stop: Expr | None = None

    def __post_init__(self):
        object.__setattr__(self, "start", as_expr(self.start, self.var.dtype))
        if self.stop is not None:
            object.__setattr__(self, "stop", as_expr(self.stop, self.var.dtype))
        _tuple_field(self, "body")

    def children(self):
        return (self.body,)

    def indexes_by_var(self, index: Expr) -> bool:
        """Whether an access's index is the span's variable itself (a vector access on the GPU)."""
        return isinstance(index, Var) and (index.name, index.dtype) == (self.var.name, self.var.dtype)

    def element(self, k: int, workgroup_items: int, item_major: bool) -> Expr:
        """The element each work-item (of a 1-D workgroup of `workgroup_items`) takes k-th:
        consecutive per work-item (`item_major`, AMDGPU's assignment) or across work-items (the host's)."""
        lane = workitem_id(0).cast(self.var.dtype)
        return self.start + (lane * self.per_item + k if item_major else lane + k * workgroup_items)


@dataclass(frozen=True, eq=False)
class If(Stmt):
    """`alongside` (uniform ifs only) is its producer's promise that the statements after it in its
    block, up to the next barrier, neither read what it writes nor write what it reads. It is a
    fact about the program, not an instruction to any target: any order of the if's work and
    theirs gives the same results, so a backend may interleave them (the host runs each wave's
    work-items of the if just before that wave's share of the next wave op, so a GEMM's loads of
    the next tile overlap the current tile's math; the GPU backends issue its loads first and its
    stores after those statements, codegen/gpu_kernel.py) or ignore the mark. The verifier checks
    what it can: no barrier, wave op or prefetch inside, stores to LDS only, no assignment to a
    variable defined outside."""
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()
    uniform: bool = False
    alongside: bool = False

    def __post_init__(self):
        _tuple_field(self, "then")
        _tuple_field(self, "orelse")

    def children(self):
        return (self.then, self.orelse)


@dataclass(frozen=True, eq=False)
class While(Stmt):
    """Runs `body` while `cond` holds (tested before each trip): a work-item waiting for a word that
    another workgroup publishes with an AtomicRMW. No barrier, wave op or prefetch inside."""
    cond: Expr
    body: tuple[Stmt, ...]

    def __post_init__(self):
        _tuple_field(self, "body")

    def children(self):
        return (self.body,)


ATOMIC_OPS = ("add", "exchange")


@dataclass(frozen=True, eq=False)
class AtomicRMW(Stmt):
    """`var` = buffer[index]; buffer[index] = var + value ("add") or value ("exchange"), as one
    indivisible step against every other atomic on that element in the launch, sequentially
    consistent (every work-item of the launch sees all atomics in one order, and writes before an
    atomic are visible to whoever reads its result): the way workgroups hand each other values
    (an ordered tile counter, a published prefix). An add of 0 is an atomic read. Global buffers
    of 32- or 64-bit integers; on an LDS buffer of those, indivisible only (a barrier orders it
    with the workgroup's other accesses), as the work-items of a workgroup counting into shared
    bins need.
    `relaxed` (global buffers) makes it indivisible only, ordered with nothing else: adds into
    elements whose final sums are all that is read, after the launch (a scatter-add). Only a relaxed
    add may be of floats (f32, f64): each add rounds, and the adds come in no promised order, so a
    float sum can differ from run to run by its rounding (as JAX's GPU scatter-add does)."""
    var: Var
    op: str
    buffer: Buffer
    index: Expr
    value: Expr
    relaxed: bool = False

    __post_init__ = coerce_element_write


@dataclass(frozen=True, eq=False)
class Barrier(Stmt):
    """Every work-item of the workgroup waits here; LDS writes before it are visible after it."""


@dataclass(frozen=True, eq=False)
class Prefetch(Stmt):
    """A fact about what comes next, at the workgroup level: the workgroup will soon read `runs`
    runs of `run_elements` consecutive elements of global `buffer`, the first starting at `start`
    and each `run_stride` elements after the one before. It changes no result, so a backend may
    turn it into prefetches or drop it. The host prefetches each cache line into L2, for reads its
    hardware prefetcher cannot see coming (a GEMM operand whose K step moves to new rows); the
    AMDGPU backend drops it (CDNA has no data prefetch instruction)."""
    buffer: Buffer
    start: Expr
    runs: int
    run_stride: Expr
    run_elements: int

    def __post_init__(self):
        object.__setattr__(self, "start", as_expr(self.start, "i32"))
        object.__setattr__(self, "run_stride", as_expr(self.run_stride, "i32"))


class WaveOp(Stmt):
    """A collective over the lanes of a wave (Kernel.wave_size); like a barrier, it stands only under
    uniform control flow. The lanes of a wave are in step only at wave ops: an LDS element that one
    lane writes and another reads needs a wave op or a barrier between the two (the NVPTX backend
    runs a wave as two warps)."""
    kind: ClassVar[str]

    def defines(self) -> tuple[Var, ...]:
        raise NotImplementedError

    def reads(self) -> tuple[Expr, ...]:
        raise NotImplementedError

    def check(self, error, wave_size: int) -> None:
        """Raise `error(message)` when the operands break the op's type rule, or the op cannot run
        on waves of `wave_size` lanes (the kernel's)."""


WAVE_REDUCE_OPS = ("sum", "max", "min")


@dataclass(frozen=True, eq=False)
class WaveReduce(WaveOp):
    """dest = op over the wave's lanes of `value`, the same in every lane."""
    dest: Var
    op: str
    value: Expr
    kind: ClassVar[str] = "wave_reduce"

    def defines(self): return (self.dest,)
    def reads(self): return (self.value,)

    def check(self, error, wave_size):
        if self.op not in WAVE_REDUCE_OPS:
            error(f"unknown reduction {self.op!r}; expected one of {', '.join(WAVE_REDUCE_OPS)}")
        if self.value.dtype == "bool":
            error("cannot reduce bool values; cast them to an integer dtype first")
        if self.dest.dtype != self.value.dtype:
            error(f"result {self.dest.name}: {self.dest.dtype} differs from the value's dtype {self.value.dtype}")


@dataclass(frozen=True, eq=False)
class WaveShuffle(WaveOp):
    """dest = `value` as computed by lane `src_lane % wave_size` of the same wave."""
    dest: Var
    value: Expr
    src_lane: Expr
    kind: ClassVar[str] = "wave_shuffle"

    def __post_init__(self):
        object.__setattr__(self, "src_lane", as_expr(self.src_lane, "i32"))

    def defines(self): return (self.dest,)
    def reads(self): return (self.value, self.src_lane)

    def check(self, error, wave_size):
        if self.src_lane.dtype not in INTS:
            error(f"source lane must be an integer, got {self.src_lane.dtype}")
        if self.dest.dtype != self.value.dtype:
            error(f"result {self.dest.name}: {self.dest.dtype} differs from the value's dtype {self.value.dtype}")


# A WaveMove's patterns: fixed lane permutations, GFX9's DPP row shifts and row broadcasts (the moves
# of rocPRIM's wave scans). pattern -> (whether lane l reads another lane, the lane it reads); the
# predicate takes an int or a kernel expression (a kernel selects its combined value by it), the
# source an int. Lanes that read none keep their own value. Rows are 16 lanes.
WAVE_MOVES = {
    "row_shr:1": (lambda lane: lane % 16 >= 1, lambda lane: lane - 1),       # lane l - 1 of its row
    "row_shr:2": (lambda lane: lane % 16 >= 2, lambda lane: lane - 2),
    "row_shr:4": (lambda lane: lane % 16 >= 4, lambda lane: lane - 4),
    "row_shr:8": (lambda lane: lane % 16 >= 8, lambda lane: lane - 8),
    "row_bcast:15": (lambda lane: lane % 32 >= 16, lambda lane: lane - lane % 16 - 1),  # rows 1, 3: the row before's last
    "row_bcast:31": (lambda lane: lane >= 32, lambda lane: 31),             # rows 2, 3: lane 31
}


def wave_move_sources(pattern: str, wave_size: int) -> list[int]:
    """Lane l's source lane under a WaveMove pattern, l itself where it reads none."""
    reads, source = WAVE_MOVES[pattern]
    return [source(lane) if reads(lane) else lane for lane in range(wave_size)]


@dataclass(frozen=True, eq=False)
class WaveMove(WaveOp):
    """dest = `value` as computed by the lane the pattern (WAVE_MOVES) names for this lane, or this
    lane's own value where it names none."""
    dest: Var
    value: Expr
    pattern: str
    kind: ClassVar[str] = "wave_move"

    def defines(self): return (self.dest,)
    def reads(self): return (self.value,)

    def check(self, error, wave_size):
        if self.pattern not in WAVE_MOVES:
            error(f"unknown lane pattern {self.pattern!r}; expected one of {', '.join(WAVE_MOVES)}")
        if wave_size % 16:
            error(f"lane patterns move within rows of 16 lanes: waves of {wave_size} lanes have none")
        if self.dest.dtype != self.value.dtype:
            error(f"result {self.dest.name}: {self.dest.dtype} differs from the value's dtype {self.value.dtype}")


@dataclass(frozen=True, eq=False)
class WaveBallot(WaveOp):
    """dest (u64) = the mask of the wave's lanes whose `predicate` holds, bit l for lane l; the same
    in every lane."""
    dest: Var
    predicate: Expr
    kind: ClassVar[str] = "wave_ballot"

    def defines(self): return (self.dest,)
    def reads(self): return (self.predicate,)

    def check(self, error, wave_size):
        check_lane_mask_width(error, wave_size)
        if self.predicate.dtype != "bool":
            error(f"the predicate must be bool, got {self.predicate.dtype}")
        if self.dest.dtype != "u64":
            error(f"result {self.dest.name}: a lane mask is u64, not {self.dest.dtype}")


@dataclass(frozen=True, eq=False)
class WaveCountBelow(WaveOp):
    """dest (i32 or u32) = the number of set bits of `mask` (u64) in the lanes below this lane's
    (bits 0 .. lane - 1): different in every lane."""
    dest: Var
    mask: Expr
    kind: ClassVar[str] = "wave_count_below"

    def defines(self): return (self.dest,)
    def reads(self): return (self.mask,)

    def check(self, error, wave_size):
        check_lane_mask_width(error, wave_size)
        if self.mask.dtype != "u64":
            error(f"the lane mask must be u64, got {self.mask.dtype}")
        if self.dest.dtype not in ("i32", "u32"):
            error(f"result {self.dest.name}: a count of lanes is i32 or u32, not {self.dest.dtype}")


@dataclass(frozen=True, eq=False)
class WaveMatchRank(WaveOp):
    """Lanes matched by the low `bits` bits of `value` (an integer): rank (i32) = the number of
    lanes below this lane's whose value matches its own, and last (bool) = whether no lane above
    it matches (rocPRIM's block radix rank takes the same from its match_any mask: the rank, and the
    group's leader, its highest lane); different in every lane."""
    rank: Var
    last: Var
    value: Expr
    bits: int
    kind: ClassVar[str] = "wave_match_rank"

    def defines(self): return (self.rank, self.last)
    def reads(self): return (self.value,)

    def check(self, error, wave_size):
        check_lane_mask_width(error, wave_size)
        if self.value.dtype not in INTS:
            error(f"matched values must be integers, got {self.value.dtype}")
        elif not 1 <= self.bits <= min(MAX_MATCH_BITS, 8 * NUMPY_DTYPES[self.value.dtype].itemsize):
            error(f"{self.bits} bits of a {self.value.dtype} cannot be matched (1 to {MAX_MATCH_BITS} bits)")
        if self.rank.dtype != "i32":
            error(f"result {self.rank.name}: a count of lanes is i32, not {self.rank.dtype}")
        if self.last.dtype != "bool":
            error(f"result {self.last.name}: whether the lane is its group's last is bool, not {self.last.dtype}")


MAX_MATCH_BITS = 16     # the host counts matches in a table of 2^bits entries


def check_lane_mask_width(error, wave_size):
    """A lane mask is one u64: a bit for each lane of a 64-lane wave."""
    if wave_size != 64:
        error(f"lane masks are 64 bits: waves of {wave_size} lanes have none")


def walk(stmts):
    """Every statement of a block, nested ones included, in order."""
    for stmt in stmts:
        yield stmt
        for block in stmt.children():
            yield from walk(block)


def span_offsets_resolved(kernel: "Kernel", item_major: bool) -> "Kernel":
    """The kernel with every SpanOffset replaced by its offset in one backend's assignment
    (SpanOffset.offset); the kernel itself where it has none."""
    items = kernel.workgroup_items

    def expression(e):
        if isinstance(e, SpanOffset):
            return e.offset(items, item_major)
        return rebuilt(e)

    def rebuilt(node):
        changes = {}
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)
            if isinstance(value, Expr):
                new = expression(value)
            elif isinstance(value, Stmt):
                new = rebuilt(value)
            elif isinstance(value, tuple):
                new = tuple(expression(v) if isinstance(v, Expr) else rebuilt(v) if isinstance(v, Stmt) else v
                            for v in value)
                new = value if all(a is b for a, b in zip(new, value)) else new
            else:
                continue
            if new is not value:
                changes[field.name] = new
        return dataclasses.replace(node, **changes) if changes else node

    def has_offsets(e) -> bool:
        return isinstance(e, SpanOffset) or any(has_offsets(v) for f in dataclasses.fields(e)
                                                for v in expression_fields(getattr(e, f.name)))

    def expression_fields(value):
        return (value,) if isinstance(value, Expr) else tuple(v for v in value if isinstance(v, Expr)) \
            if isinstance(value, tuple) else ()

    if not any(has_offsets(e) for s in walk(kernel.body) for f in dataclasses.fields(s)
               for e in expression_fields(getattr(s, f.name))):
        return kernel
    return dataclasses.replace(kernel, body=tuple(rebuilt(s) for s in kernel.body))


def contains_cut(stmts) -> bool:
    """Whether a barrier, wave op or prefetch (a workgroup-level statement) occurs in `stmts` (at any
    depth)."""
    return any(isinstance(s, (Barrier, WaveOp, Prefetch)) or any(contains_cut(c) for c in s.children())
               for s in stmts)


# ---- the kernel -------------------------------------------------------------------------

LDS_ALIGNMENT = 16


def _dims3(dims) -> tuple:
    dims = tuple(d if isinstance(d, Expr) else int(d) for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))
    return dims + (1,) * (3 - len(dims)) if len(dims) <= 3 else dims


# ---- launch extents: integer expressions of scalar parameters -----------------------------

EXTENT_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
              "max": max, "min": min}


def is_extent(expr) -> bool:
    """Whether `expr` is a launch extent the runtime can evaluate: an integer built from constants
    and scalar parameters with + - * / (toward zero, by a positive constant), max and min."""
    if isinstance(expr, (Const, ScalarParam)):
        return expr.dtype in INTS
    if isinstance(expr, Binary) and expr.dtype in INTS:
        if expr.op == "div":
            return is_extent(expr.a) and isinstance(expr.b, Const) and expr.b.value > 0
        return expr.op in EXTENT_OPS and is_extent(expr.a) and is_extent(expr.b)
    return False


def evaluate_extent(expr, arguments: dict):
    """The value of an int, or of an extent expression given its scalar parameters' values."""
    if isinstance(expr, int):
        return expr
    if isinstance(expr, Const):
        return int(expr.value)
    if isinstance(expr, ScalarParam):
        return int(arguments[expr.name])
    a, b = evaluate_extent(expr.a, arguments), evaluate_extent(expr.b, arguments)
    if expr.op == "div":
        return a // b if a >= 0 else -(-a // b)  # toward zero, as the kernel's division
    return EXTENT_OPS[expr.op](a, b)


def ceil_div(value: "Expr | int", divisor: int) -> "Expr | int":
    """ceil(value / divisor) for value >= 0 and a constant divisor > 0, as an extent expression."""
    return -(-value // divisor) if isinstance(value, int) else (value + (divisor - 1)) / divisor


@dataclass(frozen=True, eq=False)
class Kernel:
    """A kernel: parameters (GlobalBuffer and ScalarParam, in argument order), the launch
    (grid of workgroups and workgroup size, each padded to 3-D), LDS buffers, private arrays
    and the per-work-item body.

    `wave_size` is the number of lanes of a wave the kernel was built for: the target's
    (ir/targets.py; 64 on every CDNA accelerator, the default). Wave ops and the work-item ->
    lane mapping follow it; the AMDGPU backend refuses a kernel built for a wave size other than
    its target's, and the host runs any.

    `streams` and `grid_order` are facts about the kernel's memory reads that its producer states,
    for backends that choose when and in which order workgroups run; they change no result (the
    workgroups of a launch run in no promised order), and a backend may use or ignore them:
    - `streams`: (read-only buffer name, elements) pairs saying that workgroup g (linear id)
      reads exactly that buffer's elements [g * elements, (g + 1) * elements). The host, which
      runs a thread's workgroups one after the other, prefetches workgroup g + 1's slice while g
      runs (a row kernel reads its row, then computes long enough for the hardware prefetcher to
      stop); AMDGPU ignores it.
    - `grid_order`: the grid's dimensions ordered by how much workgroups adjacent along them share
      what they read, the most first ((0, 1, 2): x; a GEMM whose grid walks M first shares its B
      panel). The host walks the grid in this order, so that consecutive workgroups of one thread
      find the shared data still in cache; AMDGPU ignores it (the GPU's dispatcher has its own
      order). `alternate_grid_order`, () or (condition, order), names another order for launches
      whose scalar arguments make the bool condition (a comparison of extents) true: which order
      shares more can depend on the sizes (a GEMM walks M first when M < N), and one kernel
      serves both.

    Runtime sizes: a grid dimension or a buffer's count may be an extent (`is_extent`: integer
    arithmetic on scalar parameters), so that one kernel serves every problem size and compiles
    once: a library's kernel per solution, not per problem. The backends compute such a grid from
    the arguments at launch and claim nothing that depends on such a count (alignment, streaming
    stores). `arguments` are (scalar parameter, value) pairs that bind the kernel to one launch,
    the op it was emitted for: the launch's, not the code's, so `code_text` (what the compile
    cache keys object code by) leaves them out, with the name. `launch_grid` and `launch_count`
    evaluate the extents under them."""
    name: str
    params: tuple[GlobalBuffer | ScalarParam, ...]
    grid: tuple[int, int, int]
    workgroup_size: tuple[int, int, int]
    body: tuple[Stmt, ...]
    lds: tuple[LdsBuffer, ...] = ()
    private: tuple[PrivateArray, ...] = ()
    streams: tuple[tuple[str, int], ...] = ()
    grid_order: tuple[int, int, int] = (0, 1, 2)
    wave_size: int = get_target().wave_size
    arguments: tuple[tuple[str, int | float], ...] = ()
    alternate_grid_order: tuple = ()    # () or (condition: Compare of extents, order)

    def __post_init__(self):
        for name in ("params", "body", "lds", "private", "streams", "grid_order", "arguments",
                     "alternate_grid_order"):
            _tuple_field(self, name)
        object.__setattr__(self, "grid", _dims3(self.grid))
        object.__setattr__(self, "workgroup_size", _dims3(self.workgroup_size))

    @property
    def workgroup_items(self) -> int:
        x, y, z = self.workgroup_size
        return x * y * z

    @property
    def static_grid(self) -> bool:
        """Whether the grid is known without the arguments (every dimension a number)."""
        return all(isinstance(d, int) for d in self.grid)

    def launch_grid(self, arguments: dict | None = None) -> tuple[int, int, int]:
        """The grid of a launch with these scalar arguments (by default the kernel's own)."""
        values = dict(self.arguments) if arguments is None else arguments
        return tuple(evaluate_extent(d, values) for d in self.grid)

    def launch_count(self, buffer: GlobalBuffer, arguments: dict | None = None) -> int:
        """A buffer parameter's elements in a launch with these scalar arguments (default: the kernel's)."""
        return evaluate_extent(buffer.count, dict(self.arguments) if arguments is None else arguments)

    @property
    def num_workgroups(self) -> int:
        """Workgroups of the launch the kernel's arguments describe."""
        x, y, z = self.launch_grid()
        return x * y * z

    def code_text(self) -> str:
        """The kernel's text without its name and arguments: what its object code depends on."""
        return str(dataclasses.replace(self, name="kernel", arguments=()))

    def lds_offsets(self) -> dict[str, int]:
        """Byte offset of each LDS buffer in the workgroup's LDS block (each 16-byte aligned)."""
        offsets, offset = {}, 0
        for buffer in self.lds:
            offsets[buffer.name] = offset
            offset += -(-buffer.nbytes // LDS_ALIGNMENT) * LDS_ALIGNMENT
        return offsets

    @property
    def lds_bytes(self) -> int:
        return sum(-(-b.nbytes // LDS_ALIGNMENT) * LDS_ALIGNMENT for b in self.lds)

    @property
    def buffers(self) -> tuple[GlobalBuffer, ...]:
        return tuple(p for p in self.params if isinstance(p, GlobalBuffer))

    def __str__(self):
        from .kernel_printer import print_kernel
        return print_kernel(self)


def verify(kernel: Kernel, max_lds_bytes: int = 64 * 1024) -> None:
    """Raise VerifyError naming the first statement that breaks a rule of the kernel IR."""
    from .kernel_verifier import verify_kernel
    verify_kernel(kernel, max_lds_bytes)
