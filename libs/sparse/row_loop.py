"""The loop form of the dense CSR idiom: a `fori_loop` over the m rows of y that gathers `width`
entries from each row's start and masks those past its end,

    def row(i, y):
        at = indptr[i] + arange(width)
        kept = at < indptr[i + 1]
        at = minimum(at, nnz - 1)                       # optional: the gathers clamp anyway
        return y.at[i].set(sum(where(kept, values[at] * x[columns[at]], 0)))   # or .add into zeros
    y = fori_loop(0, m, row, zeros(m))

becomes `sparse.csrmv_ell{width, column_map}` (csr2ell then ellmv in one pass, no ELL arrays).
The loop keeps each row's first `width` entries (a longer row is truncated), exactly what
csrmv_ell reads, so the two are equal for every indptr whose entries lie in [0, nnz] (in any
order: a row whose end is before its start is empty in both). Outside that range the loop reads
clamped positions again and again while csrmv_ell clamps the row's bounds: both stay in bounds but
differ. Columns are read as the loop's gather reads them (column_map "wrap_clamp": a negative
column wrapped by n, as numpy's indexing does, then clamped into [0, n); "clamp" without the
wrap), so any columns give the same products. Only the order of each row's additions changes.

The while op's regions are matched here by structure, op by op, since a pattern of Pat cannot
name a region; `unwrapped` accepts the index forms the frontend writes (numpy's negative-index wrap).
"""
from __future__ import annotations

import numpy as np

from ...ir.core import Value
from ...passes.patterns import splat_value
from .routines import INDEX_DTYPES, VALUE_DTYPES


def producer(value: Value, name: str):
    """The op that made `value` if it is called `name`, else None."""
    op = value.producer
    return op if op is not None and op.name == name else None


def is_splat(value: Value, scalar) -> bool:
    found = splat_value(value)
    return found is not None and found == scalar


def unwrapped(value: Value, size: int) -> tuple[Value, bool]:
    """(e, True) for numpy's negative-index wrap `select(e < 0, e + size, e)`, else (value, False)."""
    op = producer(value, "select")
    if op is not None:
        test, wrapped, plain = (producer(op.operands[0], "lt"), producer(op.operands[1], "add"), op.operands[2])
        if test is not None and wrapped is not None and test.operands[0] is plain and is_splat(test.operands[1], 0) \
                and plain in wrapped.operands and is_splat(wrapped.operands[1 - wrapped.operands.index(plain)], size):
            return plain, True
    return value, False


def scalar_read(value: Value) -> tuple[Value, Value] | None:
    """(array, i) of a read `array[i]` (dynamic_slice of one, reshaped to a scalar, maybe converted)."""
    if producer(value, "convert") is not None:
        value = value.producer.operands[0]
    reshape = producer(value, "reshape")
    read = reshape and producer(reshape.operands[0], "dynamic_slice")
    if not read or len(read.operands) != 2 or read.operands[0].type.ndim != 1:
        return None
    array = read.operands[0]
    return array, unwrapped(read.operands[1], array.type.shape[0])[0]


def broadcast_of(value: Value, ndim: int) -> Value | None:
    """The scalar that `value` broadcasts to `ndim` dims, else None."""
    op = producer(value, "broadcast_in_dim")
    return op.operands[0] if op is not None and op.operands[0].type.ndim == 0 and value.type.ndim == ndim else None


def row_positions(at: Value, i: Value, indptr: Value) -> bool:
    """Whether `at` is `indptr[i] + iota(width)`."""
    op = producer(at, "add")
    if op is None:
        return False
    for start, iota in (op.operands, op.operands[::-1]):
        scalar = broadcast_of(start, 1)
        ramp = producer(iota, "iota")
        if scalar is not None and ramp is not None and ramp.attrs["dimension"] == 0 and \
                (scalar_read(scalar) or (None, None))[0] is indptr and scalar_read(scalar)[1] is i:
            return True
    return False


def clamped_position(value: Value, at: Value, nnz: int) -> bool:
    """Whether `value` is `at` through a wrap and a min(at, c >= nnz - 1): equal to `at` on [0, nnz)."""
    value = unwrapped(value, nnz)[0]
    op = producer(value, "min")
    if op is not None and at in op.operands:
        bound = splat_value(op.operands[1 - op.operands.index(at)])
        return bound is not None and bound >= nnz - 1
    return value is at


def gathered_by(value: Value, positions: Value) -> Value | None:
    """The array of a 1-D gather `array[positions]` (positions broadcast to [k, 1]), else None."""
    op = producer(value, "gather")
    index = op and producer(op.operands[1], "broadcast_in_dim")
    if not index or index.operands[0] is not positions or op.operands[0].type.ndim != 1:
        return None
    return op.operands[0]


