"""The elemental table: the kernel-IR expression of one element of a graph op, as XLA's ElementalIrEmitter.

An entry `entry(emitter, op, index, operand) -> Expr` receives the op, the position of the wanted
element (an `Index` into the op's result) and `operand(k, index)`, which gives element `index` of
operand k. Data-movement ops only transform the index (a broadcast drops components, a transpose
permutes them, a reshape goes through the linear index, slice/rev scale, offset and mirror, pad and
concatenate select by bounds, dynamic_slice offsets by its clamped starts: elemental_indexing.py);
elementwise ops combine their operands' elements at the same index;
`reduce` loops over the reduced elements.

`ElementalEmitter.value_at(value, index)` walks a fused region this way. Every element it makes is
bound to a `Let` variable and remembered per (value, index) in the current block's scope, so an
element used three times is computed once; blocks (`with emitter.block():`) scope both the
statements and that memo, as kernel-IR blocks scope variables. Index arithmetic is unsigned
(u32, or u64 for arrays of 2^32 elements and more): an index that wraps below zero becomes huge,
so clamping the index a not-taken branch loads is a single `min`.

Semantics are the op table's (ir/ops/): integer div/rem with XLA's values, NaN-propagating
max/min, round half to even and saturating float->int converts come from the kernel IR itself;
f16/bf16 ops are computed in f32 and rounded once per op (composite formulas widen explicitly).
Complex values (passes/expand_complex.py leaves them only at kernel boundaries) are pairs of
part elements: `parts_at` reads them from an interleaved input buffer (lowering/emitters.py's layout),
a `complex` op or a constant, through index-only data movement; `real` and `imag` take one part,
and the kernel builders store a complex result as its two parts. Other complex ops have no kernel
code: NotImplementedError names the op.
"""
from __future__ import annotations

import itertools
import math
from contextlib import contextmanager
from typing import Callable

import numpy as np

from ..ir import kernel as K
from ..ir.core import Op, Region, Value
from ..ir.kernel_printer import print_expr
from ..ir.ops.reduce import reducer_identity
from ..ir.types import COMPLEX_PART, COMPLEXES, INTS, NUMPY_DTYPES, SIGNED_INTS
from .tiling import accumulator_dtype, accumulator_reducer

HALF_FLOATS = ("f16", "bf16")
# Data movement whose entries only transform the index and return the operand's element as it is:
# they move complex elements (pairs) too.
INDEX_ONLY = ("broadcast_in_dim", "reshape", "transpose", "slice", "rev")
SELECT_TREE_ELEMENTS = 16   # larger non-uniform constants are looked up in an LDS table


def row_major_strides(shape) -> tuple[int, ...]:
    strides, stride = [], 1
    for d in reversed(shape):
        strides.append(stride)
        stride *= d
    return tuple(reversed(strides))


def index_dtype_for(largest: int) -> str:
    """u32 while every linear index (plus slack for a grid's last workgroups) fits, else u64."""
    return "u32" if largest + (1 << 20) < 2 ** 32 else "u64"


class Index:
    """A position in an array of `shape`: its components and, when known, its row-major linear index.

    Either may be given; the other is derived on demand (div/mod by constant strides, or a dot
    with the strides). `key` names the position for the memo, from the components, so one element
    reached through a linear index or component by component is the same entry.
    """

    def __init__(self, shape, dtype: str, components=None, linear=None):
        self.shape, self.dtype = tuple(shape), dtype
        self._components = None if components is None else tuple(components)
        self._linear = linear
        self._key = None

    @property
    def components(self) -> tuple[K.Expr, ...]:
        if self._components is None:
            size = math.prod(self.shape)
            comps = []
            for d, stride in zip(self.shape, row_major_strides(self.shape)):
                if d == 1:
                    comps.append(K.Const(0, self.dtype))
                    continue
                c = self._linear if stride == 1 else self._linear / stride
                comps.append(c if stride * d == size else c % d)  # the outermost axis needs no mod
            self._components = tuple(comps)
        return self._components

    @property
    def linear(self) -> K.Expr:
        if self._linear is None:
            terms = [c if s == 1 else c * s
                     for c, d, s in zip(self.components, self.shape, row_major_strides(self.shape)) if d != 1]
            linear = terms[0] if terms else K.Const(0, self.dtype)
            for term in terms[1:]:
                linear = linear + term
            self._linear = linear
        return self._linear

    @property
    def key(self) -> tuple[str, ...]:
        if self._key is None:
            self._key = tuple(print_expr(c) for c in self.components)
        return self._key


