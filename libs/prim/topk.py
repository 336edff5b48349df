"""The top-k kernel (routines.py: top_k_rows): a work-item per row walks it in order, keeping the k
largest so far in the row's slots of the results, in descending order, by insertion: an element
enters when the row has fewer than k or it is larger than the k-th, shifting the smaller ones down.
The order is the radix sort's (radix.ordered_bits: NaN largest, -0.0 equal to 0.0), strictly
larger to move, so equal values keep index order, as lax.top_k. One pass over the row instead of a
sort: k + (number of insertions) x k steps, about k ln(length / k) insertions for a row in random
order (every element for an ascending row, hence MAX_K).
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emitters import operand_buffers
from .radix import ordered_bits

ITEMS = 64
MAX_K = 32


def top_k_kernel(op: Op, name: str) -> K.Kernel:
    x_type = op.operands[0].type
    dtype = x_type.dtype
    idx = "i32" if x_type.size < 2 ** 31 else "i64"
    rows, length, k = (K.ScalarParam(n, idx) for n in ("rows", "length", "k"))
    x, values, indices = operand_buffers(op)
    x = K.GlobalBuffer(x.name, x.dtype, rows * length, readonly=True)
    values = K.GlobalBuffer(values.name, values.dtype, rows * k)
    indices = K.GlobalBuffer(indices.name, indices.dtype, rows * k)
    row, j, q, i, filled, at, pos = (K.Var(n, idx) for n in ("row", "j", "q", "i", "filled", "at", "pos"))
    value, moving = K.Var("value", dtype), K.Var("moving", "bool")
    key = ordered_bits(value, dtype)
    larger = lambda slot: key > ordered_bits(values[at + slot], dtype)
    shift = K.For(q, 0, K.minimum(filled, k - 1), 1, [
        K.Let(i, K.minimum(filled, k - 1) - 1 - q),
        K.Assign(moving, moving & larger(i)),
        K.If(moving, [K.Store(values, at + i + 1, values[at + i]), K.Store(indices, at + i + 1, indices[at + i])]),
        K.Assign(pos, K.select(moving, i, pos))])
    enters = (filled < k) | larger(k - 1)
    walk = K.For(j, 0, length, 1, [
        K.Let(value, x[row * length + j]),
        K.If(enters, [K.Let(moving, K.Const(True, "bool")), K.Let(pos, K.minimum(filled, k - 1)), shift,
                      K.Store(values, at + pos, value), K.Store(indices, at + pos, j.cast(indices.dtype))]),
        K.Assign(filled, K.minimum(filled + 1, k))])
    body = [K.Let(row, K.workgroup_id(0).cast(idx) * ITEMS + K.workitem_id(0).cast(idx)),
            K.If((row < rows) & (k > 0), [K.Let(at, row * k), K.Let(filled, K.Const(0, idx)), walk])]
    return K.Kernel(name, params=[x, values, indices, rows, length, k], grid=((rows + (ITEMS - 1)) / ITEMS,),
                    workgroup_size=(ITEMS,), body=body,
                    arguments=(("rows", x_type.shape[0]), ("length", x_type.shape[1]), ("k", op.attrs["k"])))


def describe(op: Op) -> str:
    return (f"top {op.attrs['k']} of each row by insertion in one ordered pass, one row per work-item, "
            f"{ITEMS} rows per workgroup")