def summed(value: Value) -> Value | None:
    """The vector that `value` is the sum of: a reduce sum's operand, or a one-element vector reshaped to
    a scalar (canonicalize folds the sum of one element so: the loop of width 1)."""
    op = producer(value, "reduce")
    if op is not None:
        return op.operands[0] if op.attrs["reducer"] == "sum" else None
    op = producer(value, "reshape")
    return op.operands[0] if op is not None and op.operands[0].type.shape == (1,) else None


def row_product(body, i: Value, y: Value):
    """(indptr, columns, values, x, width, wrapped columns) of the body `y.at[i].set(row sum)`, else None."""
    scatter = producer(body.outputs[1], "scatter")
    if scatter is None or scatter.operands[0] is not y or scatter.attrs["reduction"] not in ("set", "add"):
        return None
    row = broadcast_of(scatter.operands[1], 1)
    if row is None or unwrapped(row, y.type.shape[0])[0] is not i:
        return None
    terms = summed(scatter.operands[2])
    masked = terms is not None and producer(terms, "select")
    if not masked or not is_splat(masked.operands[2], 0):
        return None
    kept, product = producer(masked.operands[0], "lt"), producer(masked.operands[1], "mul")
    if kept is None or product is None:
        return None
    at, end = kept.operands[0], broadcast_of(kept.operands[1], 1)
    for value_read, x_read in (product.operands, product.operands[::-1]):
        value_op, x_op = producer(value_read, "gather"), producer(x_read, "gather")
        if value_op is None or x_op is None or producer(value_op.operands[1], "broadcast_in_dim") is None:
            continue
        position = value_op.operands[1].producer.operands[0]
        values, x = value_op.operands[0], x_op.operands[0]
        column, wrapped = unwrapped(x_op.operands[1].producer.operands[0], x.type.shape[0]) \
            if producer(x_op.operands[1], "broadcast_in_dim") else (None, False)
        if column is not None and producer(column, "convert") is not None:
            column = column.producer.operands[0]
        columns = column is not None and gathered_by(column, position)
        end_read = end is not None and scalar_read(end)
        if not columns or not end_read or values.type.ndim != 1 or x.type.ndim != 1:
            continue
        indptr, following = end_read[0], producer(end_read[1], "add")
        if following is None or i not in following.operands or \
                not is_splat(following.operands[1 - following.operands.index(i)], 1) or \
                not clamped_position(position, at, values.type.shape[0]) or \
                not row_positions(at, i, indptr):
            continue
        return indptr, columns, values, x, at.type.shape[0], wrapped, scatter.attrs["reduction"]
    return None


def fori_spmv(m, loop):
    """while(i = 0, y) { i < m } { y.at[i].set(row sum); i + 1 } -> csrmv_ell{width, column_map}."""
    if len(loop.operands) != 2 or len(loop.regions) != 2:
        return None
    start, y0 = loop.operands
    cond, body = loop.regions
    i, y = body.params
    test = producer(cond.outputs[0], "lt")
    step = producer(body.outputs[0], "add")
    if y.type.ndim != 1 or not is_splat(start, 0) or test is None or test.operands[0] is not cond.params[0] or \
            not is_splat(test.operands[1], y.type.shape[0]) or step is None or i not in step.operands or \
            not is_splat(step.operands[1 - step.operands.index(i)], 1):
        return None
    found = row_product(body, i, y)
    if found is None:
        return None
    indptr, columns, values, x, width, wrapped, reduction = found
    inside = {id(v) for op in body.ops for v in op.results} | {id(v) for v in body.params}
    if any(id(v) in inside for v in (indptr, columns, values, x)):
        return None   # the call is built before the loop: its operands must exist there
    if reduction == "add" and not is_splat(y0, 0) or indptr.type.dtype not in INDEX_DTYPES or \
            indptr.type.shape[0] != y.type.shape[0] + 1 or values.type.dtype not in VALUE_DTYPES or \
            x.type.dtype != values.type.dtype or y.type.dtype != values.type.dtype or \
            columns.type.shape != values.type.shape or columns.type.dtype[0] not in "iu" or \
            columns.type.dtype == "u64" or x.type.shape[0] == 0:
        return None
    if columns.type.dtype not in INDEX_DTYPES:   # exact in i64 (u64 was refused above)
        columns = m.op("convert", columns, dtype="i64")
    (product,) = m.ops("library_call", indptr, columns, values, x, library="sparse", routine="csrmv_ell", solution="",
                       width=width, column_map="wrap_clamp" if wrapped else "clamp")
    return [m.op("constant", value=np.array(y.type.shape[0], start.type.numpy_dtype)), product]