def merge_axes(kept, reduced, axes) -> tuple:
    """The components of a full index from those of the kept axes and those of the reduced `axes`."""
    kept, reduced = list(kept), list(reduced)
    kept_iter, reduced_iter = iter(kept), iter(reduced)
    return tuple(next(reduced_iter) if d in axes else next(kept_iter) for d in range(len(kept) + len(reduced)))


# ---- reductions ---------------------------------------------------------------------------

COMBINE: dict[str, Callable] = {
    "sum": lambda a, b: a + b, "prod": lambda a, b: a * b, "max": K.maximum, "min": K.minimum,
    "and": lambda a, b: a & b, "or": lambda a, b: a | b,
}


# A float sum adds this many elements into a block partial, then the partial into the running total:
# the error bound grows as BLOCK + n / BLOCK roundings instead of n, and an f32 total of equal terms
# keeps growing past 2**24 of them (up to 2**24 blocks). It costs one add per block: the inner
# loop stays a plain loop over the block's elements.
SUM_BLOCK = 4096


def identity_const(reducer: str, dtype: str) -> K.Const:
    return K.Const(reducer_identity(reducer, NUMPY_DTYPES[dtype]).item(), dtype)


class Accumulator:
    """A per-work-item running reduction in the accumulator dtype (f32 for f16/bf16; u8 for bool,
    where 0/1 make max `or` and min `and`): `add` elements, `narrow` the total to the value's dtype.

    An exactly associative reducer (max, min, and, or; integer sum and product, which wrap) may
    keep `chains` partial results that successive `add`s take in turn, folded into `var` by
    `fold`: the same total, without one serial dependence through every element of an unrolled
    row. A float sum or product keeps one chain, so its rounding follows the element order.

    A float sum is `blocked`: between `start_block` and `end_block` its adds go to a block partial,
    which `end_block` adds to the total (`accumulate_loop` runs a long loop as such blocks)."""

    def __init__(self, emitter: "ElementalEmitter", reducer: str, dtype: str, chains: int = 1):
        self.emitter, self.reducer, self.dtype = emitter, accumulator_reducer(reducer, dtype), dtype
        self.acc_dtype = accumulator_dtype(dtype)
        exact = self.reducer in ("max", "min", "and", "or") or self.acc_dtype in INTS
        self.chains = [emitter.new_var("acc", self.acc_dtype) for _ in range(chains if exact else 1)]
        self.var = self.chains[0]
        self.added = 0
        for var in self.chains:
            emitter.emit(K.Let(var, identity_const(self.reducer, self.acc_dtype)))
        self.blocked = self.reducer == "sum" and not exact
        self.partial: K.Var | None = None     # declared by the first block
        self.in_block = False

    def declare_partial(self):
        """The block partial, declared in the current block (outside the loop over blocks)."""
        if self.partial is None:
            self.partial = self.emitter.new_var("block", self.acc_dtype)
            self.emitter.emit(K.Let(self.partial, identity_const(self.reducer, self.acc_dtype)))

    def start_block(self):
        self.emitter.emit(K.Assign(self.partial, identity_const(self.reducer, self.acc_dtype)))
        self.in_block = True

    def end_block(self):
        self.emitter.emit(K.Assign(self.var, self.combine(self.var, self.partial)))
        self.in_block = False

    def widen(self, value: K.Expr) -> K.Expr:
        return value if value.dtype == self.acc_dtype else value.cast(self.acc_dtype)

    def combine(self, a: K.Expr, b: K.Expr) -> K.Expr:
        return COMBINE[self.reducer](a, b)

    def add(self, value: K.Expr, valid: K.Expr | None = None):
        var = self.partial if self.in_block else self.chains[self.added % len(self.chains)]
        self.added += 1
        combined = self.combine(var, self.widen(value))
        self.emitter.emit(K.Assign(var, combined if valid is None else K.select(valid, combined, var)))

    def fold(self):
        """Combine the chains into `var`, pairwise."""
        live = self.chains[:max(1, min(self.added, len(self.chains)))]
        while len(live) > 1:
            for a, b in zip(live[::2], live[1::2]):
                self.emitter.emit(K.Assign(a, self.combine(a, b)))
            live = live[::2]

    def narrow(self, value: K.Expr) -> K.Expr:
        return value if value.dtype == self.dtype else value.cast(self.dtype)


