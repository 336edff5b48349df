"""Kernel IR for `fusion` ops (passes/fusion.py's contract), in the layout lowering/tiling.py chooses.

Kernel parameters follow lowering/emitters.py: `in0, in1, ...` (the operands), then `out0, ...`.
Elements come from lowering/elemental.py; this module lays out the work:

- loop kernels: a workgroup's span (ir/kernel.py: ForSpan) stores every result at its elements,
  with no guard: the last span ends at the end, overlapping its predecessor (one body, contiguous
  loads and stores: vectors on the GPU, vectorized on the host, compiled once); only a result
  smaller than a span guards its stores.
- loop_by_rows kernels: workgroup (chunk, row) stores the row's elements from column
  chunk * width + lane, the last chunk moved back to end at the row's end as above; the index's
  row components come from the row id (uniform), its last one is the column.
- row_per_workgroup: phase after phase over the row (a reduce's phase is one more than the latest
  phase of the reduces it reads through row broadcasts; reduces of one phase share the pass over
  the row). A phase accumulates per work-item, then combines the workgroup (`combine_row`:
  wave_reduce and the waves' partials in LDS, or an LDS tree for prod/and/or); the per-row values
  that become computable are computed once, before the next phase. The last phase stores the
  full-shaped results elementwise and the per-row results once per row (lane 0).
- row_per_item: a work-item computes its row's reduces by looping over the row (elemental
  `reduce`), then stores its per-row results and loops over the row for the full-shaped ones.
"""
from __future__ import annotations

import math

from ..ir import kernel as K
from ..ir.core import Op, Value
from ..ir.targets import Target, get_target
from ..ir.types import COMPLEXES
from .elemental import Accumulator, ElementalEmitter, accumulate_loop, index_dtype_for, merge_axes
from .emit_ops import all_of
from .emitters import emitter, operand_buffers
from .tiling import (TILE, TILE_ROWS, WAVE_REDUCERS, LaunchConfig, launch_config, offset_ordered,
                     reduction_signature, transposed_params)


# Partial results of an unrolled row's exactly associative reduce: each add's latency (a max is
# compare, mask and blend) would otherwise chain through all of the work-item's elements.
ACCUMULATOR_CHAINS = 4


@emitter("fusion", takes_target=True)
def emit_fusion(op: Op, name: str, target: Target | None = None) -> K.Kernel:
    target = target or get_target()
    config = launch_config(op, target)
    builder = FusionKernel(op, name, config, target)
    BUILDERS[config.strategy](builder)
    return builder.kernel()


def buffer_elements(value: Value) -> int:
    """Elements of the value's buffer: a complex value holds two per element."""
    return value.type.size * (2 if value.type.dtype in COMPLEXES else 1)


