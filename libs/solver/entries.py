"""Matrix entries as the solver's kernels read, compute and write them, real or complex.

The kernel IR has no complex dtype: a complex buffer holds the real and imaginary parts of each
element interleaved, in its part dtype (lowering/emitters.py's layout). `Field(dtype)` gives a
kernel one way to write its arithmetic for both: entries are kernel expressions when the dtype is
real and `Complex` pairs of them when it is complex, and reads, writes and variables go through
the field. Complex arithmetic is the textbook one but for division, Smith's algorithm (no overflow
of |b|^2; "Algorithm 116: Complex division", CACM 5(8), 1962), and pivot magnitudes are LAPACK's
cabs1, |re| + |im| (i_amax of a complex vector).
"""
from __future__ import annotations

import itertools

from ...ir import kernel as K
from ...ir.types import COMPLEX_PART, COMPLEXES


class Complex:
    """A complex kernel value: (re, im) expressions of one real dtype."""
    __slots__ = ("re", "im")

    def __init__(self, re, im):
        self.re, self.im = re, im

    @staticmethod
    def of(value, like: "Complex") -> "Complex":
        """value (complex, a real expression or a Python number) as a Complex of like's dtype."""
        if isinstance(value, Complex):
            return value
        return Complex(K.as_expr(value, like.dtype), K.Const(0, like.dtype))

    @property
    def dtype(self) -> str:
        return self.re.dtype

    def __add__(self, other):
        other = Complex.of(other, self)
        return Complex(self.re + other.re, self.im + other.im)

    def __sub__(self, other):
        other = Complex.of(other, self)
        return Complex(self.re - other.re, self.im - other.im)

    def __mul__(self, other):
        if not isinstance(other, Complex):   # a real factor scales both parts
            return Complex(self.re * other, self.im * other)
        return Complex(self.re * other.re - self.im * other.im, self.re * other.im + self.im * other.re)

    def __truediv__(self, other):
        if not isinstance(other, Complex):
            return Complex(self.re / other, self.im / other)
        # Smith: divide by the larger part of the divisor first.
        by_re = K.abs(other.re) >= K.abs(other.im)
        ratio = K.select(by_re, other.im / other.re, other.re / other.im)
        scale = K.select(by_re, other.re + other.im * ratio, other.im + other.re * ratio)
        re = K.select(by_re, self.re + self.im * ratio, self.re * ratio + self.im) / scale
        im = K.select(by_re, self.im - self.re * ratio, self.im * ratio - self.re) / scale
        return Complex(re, im)

    def conj(self) -> "Complex":
        return Complex(self.re, -self.im)

    def abs(self):
        return K.sqrt(self.re * self.re + self.im * self.im)

    def sqrt(self) -> "Complex":
        """The principal square root, by real square roots: r = sqrt((|z| + |re|) / 2), then
        (r, im / 2r) for re >= 0, else (|im| / 2r, +-r) (0 for z = 0)."""
        root = K.sqrt((self.abs() + K.abs(self.re)) * 0.5)
        other = K.select(root.ne(0), self.im / (2 * root), K.Const(0, self.dtype))
        positive = self.re >= 0
        return Complex(K.select(positive, root, K.abs(other)),
                       K.select(positive, other, K.select(self.im >= 0, root, -root)))


class Field:
    """The entries of a kernel's matrices of value dtype `dtype` (f32, f64, c64 or c128)."""

    def __init__(self, dtype: str):
        self.complex = dtype in COMPLEXES
        self.part = COMPLEX_PART[dtype] if self.complex else dtype
        self.width = 2 if self.complex else 1   # buffer elements per entry
        self.names = itertools.count()

    def read(self, buffer, index):
        if self.complex:
            return Complex(buffer[2 * index], buffer[2 * index + 1])
        return buffer[index]

    def write(self, buffer, index, value) -> list:
        """Statements storing value at entry `index` (a complex value's parts computed first, since
        they may read the entry being written)."""
        if not self.complex:
            return [K.Store(buffer, index, value)]
        re, im = self.temporary("written")
        value = Complex.of(value, Complex(re, im))
        return [K.Let(re, value.re), K.Let(im, value.im), K.Store(buffer, 2 * index, re),
                K.Store(buffer, 2 * index + 1, im)]

    def temporary(self, name: str):
        number = next(self.names)
        return K.Var(f"{name}{number}_re", self.part), K.Var(f"{name}{number}_im", self.part)

    def var(self, name: str):
        if self.complex:
            return Complex(K.Var(f"{name}_re", self.part), K.Var(f"{name}_im", self.part))
        return K.Var(name, self.part)

    def let(self, var, value) -> list:
        if not self.complex:
            return [K.Let(var, value)]
        value = Complex.of(value, var)
        return [K.Let(var.re, value.re), K.Let(var.im, value.im)]

    def assign(self, var, value) -> list:
        """Statements setting var to value (a complex value's parts computed first, since each may
        read both of var's)."""
        if not self.complex:
            return [K.Assign(var, value)]
        value = Complex.of(value, var)
        re, im = self.temporary("assigned")
        return [K.Let(re, value.re), K.Let(im, value.im), K.Assign(var.re, re), K.Assign(var.im, im)]

    def const(self, number):
        if self.complex:
            return Complex(K.Const(number, self.part), K.Const(0, self.part))
        return K.Const(number, self.part)

    def from_real(self, value):
        """An entry of real value `value` (an expression of the part dtype)."""
        return Complex(value, K.Const(0, self.part)) if self.complex else value

    def conj(self, value):
        return value.conj() if self.complex else value

    def select(self, condition, on_true, on_false):
        if not self.complex:
            return K.select(condition, on_true, on_false)
        return Complex(K.select(condition, on_true.re, on_false.re), K.select(condition, on_true.im, on_false.im))

    def real(self, value):
        return value.re if self.complex else value

    def magnitude(self, value):
        """The pivot magnitude: |x|, or |re| + |im| (LAPACK's cabs1) for a complex x."""
        return K.abs(value.re) + K.abs(value.im) if self.complex else K.abs(value)

    def squared_magnitude(self, value):
        """|x|^2 (re^2 + im^2 for a complex x)."""
        return value.re * value.re + value.im * value.im if self.complex else value * value

    def nonzero(self, value):
        return value.re.ne(0) | value.im.ne(0) if self.complex else value.ne(0)
