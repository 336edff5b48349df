"""The top-k kernel (routines.py: top_k_rows), a wave per row, as a block top-k: each lane keeps the k
largest of its share of the row (elements lane, lane + 64, ..., read in stripes of 64 consecutive
elements) in its own LDS list, in descending order, by insertion (an element enters when the list
has fewer than k or it is larger than the k-th, shifting the smaller ones down); then k rounds of
a wave-wide choice among the lists' heads: the largest key (WaveReduce max), among equal keys the
smallest index (WaveReduce min), whose lane moves on. The order is the radix sort's
(radix.ordered_bits: NaN largest, -0.0 equal to 0.0), strictly larger to move, so equal values
keep index order, as lax.top_k. One pass over the row instead of a sort: per lane about
k ln(length / 64k) insertions for a row in random order (every element for an ascending row,
hence MAX_K).
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emitters import operand_buffers
from .radix import ordered_bits
from .routines import key_bits

WAVE = 64
MAX_K = 32


def top_k_kernel(op: Op, name: str) -> K.Kernel:
    x_type = op.operands[0].type
    dtype = x_type.dtype
    idx = "i32" if x_type.size < 2 ** 31 else "i64"
    bits = "u64" if key_bits(dtype) == 64 else "u32"
    rows, length, k = (K.ScalarParam(n, idx) for n in ("rows", "length", "k"))
    x, values, indices = operand_buffers(op)
    x = K.GlobalBuffer(x.name, x.dtype, rows * length, readonly=True)
    values = K.GlobalBuffer(values.name, values.dtype, rows * k)
    indices = K.GlobalBuffer(indices.name, indices.dtype, rows * k)
    list_keys = K.LdsBuffer("list_keys", bits, WAVE * MAX_K)
    list_indices = K.LdsBuffer("list_indices", "i32", WAVE * MAX_K)
    lane, row, stripe, j, q, i, filled, base, pos, head, r = (
        K.Var(n, idx) for n in ("lane", "row", "stripe", "j", "q", "i", "filled", "base", "pos", "head", "r"))
    key, moving = K.Var("key", bits), K.Var("moving", "bool")
    larger = lambda slot: key > list_keys[base + slot]
    shift = K.For(q, 0, K.minimum(filled, k - 1), 1, [
        K.Let(i, K.minimum(filled, k - 1) - 1 - q),
        K.Assign(moving, moving & larger(i)),
        K.If(moving, [K.Store(list_keys, base + i + 1, list_keys[base + i]),
                      K.Store(list_indices, base + i + 1, list_indices[base + i])]),
        K.Assign(pos, K.select(moving, i, pos))])
    enters = (filled < k) | larger(k - 1)
    collect = K.For(stripe, 0, length, WAVE, [
        K.Let(j, stripe + lane),
        K.If(j < length, [
            K.Let(key, ordered_bits(x[row * length + j], dtype)),
            K.If(enters, [K.Let(moving, K.Const(True, "bool")), K.Let(pos, K.minimum(filled, k - 1)), shift,
                          K.Store(list_keys, base + pos, key), K.Store(list_indices, base + pos, j.cast("i32"))]),
            K.Assign(filled, K.minimum(filled + 1, k))])], uniform=True)
    has, offered, best, offered_index, best_index = (
        K.Var("has", "bool"), K.Var("offered", bits), K.Var("best", bits), K.Var("offered_index", "i32"),
        K.Var("best_index", "i32"))
    at = K.minimum(head, k - 1)
    choose = K.For(r, 0, k, 1, [
        K.Let(has, head < filled),
        K.Let(offered, K.select(has, list_keys[base + at], K.Const(0, bits))),
        K.WaveReduce(best, "max", offered),
        K.Let(offered_index, K.select(has & offered.eq(best), list_indices[base + at], K.Const(2 ** 31 - 1, "i32"))),
        K.WaveReduce(best_index, "min", offered_index),
        K.If(lane.eq(K.Const(0, idx)), [
            K.Store(values, row * k + r, x[row * length + best_index.cast(idx)]),
            K.Store(indices, row * k + r, best_index.cast(indices.dtype))]),
        K.Assign(head, head + K.select(has & offered_index.eq(best_index), K.Const(1, idx), K.Const(0, idx)))],
        uniform=True)
    body = [K.Let(lane, K.workitem_id(0).cast(idx)), K.Let(row, K.workgroup_id(0).cast(idx)),
            K.Let(base, lane * MAX_K), K.Let(filled, K.Const(0, idx)), K.Let(head, K.Const(0, idx)),
            K.If(k > 0, [collect, choose], uniform=True)]
    return K.Kernel(name, params=[x, values, indices, rows, length, k], grid=(rows,), workgroup_size=(WAVE,),
                    body=body, lds=[list_keys, list_indices],
                    arguments=(("rows", x_type.shape[0]), ("length", x_type.shape[1]), ("k", op.attrs["k"])))


def describe(op: Op) -> str:
    return (f"top {op.attrs['k']} of each row, a wave per row: each lane's top {op.attrs['k']} of its share by "
            f"insertion into its LDS list (stripes of {WAVE}), then {op.attrs['k']} rounds of wave max / min index "
            f"among the lists' heads")