class FusionKernel:
    """What every fusion kernel shares: buffers, the elemental emitter, the lane and group ids."""

    def __init__(self, op: Op, name: str, config: LaunchConfig, target: Target):
        self.op, self.name, self.config = op, name, config
        self.wave_size = target.wave_size
        self.region = op.regions[0]
        params = operand_buffers(op)
        self.inputs, self.outputs = params[:len(op.operands)], params[len(op.operands):]
        largest = max([buffer_elements(v) for v in self.region.params]
                      + [buffer_elements(v) for o in self.region.ops for v in o.results]
                      + [config.grid * config.grid_rows * config.workgroup_size * config.elements_per_item])
        self.emitter = ElementalEmitter(self.region, self.inputs, index_dtype_for(largest),
                                        target.max_lds_bytes_per_workgroup - config.lds_bytes)
        self.idx = self.emitter.index_dtype
        # Index expressions stay expressions of the launch ids, never variables: a variable living
        # across a barrier or wave op is reloaded on the host, which hides that consecutive
        # work-items touch consecutive elements (and so stops the work-item loops vectorizing).
        self.lane = K.workitem_id(0).cast(self.idx)
        self.group = K.workgroup_id(0).cast(self.idx)
        self.lds: list[K.LdsBuffer] = []
        self.streams: list[tuple[str, int]] = []

    def store_results(self, results, index, linear):
        """Store each (buffer, value) at element `index` (linear position `linear`) of its result; a
        complex element as its two parts (lowering/emitters.py's layout)."""
        for buffer, value in results:
            element = self.emitter.element_at(value, index)
            if value.type.dtype in COMPLEXES:
                self.emitter.emit(K.Store(buffer, linear * 2, element[0]))
                self.emitter.emit(K.Store(buffer, linear * 2 + 1, element[1]))
            else:
                self.emitter.emit(K.Store(buffer, linear, element))

    def kernel(self) -> K.Kernel:
        e = self.emitter
        body = list(e.blocks[0])
        if e.lds_fill:  # constant tables: filled by lane 0 after the ids are bound, then a barrier
            body[:0] = [K.If(self.lane.eq(0), e.lds_fill), K.Barrier()]
        return K.Kernel(self.name, params=self.inputs + self.outputs, grid=(self.config.grid, self.config.grid_rows),
                        workgroup_size=(self.config.workgroup_size,), body=body, lds=self.lds + e.lds,
                        streams=self.streams, wave_size=self.wave_size)


# ---- loop kernels -----------------------------------------------------------------------------

def build_loop(fk: FusionKernel):
    e, config = fk.emitter, fk.config
    shape = fk.op.results[0].type.shape
    n = math.prod(shape)
    span = config.workgroup_size * config.elements_per_item
    results = list(zip(fk.outputs, fk.region.outputs))
    start = fk.group * span
    if config.grid * span > n and n >= span:
        # A span past the end moves back to end there: it overlaps its predecessor, whose elements
        # it computes again and stores with the same values. One body for every workgroup, without
        # guards, so its loads and stores stay contiguous (vectors on the GPU, vectorized on the host).
        start = K.minimum(start, n - span)
    element = K.Var("element", fk.idx)
    with e.block() as body:
        index = e.index(shape, linear=element)
        if n < span:  # a single, partial span
            with e.block() as stores:
                fk.store_results(results, index, element)
            e.emit(K.If(element < n, stores))
        else:
            fk.store_results(results, index, element)
    e.emit(K.ForSpan(element, start, config.elements_per_item, body))


def build_loop_by_rows(fk: FusionKernel):
    e, width = fk.emitter, fk.config.workgroup_size
    shape = fk.op.results[0].type.shape
    length = shape[-1]
    start = fk.group * width
    if fk.config.grid * width > length:  # the last chunk moves back to end at the row's end (no guards)
        start = K.minimum(start, length - width)
    column = start + fk.lane
    row = K.workgroup_id(1).cast(fk.idx)
    components = e.index(shape[:-1], linear=row).components + (column,)
    fk.store_results(list(zip(fk.outputs, fk.region.outputs)),
                     e.index(shape, components=components, linear=row * length + column), row * length + column)


STAGED_PER_ITEM = 4   # consecutive elements of a transposed operand's tile row each work-item copies


