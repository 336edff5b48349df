"""Tiling: the launch configuration of a `fusion` kernel, chosen against a target's budgets, with reasons.

`launch_config(op, target) -> LaunchConfig` is a pure function of the fusion op and the target
(ir/targets.py). It is not a pass: the decision is made when lowering/emit_fusion.py emits the
kernel it describes (and the reports call it again to print the reasons). Strategies:

- "loop" (kind loop): a workgroup takes a span of `elements_per_item` x workgroup_size consecutive
  elements of the results' shape (ir/kernel.py: ForSpan), `elements_per_item` per work-item: on the
  GPU consecutive ones (16-byte vector loads and stores of the narrowest dtype), on the host
  consecutive work-items take consecutive elements (contiguous across its vector lanes).
- "loop_by_rows" (kind loop, whose elements need their index's components: broadcasts, slices,
  transposes, iota, ... over a result of 2 or more dimensions with rows of a wave or more): the
  grid's second dimension walks the rows of the result (every axis but the last), the first one
  the chunks of a row; column = chunk start + lane. The row's components are uniform in a
  workgroup (computed once, the host hoists what they load) and the column is contiguous, where
  the flat layout divides every element's linear index by the row length and gathers.
- "row_per_workgroup" (kind reduction, reduced axes trailing, rows of a wave or more): a workgroup
  reduces one row; each work-item takes `elements_per_item` elements of it, `vector` at a time:
  the row comes in groups of workgroup_size x vector consecutive elements, of which a work-item
  takes those at its span offsets (ir/kernel.py: SpanOffset), consecutive on the GPU (16 bytes: a
  global_load_dwordx4, and a global_store_dwordx4 of elementwise results), across the work-items
  on the host (contiguous for its vectorization across work-items). Then a wave reduction and, for
  several waves, a combination of the waves' partials in LDS after a barrier. A float sum or
  product keeps a partial per offset, added in LDS in an order of offsets, so either assignment
  rounds alike. With the row's elements unrolled they stay in registers from phase to phase
  (softmax reads x once); past MAX_UNROLLED_ELEMENTS each phase loops over the row and recomputes.
- "row_per_item" (other reductions: columns, middle axes, short rows, empty rows): each work-item
  loops over one row; consecutive work-items take consecutive rows, contiguous when the kept axes
  are the trailing ones (column sums). Where the last axis is kept and every result is per row, a
  work-item takes `vector` columns at its span offsets (16 bytes, as row_per_workgroup's groups)
  with an accumulator each, and the loop over the rows is uniform: the host runs it once per
  workgroup with its work-item loops inside, vectorized across consecutive columns.

Every choice is recorded as text in `reasons`, e.g. "row of 1024 f32: 64 work-items x 16 elements".
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir.core import Op, Region
from ..ir.targets import Target, get_target
from ..ir.types import COMPLEXES, INTS, NUMPY_DTYPES
from ..passes.opclasses import ELEMENTWISE

WAVE = 64
LOOP_WORKGROUP = 256            # 4 waves: the usual choice for streaming kernels
MAX_ROW_WORKGROUP = 256         # a row's waves combine in LDS: 4 keep that short (and the host's wave loops small)
MAX_UNROLLED_ELEMENTS = 16      # per work-item and row, kept in registers between phases
OCCUPANCY_WAVES = 4             # target waves per SIMD: the VGPR budget is 512 / 4 = 128 per lane
BASE_VGPRS = 16                 # indices, accumulators and addresses, beside the per-element values


@dataclass(frozen=True)
class LaunchConfig:
    strategy: str                # "loop", "loop_by_rows", "row_per_workgroup" or "row_per_item"
    workgroup_size: int          # work-items, a multiple of 64
    elements_per_item: int       # loop: elements per work-item; row_per_workgroup: row elements per work-item
    grid: int                    # workgroups (loop_by_rows: per row)
    lds_bytes: int = 0           # for the cross-wave combination of reductions
    unrolled: bool = True        # row_per_workgroup: row elements unrolled (kept in registers)
    reasons: tuple[str, ...] = ()
    grid_rows: int = 1           # the grid's second dimension: loop_by_rows' rows
    vector: int = 1              # row_per_workgroup: consecutive row elements a work-item takes at a time;
                                 # row_per_item: consecutive columns (rows) a work-item takes

    def describe(self) -> str:
        grid = f"({self.grid}, {self.grid_rows})" if self.grid_rows > 1 else f"{self.grid}"
        vector = f" ({self.vector} at a time)" if self.vector > 1 else ""
        head = (f"{self.strategy}: grid {grid} x {self.workgroup_size} work-items, "
                f"{self.elements_per_item} element(s) per work-item{vector}, LDS {self.lds_bytes} bytes")
        return "\n".join([head] + [f"  - {reason}" for reason in self.reasons])


def reduction_signature(region: Region) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(S, A): the operand shape and reduced axes shared by a fused region's reduces, or None."""
    for op in region.ops:
        if op.name == "reduce":
            return op.operands[0].type.shape, tuple(op.attrs["axes"])
    return None


