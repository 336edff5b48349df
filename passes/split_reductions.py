"""split_reductions: a reduce of few results over many elements becomes two (XLA's tree reduction).

A fused kernel reduces each row in one workgroup (reduced axes trailing) or one work-item (others;
lowering/tiling.py), so `max(abs(x))` over 1 Mi elements runs on one workgroup: one CU of
gfx942's 304, one thread of the host's pool. This pass splits such a reduce into a first reduce
into many partial results and a second, small one over the partials:

    %1 = reduce(%0) {reducer = "max", axes = [0]} : f64[]                  of f64[1048576]
 ->
    %1 = reshape(%0) {new_sizes = [1024, 1024]} : f64[1024,1024]
    %2 = reduce(%1) {reducer = "max", axes = [1]} : f64[1024]
    %3 = reduce(%2) {reducer = "max", axes = [0]} : f64[]

The operand's shape is read as (K1, N, K2): kept elements before the reduced ones, N reduced,
kept after (the reduced axes must be contiguous once 1-sized axes are dropped; other reduces are
left alone). N is padded to P * k and the operand reshaped to (K1, P, k, K2), 1-sized K1 and K2
left out, then reduced over k: each partial reduces a contiguous chunk. With K2 = 1 (reduced axes
trailing) a workgroup reduces each chunk; otherwise a work-item does (of 16 bytes of consecutive
columns where they come in whole waves: item_columns), streaming through its chunk
(the strided order (K1, k, P, K2), whose waves read consecutive elements, ran the host's loops
up to 10x slower: P * K2 * itemsize a multiple of 4 KiB puts a work-item's every load in one
cache set). The second reduce takes the partials (K1, P, K2) transposed to (K1, K2, P), so that
a workgroup, not one work-item's loop, reduces each result's P partials.

A fused kernel computes data movement on its inputs only (passes/fusion.py), so the reshape is
applied at the operand's leaves: its elementwise producers are rebuilt on reshaped leaves, and
the first reduce fuses with them (abs(x - y)) as the second fuses with its consumers. A producer
that something else also reads stays where it is and becomes a leaf. Padding puts the reducer's
identity after the last element: the operand itself padded with it when it is a leaf, else the
leaves padded with a harmless 1 and a select of the identity over the padding.

Results: integer reductions wrap or compare, so any grouping is exact; max and min propagate NaN
and settle zero signs (+0 over -0 for max) in any grouping. Float sums and products are
reassociated, as the kernels already do (in blocks and trees). f16 and bf16 sums and products
accumulate in f32 through both reduces and round once, as the unsplit reduce does.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.core import Module, Op, Region, Value, walk
from ..ir.ops.reduce import reducer_identity
from ..ir.targets import Target, get_target
from ..ir.types import NUMPY_DTYPES, TensorType
from .fusion import MAX_ROW_ELEMENTS
from .opclasses import ELEMENTWISE
from .rewrite import Rebuilder, Scope, eliminate_dead_code

# Shorter rows stay whole: fusion keeps them on chip for multi-phase row kernels (softmax, layernorm).
MIN_REDUCED_ELEMENTS = MAX_ROW_ELEMENTS + 1
# The partials are counted per CU of the target (ir/targets.py), so that the first reduce fills it:
PARTIAL_ROWS_PER_CU = 4      # partials of a trailing reduce, a workgroup each (1216 on gfx942's 304 CUs)
MIN_CHUNK = 1024        # elements per partial row at least: 4 for each of a 256-work-item workgroup
PARTIAL_ITEMS_PER_CU = 256   # partials of another reduce: a workgroup of 256 work-items per CU, item_columns each
MIN_ITEM_CHUNK = 64     # elements per partial of a work-item at least: its loop, not the launch, dominates;
MIN_ITEM_ROWS = 32      # rows at least where it takes several columns (item_columns) of each
ITEM_BYTES = 16         # a work-item's columns (lowering/tiling.py: column_vector), in whole waves of WAVE
WAVE = 64
MIN_PARTIALS = 4        # fewer partials per result do not pay for a second kernel
MIN_SHORT_ROW_PARTIALS = 16   # nor, for rows a work-item's loop keeps on chip anyway, fewer than this
WIDE = {"f16": "f32", "bf16": "f32"}   # what half floats accumulate in (ir/ops/reduce.py)


def contiguous_split(shape, axes) -> tuple[int, int, int] | None:
    """(K1, N, K2) when the reduced axes of `shape` are contiguous once 1-sized axes are dropped, else None."""
    sizes = [(size, i in axes) for i, size in enumerate(shape) if size != 1]
    reduced = [j for j, (_, is_reduced) in enumerate(sizes) if is_reduced]
    if not reduced or reduced != list(range(reduced[0], reduced[-1] + 1)):
        return None
    return (math.prod(s for s, _ in sizes[:reduced[0]]), math.prod(s for s, _ in sizes[reduced[0]:reduced[-1] + 1]),
            math.prod(s for s, _ in sizes[reduced[-1] + 1:]))


class Split:
    """How one reduce is split: the shapes of its operand on the way to the first reduce, and the partials'."""

    def __init__(self, kept_before: int, n: int, kept_after: int, partials: int):
        self.chunk = -(-n // partials)                 # k
        self.partials = -(-n // self.chunk)            # P, so that the padding is less than a chunk
        self.padding = self.partials * self.chunk - n
        lead = (kept_before,) if kept_before > 1 else ()
        trail = (kept_after,) if kept_after > 1 else ()
        self.flat_shape = lead + (n,) + trail
        self.padded_axis = len(lead)
        self.shape, self.first_axis = lead + (self.partials, self.chunk) + trail, len(lead) + 1
        self.second_axis = len(lead)


def item_columns(kept_after: int, dtype: str) -> int:
    """Consecutive columns a work-item of the first reduce takes when the kept axes are trailing:
    lowering/tiling.py's column_vector rule for the operand's dtype (ITEM_BYTES of it, halved
    until a wave's columns divide the kept elements)."""
    columns = max(ITEM_BYTES // NUMPY_DTYPES[dtype].itemsize, 1)
    while columns > 1 and kept_after % (WAVE * columns):
        columns //= 2
    return columns


def plan_split(op: Op, target: Target | None = None) -> Split | None:
    """The split of reduce `op` for `target` (None: the default), or None where it does not pay
    (see the thresholds above)."""
    units = (target or get_target()).compute_units
    shape, axes = op.operands[0].type.shape, op.attrs["axes"]
    found = contiguous_split(shape, axes)
    if found is None:
        return None
    kept_before, n, kept_after = found
    kept = kept_before * kept_after
    if kept == 0:
        return None
    if kept_after == 1:
        if n < MIN_REDUCED_ELEMENTS:
            return None
        partials = min(PARTIAL_ROWS_PER_CU * units // kept, n // MIN_CHUNK)
    else:
        # A work-item loops over each result's row, so a short row counts too when the results are
        # few: a bias gradient (sum over [32, 14, 14] of 16 channels) is 16 work-items' loops.
        if n * kept < MIN_REDUCED_ELEMENTS:
            return None
        columns = item_columns(kept_after, op.operands[0].type.dtype)
        partials = min(PARTIAL_ITEMS_PER_CU * columns * units // kept,
                       n // (MIN_ITEM_CHUNK if columns == 1 else MIN_ITEM_ROWS))
    if partials < (MIN_SHORT_ROW_PARTIALS if n < MIN_REDUCED_ELEMENTS else MIN_PARTIALS):
        return None
    # A divisor of N, down to half as many partials, needs no padding (nor its select).
    partials = next((d for d in range(partials, partials // 2, -1) if n % d == 0), partials)
    return Split(kept_before, n, kept_after, partials)


def consumers(module: Module) -> dict[int, set[int]]:
    """For each value (by id), the ops (and region or module ends, by id) that read it."""
    readers: dict[int, set[int]] = {}
    for op in walk(module.body):
        for v in op.operands:
            readers.setdefault(id(v), set()).add(id(op))
        for region in op.regions:
            for v in region.outputs:
                readers.setdefault(id(v), set()).add(id(region))
    for v in module.outputs:
        readers.setdefault(id(v), set()).add(id(module))
    return readers


class SplitScope(Scope):
    """A region being built, with the ids of its input ops and the leaves already reshaped in it."""

    def __init__(self, parent: Scope | None = None):
        super().__init__(parent)
        self.region_ops: set[int] = set()
        self.relayouts: dict = {}   # (value id, shapes, fill) -> the value in that shape: siblings read one


class ReductionSplitter(Rebuilder):
    def __init__(self, module: Module, target: Target | None):
        self.readers = consumers(module)
        self.target = target

    def new_scope(self, parent):
        return SplitScope(parent)

    def copy_ops(self, region: Region, scope: SplitScope) -> list[Value]:
        scope.region_ops = {id(op) for op in region.ops}
        return super().copy_ops(region, scope)

    def copy_op(self, op: Op, scope: SplitScope):
        if op.name == "fusion":   # already a kernel: copied as it is
            return Rebuilder().copy_op(op, scope)
        split = plan_split(op, self.target) if op.name == "reduce" else None
        if split is None:
            return super().copy_op(op, scope)
        scope.bind(op.results, [self.split_reduce(op, split, scope)])

    def op(self, scope, name, *operands, **attrs) -> Value:
        (result,) = self.emit(scope, name, list(operands), attrs)
        return result

    def splat(self, scope, scalar, dtype: str, shape) -> Value:
        value = self.op(scope, "constant", value=np.array(scalar).astype(TensorType(dtype, ()).numpy_dtype))
        return self.op(scope, "broadcast_in_dim", value, shape=shape, broadcast_dimensions=()) if shape else value

    def split_reduce(self, op: Op, split: Split, scope: SplitScope) -> Value:
        reducer, dtype = op.attrs["reducer"], op.operands[0].type.dtype
        wide = WIDE.get(dtype, dtype) if reducer in ("sum", "prod") else dtype
        identity = reducer_identity(reducer, TensorType(wide, ()).numpy_dtype)
        root = op.operands[0]
        if self.is_sinkable(root, op, scope):
            operand = self.rebuilt(root.producer, split, scope, {})
            if wide != dtype:
                operand = self.op(scope, "convert", operand, dtype=wide)
            if split.padding:   # the identity over the padding
                inside = self.relayout(self.splat(scope, True, "bool", split.flat_shape), split, scope, False)
                operand = self.op(scope, "select", inside, operand, self.splat(scope, identity, wide, split.shape))
        else:
            leaf = scope.values[id(root)]
            if wide != dtype:
                leaf = self.op(scope, "convert", leaf, dtype=wide)
            operand = self.relayout(leaf, split, scope, identity)
        partials = self.op(scope, "reduce", operand, reducer=reducer, axes=(split.first_axis,))
        if split.padded_axis + 1 < len(split.flat_shape):   # kept axes after: the partials' axis moved last
            order = tuple(a for a in range(len(split.flat_shape)) if a != split.padded_axis) + (split.padded_axis,)
            partials = self.op(scope, "transpose", partials, permutation=order)
            result = self.op(scope, "reduce", partials, reducer=reducer, axes=(len(order) - 1,))
        else:
            result = self.op(scope, "reduce", partials, reducer=reducer, axes=(split.second_axis,))
        if wide != dtype:
            result = self.op(scope, "convert", result, dtype=dtype)
        if result.type.shape != op.result.type.shape:   # 1-sized kept axes, or several kept axes merged
            result = self.op(scope, "reshape", result, new_sizes=op.result.type.shape)
        return result

    def is_sinkable(self, value: Value, reader: Op, scope: SplitScope) -> bool:
        """Whether `value`'s producer is rebuilt in the split shape: an elementwise op of this region
        whose result `reader` alone reads."""
        producer = value.producer
        return (producer is not None and producer.name in ELEMENTWISE and id(producer) in scope.region_ops
                and self.readers.get(id(value)) == {id(reader)})

    def rebuilt(self, producer: Op, split: Split, scope: SplitScope, done: dict) -> Value:
        """The elementwise op `producer` rebuilt on its operands in the split shape (`done`: those already made)."""
        operands = []
        for v in producer.operands:
            if id(v) not in done:
                if v.type.shape == ():   # a scalar operand (clamp's bounds) stays one
                    done[id(v)] = scope.values[id(v)]
                elif self.is_sinkable(v, producer, scope):
                    done[id(v)] = self.rebuilt(v.producer, split, scope, done)
                else:
                    done[id(v)] = self.relayout(scope.values[id(v)], split, scope, None)
            operands.append(done[id(v)])
        return self.op(scope, producer.name, *operands, **producer.attrs)

    def relayout(self, value: Value, split: Split, scope: SplitScope, fill) -> Value:
        """Built `value`, of the reduce's operand shape, reshaped (and padded with `fill`) to the split shape.

        `fill` None: the padding is masked later, so any value does: a broadcast scalar is broadcast
        anew, and the rest padded with 1, on which no elementwise op traps (0 might, as an integer divisor).
        """
        fill = fill if split.padding else None
        key = (id(value), split.flat_shape, split.shape, None if fill is None else np.asarray(fill).tobytes())
        if key not in scope.relayouts:
            producer = value.producer
            if fill is None and producer is not None and producer.name == "broadcast_in_dim" \
                    and producer.operands[0].type.shape == ():
                result = self.op(scope, "broadcast_in_dim", producer.operands[0], shape=split.shape,
                                 broadcast_dimensions=())
            elif not split.padding:
                result = self.op(scope, "reshape", value, new_sizes=split.shape)
            else:
                flat = value if value.type.shape == split.flat_shape else \
                    self.op(scope, "reshape", value, new_sizes=split.flat_shape)
                high = tuple(split.padding if axis == split.padded_axis else 0 for axis in range(len(split.flat_shape)))
                fill_value = self.splat(scope, 1 if fill is None else fill, value.type.dtype, ())
                padded = self.op(scope, "pad", flat, fill_value, low=(0,) * len(high), high=high,
                                 interior=(0,) * len(high))
                result = self.op(scope, "reshape", padded, new_sizes=split.shape)
            scope.relayouts[key] = (value, result)   # the value kept alive: its id is not reused
        return scope.relayouts[key][1]


def split_reductions(module: Module, target: Target | None = None) -> Module:
    """A copy of `module` with each reduce of few results over many elements split in two (see
    above), its partials counted for `target` (None: the default target)."""
    return eliminate_dead_code(ReductionSplitter(module, target).run(module))


split_reductions.takes_target = True