def build_transpose_tiles(fk: FusionKernel):
    """Workgroup (x, y) computes the results' tile of rows 32y.. and columns 32x..: work-item
    (tx, ty) = (lane % 32, lane / 32) first copies rows ty, ty + 8, ... of each transposed operand's
    tile (the operand's rows 32x.., its columns 32y..) into LDS, element tx of each, then after a
    barrier computes the results at rows 32y + ty + 8i, column 32x + tx, its transposed operands'
    elements read from their tiles' columns."""
    e = fk.emitter
    rows, columns = fk.op.results[0].type.shape
    tile, pitch = TILE, TILE + 1
    tx, ty = fk.lane % tile, fk.lane / tile
    first_column, first_row = fk.group * tile, K.workgroup_id(1).cast(fk.idx) * tile
    edge_columns, edge_rows = columns % tile != 0, rows % tile != 0
    for param in transposed_params(fk.region):
        source = fk.inputs[[id(p) for p in fk.region.params].index(id(param))]
        staged = K.LdsBuffer(f"tile_{source.name}", source.dtype, tile * pitch)
        fk.lds.append(staged)
        # Work-item l copies row l / 8 of the tile, its elements 4 (l % 8) .. + 3: consecutive
        # addresses, which the GPU backend merges into one 16-byte load.
        local_row, local_column = fk.lane / (tile // STAGED_PER_ITEM), fk.lane % (tile // STAGED_PER_ITEM) * STAGED_PER_ITEM
        row = first_column + local_row   # of the operand: its rows are the results' columns
        for k in range(STAGED_PER_ITEM):
            column = first_row + local_column + k
            copy = K.Store(staged, local_row * pitch + local_column + k, source[row * rows + column])
            inside = [c for c in (edge_columns and row < columns, edge_rows and column < rows) if c is not False]
            e.emit(K.If(all_of(inside), [copy]) if inside else copy)
        e.staged[id(param)] = (lambda components, staged=staged:
                               staged[(components[0] - first_column) * pitch + (components[1] - first_row)])
    e.emit(K.Barrier())
    results = list(zip(fk.outputs, fk.region.outputs))
    for i in range(fk.config.elements_per_item):
        row, column = first_row + ty + TILE_ROWS * i, first_column + tx
        linear = row * columns + column
        inside = [c for c in (edge_rows and row < rows, edge_columns and column < columns) if c is not False]
        if not inside:
            fk.store_results(results, e.index((rows, columns), components=(row, column), linear=linear), linear)
            continue
        with e.block() as stores:
            fk.store_results(results, e.index((rows, columns), components=(row, column), linear=linear), linear)
        e.emit(K.If(all_of(inside), stores))


# ---- reduction kernels --------------------------------------------------------------------------

class Rows:
    """The row structure of a reduction fusion: S, A, the reduces by phase, the results by kind."""

    def __init__(self, fk: FusionKernel):
        self.shape, self.axes = reduction_signature(fk.region)
        self.kept_shape = tuple(d for i, d in enumerate(self.shape) if i not in self.axes)
        self.reduced_shape = tuple(self.shape[a] for a in self.axes)
        self.row_size = math.prod(self.reduced_shape)
        self.trailing = self.axes == tuple(range(len(self.shape) - len(self.axes), len(self.shape)))
        self.reduces = [op for op in fk.region.ops if op.name == "reduce"]
        self.depends: dict[int, frozenset] = {}
        phase: dict[int, int] = {}
        for r in self.reduces:
            before = self.reduces_read(r.operands[0])
            phase[id(r)] = 1 + max((phase[id(p)] for p in self.reduces if id(p) in before), default=-1)
        self.phases = [[r for r in self.reduces if phase[id(r)] == p] for p in range(max(phase.values()) + 1)]
        self.per_row, self.full = [], []
        for buffer, value in zip(fk.outputs, fk.region.outputs):
            if value.type.shape == self.kept_shape:
                self.per_row.append((buffer, value))
            elif value.type.shape == self.shape:
                self.full.append((buffer, value))
            else:
                raise NotImplementedError(f"fusion {fk.name}: result {value.type} is neither the reduced "
                                          f"operand shape {list(self.shape)} nor its rows {list(self.kept_shape)}")

    def reduces_read(self, value: Value) -> frozenset:
        """The ids of the reduce ops `value` depends on within the region."""
        if id(value) not in self.depends:
            op = value.producer
            found = frozenset()
            if op is not None:
                found = frozenset({id(op)}) if op.name == "reduce" else frozenset()
                for operand in op.operands:
                    found |= self.reduces_read(operand)
            self.depends[id(value)] = found
        return self.depends[id(value)]

    def full_index(self, fk: FusionKernel, row_index, element, row_start=None):
        """The index into S of row element `element` (a linear position in the row)."""
        inner = fk.emitter.index(self.reduced_shape, linear=element).components
        components = merge_axes(row_index.components, inner, self.axes)
        linear = row_start + element if self.trailing and row_start is not None else None
        return fk.emitter.index(self.shape, components=components, linear=linear)


def build_row_per_item(fk: FusionKernel):
    if fk.config.vector > 1:
        build_columns_per_item(fk)
        return
    e, rows = fk.emitter, Rows(fk)
    count = math.prod(rows.kept_shape)
    width = fk.config.workgroup_size
    row = fk.group * width + fk.lane

    def body():
        row_index = e.index(rows.kept_shape, linear=row)
        for r in rows.reduces:  # in order: later reduces find earlier ones in the memo
            e.value_at(r.result, row_index)
        fk.store_results(rows.per_row, row_index, row)
        if rows.full and rows.row_size:
            row_start = row * rows.row_size if rows.trailing else None

            def element(j):
                index = rows.full_index(fk, row_index, j, row_start)
                fk.store_results(rows.full, index, index.linear)
            e.loop(rows.row_size, element)

    if count % width:
        with e.block() as guarded:
            body()
        e.emit(K.If(row < count, guarded))
    else:
        body()


def build_columns_per_item(fk: FusionKernel):
    """row_per_item where a work-item takes `vector` columns of the last axis (tiling.column_vector:
    per-row results only, one phase, a workgroup's columns within one row of the last axis): the
    workgroup's columns start at group x width x vector, the work-item's lie at its span offsets
    (consecutive on the GPU: one vector load per row; across the work-items on the host). One
    uniform loop over the rows adds each column's element to its accumulator, in row order as
    `reduce` does, so the sums round alike on either side."""
    e, rows, vector = fk.emitter, Rows(fk), fk.config.vector
    start = fk.group * (fk.config.workgroup_size * vector)
    first = e.index(rows.kept_shape, linear=start).components
    offsets = [K.span_offset(vector, u, fk.idx) for u in range(vector)]
    columns = [e.index(rows.kept_shape, components=first[:-1] + (first[-1] + offset,), linear=start + offset)
               for offset in offsets]
    slots = [[Accumulator(e, r.attrs["reducer"], r.operands[0].type.dtype) for _ in columns] for r in rows.reduces]

    def row_element(j):
        for row_index, u in zip(columns, range(vector)):
            index = rows.full_index(fk, row_index, j)
            for r, accs in zip(rows.reduces, slots):
                accs[u].add(e.value_at(r.operands[0], index))
    accumulate_loop(e, rows.row_size, [acc for accs in slots for acc in accs], row_element, uniform=True)
    for row_index, u in zip(columns, range(vector)):  # per column: its totals, the results computed from them
        for r, accs in zip(rows.reduces, slots):
            e.precomputed[id(r.result)] = accs[u].narrow(accs[u].var)
        fk.store_results(rows.per_row, row_index, row_index.linear)
    for r in rows.reduces:
        del e.precomputed[id(r.result)]


def build_row_per_workgroup(fk: FusionKernel):
    e, rows, config = fk.emitter, Rows(fk), fk.config
    width, size, vector = config.workgroup_size, rows.row_size, config.vector
    if rows.trailing:  # workgroup g's row is elements [g * size, (g + 1) * size) of every full-shaped input
        fk.streams = [(buffer.name, size * (2 if param.type.dtype in COMPLEXES else 1))
                      for buffer, param in zip(fk.inputs, fk.region.params) if param.type.shape == rows.shape and size]
    row_index = e.index(rows.kept_shape, linear=fk.group)
    row_start = fk.group * size
    # The row comes in groups of `group_span` consecutive elements, of which a work-item takes
    # `vector` at the offsets the backend assigns (ir/kernel.py: SpanOffset): consecutive ones
    # on the GPU (one vector access), across the work-items on the host.
    group_span = width * vector
    groups, whole_groups = -(-size // group_span), size // group_span
    offsets = [K.span_offset(vector, u, fk.idx) if vector > 1 else fk.lane for u in range(vector)]

    def element(g, u):
        """(index, valid, position) of the work-item's u-th element of its g-th group. The last,
        partial group moves back to end at the row's end, so its elements stay consecutive, and valid
        says which of them no earlier group took; a row shorter than a group (wide workgroups, one
        element each) clamps its index to the row's last element where valid is false."""
        if not (isinstance(g, int) and g >= whole_groups):
            position = g * group_span + offsets[u]
            return rows.full_index(fk, row_index, position, row_start), None, position
        if not whole_groups:
            position = offsets[u]
            return rows.full_index(fk, row_index, K.minimum(position, size - 1), row_start), position < size, position
        position = (size - group_span) + offsets[u]
        return rows.full_index(fk, row_index, position, row_start), position >= g * group_span, position

    unrolled = [element(g, u) for g in range(groups) for u in range(vector)] if config.unrolled else None

    def over_row(visit, accumulators=()):
        """visit(index, valid, position, u) for each of the work-item's row elements, in order."""
        if unrolled is not None:
            for number, (index, valid, position) in enumerate(unrolled):
                visit(index, valid, position, number % vector)
            return
        # The groups every work-item's elements lie in the row of, in a loop; then the last, partial one.
        if whole_groups:
            accumulate_loop(e, whole_groups, accumulators, lambda g: [visit(*element(g, u), u) for u in range(vector)],
                            hint="k")
        for g in range(whole_groups, groups):
            for u in range(vector):
                visit(*element(g, u), u)

    for number, phase in enumerate(rows.phases):
        slots = [offset_accumulators(fk, r, unrolled is not None) for r in phase]
        over_row(lambda index, valid, position, u: [accs[u % len(accs)].add(e.value_at(r.operands[0], index), valid)
                                                     for r, accs in zip(phase, slots)],
                 [acc for accs in slots for acc in accs])
        accumulators = lane_partials(fk, slots, number)
        totals = combine_row(fk, accumulators, number)
        for r, acc, total in zip(phase, accumulators, totals):
            e.precomputed[id(r.result)] = e.bind(acc.narrow(total), "row_" + r.attrs["reducer"])
        done = {id(r) for p in rows.phases[:number + 1] for r in p}
        for op in fk.region.ops:  # the per-row values now computable, once per row
            if op.name != "reduce" and op.result.type.shape == rows.kept_shape and rows.kept_shape != rows.shape \
                    and rows.reduces_read(op.result) <= done:
                e.element_at(op.result, row_index)

    if rows.per_row:
        with e.block() as stores:
            fk.store_results(rows.per_row, row_index, fk.group)
        e.emit(K.If(fk.lane.eq(0), stores))

    def store(index, valid, position, u):
        if valid is None:
            fk.store_results(rows.full, index, index.linear)
        else:
            with e.block() as stores:
                fk.store_results(rows.full, index, row_start + position)
            e.emit(K.If(valid, stores))

    if rows.full:
        over_row(store)


def offset_accumulators(fk: FusionKernel, reduce: Op, unrolled: bool) -> list[Accumulator]:
    """A reduce's accumulators in a work-item: one per span offset it takes (its u-th elements go to
    the u-th) where the rounding follows the order of the elements (a float sum or product, with
    several offsets), else one, whose chains (an unrolled row's independent partials) take them in turn."""
    reducer, dtype, vector = reduce.attrs["reducer"], reduce.operands[0].type.dtype, fk.config.vector
    if vector > 1 and offset_ordered(reducer, dtype):
        return [Accumulator(fk.emitter, reducer, dtype) for _ in range(vector)]
    return [Accumulator(fk.emitter, reducer, dtype, max(vector, ACCUMULATOR_CHAINS) if unrolled else vector)]


def lane_partials(fk: FusionKernel, slots: list[list[Accumulator]], phase: int) -> list[Accumulator]:
    """Each reduce's partial of the work-item, in its first accumulator: the chains folded, or, for a
    reduce with a partial per span offset, those partials written to LDS at their offsets and, after a
    barrier, work-item l's sum of offsets l, l + width, l + 2 width, ...: an order of offsets, so the
    GPU's and the host's assignments of offsets round alike."""
    e, width, vector = fk.emitter, fk.config.workgroup_size, fk.config.vector
    staged = []
    for k, accs in enumerate(slots):
        if len(accs) == 1:
            accs[0].fold()
            continue
        buffer = K.LdsBuffer(f"offsets{phase}_{k}", accs[0].acc_dtype, width * vector)
        fk.lds.append(buffer)
        for u, acc in enumerate(accs):
            e.emit(K.Store(buffer, K.span_offset(vector, u, fk.idx), acc.var))
        staged.append((accs[0], buffer))
    if staged:
        e.emit(K.Barrier())
    for acc, buffer in staged:
        total = buffer[fk.lane]
        for j in range(1, vector):
            total = acc.combine(total, buffer[fk.lane + j * width])
        e.emit(K.Assign(acc.var, total))
    return [accs[0] for accs in slots]


def combine_row(fk: FusionKernel, accumulators, phase: int) -> list[K.Expr]:
    """Every accumulator combined over the workgroup (the same value in every work-item).

    sum/max/min: wave_reduce; with several waves, lane 0 of each wave writes the wave's total to
    LDS and after a barrier every work-item folds them in wave order. prod/and/or (no wave op):
    a tree over the work-items' values in LDS, halving with a barrier per step.
    """
    e, width = fk.emitter, fk.config.workgroup_size
    waves = width // fk.wave_size
    totals: list = [None] * len(accumulators)
    partials, trees = [], []
    for k, acc in enumerate(accumulators):
        if acc.reducer in WAVE_REDUCERS:
            totals[k] = e.new_var("wave_" + acc.reducer, acc.acc_dtype)
            e.emit(K.WaveReduce(totals[k], acc.reducer, acc.var))
            if waves > 1:
                partials.append((k, K.LdsBuffer(f"partials{phase}_{k}", acc.acc_dtype, waves)))
        else:
            trees.append((k, K.LdsBuffer(f"tree{phase}_{k}", acc.acc_dtype, width)))
    if not partials and not trees:
        return totals
    fk.lds += [buffer for _, buffer in partials + trees]
    with e.block() as writes:
        for k, buffer in partials:
            e.emit(K.Store(buffer, fk.lane / fk.wave_size, totals[k]))
    if writes:
        e.emit(K.If((fk.lane % fk.wave_size).eq(0), writes))
    for k, buffer in trees:
        e.emit(K.Store(buffer, fk.lane, accumulators[k].var))
    e.emit(K.Barrier())
    step = width // 2
    while trees and step:
        with e.block() as halve:
            for k, buffer in trees:
                e.emit(K.Store(buffer, fk.lane, accumulators[k].combine(buffer[fk.lane], buffer[fk.lane + step])))
        e.emit(K.If(fk.lane < step, halve))
        e.emit(K.Barrier())
        step //= 2
    for k, buffer in partials:
        total = buffer[0]
        for w in range(1, waves):
            total = accumulators[k].combine(total, buffer[w])
        totals[k] = e.bind(total, "row_total")
    for k, buffer in trees:
        totals[k] = e.bind(buffer[0], "row_total")
    return totals


BUILDERS = {"loop": build_loop, "loop_by_rows": build_loop_by_rows, "transpose_tiles": build_transpose_tiles,
            "row_per_workgroup": build_row_per_workgroup, "row_per_item": build_row_per_item}