def vgpr_budget(target: Target) -> int:
    return target.vgprs_per_simd_lane // OCCUPANCY_WAVES


def words(dtype: str) -> int:
    """32-bit registers per element of `dtype` (f16/bf16 live in f32 registers)."""
    return 2 if NUMPY_DTYPES[dtype].itemsize == 8 else 1


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def size_text(n: int) -> str:
    for unit, scale in (("Mi", 1 << 20), ("Ki", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return str(n)


def launch_config(op: Op, target: Target | None = None) -> LaunchConfig:
    """The launch configuration of the fusion op `op` on `target` (the default target if None)."""
    target = target or get_target()
    region = op.regions[0]
    signature = reduction_signature(region)
    if op.attrs["kind"] == "loop" or signature is None:
        return loop_config(op, target)
    return reduction_config(op, region, signature, target)


# HIP's limit on a grid's second dimension (hipDeviceProp_t.maxGridSize[1] on CDNA): more rows
# keep the flat layout.
MAX_GRID_ROWS = 65535

# Ops whose element at a linear index needs no components of it: elementwise ops read their
# operands at the same index, a reshape's operand is read at the same linear index, a constant's
# table too. The others (broadcasts of more than one element, slices, transposes, iota, ...) read
# through the index's components, which the flat loop layout derives by div and mod per element.
FLAT_INDEXED = ELEMENTWISE | {"convert", "bitcast_convert", "reshape", "constant"}


def needs_components(region: Region) -> bool:
    """Whether a loop fusion's elements read their operands through the index's components."""
    return any(not (op.name in FLAT_INDEXED or op.name == "broadcast_in_dim" and op.operands[0].type.size <= 1)
               for op in region.ops)


def row_chunks(length: int) -> tuple[int, int]:
    """(chunks, width): the fewest work-items covering a row of `length` >= WAVE in chunks of
    `width`, a multiple of WAVE of at most LOOP_WORKGROUP and at most `length` (the last chunk
    moves back to end at the row's end, so none needs a guard); of equal totals, the widest."""
    widths = range(WAVE, min(LOOP_WORKGROUP, length) + 1, WAVE)
    width = min(widths, key=lambda w: (-(-length // w) * w, -w))
    return -(-length // width), width


def loop_config(op: Op, target: Target) -> LaunchConfig:
    result = op.results[0].type
    n = result.size
    rows = math.prod(result.shape[:-1])
    transposed = transposed_params(op.regions[0])
    if transposed and len(result.shape) == 2 and min(result.shape) >= TILE:
        return transpose_tiles_config(op, result, transposed)
    if 1 < rows <= MAX_GRID_ROWS and result.shape[-1] >= WAVE and needs_components(op.regions[0]):
        return loop_by_rows_config(result, rows)
    per_item = span_elements(element_bytes(op))
    width = min(LOOP_WORKGROUP, round_up(max(-(-n // per_item), 1), WAVE))
    span = width * per_item
    grid = -(-n // span)
    tail = n % span
    reasons = [f"{size_text(n)} elements of {result.dtype}: spans of {per_item} x {width} consecutive elements "
               f"per workgroup of {width} work-items, {per_item} per work-item ({vector_text(op, per_item)}); "
               f"the host's work-items take them {per_item} times in a row across the workgroup, "
               f"so its vectorized work-item loop reads and writes consecutive elements",
               f"grid {grid}" + (
                   f"; the last span ends at the last element, overlapping the previous one by {span - tail} "
                   f"elements (no guards)" if tail and n >= span else
                   f"; the workgroup guards its {tail} elements" if tail else "; no tail")]
    return LaunchConfig("loop", width, per_item, grid, 0, True, tuple(reasons))


# A loop kernel's work-item takes VECTOR_BYTES of its narrowest buffer's elements (a 16-byte
# global_load_dwordx4 / global_store_dwordx4 on CDNA), unless its buffers' elements together would
# then hold more than SPAN_BYTES_PER_ITEM per work-item (registers the GPU keeps the vectors in).
VECTOR_BYTES = 16
SPAN_BYTES_PER_ITEM = 256


def element_bytes(op: Op) -> list[int]:
    """The bytes per element of a loop fusion's operands and results (a complex one's two parts)."""
    return [NUMPY_DTYPES[v.type.dtype].itemsize for v in list(op.operands) + list(op.results)]


def span_elements(sizes: list[int]) -> int:
    """Elements per work-item of a span over buffers of these element sizes (bytes): VECTOR_BYTES
    of the narrowest, halved while their elements would exceed SPAN_BYTES_PER_ITEM (a power of 2,
    at least 1)."""
    per_item = max(VECTOR_BYTES // min(sizes), 1)
    while per_item > 1 and per_item * sum(sizes) > SPAN_BYTES_PER_ITEM:
        per_item //= 2
    return per_item


def vector_text(op: Op, per_item: int) -> str:
    widths = sorted({per_item * size for size in element_bytes(op)})
    return f"{'/'.join(map(str, widths))}-byte vector accesses on the GPU"


# A transposed operand is staged through LDS in TILE x TILE tiles, each row padded by one element
# (so that a tile's column, read across a wave, falls in 32 different banks), by workgroups of
# TILE x TILE_ROWS work-items that take TILE / TILE_ROWS rows of a tile each.
TILE = 32
TILE_ROWS = 8


def transposed_params(region: Region) -> list:
    """The 2-D parameters a loop fusion reads only through transposes that swap their axes, where
    every other op reads its operands at its own index (elementwise ops, converts, constants and
    scalar broadcasts) and the results have one 2-D shape: so each staged element is read at the
    result element's index, swapped, inside the workgroup's tile. Else []."""
    shapes = {out.type.shape for out in region.outputs}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2:
        return []
    params = {id(p): p for p in region.params}
    transposed = {}
    for op in region.ops:
        if op.name == "transpose" and tuple(op.attrs["permutation"]) == (1, 0) and id(op.operands[0]) in params:
            transposed[id(op.operands[0])] = op.operands[0]
        elif not (op.name in ELEMENTWISE | {"convert", "constant"}
                  or op.name == "broadcast_in_dim" and op.operands[0].type.size <= 1):
            return []
    read_directly = {id(v) for op in region.ops if op.name != "transpose" for v in op.operands}
    read_directly |= {id(v) for v in region.outputs}
    return [p for key, p in transposed.items() if key not in read_directly and p.type.dtype not in COMPLEXES]


def transpose_tiles_config(op: Op, result, transposed) -> LaunchConfig:
    rows, columns = result.shape
    grid, grid_rows = -(-columns // TILE), -(-rows // TILE)
    lds = sum(round_up(TILE * (TILE + 1) * NUMPY_DTYPES[p.type.dtype].itemsize, 16) for p in transposed)
    reasons = (f"{rows} x {columns} {result.dtype} reading {len(transposed)} operand(s) transposed: tiles of "
               f"{TILE} x {TILE}, grid ({grid}, {grid_rows}) of {TILE * TILE_ROWS} work-items",
               f"each transposed operand's tile is read along its rows into LDS (rows padded to {TILE + 1} elements: "
               f"its columns conflict-free), then, after a barrier, the results are computed and stored along "
               f"their rows: contiguous global loads and stores, LDS {lds} bytes")
    return LaunchConfig("transpose_tiles", TILE * TILE_ROWS, TILE // TILE_ROWS, grid, lds, True, reasons, grid_rows)


def loop_by_rows_config(result, rows: int) -> LaunchConfig:
    length = result.shape[-1]
    chunks, width = row_chunks(length)
    reasons = [f"{rows} rows of {length} {result.dtype}, whose elements read through the index's components: "
               f"a grid of {chunks} chunk(s) per row x {rows} rows, so a workgroup's row is uniform and its "
               f"columns consecutive (contiguous loads and stores, no div or mod per element)",
               f"{width} work-items per chunk: {chunks * width} work-items per row of {length}" + (
                   f"; the last chunk ends at the row's end, overlapping the previous one by "
                   f"{chunks * width - length} elements (no guards)" if chunks * width > length else "")]
    return LaunchConfig("loop_by_rows", width, 1, chunks, 0, True, tuple(reasons), rows)


def reduction_config(op: Op, region: Region, signature, target: Target) -> LaunchConfig:
    shape, axes = signature
    row = math.prod(shape[a] for a in axes)
    rows = math.prod(d for i, d in enumerate(shape) if i not in axes)
    dtype = next(o.operands[0].type.dtype for o in region.ops if o.name == "reduce")
    trailing = tuple(axes) == tuple(range(len(shape) - len(axes), len(shape)))
    what = f"{rows} row(s) of {row} {dtype} over axes {list(axes)} of {list(shape)}"
    if trailing and row >= WAVE:
        return row_per_workgroup_config(region, shape, row, rows, what, target)
    why = ("the reduced axes are not the trailing ones: consecutive work-items take consecutive rows, "
           "so loads are contiguous across a wave when the kept axes are trailing" if not trailing else
           "rows shorter than a wave: one row per work-item")
    vector = column_vector(region, shape, axes)
    items = -(-rows // vector)
    width = min(LOOP_WORKGROUP, round_up(max(items, 1), WAVE))
    while width > WAVE and (-(-items // width) < target.compute_units or shape[-1] % (width * vector) and vector > 1):
        width = max(WAVE, width // 2 // WAVE * WAVE)   # smaller workgroups (whole waves) reach more of the CUs
    grid = -(-items // width)
    fill = (f" (of {target.compute_units} CUs: workgroups of {width}, not {LOOP_WORKGROUP}, fill more of them)"
            if width < min(LOOP_WORKGROUP, round_up(max(items, 1), WAVE)) else "")
    reasons = [what, f"{why}; {width} work-items per workgroup, grid {grid}{fill}"]
    if vector > 1:
        reasons.append(f"a work-item takes {vector} consecutive columns of the last axis ({shape[-1]}, a multiple "
                       f"of {width * vector}) at its span offsets: on the GPU consecutive ones, {VECTOR_BYTES}-byte "
                       f"loads; on the host consecutive work-items take consecutive columns and the loop over the "
                       f"rows runs once per workgroup, its work-item loops inside (vectorized across columns)")
    return LaunchConfig("row_per_item", width, max(row, 1), grid, 0, False, tuple(reasons), vector=vector)


def column_vector(region: Region, shape, axes) -> int:
    """Columns a row_per_item work-item takes at a time (row_vector's width, halved until a wave of
    work-items takes a whole number of rows of the last axis), where that axis is kept, every
    result is per row and no reduce reads another (one loop over the rows, an accumulator per
    column); else 1. passes/split_reductions.py's item_columns follows the same rule (passes do
    not import lowering): change both together."""
    if not math.prod(shape) or len(shape) - 1 in axes:
        return 1
    kept_shape = tuple(d for i, d in enumerate(shape) if i not in axes)
    reduces = [op for op in region.ops if op.name == "reduce"]
    if any(v.type.shape != kept_shape for v in region.outputs) or any(reads_a_reduce(r.operands[0]) for r in reduces):
        return 1
    vector = row_vector(region, math.prod(shape))
    while vector > 1 and shape[-1] % (WAVE * vector):
        vector //= 2
    return vector


def reads_a_reduce(value) -> bool:
    """Whether a region value depends on a reduce of its region."""
    op = value.producer
    return op is not None and (op.name == "reduce" or any(reads_a_reduce(v) for v in op.operands))


def live_words(region: Region, shape) -> int:
    """Registers per row element for the values of the full shape that may stay live from phase to
    phase: parameters and computed values (broadcasts, constants and iota are recomputed for free)."""
    values = list(region.params) + [op.result for op in region.ops
                                    if op.name not in ("broadcast_in_dim", "constant", "iota")]
    return sum(words(v.type.dtype) for v in values if v.type.shape == tuple(shape))


def row_per_workgroup_config(region, shape, row, rows, what, target) -> LaunchConfig:
    live = live_words(region, shape)
    budget = vgpr_budget(target)
    reasons = [what]
    widest = row_vector(region, row * rows)

    def layout(width: int) -> tuple[int, int]:
        """(vector, elements per work-item) of a row over `width` work-items: groups of `vector`
        consecutive elements, the widest vector whose groups of the workgroup fit in the row."""
        vector = widest
        while vector > 1 and width * vector > row:
            vector //= 2
        return vector, -(-row // (width * vector)) * vector

    width, unrolled = WAVE, True
    vector, elements = layout(width)
    while width < min(MAX_ROW_WORKGROUP, target.max_workgroup_size) and (
            elements > MAX_UNROLLED_ELEMENTS or BASE_VGPRS + elements * live > budget):
        width *= 2
        vector, elements = layout(width)
    if elements > MAX_UNROLLED_ELEMENTS or BASE_VGPRS + elements * live > budget:
        unrolled, width = False, LOOP_WORKGROUP
        vector, elements = layout(width)
        reasons.append(f"a row does not fit the registers of a workgroup: {width} work-items loop over "
                       f"{elements} elements each, and each phase recomputes its inputs")
    else:
        reasons.append(f"one workgroup per row: {width} work-items x {elements} elements, unrolled; "
                       f"~{BASE_VGPRS + elements * live} VGPRs per lane <= {budget} "
                       f"({OCCUPANCY_WAVES} waves per SIMD) keep the row in registers between phases")
    waves = width // WAVE
    lds, tree, wave_reduces, slotted = 0, 0, 0, 0
    for r in (op for op in region.ops if op.name == "reduce"):
        dtype = r.operands[0].type.dtype
        itemsize = NUMPY_DTYPES[accumulator_dtype(dtype)].itemsize
        if vector > 1 and offset_ordered(r.attrs["reducer"], dtype):
            lds, slotted = lds + round_up(width * vector * itemsize, 16), slotted + 1
        if accumulator_reducer(r.attrs["reducer"], dtype) in WAVE_REDUCERS:
            lds += round_up(waves * itemsize, 16) if waves > 1 else 0
            wave_reduces += 1
        else:
            lds, tree = lds + round_up(width * itemsize, 16), tree + 1
    if vector > 1:
        reasons.append(f"a work-item takes its elements {vector} consecutive at a time on the GPU "
                       f"({row_text(region, row * rows, vector)}), the host's work-items consecutive ones "
                       f"(ir/kernel.py: SpanOffset)")
    if slotted:
        reasons.append(f"{slotted} float sum/prod reduction(s) keep a partial per offset of the "
                       f"{width * vector} elements of a group, added in LDS in an order of offsets "
                       f"(the same rounding in either assignment)")
    if wave_reduces and waves > 1:
        reasons.append(f"{waves} waves: wave_reduce, then the waves' partials combined in LDS after a barrier")
    elif wave_reduces:
        reasons.append("one wave per row: wave_reduce alone combines the row (no LDS, no barrier)")
    if tree:
        reasons.append(f"{tree} prod/and/or reduction(s): a tree in LDS over the {width} work-items' values "
                       f"({int(math.log2(width))} steps with barriers)")
    reasons.append(f"LDS {lds} bytes <= {target.max_lds_bytes_per_workgroup}")
    if lds > target.max_lds_bytes_per_workgroup:
        raise ValueError(f"tiling: {lds} bytes of LDS exceed the target's {target.max_lds_bytes_per_workgroup}")
    return LaunchConfig("row_per_workgroup", width, elements, rows, lds, unrolled, tuple(reasons), vector=vector)


def row_inputs_bytes(region: Region, size: int) -> list[int]:
    """Bytes per element of a row kernel's parameters of the reduced operand's size read at its
    linear index (by elementwise ops, reshapes and reduces; not through a transpose, say): its
    loads along the rows."""
    read_elsewhere = {id(v) for op in region.ops if op.name not in FLAT_INDEXED | {"reduce"} for v in op.operands}
    return [NUMPY_DTYPES[p.type.dtype].itemsize for p in region.params
            if p.type.size == size and id(p) not in read_elsewhere]


def row_vector(region: Region, size: int) -> int:
    """Consecutive row elements a work-item of a row kernel takes at a time on the GPU: VECTOR_BYTES
    of the narrowest row input's elements; 1 without row inputs or with complex values (pairs of
    elements). Which work-item takes which element is the backend's (ir/kernel.py: SpanOffset):
    the host's work-items take consecutive ones, which its vectorization across work-items reads
    and writes contiguously, so neither side pays for the other's layout."""
    sizes = row_inputs_bytes(region, size)
    values = list(region.params) + list(region.outputs)
    if not sizes or any(v.type.dtype in COMPLEXES for v in values):
        return 1
    return max(VECTOR_BYTES // min(sizes), 1)


def offset_ordered(reducer: str, dtype: str) -> bool:
    """Whether a reduction's rounding depends on the order it takes its elements in (a float sum or
    product): its work-items keep a partial per span offset, added in an order of offsets."""
    return accumulator_reducer(reducer, dtype) in ("sum", "prod") and accumulator_dtype(dtype) not in INTS


def row_text(region: Region, size: int, vector: int) -> str:
    widths = sorted({vector * b for b in row_inputs_bytes(region, size)})
    return (f"{'/'.join(map(str, widths))}-byte loads per lane, where one element per lane "
            f"issues {vector}x the load instructions")


# Reductions the kernel IR's wave_reduce does; the others combine in an LDS tree.
WAVE_REDUCERS = ("sum", "max", "min")


def accumulator_dtype(dtype: str) -> str:
    """The dtype a reduction accumulates in: f32 for f16/bf16, u8 (0/1) for bool."""
    return "f32" if dtype in ("f16", "bf16") else "u8" if dtype == "bool" else dtype


def accumulator_reducer(reducer: str, dtype: str) -> str:
    """On bool's 0/1 accumulator, `and` is min and `or` is max."""
    return {"and": "min", "or": "max"}.get(reducer, reducer) if dtype == "bool" else reducer
