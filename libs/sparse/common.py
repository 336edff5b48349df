"""What the sparse library's kernels share: sizes as i64 scalar parameters, buffers whose counts are
extents of them, a work-item per item of a 1-D grid, and the binary search of a sorted array."""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emitters import operand_buffers

INDEX = "i64"   # positions and loop counters; index arrays are read as i32 or i64 and widened
ITEMS = 64      # work-items per workgroup


def sizes(*names: str) -> list[K.ScalarParam]:
    return [K.ScalarParam(name, INDEX) for name in names]


def variables(*names: str, dtype: str = INDEX) -> list[K.Var]:
    return [K.Var(name, dtype) for name in names]


def buffers(op: Op, counts) -> list[K.GlobalBuffer]:
    """The call's operand then result buffers, with counts that are extents of the size parameters."""
    return [K.GlobalBuffer(b.name, b.dtype, count, b.readonly) for b, count in zip(operand_buffers(op), counts)]


def per_item(name, params, items, body, arguments, lds=(), rows=ITEMS) -> K.Kernel:
    """A kernel running body(g) for each g in [0, items), a work-item each, ITEMS per workgroup of
    which the first `rows` take items (fewer where each work-item's LDS share limits them)."""
    g, lane = K.Var("g", INDEX), K.workitem_id(0).cast(INDEX)
    active = g < items if rows == ITEMS else (lane < rows) & (g < items)
    return K.Kernel(name, params=params, grid=(K.ceil_div(items, rows),), workgroup_size=(ITEMS,),
                    body=[K.Let(g, K.workgroup_id(0).cast(INDEX) * rows + lane), K.If(active, body(g))], lds=lds,
                    arguments=arguments)


def column_block(first: K.Var, column: K.Var, acc: K.Var, k, entries, store: K.Stmt) -> list[K.Stmt]:
    """A workgroup's ITEMS columns of a dense B (SpMM: `first`, and a work-item's `column`) summed into
    `acc` by entries(add), uniform loops over A's entries with add(product) for each: the host runs
    them once per workgroup with the columns inside, a vector per entry. A workgroup whose columns
    all lie below k (every one but the last where ITEMS does not divide k) reads B's rows unguarded,
    contiguous loads the host vectorizes; the last tests each column. Then `store` of each column below k."""
    return [K.Let(first, K.workgroup_id(0).cast(INDEX) * ITEMS),
            K.Let(column, first + K.workitem_id(0).cast(INDEX)),
            K.Let(acc, K.Const(0, acc.dtype)),
            K.If(first + ITEMS <= k, [entries(lambda product: product)],
                 [entries(lambda product: K.If(column < k, [product]))], uniform=True),
            K.If(column < k, [store])]


def loop(var: K.Var, start, stop, body) -> K.For:
    return K.For(var, start, stop, 1, body)


def widened(load: K.Expr) -> K.Expr:
    return load.cast(INDEX)


def in_range(index: K.Expr, count: K.Expr) -> K.Expr:
    """Whether a column read from an index array lies in [0, count): one outside is never loaded
    (traced index arrays are not checked, so a kernel drops it, as JAX's BCOO treats an
    out-of-range index as padding)."""
    return (index >= 0) & (index < count)


def clamped(load: K.Expr, count: K.Expr) -> K.Expr:
    """An indptr entry clamped to [0, count], the length of indices and data, so that no row's span
    reads outside them whatever indptr holds."""
    return K.minimum(K.maximum(widened(load), K.Const(0, INDEX)), count)


def last_at_most(array: K.Buffer, last: K.Expr, value: K.Expr, steps: K.Expr, result: K.Var, probe: K.Var):
    """Statements setting `result` to the largest r in [0, last] with array[r] <= value (0 if none):
    array sorted, 2^steps > last (the histogram's binary search: one halving step per bit)."""
    b = K.Var(probe.name + "_bit", INDEX)
    return [K.Let(result, K.Const(0, INDEX)),
            loop(b, 0, steps, [
                K.Let(probe, result + (K.Const(1, INDEX) << (steps - 1 - b))),
                K.If((probe <= last) & (widened(array[K.minimum(probe, last)]) <= value), [K.Assign(result, probe)])])]


def bits(count: int) -> int:
    """The halving steps of a binary search over indices [0, count]."""
    return max(count, 0).bit_length()