def accumulate_loop(emitter: "ElementalEmitter", count: int, accumulators, body: Callable[[K.Expr], None],
                    hint: str = "j", per_iteration: int = 1, uniform: bool = False):
    """for j in 0..count: body(j), where body adds `per_iteration` elements to `accumulators`; when
    one is blocked and the loop's elements exceed SUM_BLOCK, as blocks of SUM_BLOCK elements (and a
    last, shorter one). `per_iteration` divides SUM_BLOCK (a power of 2 up to 16). `uniform`: every
    work-item runs the loops (see ElementalEmitter.loop)."""
    blocked = [acc for acc in accumulators if acc.blocked]
    block_count = SUM_BLOCK // per_iteration
    if not blocked or count <= block_count:
        emitter.loop(count, body, hint, uniform)
        return
    blocks, tail = divmod(count, block_count)
    for acc in blocked:
        acc.declare_partial()

    def block(first, size):
        for acc in blocked:
            acc.start_block()
        emitter.loop(size, lambda k: body(first + k), hint, uniform)
        for acc in blocked:
            acc.end_block()
    emitter.loop(blocks, lambda b: block(b * block_count, block_count), "block", uniform)
    if tail:
        block(K.Const(blocks * block_count, emitter.index_dtype), tail)


# ---- the emitter ----------------------------------------------------------------------------

