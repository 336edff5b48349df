"""The kernels of the FFT library, in kernel IR: the twiddle table and the Stockham autosort FFT.

Stockham kernel of a plan node (length N = prod(radices)), compiled per node and option set, never
per problem: the number of transforms (B M C), M and C are scalar parameters, the grid and the
buffers' sizes extents of them. A workgroup computes `per_group` transforms (several for short
lengths), each whole in LDS: pass p of radix R, with Ns the product of the radices before it,
takes butterfly j of each transform (j < N / R), reads its R values at j + r N / R, multiplies
them by the twiddles w_(Ns R)^(r (j mod Ns)) (from the table: w_N^(r (j mod Ns) N / (Ns R))), runs
the radix-R butterfly (butterfly.py) and writes them at (j / Ns) Ns R + (j mod Ns) + r Ns, so the
last pass leaves the result in natural order (Stockham's autosort). Passes alternate between two
LDS buffers; the first reads global memory and the last writes it, with the scale, the two-pass
plan's twiddle w_L^(k c) (two table levels) and the transposed layout applied on the way out.
Transform g of the launch is x[g / C, :, g mod C] of x viewed [B M, N, C]: consecutive transforms
of a workgroup are consecutive c, so a strided pass reads runs of consecutive elements.
"""
from __future__ import annotations

import math

from ...ir import kernel as K
from ...ir.types import COMPLEX_PART
from ...lowering.emit_ops import one_item_per_element
from ...lowering.emitters import operand_buffers
from .butterfly import Registers, dft
from .routines import large_step

INDEX = "i64"     # global element indices (a batch of transforms may exceed 2^31 parts)
LOCAL = "i32"     # LDS indices and butterfly counters
ITEMS_PER_GROUP = 1024   # transforms per workgroup: about this many elements (at least one transform)


def twiddles_kernel(op, name: str) -> K.Kernel:
    """table[0, t] = cos(angle t), table[1, t] = sin(angle t), computed in f64 and rounded once."""
    (table,) = operand_buffers(op)
    count = op.result.type.shape[1]
    length, twiddle_length = op.attrs["length"], op.attrs["twiddle_length"]
    step = large_step(twiddle_length)

    def body(t):
        wide = t.cast("f64")
        angle = K.select(t < length, wide * (2 * math.pi / length),
                         K.select(t < length + step, (wide - length) * (2 * math.pi / max(twiddle_length, 1)),
                                  (wide - (length + step)) * (2 * math.pi * step / max(twiddle_length, 1))))
        return [K.Store(table, t, K.cos(angle).cast(table.dtype)), K.Store(table, t + count, K.sin(angle).cast(table.dtype))]
    return one_item_per_element(name, [table], count, body, LOCAL)


