"""The fft kernel: FFT, IFFT, RFFT and IRFFT over the 1 to 3 trailing dimensions, as direct DFTs.

Complex buffers. The kernel IR has no complex dtype: a c64 (c128) operand or result is a buffer of
f32 (f64) holding 2 x size elements (2 for an empty value), the real and imaginary parts of each
element interleaved (re0, im0, re1, im1, ...): numpy's memory layout of a C-contiguous complex
array, with the bytes the parameter contract of lowering/emitters.py counts. The runtime binds the
complex array itself (by address), or its real view `array.view(np.float32)` (float64 for c128).

Method. One work-item per line of the result along the last dimension (a batch index and the
result's coordinates k on the other transformed axes). It first reduces the leading axes,
    Z[j] = sum over m of x[m, j] * exp(sign 2 pi i sum_a k_a m_a / N_a),
(kept in private memory, or recomputed where a line is too long to keep), then transforms the
last axis directly: out[f] = sum_j Z[j] exp(sign 2 pi i j f / N). That is numpy's order (for
IRFFT: inverse transforms of the leading axes, then the complex-to-real transform of the last
axis, which reads the real parts of the DC and Nyquist terms only). Sums and twiddle factors are
computed in f64 whatever the dtype, twiddles from per-length tables of cos and sin filled once
per work-item (the angle 2 pi t / N with t = (j f) mod N reduced exactly in integers), so the
error is that of the final rounding plus about N x 2^-52 of the sum of magnitudes. O(N^2) per
line: the fft library replaces it.
"""
from __future__ import annotations

import math

from ..ir import kernel as K
from ..ir.types import COMPLEXES
from .elemental import row_major_strides
from .emit_ops import loop_nest, offset, one_item_per_element, unravel
from .emitters import emitter, operand_buffers

MAX_PRIVATE_LINE = 4096  # elements of a twiddle table or of Z kept per work-item (2 x 32 KiB of f64)
WIDE = "f64"
INDEX = "i64"


def load_complex(buffer: K.GlobalBuffer, is_complex: bool, position: K.Expr) -> tuple[K.Expr, K.Expr]:
    if is_complex:
        return buffer[position * 2].cast(WIDE), buffer[position * 2 + 1].cast(WIDE)
    return buffer[position].cast(WIDE), K.Const(0.0, WIDE)


class Twiddles:
    """exp(sign 2 pi i t / N) for t in [0, N): from a private table filled once when N is small
    enough, else computed where used."""

    def __init__(self, lengths, sign: int):
        self.sign = sign
        self.tables = {n: (K.PrivateArray(f"cos{n}", WIDE, n), K.PrivateArray(f"sin{n}", WIDE, n))
                       for n in sorted(set(lengths)) if n <= MAX_PRIVATE_LINE}

    def computed(self, t: K.Expr, n: int) -> tuple[K.Expr, K.Expr]:
        angle = t.cast(WIDE) * (2 * math.pi / n)
        return K.cos(angle), (K.sin(angle) if self.sign > 0 else -K.sin(angle))

    def fill(self) -> list[K.Stmt]:
        stmts = []
        for n, (cos_table, sin_table) in self.tables.items():
            t = K.Var(f"t{n}", INDEX)
            cos, sin = self.computed(t, n)
            stmts.append(K.For(t, 0, n, 1, [K.Store(cos_table, t, cos), K.Store(sin_table, t, sin)]))
        return stmts

    def at(self, t: K.Expr, n: int) -> tuple[K.Expr, K.Expr]:
        if n in self.tables:
            cos_table, sin_table = self.tables[n]
            return cos_table[t], sin_table[t]
        return self.computed(t, n)

    @property
    def arrays(self) -> list[K.PrivateArray]:
        return [array for pair in self.tables.values() for array in pair]


