"""Kernels of the arg reductions and window reductions: argmax, argmin and reduce_window (the
scans, `cumulative`, are the prim library's: libs/prim).

Each is one work-item per row (argmax, argmin: a row runs along `axis`, its elements `inner`
apart) or per output element (reduce_window), looping sequentially in the reference's order, so
results match it exactly: f16/bf16 accumulate in f32 and round once.
"""
from __future__ import annotations

from ..ir import kernel as K
from .elemental import identity_const, row_major_strides
from .emit_ops import (all_of, combine, index_dtype, loop_nest, offset, one_item_per_element, reject_complex,
                       row_layout, row_start, unravel)
from .emitters import emitter, operand_buffers
from .tiling import accumulator_dtype


def arg_reduce_emitter(opname: str, compare: str):
    def emit(op, name):
        x = op.operands[0].type
        rows, length, inner = row_layout(x.shape, op.attrs["axis"])
        params = operand_buffers(op)
        source, result = params
        dtype = index_dtype(x.size)
        # Compare bools as bytes; f16/bf16 values are exact in f32 registers.
        value_dtype = "u8" if x.dtype == "bool" else x.dtype

        def body(r):
            base, j, best, best_index, value = (K.Var("base", dtype), K.Var("j", dtype), K.Var("best", value_dtype),
                                                K.Var("best_index", dtype), K.Var("value", value_dtype))
            better = K.Compare(compare, value, best)
            if x.dtype in ("f16", "bf16", "f32", "f64"):  # the first NaN wins and stays
                better = better | (value.ne(value) & best.eq(best))
            return [K.Let(base, row_start(r, length, inner)),
                    K.Let(best, source[base].cast(value_dtype)),
                    K.Let(best_index, K.Const(0, dtype)),
                    K.For(j, 1, length, 1, [
                        K.Let(value, source[base + j * inner].cast(value_dtype)),
                        K.If(better, [K.Assign(best, value), K.Assign(best_index, j)])]),
                    K.Store(result, r, best_index.cast(op.result.type.dtype))]
        return one_item_per_element(name, params, rows, body, dtype)
    emit.__name__ = f"emit_{opname}"
    return emitter(opname)(emit)


emit_argmax = arg_reduce_emitter("argmax", "gt")
emit_argmin = arg_reduce_emitter("argmin", "lt")


@emitter("reduce_window")
def emit_reduce_window(op, name):
    """Each output element loops over its window, offsets in row-major order as the reference; a
    tap on padding or between base-dilated elements holds the identity, so it is skipped."""
    reject_complex(op)
    x, out = op.operands[0].type, op.result.type
    attrs = op.attrs
    reducer = attrs["reducer"]
    params = operand_buffers(op)
    source, result = params
    dtype, wide = index_dtype(x.size, out.size), accumulator_dtype(x.dtype)
    window = attrs["window_dimensions"]

    def body(i):
        stmts, coords = unravel(i, out.shape, "o")
        acc = K.Var("acc", wide)
        taps = [K.Var(f"w{d}", dtype) for d in range(x.ndim)]
        valid, positions = [], []
        for d, (o, w) in enumerate(zip(coords, taps)):
            low, _ = attrs["padding"][d]
            base = attrs["base_dilation"][d]
            padded = o * attrs["window_strides"][d] + w * attrs["window_dilation"][d] - low
            valid.append((padded >= 0) & (padded <= (x.shape[d] - 1) * base))
            if base > 1:
                valid.append((padded % base).eq(0))
            positions.append(padded / base if base > 1 else padded)
        inside = all_of(valid)
        element = source[offset(positions, row_major_strides(x.shape), dtype)].cast(wide)
        tap = K.If(inside, [K.Assign(acc, combine(reducer, acc, element))])
        return stmts + [K.Let(acc, identity_const(reducer, wide))] + loop_nest(taps, window, [tap]) + \
            [K.Store(result, i, acc.cast(out.dtype))]
    return one_item_per_element(name, params, out.size, body, dtype)
