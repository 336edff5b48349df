"""The kernels of the FFT library, in kernel IR: the Stockham autosort FFT of a plan node and the small
kernels around it (twiddle tables, Bluestein's chirp, pointwise products, paddings and crops, the real
transforms' edges).

Every kernel is compiled per routine and options, never per problem: the sizes (transforms, rows,
lengths of the elementwise kernels) are scalar parameters, the grid and the buffers' sizes extents of
them. Only a Stockham node's radices (so its length) and its variant's count (lanes, or transforms
per workgroup: kernels.py's choice by layout and batch) are part of its code.

Stockham kernel. A workgroup computes `per_group` transforms (several for many short ones), each whole
in LDS: pass p of radix R, with Ns the product of the radices before it, takes butterfly j of each
transform (j < N / R), reads its R values at j + r N / R, multiplies them by the twiddles
w_(Ns R)^(r (j mod Ns)) (from the table: w_N^(r (j mod Ns) N / (Ns R))), runs the radix-R butterfly
(butterfly.py) and writes them at (j / Ns) Ns R + (j mod Ns) + r Ns, so the last pass leaves the
result in natural order (Stockham's autosort). Passes alternate between two LDS buffers; the first
reads global memory and the last writes it, with the scale, the two-pass plan's twiddle
w_L^((k M + m) n2) (two table levels) and the transposed layout applied on the way out. The scale and the
table's size are scalar parameters too; whether there is a scale (not 1) and a twiddle (L > 0) are
variants of the code. A plan's edges are variants too: the first pass may read a shorter, padded
sequence times a conjugated factor, the last multiply by a factor and crop (Bluestein's products,
routines.py). Transform g of the launch is x[g / C, :, g mod C] of x viewed [B M, N, C]: consecutive transforms of a workgroup are
consecutive c, so a strided pass reads runs of consecutive elements.

Lanes kernel (`stockham_lanes_kernel`). The same passes with a workgroup's 16, 8 or 4 transforms side
by side, one per work-item along x: for calls whose entries are strided in memory and whose
consecutive transforms are consecutive elements (columns, rows written transposed), chosen by
`lanes_of`; kernels.py's report says which kernel a call takes and why. It alone runs a convolution
(a spectrum between the passes and the same passes inverse) and writes a cropped sequence of
store_positions (Bluestein's three kernels, matcher.py).
"""
from __future__ import annotations

import math

from ...ir import kernel as K
from ...ir.types import COMPLEX_PART, COMPLEXES
from .butterfly import Registers, dft
from .plan import side_by_side
from .routines import complex_view, large_step, stockham_view

INDEX = "i64"     # global element indices (a batch of transforms may exceed 2^31 parts)
LOCAL = "i32"     # LDS indices and butterfly counters
ELEMENTWISE_ITEMS = 256


def part_of(op) -> str:
    dtype = op.result.type.dtype
    return COMPLEX_PART.get(dtype, dtype)


def load(buffer: K.GlobalBuffer, position: K.Expr, kind: str) -> tuple[K.Expr, K.Expr]:
    """(re, im) of element `position` of a value of `kind` (routines.KINDS)."""
    if kind == "real":
        return buffer[position], K.Const(0.0, buffer.dtype)
    return buffer[position * 2], buffer[position * 2 + 1]


def store(buffer: K.GlobalBuffer, position: K.Expr, value, kind: str) -> list[K.Stmt]:
    if kind == "real":
        return [K.Store(buffer, position, value[0])]
    return [K.Store(buffer, position * 2, value[0]), K.Store(buffer, position * 2 + 1, value[1])]


def parts(kind: str) -> int:
    """Buffer elements per complex element of a value of `kind`."""
    return 1 if kind == "real" else 2


def multiply(regs: Registers, a, b):
    return regs.complex(a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0])


def elementwise(name: str, params: list, count: K.Expr, body, arguments) -> K.Kernel:
    """One work-item per element e < count (an extent of the scalar parameters, bound by `arguments`):
    body(regs, e) -> statements."""
    e = K.Var("e", INDEX)
    regs = Registers(None, "v")
    stmts = body(regs, e)
    item = K.workgroup_id(0).cast(INDEX) * ELEMENTWISE_ITEMS + K.workitem_id(0).cast(INDEX)
    return K.Kernel(name, params=params, grid=(K.ceil_div(count, ELEMENTWISE_ITEMS),),
                    workgroup_size=(ELEMENTWISE_ITEMS,), body=[K.Let(e, item), K.If(e < count, regs.stmts + stmts)],
                    arguments=tuple(arguments))