@emitter("fft")
def emit_fft(op, name):
    x, out = op.operands[0].type, op.result.type
    fft_type, lengths = op.attrs["fft_type"], tuple(op.attrs["fft_length"])
    sign = -1 if fft_type in ("FFT", "RFFT") else 1
    scale = 1.0 / math.prod(lengths) if sign > 0 else 1.0
    lead, last = lengths[:-1], lengths[-1]
    line_in, line_out = x.shape[-1], out.shape[-1]
    lead_count = math.prod(lead)
    source, result = operand_buffers(op)
    x_complex, out_complex = x.dtype in COMPLEXES, out.dtype in COMPLEXES
    twiddles = Twiddles(lengths, sign)
    keep_z = bool(lead) and line_in <= MAX_PRIVATE_LINE
    z_re, z_im = K.PrivateArray("z_re", WIDE, line_in), K.PrivateArray("z_im", WIDE, line_in)

    def scaled(value: K.Expr) -> K.Expr:
        return value * scale if scale != 1.0 else value

    def body(line):
        block = K.Var("block", INDEX)
        stmts, k_lead = unravel(line % lead_count, lead, "k")
        stmts.append(K.Let(block, (line / lead_count) * (lead_count * line_in)))

        def z_at(j: K.Expr, tag: str) -> tuple[list[K.Stmt], K.Expr, K.Expr]:
            """Statements and (re, im) expressions of Z[j]: the leading axes reduced."""
            if not lead:
                return ([],) + load_complex(source, x_complex, block + j)
            zr, zi = K.Var(f"zr{tag}", WIDE), K.Var(f"zi{tag}", WIDE)
            m = [K.Var(f"m{a}{tag}", INDEX) for a in range(len(lead))]
            xr, xi = load_complex(source, x_complex, block + offset(m, row_major_strides(lead), INDEX) * line_in + j)
            c, s = twiddles.at((k_lead[0] * m[0]) % lead[0], lead[0])
            for a, n in enumerate(lead[1:], 1):  # the product of the axes' twiddles
                ca, sa = twiddles.at((k_lead[a] * m[a]) % n, n)
                c, s = c * ca - s * sa, c * sa + s * ca
            term = [K.Assign(zr, zr + xr * c - xi * s), K.Assign(zi, zi + xr * s + xi * c)]
            return [K.Let(zr, K.Const(0.0, WIDE)), K.Let(zi, K.Const(0.0, WIDE))] + \
                loop_nest(m, lead, term), zr, zi

        stmts += twiddles.fill()
        if keep_z:
            j = K.Var("j_keep", INDEX)
            z_stmts, zr, zi = z_at(j, "_keep")
            stmts.append(K.For(j, 0, line_in, 1, z_stmts + [K.Store(z_re, j, zr), K.Store(z_im, j, zi)]))

        f, j, jf = K.Var("f", INDEX), K.Var("j", INDEX), K.Var("jf", INDEX)
        acc_re, acc_im = K.Var("acc_re", WIDE), K.Var("acc_im", WIDE)
        z_stmts, zr, zi = ([], z_re[j], z_im[j]) if keep_z else z_at(j, "")
        c, s = twiddles.at(jf, last)
        # jf = (j f) mod N, stepped by f without a division (f < N).
        next_jf = [K.Assign(jf, jf + f), K.Assign(jf, K.select(jf >= last, jf - last, jf))]
        if out_complex:
            term = [K.Assign(acc_re, acc_re + zr * c - zi * s), K.Assign(acc_im, acc_im + zr * s + zi * c)]
            store = [K.Store(result, (line * line_out + f) * 2, scaled(acc_re).cast(result.dtype)),
                     K.Store(result, (line * line_out + f) * 2 + 1, scaled(acc_im).cast(result.dtype))]
        else:  # IRFFT: the real part of the Hermitian-extended sum, each term but DC and Nyquist twice
            single = j.eq(0) | j.eq(last // 2) if last % 2 == 0 else j.eq(0)
            weight = K.select(single, K.Const(1.0, WIDE), K.Const(2.0, WIDE))
            term = [K.Assign(acc_re, acc_re + weight * (zr * c - zi * s))]
            store = [K.Store(result, line * line_out + f, scaled(acc_re).cast(result.dtype))]
        stmts.append(K.For(f, 0, line_out, 1, [
            K.Let(acc_re, K.Const(0.0, WIDE)), K.Let(acc_im, K.Const(0.0, WIDE)), K.Let(jf, K.Const(0, INDEX)),
            K.For(j, 0, line_in, 1, z_stmts + term + next_jf)] + store))
        return stmts

    private = twiddles.arrays + ([z_re, z_im] if keep_z else [])
    return one_item_per_element(name, [source, result], math.prod(out.shape[:-1]), body, INDEX, private=private)