class ElementalEmitter:
    """Generates the elements of a fused region's values into kernel-IR statement blocks.

    `inputs` are the kernel's buffers of the region's parameters. `precomputed` maps a value to an
    expression that already holds it for the current row (the per-row results of row kernels).
    Constant tables (LDS buffers) are collected in `lds` with their filling stores in `lds_fill`;
    the kernel builder runs those first, then a barrier, within `lds_budget` bytes.
    """

    def __init__(self, region: Region, inputs, index_dtype: str, lds_budget: int = 0):
        self.inputs = {id(p): buffer for p, buffer in zip(region.params, inputs)}
        self.index_dtype = index_dtype
        self.blocks: list[list[K.Stmt]] = [[]]
        self.memos: list[dict] = [{}]
        self.precomputed: dict[int, K.Expr] = {}
        # Parameters staged in LDS tiles (lowering/emit_fusion.py: transpose tiles): id -> the
        # element at given components, read from the tile.
        self.staged: dict[int, Callable[[tuple], K.Expr]] = {}
        self.lds: list[K.LdsBuffer] = []
        self.lds_fill: list[K.Stmt] = []
        self.lds_budget = lds_budget
        self.tables: dict[int, K.LdsBuffer] = {}
        self.constant_parts: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.counter = itertools.count()

    # -- statements and variables --

    def new_var(self, hint: str, dtype: str) -> K.Var:
        return K.Var(f"{hint}{next(self.counter)}", dtype)

    def emit(self, stmt: K.Stmt):
        self.blocks[-1].append(stmt)

    def bind(self, expr: K.Expr, hint: str = "v") -> K.Var:
        var = self.new_var(hint, expr.dtype)
        self.emit(K.Let(var, expr))
        return var

    @contextmanager
    def block(self):
        """A nested block: statements emitted inside go to the yielded list, memo entries die with it."""
        self.blocks.append([])
        self.memos.append({})
        try:
            yield self.blocks[-1]
        finally:
            self.blocks.pop()
            self.memos.pop()

    def loop(self, count: int, body: Callable[[K.Var], None], hint: str = "j", uniform: bool = False):
        """for j in 0..count: body(j), in a block of its own. `uniform` (K.For's flag): every
        work-item of the workgroup runs it, outside any branch that depends on the work-item, so the
        host runs the loop once for the workgroup with its work-item loops inside."""
        j = self.new_var(hint, self.index_dtype)
        with self.block() as stmts:
            body(j)
        self.emit(K.For(j, K.Const(0, self.index_dtype), K.Const(count, self.index_dtype),
                        K.Const(1, self.index_dtype), stmts, uniform))

    def index(self, shape, components=None, linear=None) -> Index:
        return Index(shape, self.index_dtype, components, linear)

    # -- elements --

    def value_at(self, value: Value, index: Index) -> K.Expr:
        """The element of `value` at `index`, computed once per scope."""
        if id(value) in self.precomputed:
            return self.precomputed[id(value)]
        key = (id(value), index.key)
        for memo in reversed(self.memos):
            if key in memo:
                return memo[key]
        if value.type.dtype in COMPLEXES:
            what = value.producer.name if value.producer else "a parameter"
            raise NotImplementedError(f"kernels do not support complex numbers: {what} of {value.type}")
        if id(value) in self.staged:
            expr = self.staged[id(value)](index.components)
        elif id(value) in self.inputs:
            expr = self.inputs[id(value)][index.linear]
        else:
            op = value.producer
            entry = ELEMENTAL.get(op.name)
            if entry is None:
                raise NotImplementedError(f"no elemental kernel code for graph op '{op.name}'")
            expr = entry(self, op, index, lambda k, at: self.value_at(op.operands[k], at))
        if not isinstance(expr, (K.Const, K.Var)):
            expr = self.bind(expr)
        self.memos[-1][key] = expr
        return expr

    def element_at(self, value: Value, index: Index):
        """`value_at`, or `parts_at` for a complex value."""
        return self.parts_at(value, index) if value.type.dtype in COMPLEXES else self.value_at(value, index)

    def parts_at(self, value: Value, index: Index) -> tuple[K.Expr, K.Expr]:
        """The (real, imaginary) parts of complex `value`'s element at `index`, computed once per scope."""
        key = ("parts", id(value), index.key)
        for memo in reversed(self.memos):
            if key in memo:
                return memo[key]
        op = value.producer
        if id(value) in self.inputs:
            buffer, position = self.inputs[id(value)], index.linear * 2
            parts = (buffer[position], buffer[position + 1])
        elif op.name == "complex":
            parts = (self.value_at(op.operands[0], index), self.value_at(op.operands[1], index))
        elif op.name == "constant":
            if id(op) not in self.constant_parts:  # kept alive here: constant tables are found by array id
                array = op.attrs["value"]
                self.constant_parts[id(op)] = (np.ascontiguousarray(array.real), np.ascontiguousarray(array.imag))
            dtype = COMPLEX_PART[value.type.dtype]
            parts = tuple(constant_element(self, array, dtype, index) for array in self.constant_parts[id(op)])
        elif op.name in INDEX_ONLY:
            parts = ELEMENTAL[op.name](self, op, index, lambda k, at: self.parts_at(op.operands[k], at))
        else:
            raise NotImplementedError(f"kernels do not support complex numbers: {op.name} of {value.type}")
        parts = tuple(p if isinstance(p, (K.Const, K.Var)) else self.bind(p, "part") for p in parts)
        self.memos[-1][key] = parts
        return parts

    def constant_table(self, array: np.ndarray, dtype: str) -> K.LdsBuffer | None:
        """An LDS table holding a constant (filled once per workgroup), or None past the LDS budget."""
        if id(array) not in self.tables:
            table = K.LdsBuffer(f"table{next(self.counter)}", dtype, array.size)
            used = sum(-(-b.nbytes // K.LDS_ALIGNMENT) * K.LDS_ALIGNMENT for b in self.lds)
            if used + table.nbytes > self.lds_budget:
                return None
            self.lds.append(table)
            self.lds_fill += [K.Store(table, K.Const(i, self.index_dtype), K.Const(v, dtype))
                              for i, v in enumerate(array.reshape(-1).tolist())]
            self.tables[id(array)] = table
        return self.tables[id(array)]


# ---- the table -------------------------------------------------------------------------------

Entry = Callable[[ElementalEmitter, Op, Index, Callable], K.Expr]
ELEMENTAL: dict[str, Entry] = {}


def elemental(*names: str):
    def register(fn):
        for name in names:
            ELEMENTAL[name] = fn
        return fn
    return register


def same_index(fn):
    """An elementwise entry: fn(op, *operand elements at the result's index)."""
    def entry(emitter, op, index, operand):
        return fn(op, *(operand(k, index) for k in range(len(op.operands))))
    return entry


def in_f32(fn):
    """Run a composite formula on f16/bf16 in f32 and round once, as the op table's references do."""
    def run(x, *rest):
        if x.dtype not in HALF_FLOATS:
            return fn(x, *rest)
        return fn(x.cast("f32"), *(r.cast("f32") for r in rest)).cast(x.dtype)
    return run


# Graph ops that are one kernel-IR math function of the same name.
MATH_OPS = ("exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "tanh", "logistic", "erf", "sin", "cos",
            "tan", "asin", "acos", "atan", "sinh", "cosh", "cbrt", "sqrt", "rsqrt", "floor", "ceil", "trunc",
            "round", "is_finite", "abs", "sign", "atan2", "fma")
for _name in MATH_OPS:
    elemental(_name)(same_index(lambda op, *xs: K.math(op.name, *xs)))

# Graph ops that are one kernel-IR binary op or comparison of the same name.
BINARY_OPS = ("add", "sub", "mul", "div", "rem", "xor", "shift_left", "shift_right_logical",
              "shift_right_arithmetic")
for _name in BINARY_OPS:
    elemental(_name)(same_index(lambda op, a, b: K.Binary(op.name, a, b)))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    elemental(_name)(same_index(lambda op, a, b: K.Compare(op.name, a, b)))

# On bool, max is `or` and min is `and`; the kernel IR's max/min are NaN-propagating, as the graph's.
LOGICAL_FOR_BOOL = {"max": "or", "min": "and", "and": "and", "or": "or"}


def max_min_and_or(name: str, a: K.Expr, b: K.Expr) -> K.Expr:
    return K.Binary(LOGICAL_FOR_BOOL[name] if a.dtype == "bool" else name, a, b)


elemental("max", "min", "and", "or")(same_index(lambda op, a, b: max_min_and_or(op.name, a, b)))
elemental("neg")(same_index(lambda op, x: -x))
elemental("not")(same_index(lambda op, x: ~x))
elemental("select")(same_index(lambda op, p, a, b: K.Select(p, a, b)))


@elemental("clamp")
def clamp(emitter, op, index, operand):
    """min(max(x, low), high); a scalar bound is read at the empty index, not at x's."""
    low, high = (operand(k, index if op.operands[k].type.shape else emitter.index((), components=()))
                 for k in (0, 2))
    return max_min_and_or("min", max_min_and_or("max", operand(1, index), low), high)


elemental("convert")(same_index(lambda op, x: x.cast(op.attrs["dtype"])))


def with_sign_of(x, magnitude_result):
    """copysign for odd functions computed on |x|; -0 stays -0 and NaN stays NaN."""
    return K.select(x.eq(0.0), x, K.select(x < 0.0, -magnitude_result, magnitude_result))


def large_threshold(x):
    """Above it 1 + x^2 == x^2 in x's precision, so asinh(x) = acosh(x) = log(2x)."""
    return 2.0 ** 28 if x.dtype == "f64" else 2.0 ** 12


LN2 = math.log(2)


@in_f32
def asinh(x):
    a = K.math("abs", x)
    near = K.log1p(a + a * a / (K.sqrt(a * a + 1.0) + 1.0))
    return with_sign_of(x, K.select(a > large_threshold(x), K.log(a) + LN2, near))


@in_f32
def acosh(x):
    # x < 1 is NaN; the formula alone gives it only on (-1, 1), where t * (t + 2) < 0.
    t = x - 1.0
    value = K.select(x > large_threshold(x), K.log(x) + LN2, K.log1p(t + K.sqrt(t * t + t * 2.0)))
    return K.select(x < 1.0, K.Const(math.nan, x.dtype), value)


@in_f32
def atanh(x):
    a = K.math("abs", x)  # |x| = 1: log1p(inf) = inf; |x| > 1: log1p(< -1) = NaN
    return with_sign_of(x, K.log1p(a * 2.0 / (1.0 - a)) * 0.5)


elemental("asinh")(same_index(lambda op, x: asinh(x)))
elemental("acosh")(same_index(lambda op, x: acosh(x)))
elemental("atanh")(same_index(lambda op, x: atanh(x)))


@elemental("pow")
def power(emitter, op, index, operand):
    a, b = operand(0, index), operand(1, index)
    if a.dtype not in INTS:
        return K.math("pow", a, b)
    # Square and multiply over the exponent's bits (multiplication wraps, as numpy's power).
    result, base = K.Const(1, a.dtype), a
    bits = NUMPY_DTYPES[a.dtype].itemsize * 8
    for bit in range(bits - 1 if a.dtype in SIGNED_INTS else bits):
        taken = (K.Binary("shift_right_logical", b, K.Const(bit, b.dtype)) & 1).ne(0)
        result = emitter.bind(K.select(taken, result * base, result), "pow")
        base = emitter.bind(base * base, "base")
    if a.dtype not in SIGNED_INTS:
        return result
    # A negative exponent: 1 for a = 1, (-1)^b for a = -1, else 0 (1/a^n truncated), as the op table.
    minus_one_power = K.select((b & 1).eq(0), K.Const(1, a.dtype), K.Const(-1, a.dtype))
    negative = K.select(a.eq(1), K.Const(1, a.dtype), K.select(a.eq(-1), minus_one_power, K.Const(0, a.dtype)))
    return K.select(b < 0, negative, result)


elemental("real")(lambda emitter, op, index, operand: emitter.parts_at(op.operands[0], index)[0])
elemental("imag")(lambda emitter, op, index, operand: emitter.parts_at(op.operands[0], index)[1])


# ---- sources --------------------------------------------------------------------------------

@elemental("iota")
def iota(emitter, op, index, operand):
    return index.components[op.attrs["dimension"]].cast(op.attrs["dtype"])


def select_tree(linear: K.Expr, values: list, dtype: str) -> K.Expr:
    """values[linear] as a balanced tree of selects on the index."""
    if len(values) == 1:
        return K.Const(values[0], dtype)
    middle = len(values) // 2
    return K.select(linear < middle, select_tree(linear, values[:middle], dtype),
                    select_tree(linear - middle, values[middle:], dtype))


@elemental("constant")
def constant(emitter, op, index, operand):
    return constant_element(emitter, op.attrs["value"], op.result.type.dtype, index)


def constant_element(emitter, array: np.ndarray, dtype: str, index: Index) -> K.Expr:
    flat = array.reshape(-1)
    if not flat.size:  # no element is ever read (a kernel of an empty result still emits one)
        return K.Const(0, dtype)
    if flat.tobytes() == flat[:1].tobytes() * flat.size:  # one value (bitwise: -0.0, NaN)
        return K.Const(flat[0].item(), dtype)
    if flat.size > SELECT_TREE_ELEMENTS:
        table = emitter.constant_table(array, dtype)
        if table is not None:
            return table[index.linear]
    return select_tree(index.linear, flat.tolist(), dtype)


# ---- data movement ----------------------------------------------------------------------------

@elemental("broadcast_in_dim")
def broadcast_in_dim(emitter, op, index, operand):
    x = op.operands[0].type
    comps = [K.Const(0, index.dtype) if size == 1 else index.components[d]
             for size, d in zip(x.shape, op.attrs["broadcast_dimensions"])]
    return operand(0, emitter.index(x.shape, components=comps))


@elemental("reshape")
def reshape(emitter, op, index, operand):
    return operand(0, emitter.index(op.operands[0].type.shape, linear=index.linear))


@elemental("transpose")
def transpose(emitter, op, index, operand):
    perm = op.attrs["permutation"]
    comps = [None] * len(perm)
    for j, p in enumerate(perm):
        comps[p] = index.components[j]
    return operand(0, emitter.index(op.operands[0].type.shape, components=comps))


@elemental("slice")
def slice_(emitter, op, index, operand):
    starts, strides = op.attrs["start_indices"], op.attrs["strides"]
    comps = [c * s + start if s != 1 else (c + start if start else c)
             for c, start, s in zip(index.components, starts, strides)]
    return operand(0, emitter.index(op.operands[0].type.shape, components=comps))


@elemental("rev")
def rev(emitter, op, index, operand):
    shape = op.result.type.shape
    comps = [(shape[d] - 1) - c if d in op.attrs["dimensions"] else c for d, c in enumerate(index.components)]
    return operand(0, emitter.index(shape, components=comps))


@elemental("pad")
def pad(emitter, op, index, operand):
    x = op.operands[0].type
    fill = operand(1, emitter.index((), components=()))
    if x.size == 0:
        return fill
    inside, comps = None, []
    for c, d, low, interior in zip(index.components, x.shape, op.attrs["low"], op.attrs["interior"]):
        shifted = c - low if low > 0 else c + (-low) if low < 0 else c
        q = shifted / (interior + 1) if interior else shifted
        conditions = [q < d]
        if low > 0:
            conditions.append(c >= low)
        if interior:
            conditions.append((shifted % (interior + 1)).eq(0))
        for condition in conditions:
            inside = condition if inside is None else inside & condition
        comps.append(K.minimum(q, d - 1))  # a clamped index: the load stays in bounds where fill is taken
    element = operand(0, emitter.index(x.shape, components=comps))
    return element if inside is None else K.select(inside, element, fill)


@elemental("concatenate")
def concatenate(emitter, op, index, operand):
    dim = op.attrs["dimension"]
    c = index.components[dim]
    pieces, offset = [], 0
    for k, v in enumerate(op.operands):
        if v.type.shape[dim]:
            pieces.append((k, offset, offset + v.type.shape[dim]))
        offset += v.type.shape[dim]
    result = None
    for k, start, stop in reversed(pieces):
        local = c - start if start else c
        comps = list(index.components)
        comps[dim] = K.minimum(local, stop - start - 1) if result is not None or start else local
        element = operand(k, emitter.index(op.operands[k].type.shape, components=comps))
        result = element if result is None else K.select(c < stop, element, result)
    return result


def unsigned_of_width(dtype: str) -> str:
    return f"u{NUMPY_DTYPES[dtype].itemsize * 8}"


@elemental("bitcast_convert")
def bitcast_convert(emitter, op, index, operand):
    """Equal widths: one kernel-IR bitcast. A wider operand: piece k (the trailing index) of its element is
    bits [k*w, (k+1)*w) of it (little-endian, as numpy's .view); a narrower one: the pieces along its
    trailing axis shifted into place and or-ed together."""
    x, target = op.operands[0].type, op.attrs["dtype"]
    source_wide, target_wide = unsigned_of_width(x.dtype), unsigned_of_width(target)
    source_bits, target_bits = (NUMPY_DTYPES[d].itemsize * 8 for d in (source_wide, target_wide))
    if source_bits == target_bits:
        return operand(0, index).bitcast(target)
    if source_bits > target_bits:
        *outer, piece = index.components
        whole = as_bits(operand(0, emitter.index(x.shape, components=outer)), source_wide)
        shifted = whole >> piece.cast(source_wide) * target_bits
        return as_bits(shifted.cast(target_wide), target)
    assembled = None
    for k in range(target_bits // source_bits):
        comps = (*index.components, K.Const(k, index.dtype))
        piece = as_bits(operand(0, emitter.index(x.shape, components=comps)), source_wide).cast(target_wide)
        piece = piece << k * source_bits if k else piece
        assembled = piece if assembled is None else assembled | piece
    return as_bits(assembled, target)


def as_bits(x: K.Expr, dtype: str) -> K.Expr:
    """x's bits as dtype, of x's width (x itself when it has that dtype)."""
    return x if x.dtype == dtype else x.bitcast(dtype)


# ---- reduce ---------------------------------------------------------------------------------

@elemental("reduce")
def reduce(emitter, op, index, operand):
    """A loop over the reduced elements of this output element (row kernels precompute instead)."""
    x = op.operands[0].type
    axes = op.attrs["axes"]
    reduced_shape = tuple(x.shape[a] for a in axes)
    acc = Accumulator(emitter, op.attrs["reducer"], x.dtype)

    def body(j):
        inner = emitter.index(reduced_shape, linear=j).components
        acc.add(operand(0, emitter.index(x.shape, components=merge_axes(index.components, inner, axes))))

    if math.prod(reduced_shape):
        accumulate_loop(emitter, math.prod(reduced_shape), [acc], body)
    return acc.narrow(acc.var)