def by_rows(name: str, params: list, length: K.Expr, rows: K.Expr, body, arguments) -> K.Kernel:
    """One work-item per entry i < length of each row < rows (extents): body(regs, i, row) ->
    statements. A row per grid row, so what depends on the row alone is computed once per workgroup."""
    i, row = K.Var("i", INDEX), K.Var("row", INDEX)
    regs = Registers(None, "v")
    stmts = body(regs, i, row)
    first = K.workgroup_id(0).cast(INDEX) * ELEMENTWISE_ITEMS + K.workitem_id(0).cast(INDEX)
    return K.Kernel(name, params=params, grid=(K.ceil_div(length, ELEMENTWISE_ITEMS), rows),
                    workgroup_size=(ELEMENTWISE_ITEMS,),
                    body=[K.Let(row, K.workgroup_id(1).cast(INDEX)), K.Let(i, first),
                          K.If(i < length, regs.stmts + stmts)], arguments=tuple(arguments))


def twiddles_kernel(op, name: str) -> K.Kernel:
    """table[0, t] = cos(angle t), table[1, t] = sin(angle t), computed in f64 and rounded once; the
    lengths are scalar parameters."""
    count = op.result.type.shape[1]
    length, twiddle_length = K.ScalarParam("length", INDEX), K.ScalarParam("twiddle_length", INDEX)
    step, size = K.ScalarParam("step", INDEX), K.ScalarParam("count", INDEX)
    table = K.GlobalBuffer("out0", part_of(op), size * 2)

    def body(regs, t):
        wide, tau = t.cast("f64"), 2 * math.pi
        small = regs.let(wide * (tau / length.cast("f64")))
        low = regs.let((wide - length.cast("f64")) * (tau / twiddle_length.cast("f64")))
        high = regs.let((wide - (length + step).cast("f64")) * (tau * step.cast("f64") / twiddle_length.cast("f64")))
        angle = regs.let(K.select(t < length, small, K.select(t < length + step, low, high)))
        return [K.Store(table, t, K.cos(angle).cast(table.dtype)), K.Store(table, t + size, K.sin(angle).cast(table.dtype))]
    return elementwise(name, [table, length, twiddle_length, step, size], size, body, [
        ("length", op.attrs["length"]), ("twiddle_length", max(op.attrs["twiddle_length"], 1)),
        ("step", large_step(op.attrs["twiddle_length"])), ("count", count)])


def chirp_kernel(op, name: str) -> K.Kernel:
    """b[m] = exp(-sign pi i (m^2 mod 2N) / N) (m < N, and mirrored), the square reduced exactly in i64."""
    length, size = K.ScalarParam("length", INDEX), K.ScalarParam("size", INDEX)
    b = K.GlobalBuffer("out0", COMPLEX_PART[op.result.type.dtype], size * 2)
    sign = op.attrs["sign"]

    def body(regs, m):
        mirrored = regs.let(K.select(m < length, m, size - m))
        inside = (m < length) | (mirrored < length)
        square = regs.let((mirrored * mirrored) % (2 * length))
        angle = regs.let(square.cast("f64") * (math.pi / length.cast("f64")))
        zero = K.Const(0.0, "f64")
        re, im = K.select(inside, K.cos(angle), zero), K.select(inside, -sign * K.sin(angle), zero)
        return store(b, m, (re.cast(b.dtype), im.cast(b.dtype)), "complex")
    return elementwise(name, [b, length, size], size, body,
                       [("length", op.attrs["length"]), ("size", op.attrs["size"])])


def pointwise_kernel(op, name: str) -> K.Kernel:
    factor, input_kind, output_kind = op.attrs["factor"], op.attrs["input_kind"], op.attrs["output_kind"]
    hermitian = input_kind == "hermitian"
    x_type = op.operands[0].type
    part = part_of(op) if op.result.type.dtype in COMPLEXES else op.result.type.dtype
    batch, in_length, length, inner = (K.ScalarParam(n, INDEX) for n in ("batch", "in_length", "length", "inner"))
    scale = K.ScalarParam("scale", part)
    x = K.GlobalBuffer("in0", part, batch * in_length * inner * parts(input_kind), readonly=True)
    factor_length = K.ScalarParam("factor_length", INDEX)
    f = K.GlobalBuffer("in1", part, factor_length * 2, readonly=True)
    y = K.GlobalBuffer("out0", part, batch * length * inner * parts(output_kind))
    load_kind = "complex" if hermitian else input_kind

    def body(regs, i, row):
        b, c = regs.let(row / inner), regs.let(row % inner)
        e = regs.let((b * length + i) * inner + c)
        mirrored = regs.let(K.select(i < in_length, i, length - i) if hermitian else i)
        re, im = K.Var("x_re", part), K.Var("x_im", part)
        loaded = load(x, (b * in_length + mirrored) * inner + c, load_kind)
        stmts = [K.Let(re, K.Const(0.0, part)), K.Let(im, K.Const(0.0, part)),
                 K.If(mirrored < in_length, [K.Assign(re, loaded[0]), K.Assign(im, loaded[1])])]
        if hermitian:   # conj past the half spectrum; no imaginary part at 0 and length / 2
            real_only = i.eq(0) | (i * 2).eq(length)
            stmts.append(K.Assign(im, K.select(real_only, K.Const(0.0, part), K.select(i < in_length, im, -im))))
        value = (re, im)
        tail = Registers(part, "w")
        if factor != "none":
            w = (f[i * 2], f[i * 2 + 1] if factor == "plain" else -f[i * 2 + 1])
            value = multiply(tail, value, w)
        if op.attrs["scale"] != 1.0:
            value = tail.complex(value[0] * scale, value[1] * scale)
        return stmts + tail.stmts + store(y, e, value, output_kind)
    params = [x] + ([f] if factor != "none" else []) + [y, batch, in_length, length, inner, scale]
    b_count, l_in, l_out, c_count = x_type.shape[0], x_type.shape[1], op.attrs["length"], x_type.shape[2]
    if input_kind == "real_pairs":
        c_count //= 2
    arguments = [("batch", b_count), ("in_length", l_in), ("length", l_out), ("inner", c_count),
                 ("scale", op.attrs["scale"])]
    if factor != "none":
        params.append(factor_length)
        arguments.append(("factor_length", op.operands[1].type.shape[0]))
    return by_rows(name, params, length, batch * inner, body, arguments)