def stockham_kernel(op, name: str) -> K.Kernel:
    radices = tuple(op.attrs["radices"])
    sign, scale, transpose = op.attrs["sign"], op.attrs["scale"], op.attrs["transpose"]
    twiddle_length, real_input = op.attrs["twiddle_length"], op.attrs["input_kind"] == "real"
    length = math.prod(radices)
    part = COMPLEX_PART[op.result.type.dtype]
    table_count = op.operands[1].type.shape[1]
    per_group = max(1, ITEMS_PER_GROUP // length)
    items = 64 if per_group * length <= 512 else 256

    total, rows, inner = K.ScalarParam("transforms", INDEX), K.ScalarParam("rows", INDEX), K.ScalarParam("inner", INDEX)
    x = K.GlobalBuffer("in0", part, total * (length if real_input else 2 * length), readonly=True)
    table = K.GlobalBuffer("in1", part, 2 * table_count, readonly=True)
    y = K.GlobalBuffer("out0", part, total * (2 * length))
    lds = [K.LdsBuffer(f"{which}_{side}", part, per_group * length) for which in "ab" for side in ("re", "im")]
    item = K.Var("item", LOCAL)
    first = K.Var("first", INDEX)
    body = [K.Let(item, K.workitem_id(0).cast(LOCAL)), K.Let(first, K.workgroup_id(0).cast(INDEX) * per_group)]

    def twiddle(regs, index: K.Expr, negate: bool):
        c, s = table[index], table[index + table_count]
        return c, (-s if negate else s)

    def global_position(regs: Registers, transform: K.Var, n: K.Expr, transposed: bool) -> K.Var:
        """The element index of entry n of transform `transform` (launch-wide) in x's or y's layout."""
        g = (first + transform.cast(INDEX))
        row, c = g / inner, g % inner
        n = n.cast(INDEX)
        if transposed:   # y[b, n, m, c] of [B, N, M, C], with row = b M + m
            return regs.let((((row / rows) * length + n) * rows + row % rows) * inner + c)
        return regs.let((row * length + n) * inner + c)

    for p, radix in enumerate(radices):
        stride = math.prod(radices[:p])                 # Ns
        per_transform = length // radix
        source, target = lds[0:2] if p % 2 else lds[2:4], lds[2:4] if p % 2 else lds[0:2]
        jl, t, j = K.Var(f"jl{p}", LOCAL), K.Var(f"t{p}", LOCAL), K.Var(f"j{p}", LOCAL)
        regs = Registers(part, f"v{p}_")
        regs.stmts += [K.Let(t, jl / per_transform), K.Let(j, jl % per_transform)]
        inside = (first + t.cast(INDEX)) < total
        values = []
        for r in range(radix):
            n = j + r * per_transform
            if p == 0:   # from global memory, zero for the transforms past the launch's last
                position = global_position(regs, t, n, False)
                re, im = K.Var(f"x{r}_re", part), K.Var(f"x{r}_im", part)
                loads = ([K.Assign(re, x[position])] if real_input else
                         [K.Assign(re, x[position * 2]), K.Assign(im, x[position * 2 + 1])])
                regs.stmts += [K.Let(re, K.Const(0.0, part)), K.Let(im, K.Const(0.0, part)), K.If(inside, loads)]
                values.append((re, im))
            else:
                values.append((source[0][t * length + n], source[1][t * length + n]))
        k = regs.let(j % stride) if stride > 1 else None
        if k is not None:
            for r in range(1, radix):
                c, s = twiddle(regs, (k * (r * (length // (stride * radix)))), sign < 0)
                a = regs.complex(*values[r])
                values[r] = regs.complex(a[0] * c - a[1] * s, a[0] * s + a[1] * c)
        else:
            values = [regs.complex(*v) for v in values]
        outputs = dft(regs, values, sign)
        base = regs.let((j / stride) * (stride * radix) + (k if k is not None else 0))
        last = p == len(radices) - 1
        stores = []
        for r, (re, im) in enumerate(outputs):
            index = base + r * stride
            if not last:
                stores += [K.Store(target[0], t * length + index, re), K.Store(target[1], t * length + index, im)]
                continue
            if scale != 1.0:
                re, im = regs.complex(re * scale, im * scale)
            if twiddle_length:   # w_L^(k c), k c < L: two table levels
                step = large_step(twiddle_length)
                g = (first + t.cast(INDEX))
                exponent = regs.let((index.cast(INDEX) * (g % inner)).cast(LOCAL))
                c1, s1 = twiddle(regs, length + exponent % step, sign < 0)
                c2, s2 = twiddle(regs, length + step + exponent / step, sign < 0)
                wr, wi = regs.complex(c1 * c2 - s1 * s2, c1 * s2 + s1 * c2)
                re, im = regs.complex(re * wr - im * wi, re * wi + im * wr)
            position = global_position(regs, t, index, transpose)
            stores += [K.Store(y, position * 2, re), K.Store(y, position * 2 + 1, im)]
        if last:
            stores = [K.If(inside, stores)]
        body += [K.For(jl, item, per_group * per_transform, items, regs.stmts + stores)]
        if not last:
            body.append(K.Barrier())
    arguments = (("transforms", op.operands[0].type.shape[0] * op.operands[0].type.shape[1] * op.operands[0].type.shape[3]),
                 ("rows", op.operands[0].type.shape[1]), ("inner", op.operands[0].type.shape[3]))
    return K.Kernel(name, params=[x, table, y, total, rows, inner], grid=(K.ceil_div(total, per_group),),
                    workgroup_size=(items,), body=body, lds=lds if len(radices) > 1 else (), arguments=arguments)