def real_edge_kernel(op, name: str) -> K.Kernel:
    """rfft_post and irfft_pre (routines.py): one work-item per result entry k, reading entries k and K - k."""
    post = op.attrs["routine"] == "rfft_post"
    part = part_of(op)
    batch, half = K.ScalarParam("batch", INDEX), K.ScalarParam("half", INDEX)   # B, K
    width_in, width_out = (half, half + 1) if post else (half + 1, half)
    x = K.GlobalBuffer("in0", part, batch * width_in * 2, readonly=True)
    table = K.GlobalBuffer("in1", part, half * 4, readonly=True)
    y = K.GlobalBuffer("out0", part, batch * width_out * 2)

    def body(regs, e):
        k, b = regs.let(e % width_out), regs.let(e / width_out)
        if post:   # entries k and K - k of Z, Z[K] being Z[0]
            a = load(x, b * half + K.select(k < half, k, k - half), "complex")
            mirror = regs.let(half - k)
            z = load(x, b * half + K.select(mirror < half, mirror, mirror - half), "complex")
            c = (z[0], -z[1])
            even = regs.complex((a[0] + c[0]) * 0.5, (a[1] + c[1]) * 0.5)
            odd = regs.complex((a[1] - c[1]) * 0.5, (c[0] - a[0]) * 0.5)    # -i (a - c) / 2
            w = (table[k], -table[k + half * 2])                            # exp(-2 pi i k / N)
        else:      # entries k and K - k of X, without the imaginary parts of X[0] and X[K]
            a = load(x, b * width_in + k, "complex")
            z = load(x, b * width_in + (half - k), "complex")
            a = (a[0], K.select(k.eq(0), K.Const(0.0, part), a[1]))
            c = (z[0], K.select(k.eq(0), K.Const(0.0, part), -z[1]))
            even = regs.complex(a[0] + c[0], a[1] + c[1])
            diff = regs.complex(a[0] - c[0], a[1] - c[1])
            odd = (-diff[1], diff[0])                                       # i (a - c)
            w = (table[k], table[k + half * 2])                             # exp(2 pi i k / N)
        turned = multiply(regs, odd, w)
        return store(y, e, (even[0] + turned[0], even[1] + turned[1]), "complex")
    half_value = op.result.type.shape[1] - 1 if post else op.result.type.shape[1]
    return elementwise(name, [x, table, y, batch, half], batch * width_out, body,
                       [("batch", op.result.type.shape[0]), ("half", half_value)])


def workgroup_size(per_group: int, radices: tuple[int, ...]) -> int:
    """The work-items of a stockham workgroup: 64 for up to 512 elements; else 64 or 256, whichever
    runs fewer work-item slots over the passes (a pass of b butterflies runs ceil(b / items) rounds
    of `items`), 256 on a tie. Spare slots of a round repeat its last butterfly: on the host every
    slot of the vectorized work-item loop costs as much as a busy one (a radix-16 pass of 8
    transforms of 128 has 64 butterflies: 256 slots would leave 3 in 4 idle); on the device the
    LDS of the workgroup's transforms, not its work-items, bounds the waves per CU."""
    length = math.prod(radices)
    butterflies = [per_group * length // radix for radix in radices]
    slots = {items: sum(-(-b // items) * items for b in butterflies) for items in (64, 256)}
    return 64 if per_group * length <= 512 or slots[64] < slots[256] else 256


class StockhamInterface:
    """The parameters of a stockham call's kernel (either variant): its buffers x, table, the edges'
    factors f and g, y, and the scalars: transforms, rows (M), inner (C), the two-pass twiddle's
    block (C N M / L: entries of c sharing one n2) and log2 of its step (routines.large_step(L)), the scale, the
    table's size and the edges' sizes (routines.py: x's N_in positions of S entries, P / N positions
    per entry n; y's output_length positions)."""

    def __init__(self, op):
        attrs = op.attrs
        self.op, self.length, self.part = op, math.prod(attrs["radices"]), part_of(op)
        self.sign = attrs["sign"]
        self.padded, self.cropped = attrs["load_factor"] != "none", attrs["store_factor"] != "none"
        self.convolved, self.positioned = attrs["spectrum"] != "none", attrs["store_positions"] > 0
        self.x_type = complex_view("fft.stockham", op.operands[0].type, attrs["input_kind"])
        self.shape = stockham_view(self.x_type, attrs).shape       # [B, M, N, C]
        self.table_count = K.ScalarParam("table_count", INDEX)
        self.total, self.rows, self.inner = (K.ScalarParam(n, INDEX) for n in ("transforms", "rows", "inner"))
        self.block = K.ScalarParam("twiddle_block", INDEX)
        self.shift = K.ScalarParam("twiddle_shift", LOCAL)
        self.factor = K.ScalarParam("scale", self.part)
        (self.in_length, self.edge_inner, self.edge_step, self.out_length, self.f_count, self.g_count, self.x_count,
         self.y_count) = (K.ScalarParam(n, INDEX) for n in ("input_length", "edge_inner", "edge_step", "output_length",
                                                           "load_factor_count", "store_factor_count", "x_count",
                                                           "y_count"))
        part, length = self.part, self.length
        self.x = K.GlobalBuffer("in0", part, (self.x_count if self.padded else self.total * length)
                                * parts(attrs["input_kind"]), readonly=True)
        self.table = K.GlobalBuffer("in1", part, 2 * self.table_count, readonly=True)
        self.f = K.GlobalBuffer("in2", part, 2 * self.f_count, readonly=True)
        self.g = K.GlobalBuffer(f"in{2 + self.padded}", part, 2 * self.g_count, readonly=True)
        self.h_count = K.ScalarParam("spectrum_count", INDEX)
        self.h = K.GlobalBuffer("in2", part, 2 * self.h_count, readonly=True)
        # y's columns S and positions per entry P / N of a cropped sequence of store_positions P
        self.out_inner, self.out_step = K.ScalarParam("output_inner", INDEX), K.ScalarParam("output_step", INDEX)
        self.y = K.GlobalBuffer("out0", part, (self.y_count if self.cropped else self.total * length)
                                * parts(attrs["output_kind"]))

    def twiddle(self, index: K.Expr, sign: int = 0):
        """w^index of the table (its sine's sign the transform's, or `sign`)."""
        sine = self.table[index.cast(INDEX) + self.table_count]
        return self.table[index], (-sine if (sign or self.sign) < 0 else sine)

    def large_twiddle(self, regs: Registers, exponent: K.Expr, sign: int = 0):
        """w_L^exponent (exponent < L) as the product of the table's two levels after the node's
        own twiddles, w_L^(exponent mod S) w_L^(S (exponent / S)): S a power of two, so a mask and a
        shift (a division per lane would stay scalar on the host)."""
        exponent = regs.let(exponent)
        step = K.Const(1, LOCAL) << self.shift
        low = self.twiddle(self.length + (exponent & (step - 1)), sign)
        high = self.twiddle(self.length + step + (exponent >> self.shift), sign)
        return multiply(regs, low, high)

    def butterfly(self, regs: Registers, values, j: K.Var, p: int, sign: int = 0):
        """Pass p's butterfly j on its values (entries j + r N / R): twiddled, the radix-R DFT (of the
        transform's sign, or `sign`), and the index of output 0 (output r goes to base + r Ns)."""
        radices = tuple(self.op.attrs["radices"])
        radix, stride = radices[p], math.prod(radices[:p])
        sign = sign or self.sign
        k = regs.let(j % stride) if stride > 1 else None
        values = [regs.complex(*v) for v in values]
        if k is not None:
            for r in range(1, radix):
                values[r] = multiply(regs, values[r], self.twiddle(k * (r * (self.length // (stride * radix))), sign))
        outputs = dft(regs, values, sign)
        return outputs, regs.let((j / stride) * (stride * radix) + (k if k is not None else 0))

    def signature(self) -> tuple[list, list]:
        """(params, arguments) of the kernel: the buffers and scalars its variant reads, bound to the call."""
        attrs, op, length = self.op.attrs, self.op, self.length
        b, m, _, c = self.shape
        twiddle_length = attrs["twiddle_length"]
        arguments = [("transforms", b * m * c), ("rows", m), ("inner", c),
                     ("twiddle_block", c * length * m // twiddle_length if twiddle_length else 1),
                     ("twiddle_shift", max(large_step(twiddle_length), 1).bit_length() - 1), ("scale", attrs["scale"]),
                     ("table_count", op.operands[1].type.shape[1])]
        buffers = [self.x, self.table]
        scalars = [self.total, self.rows, self.inner, self.block, self.shift, self.factor, self.table_count]
        if self.padded:
            edge_s = self.x_type.shape[2]
            buffers.append(self.f)
            scalars += [self.in_length, self.edge_inner, self.edge_step, self.f_count, self.x_count]
            arguments += [("input_length", self.x_type.shape[1]), ("edge_inner", edge_s), ("edge_step", c // edge_s),
                          ("load_factor_count", op.operands[2].type.shape[0]), ("x_count", self.x_type.size)]
        if self.convolved:
            buffers.append(self.h)
            scalars.append(self.h_count)
            arguments.append(("spectrum_count", op.operands[2].type.shape[0]))
        if self.cropped:
            positions = attrs["store_positions"]
            out_inner = c * length // positions if positions else c
            buffers.append(self.g)
            scalars += [self.out_length, self.g_count, self.y_count]
            arguments += [("output_length", attrs["output_length"]),
                          ("store_factor_count", op.operands[-1].type.shape[0]),
                          ("y_count", b * out_inner * attrs["output_length"])]
        if self.positioned:
            scalars += [self.out_inner, self.out_step]
            arguments += [("output_inner", out_inner), ("output_step", positions // length)]
        return buffers + [self.y] + scalars, arguments


def stockham_kernel(op, name: str, variant: str, count: int) -> K.Kernel:
    """The stockham call's kernel of `variant` (kernels.py chooses it): "lanes", stockham_lanes_kernel
    with `count` lanes; "per_group", the butterfly-major kernel with `count` transforms per workgroup."""
    if variant == "lanes":
        return stockham_lanes_kernel(op, name, count)
    if op.attrs["spectrum"] != "none" or op.attrs["store_positions"]:
        raise NotImplementedError(f"fft.stockham: a spectrum or store_positions needs the lanes kernel, whose lanes "
                                  f"must divide C or M of {list(StockhamInterface(op).shape)}")
    radices = tuple(op.attrs["radices"])
    scale, transpose = op.attrs["scale"], op.attrs["transpose"]
    twiddle_length, input_kind, output_kind = op.attrs["twiddle_length"], op.attrs["input_kind"], op.attrs["output_kind"]
    io = StockhamInterface(op)
    length, part, per_group = io.length, io.part, count
    items = workgroup_size(per_group, radices)
    store_factor, padded, cropped = op.attrs["store_factor"], io.padded, io.cropped
    total, rows, inner, block, factor = io.total, io.rows, io.inner, io.block, io.factor
    in_length, edge_inner, edge_step, out_length = io.in_length, io.edge_inner, io.edge_step, io.out_length
    x, f, g, y = io.x, io.f, io.g, io.y
    lds = [K.LdsBuffer(f"{which}_{side}", part, per_group * length) for which in "ab" for side in ("re", "im")]
    # the work-item id an expression, not a variable: the host sees it as its loop's induction in every region
    item, first = K.workitem_id(0).cast(LOCAL), K.Var("first", INDEX)
    body = [K.Let(first, K.workgroup_id(0).cast(INDEX) * per_group)]

    def layout(regs: Registers, g: K.Var, transposed: bool) -> tuple[K.Var, K.Expr]:
        """(element index of entry 0, distance between entries) of transform `g` (of the launch) in
        x's or y's layout: the divisions once per butterfly, not per entry."""
        row, c = regs.let(g / inner), regs.let(g % inner)
        if transposed:   # y[b, n, m, c] of [B, N, M, C], with row = b M + m
            return regs.let(((row / rows) * (length * rows) + row % rows) * inner + c), rows * inner
        return regs.let(row * (length * inner) + c), inner

    for p, radix in enumerate(radices):
        stride = math.prod(radices[:p])                 # Ns
        per_transform = length // radix
        source, target = (lds[0:2], lds[2:4]) if p % 2 else (lds[2:4], lds[0:2])
        jl, t, j = K.Var(f"jl{p}", LOCAL), K.Var(f"t{p}", LOCAL), K.Var(f"j{p}", LOCAL)
        regs = Registers(part, f"v{p}_")
        # one transform a workgroup: its butterflies are the work-items' own slots (no division,
        # which would hide from the host's vectorizer that consecutive slots read consecutive entries)
        regs.stmts += ([K.Let(t, K.Const(0, LOCAL)), K.Let(j, jl)] if per_group == 1 else
                       [K.Let(t, jl / per_transform), K.Let(j, jl % per_transform)])
        # the workgroup's slots past the launch's last transform compute a copy of the last one (so
        # they write the same values to the same places): no test per work-item, which on the host
        # would keep the loads and stores of the work-item loop from vectorizing
        if p == 0 or p == len(radices) - 1:
            unclamped = regs.let(first + t.cast(INDEX))
            transform = regs.let(K.select(unclamped < total, unclamped, total - 1))
        values = []
        if p == 0 and padded:   # x[b, p, s] of [B, N_in, S] for position p = n (P / N) + c / S of x[b, 0, n, c]
            row, c = regs.let(transform / inner), regs.let(transform % inner)
            origin, distance, offset = regs.let(row * (in_length * edge_inner) + c), inner, regs.let(c / edge_inner)
        elif p == 0:
            origin, distance = layout(regs, transform, False)
        for r in range(radix):
            n = j + r * per_transform
            if p == 0 and padded:   # times conj f[p], zero past N_in (x's position 0 read instead)
                position = regs.let(n.cast(INDEX) * edge_step + offset)
                present = regs.let(position < in_length)
                read = regs.let(K.select(present, position, K.Const(0, INDEX)))
                loaded = load(x, origin + n.cast(INDEX) * distance + (read - position) * edge_inner, input_kind)
                w = (f[read * 2], f[read * 2 + 1])
                zero = K.Const(0.0, part)
                values.append((K.select(present, loaded[0] * w[0] + loaded[1] * w[1], zero),
                               K.select(present, loaded[1] * w[0] - loaded[0] * w[1], zero)))
            elif p == 0:
                values.append(load(x, origin + n.cast(INDEX) * distance, input_kind))
            else:
                values.append((source[0][t * length + n], source[1][t * length + n]))
        outputs, base = io.butterfly(regs, values, j, p)
        last = p == len(radices) - 1
        stores = []
        if last and cropped:   # y[b, p, c] of [B, output_length, C] for position p = k M + m
            row, c = regs.let(transform / inner), regs.let(transform % inner)
            m = regs.let(row % rows)
            origin, distance = regs.let(((row / rows) * out_length + m) * inner + c), rows * inner
        elif last:
            origin, distance = layout(regs, transform, transpose)
        if last and twiddle_length:   # w_L^((k M + m) n2) of transform b M + m
            n2, twiddle_row = regs.let((transform % inner) / block), regs.let((transform / inner) % rows)
        for r, value in enumerate(outputs):
            index = base + r * stride
            if not last:
                stores += [K.Store(target[0], t * length + index, value[0]),
                           K.Store(target[1], t * length + index, value[1])]
                continue
            if scale != 1.0:
                value = regs.complex(value[0] * factor, value[1] * factor)
            if twiddle_length:   # two table levels
                exponent = regs.let(((index.cast(INDEX) * rows + twiddle_row) * n2).cast(LOCAL))
                value = multiply(regs, value, io.large_twiddle(regs, exponent))
            if cropped:
                position = regs.let(index.cast(INDEX) * rows + m)
                weight = (g[position * 2], g[position * 2 + 1] if store_factor == "plain" else -g[position * 2 + 1])
                stores.append(K.If(position < out_length, store(y, origin + index.cast(INDEX) * distance,
                                                                 multiply(regs, value, weight), output_kind)))
            else:
                stores += store(y, regs.let(origin + index.cast(INDEX) * distance), value, output_kind)
        # rounds of one butterfly per work-item (uniform), so on the host the work-item loop is the
        # innermost and vectorizes across consecutive butterflies
        butterflies, round_start = per_group * per_transform, K.Var(f"round{p}", LOCAL)
        # a round's slots past the last butterfly repeat it (same values to the same places): a test
        # per work-item would keep the host's work-item loop from vectorizing
        slot = round_start + item
        work = [K.Let(jl, slot if butterflies % items == 0 else K.select(slot < butterflies, slot, butterflies - 1))]
        work += regs.stmts + stores
        body.append(K.For(round_start, 0, butterflies, items, work, uniform=True))
        if not last:
            body.append(K.Barrier())
    params, arguments = io.signature()
    return K.Kernel(name, params=params, grid=(K.ceil_div(total, per_group),), workgroup_size=(items,), body=body,
                    lds=lds if len(radices) > 1 else (), arguments=tuple(arguments))




def lanes_spread(op) -> int:
    """The distance between a stockham call's groups of transforms side by side, which the lanes must
    divide (`lanes_of`): C for columns, M for rows written transposed or a convolution's rows; 0
    where the lanes kernel does not apply (rows read and written in place)."""
    attrs = op.attrs
    _, m, _, c = stockham_view(complex_view("fft.stockham", op.operands[0].type, attrs["input_kind"]), attrs).shape
    rows = attrs["transpose"] or attrs["spectrum"] != "none"
    return c if c > 1 else m if rows and m > 1 else 0


def lanes_of(op) -> int:
    """The transforms per workgroup of the lanes variant of a stockham call (`stockham_lanes_kernel`),
    or 0 where the butterfly-major kernel runs it. The lanes variant is for transforms whose entries
    are strided in memory and whose neighbours are not: columns (C > 1), and rows written transposed
    (M > 1), where consecutive transforms of a group are consecutive elements, read and written as
    vectors; rows read and written in place keep the butterfly-major kernel, whose work-items take
    consecutive entries, except a convolution's (its passes' uniform twiddles and spectrum rows
    outweigh the rows' strided loads). It needs groups of `lanes` transforms evenly spaced (C, or
    M, a multiple of `lanes`: lanes_spread) and `lanes` transforms in LDS (plan.side_by_side)."""
    return side_by_side(lanes_spread(op), math.prod(op.attrs["radices"]), part_of(op))


def lanes_rows(lanes: int, radices: tuple[int, ...]) -> int:
    """The y extent of a lanes workgroup (lanes x rows work-items, 64 or 256): each round of a pass
    runs `rows` butterflies of every transform; the fewer slots over the passes, 256 on a tie."""
    length = math.prod(radices)
    slots = {rows: sum(-(-(length // radix) // rows) * rows for radix in radices) for rows in (64 // lanes, 256 // lanes)}
    return 64 // lanes if slots[64 // lanes] < slots[256 // lanes] else 256 // lanes


def stockham_lanes_kernel(op, name: str, lanes: int) -> K.Kernel:
    """The Stockham FFT with a workgroup's `lanes` transforms side by side: work-item (x, y) takes
    transform x of the group and butterflies y, y + rows, ... of each pass, and LDS holds entry n
    of transform x at n lanes + x. Consecutive x read and write consecutive LDS entries and, where
    the transforms are columns or rows written transposed, consecutive global elements (coalesced
    on the device; vector loads and stores on the host, whose work-item loop runs over x with the
    butterfly, so its twiddles, uniform). Rows read or written in place take a stride of the
    length between lanes. Otherwise as stockham_kernel, with the plan's edges (a padded input read
    where it is present, so as a masked vector load on the host), and a spectrum's convolution: the
    passes forward, then, from LDS times the spectrum, the same passes inverse (routines.py)."""
    radices = tuple(op.attrs["radices"])
    scale, transpose = op.attrs["scale"], op.attrs["transpose"]
    twiddle_length, input_kind, output_kind = op.attrs["twiddle_length"], op.attrs["input_kind"], op.attrs["output_kind"]
    io = StockhamInterface(op)
    length, part, padded, cropped, convolved, positioned = io.length, io.part, io.padded, io.cropped, io.convolved, \
        io.positioned
    c = io.shape[3]
    rows_per_pass = lanes_rows(lanes, radices)
    total, rows, inner, block, factor = io.total, io.rows, io.inner, io.block, io.factor
    in_length, edge_inner, edge_step, out_length = io.in_length, io.edge_inner, io.edge_step, io.out_length
    x, f, g, y = io.x, io.f, io.g, io.y
    lds = [K.LdsBuffer(f"{which}_{side}", part, lanes * length) for which in "ab" for side in ("re", "im")]
    lane, butterfly = K.workitem_id(0).cast(INDEX), K.workitem_id(1).cast(INDEX)

    def group(regs: Registers) -> dict:
        """The group's first transform and its entry 0 in x's and y's layouts (as stockham_kernel's),
        the lanes' transforms following at `lane` x (1 or the length), as Lets of `regs`: each region
        computes them anew. The host recomputes only short id expressions per region on its own
        (codegen/host.py: MAX_RECOMPUTED_NODES); these origins are longer, and kept in a per-work-item
        array they would hide from LLVM that the addresses are consecutive across lanes."""
        first = regs.let(K.workgroup_id(0).cast(INDEX) * lanes)
        row, column = regs.let(first / inner), regs.let(first % inner)
        rows_origin = regs.let(row * (length * inner) + column)
        # a padded x[b, p, s] of [B, N_in, S] holds entry n of transform c = column + lane at
        # (b N_in + p) S + c % S = b N_in S + n C + c, its position p = n (P / N) + c / S
        x_origin = regs.let(row * (in_length * edge_inner) + column) if padded else rows_origin
        if positioned:   # y[b, p, s] of [B, output_length, S] = b output_length S + k C + c
            y_origin = regs.let(row * (out_length * io.out_inner) + column)
        elif cropped:     # y[b, p, c] of [B, output_length, C], position p = k M + m
            y_origin = regs.let(((row / rows) * out_length + row % rows) * inner + column)
        elif transpose:   # y[b, n, m, c] of [B, N, M, C]
            y_origin = regs.let(((row / rows) * (length * rows) + row % rows) * inner + column)
        else:
            y_origin = rows_origin
        # the lanes' row m of M (rows in place: consecutive, as lanes_of takes M a multiple of lanes)
        m = regs.let(row % rows + (lane if c == 1 else 0))
        return dict(first=first, row=row, column=column, x_origin=x_origin, y_origin=y_origin, m=m)
    divisors = dict(io.signature()[1])

    def lane_quotient(regs: Registers, column: K.Var, divisor: K.ScalarParam, name: str) -> K.Expr:
        """(column + lane) / divisor, column a multiple of lanes (the group's consecutive columns),
        without a division per lane where the divisor's value allows (a variant of the code): the
        lanes' own column for 1, the group's one quotient for a multiple of lanes; on the host a
        division per lane stays a scalar loop."""
        if divisors[name] == 1:
            return column + lane
        if divisors[name] % lanes == 0:
            return regs.let(column / divisor)
        return regs.let((column + lane) / divisor)
    x_entries = inner
    y_entries = rows * inner if (cropped and not positioned) or transpose else inner
    x_lane = 1 if c > 1 else length
    y_lane = 1 if c > 1 or transpose else length
    body = []

    # (pass, its radix, its sign): the node's passes; a convolution's again, inverse, after them
    passes = [(p, radix, io.sign) for p, radix in enumerate(radices)]
    passes += [(p, radix, -io.sign) for p, radix in enumerate(radices)] if convolved else []
    for q, (p, radix, sign) in enumerate(passes):
        stride = math.prod(radices[:p])
        per_transform = length // radix
        source, target = (lds[0:2], lds[2:4]) if q % 2 else (lds[2:4], lds[0:2])
        round_start, j = K.Var(f"round{q}", INDEX), K.Var(f"j{q}", INDEX)
        regs = Registers(part, f"v{q}_")
        slot = round_start + butterfly
        # a round's slots past the last butterfly repeat it (same values to the same places)
        regs.stmts.append(K.Let(j, slot if per_transform % rows_per_pass == 0
                                else K.select(slot < per_transform, slot, per_transform - 1)))
        if q == 0:
            column, x_origin = (group(regs)[key] for key in ("column", "x_origin"))
        if q == len(radices):   # the spectrum's row: h[m N + k]
            spectrum_row = regs.let(group(regs)["m"] * length)
        values = []
        for r in range(radix):
            n = j + r * per_transform
            if q == len(radices):   # entry n of the forward transform times h[m N + n]
                at = n * lanes + lane
                values.append(multiply(regs, (source[0][at], source[1][at]),
                                       (io.h[(spectrum_row + n) * 2], io.h[(spectrum_row + n) * 2 + 1])))
            elif q == 0 and padded:   # times conj f[p], zero past N_in: loaded only there
                position = regs.let(n * edge_step + lane_quotient(regs, column, edge_inner, "edge_inner"))
                value = (K.Var(f"x{r}_re", part), K.Var(f"x{r}_im", part))
                loaded, w = load(x, x_origin + lane + n * x_entries, input_kind), (f[position * 2], f[position * 2 + 1])
                regs.stmts += [K.Let(value[0], K.Const(0.0, part)), K.Let(value[1], K.Const(0.0, part)),
                               K.If(position < in_length, [K.Assign(value[0], loaded[0] * w[0] + loaded[1] * w[1]),
                                                           K.Assign(value[1], loaded[1] * w[0] - loaded[0] * w[1])])]
                values.append(value)
            elif q == 0:
                values.append(load(x, x_origin + lane * x_lane + n * x_entries, input_kind))
            else:
                at = n * lanes + lane
                values.append((source[0][at], source[1][at]))
        outputs, base = io.butterfly(regs, values, j, p, sign)
        stores = []
        for r, value in enumerate(outputs):
            index = base + r * stride
            at = index * lanes + lane
            stores += [K.Store(target[0], at, value[0]), K.Store(target[1], at, value[1])]
        body += [K.For(round_start, 0, per_transform, rows_per_pass, regs.stmts + stores, uniform=True), K.Barrier()]
    # the results leave LDS an entry per round: one store of each work-item (with the lanes'
    # consecutive elements, a vector store on the host; the passes' many stores at unknown
    # distances would need more checks than LLVM's vectorizer makes)
    result = lds[0:2] if len(passes) % 2 else lds[2:4]
    round_start, k = K.Var("round_out", INDEX), K.Var("k", INDEX)
    regs = Registers(part, "w")
    slot = round_start + butterfly
    regs.stmts.append(K.Let(k, slot if length % rows_per_pass == 0 else K.select(slot < length, slot, length - 1)))
    row, column, y_origin, m = (group(regs)[key] for key in ("row", "column", "y_origin", "m"))
    value = regs.complex(result[0][k * lanes + lane], result[1][k * lanes + lane])
    if scale != 1.0:
        value = regs.complex(value[0] * factor, value[1] * factor)
    if twiddle_length and convolved:   # w_L^(-m k)
        value = multiply(regs, value, io.large_twiddle(regs, (m * k).cast(LOCAL), -io.sign))
    elif twiddle_length and c > 1:   # w_L^((k M + m) n2) of transform b M + m (the group's row), two table
        # levels; with C = 1, n2 = 0
        n2, twiddle_row = lane_quotient(regs, column, block, "twiddle_block"), regs.let(row % rows)
        exponent = regs.let(((k * rows + twiddle_row) * n2).cast(LOCAL))
        value = multiply(regs, value, io.large_twiddle(regs, exponent))
    position = regs.let(y_origin + lane * y_lane + k * y_entries)
    stores = store(y, position, value, output_kind)
    if cropped:   # times g[p] (or its conjugate) at position p, kept below output_length
        if positioned:   # p = k (P / N) + c / S
            p = regs.let(k * io.out_step + lane_quotient(regs, column, io.out_inner, "output_inner"))
        else:            # p = k M + m
            p = regs.let(k * rows + m)
        weight = (g[p * 2], g[p * 2 + 1] if op.attrs["store_factor"] == "plain" else -g[p * 2 + 1])
        stores = [K.If(p < out_length, store(y, position, multiply(regs, value, weight), output_kind))]
    body.append(K.For(round_start, 0, length, rows_per_pass, regs.stmts + stores, uniform=True))
    params, arguments = io.signature()
    return K.Kernel(name, params=params,
                    grid=(K.ceil_div(total, lanes),), workgroup_size=(lanes, rows_per_pass),
                    body=body, lds=lds, arguments=tuple(arguments))
