"""expand_complex: complex values rewritten as (real, imaginary) pairs of real arrays, so kernels stay real.

Every op that makes a complex value is replaced by ops on the parts of its operands, by the rule
of its name in EXPANSIONS (x * y -> (xr*yr - xi*yi, xr*yi + xi*yr)); `while` and `cond` carry
each complex value as two real ones. What stays complex is the boundary:
  - a complex parameter of the module (or of a fusion's closed region) is read through
    `real(p)` and `imag(p)`, and a complex output is made by `complex(re, im)`;
  - data movement of a value that exists whole moves it whole (MOVED_WHOLE), then splits;
  - ops without a sensible expansion keep their complex operands and results, built and read the
    same way: fft (its kernel reads and writes complex buffers itself), scatter with `mul`,
    products of windows, the inverse trigonometric and hyperbolic functions.
Kernels read and write a complex value as numpy lays it out (interleaved re, im of the part dtype:
see lowering/emitters.py); lowering/elemental.py loads `real`/`imag` of such a buffer and stores a
`complex` result as pairs.

Accuracy. Additive ops, data movement, conj, comparisons, select and converts are exact, as are
division (numpy's scaled algorithm, step by step) and expm1 (numpy's formula). Elsewhere the
formulas are the textbook ones, guarded against overflow where numpy's are:
  - mul: one product of each part rounded, the other fused (fma), as XLA's: a few ulp of |x|*|y|;
  - abs: c64 widens to f64 (exact squares) and rounds once; c128 scales, m*sqrt(1 + (n/m)^2): 2 ulp;
  - log: log|z| from log1p near |z| = 1 (no cancellation), atan2 for the angle;
  - sqrt: numpy's (Kahan's) formula without cancellation; exp, sin, cos, sinh, cosh: products of
    real functions (exp scaled where exp(x) alone overflows); tanh: Kahan's algorithm, as numpy;
  - reduce/cumulative prod: a tree of pairwise products (log2 n roundings deep, not n);
  - dot_general and convolutions: four real products, summed in the real kernels' order.
Non-finite inputs follow numpy for zeros, infinite magnitudes and NaN propagation; other special
cases (inf * 0 inside exp, ...) may differ.

The pass runs before canonicalize, which folds and removes what the expansion leaves unused; a
module without complex values is returned as it is.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

from ..ir.core import Module, Op, Region, Value, walk
from ..ir.types import COMPLEX_PART, COMPLEXES, TensorType
from .rewrite import Rebuilder, Scope, eliminate_dead_code


def is_complex(value: Value) -> bool:
    return value.type.dtype in COMPLEXES


class Real:
    """A real value being built; its operators append ops (Python numbers become constants of its type)."""
    __slots__ = ("b", "value")

    def __init__(self, b: "Builder", value: Value):
        self.b, self.value = b, value

    @property
    def type(self) -> TensorType:
        return self.value.type

    def like(self, other) -> "Real":
        return other if isinstance(other, Real) else self.b.full(other, self.type)

    def binary(self, name, other, reverse=False) -> "Real":
        other = self.like(other)
        return self.b.op(name, other, self) if reverse else self.b.op(name, self, other)

    def __add__(self, other): return self.binary("add", other)
    def __radd__(self, other): return self.binary("add", other, reverse=True)
    def __sub__(self, other): return self.binary("sub", other)
    def __rsub__(self, other): return self.binary("sub", other, reverse=True)
    def __mul__(self, other): return self.binary("mul", other)
    def __rmul__(self, other): return self.binary("mul", other, reverse=True)
    def __truediv__(self, other): return self.binary("div", other)
    def __rtruediv__(self, other): return self.binary("div", other, reverse=True)
    def __neg__(self): return self.b.op("neg", self)
    def __lt__(self, other): return self.binary("lt", other)
    def __le__(self, other): return self.binary("le", other)
    def __gt__(self, other): return self.binary("gt", other)
    def __ge__(self, other): return self.binary("ge", other)
    def __and__(self, other): return self.binary("and", other)
    def __or__(self, other): return self.binary("or", other)
    def eq(self, other): return self.binary("eq", other)
    def ne(self, other): return self.binary("ne", other)


class C(NamedTuple):
    """A complex value being built, as its parts."""
    re: Real
    im: Real


def call(name: str, *operands: Real, **attrs) -> Real:
    """Real op `name` of real operands."""
    return operands[0].b.op(name, *operands, **attrs)


def select(pred: Real, on_true, on_false) -> Real:
    """pred ? on_true : on_false; one branch may be a Python number."""
    like = on_true if isinstance(on_true, Real) else on_false
    return call("select", pred, like.like(on_true), like.like(on_false))


def cselect(pred: Real, on_true: C, on_false: C) -> C:
    return C(select(pred, on_true.re, on_false.re), select(pred, on_true.im, on_false.im))


def convert(x: Real, dtype: str) -> Real:
    return x if x.type.dtype == dtype else call("convert", x, dtype=dtype)


def sign_bit(x: Real) -> Real:
    """Whether x is negative, -0.0 included (1 / -0.0 = -inf)."""
    return (x < 0) | (x.eq(0) & ((1 / x) < 0))


def is_infinite(x: Real) -> Real:
    return call("abs", x).eq(math.inf)


class Builder:
    """Appends the ops of one expansion to a scope."""

    def __init__(self, expander: "ComplexExpander", scope: Scope, location):
        self.expander, self.scope, self.location = expander, scope, location

    def ops(self, name: str, *operands, **attrs) -> list[Real]:
        """Append op `name`; its results."""
        values = [o.value if isinstance(o, Real) else o for o in operands]
        return [Real(self, v) for v in self.expander.emit(self.scope, name, values, attrs, location=self.location)]

    def op(self, name: str, *operands, **attrs) -> Real:
        (result,) = self.ops(name, *operands, **attrs)
        return result

    def full(self, scalar, type: TensorType) -> Real:
        """`scalar` as a value of `type` (a constant broadcast to its shape)."""
        value = self.op("constant", value=np.array(scalar, type.numpy_dtype))
        return self.op("broadcast_in_dim", value, shape=type.shape, broadcast_dimensions=()) if type.shape else value


# ---- arithmetic on parts, shared by the rules ---------------------------------------------------

def cmul(x: C, y: C) -> C:
    """Each part one product rounded and one fused into an fma, the ones XLA's CPU code fuses (the
    sign of an exactly cancelling part's rounding error shows which): finite wherever the exact
    part is, though the rounded products alone may overflow."""
    return C(call("fma", x.re, y.re, -(x.im * y.im)), call("fma", x.im, y.re, x.re * y.im))


def cdiv(x: C, y: C) -> C:
    """numpy's complex division step by step (Smith's algorithm: divide by the larger part first,
    so no intermediate overflows); 0/0 divides each part by |0| to give inf or NaN, as numpy."""
    abs_re, abs_im = call("abs", y.re), call("abs", y.im)
    rat = y.im / y.re
    scale = 1 / (y.re + y.im * rat)
    by_real = C((x.re + x.im * rat) * scale, (x.im - x.re * rat) * scale)
    by_zero = C(x.re / abs_re, x.im / abs_re)
    rat = y.re / y.im
    scale = 1 / (y.im + y.re * rat)
    by_imag = C((x.re * rat + x.im) * scale, (x.im * rat - x.re) * scale)
    zero = abs_re.eq(0) & abs_im.eq(0)
    return cselect(abs_re >= abs_im, cselect(zero, by_zero, by_real), by_imag)


def cconst(re: float, im: float, like: Real) -> C:
    return C(like.like(re), like.like(im))


def widened(fn):
    """fn(*parts, exact_squares) run on f32 parts in f64, each real result rounded once: the squares of
    f32 numbers are exact in f64 and cannot overflow. Other parts run as they are (exact_squares False)."""
    def run(*parts: Real):
        dtype = parts[0].type.dtype
        if dtype != "f32":
            return fn(*parts, exact_squares=False)
        result = fn(*(convert(p, "f64") for p in parts), exact_squares=True)
        return C(*(convert(r, dtype) for r in result)) if isinstance(result, C) else convert(result, dtype)
    return run


def magnitude_terms(x: Real, y: Real) -> tuple[Real, Real]:
    """(larger, smaller) of |x| and |y|."""
    ax, ay = call("abs", x), call("abs", y)
    return call("max", ax, ay), call("min", ax, ay)


def hypot(x: Real, y: Real, exact_squares: bool) -> Real:
    """|x + iy| without overflow: sqrt(x^2 + y^2) from exact squares, else m sqrt(1 + (n/m)^2) (2 ulp);
    inf if either part is infinite (even with a NaN), as C's hypot."""
    if exact_squares:
        root = call("sqrt", x * x + y * y)
    else:
        m, n = magnitude_terms(x, y)
        ratio = n / select(m.eq(0), 1.0, m)
        root = m * call("sqrt", 1 + ratio * ratio)
    return select(is_infinite(x) | is_infinite(y), math.inf, root)


def log_hypot(x: Real, y: Real, exact_squares: bool) -> Real:
    """log|x + iy|; for 0.5 <= max(|x|, |y|) <= 2 as log1p((m - 1)(m + 1) + n^2) / 2, which does not
    cancel near |z| = 1 (m - 1 is exact there); elsewhere from the squares or scaled."""
    m, n = magnitude_terms(x, y)
    near = call("log1p", (m - 1) * (m + 1) + n * n) * 0.5
    if exact_squares:
        far = call("log", m * m + n * n) * 0.5
    else:
        ratio = n / select(m.eq(0), 1.0, m)
        far = call("log", m) + call("log1p", ratio * ratio) * 0.5
    result = select((m >= 0.5) & (m <= 2.0), near, far)
    return select(is_infinite(m), math.inf, result)


def sqrt_parts(x: Real, y: Real, exact_squares: bool) -> C:
    """numpy's (Kahan's) square root: t = sqrt((|x| + |z|) / 2), the other part |y| / 2t, so nothing
    cancels. Without exact squares, parts near the overflow threshold are scaled by 1/4 (exactly) first."""
    big = None
    if not exact_squares:
        threshold = 2.0 ** 1021
        big = (call("abs", x) >= threshold) | (call("abs", y) >= threshold)
        x, y = select(big, x * 0.25, x), select(big, y * 0.25, y)
    t = call("sqrt", (call("abs", x) + hypot(x, y, exact_squares)) * 0.5)
    if big is not None:
        t = select(big, t * 2.0, t)
        x, y = select(big, x * 4.0, x), select(big, y * 4.0, y)
    nonnegative = C(t, y / (t * 2.0))
    negative = C(call("abs", y) / (t * 2.0), select(sign_bit(y), -t, t))
    result = cselect(x >= 0, nonnegative, negative)
    result = cselect(x.eq(0) & y.eq(0), C(x.like(0.0), y), result)
    return cselect(is_infinite(y), C(x.like(math.inf), y), result)


cabs = widened(hypot)
log_abs = widened(log_hypot)
csqrt_widened = widened(sqrt_parts)


def csqrt(z: C) -> C:
    return csqrt_widened(z.re, z.im)


def clog(z: C) -> C:
    return C(log_abs(z.re, z.im), call("atan2", z.im, z.re))


def cexp(z: C) -> C:
    """exp(x) (cos y, sin y); where exp(x) alone overflows, exp(x/2) twice; a real z stays real."""
    overflow = math.log(np.finfo(z.re.type.numpy_dtype).max)
    cos, sin = call("cos", z.im), call("sin", z.im)
    whole, half = call("exp", z.re), call("exp", z.re * 0.5)
    big = z.re > overflow
    re = select(big, half * cos * half, whole * cos)
    im = select(big, half * sin * half, whole * sin)
    return C(re, select(z.im.eq(0), z.im, im))


def ctanh(z: C) -> C:
    """Kahan's algorithm, as numpy: with t = tan y, s = sinh x, beta = 1 + t^2,
    tanh z = (beta s sqrt(1 + s^2), t) / (1 + beta s^2); for large |x|, (sign x, 4 sin y cos y e^-2|x|)."""
    x, y = z
    t, s = call("tan", y), call("sinh", x)
    beta = 1 + t * t
    denominator = 1 + beta * s * s
    near = C(beta * call("sqrt", 1 + s * s) * s / denominator, t / denominator)
    large = 22.0 if x.type.dtype == "f64" else 11.0  # 1 - tanh(large) is below half an ulp of 1
    decay = call("exp", -call("abs", x))
    far = C(select(x < 0, x.like(-1.0), 1.0), call("sin", y) * call("cos", y) * 4.0 * decay * decay)
    return cselect(call("abs", x) >= large, far, near)


def ctan(z: C) -> C:
    """tan z = -i tanh(iz)."""
    w = ctanh(C(-z.im, z.re))
    return C(w.im, -w.re)


def clogistic(z: C) -> C:
    """1 / (1 + exp(-z)), as the reference computes it."""
    e = cexp(C(-z.re, -z.im))
    return cdiv(cconst(1.0, 0.0, z.re), C(e.re + 1.0, e.im))


def cpow(a: C, b: C) -> C:
    """exp(b log a), with numpy's values at the edges: a^0 = 1, 0^b = 0 for real b > 0, else NaN."""
    power = cexp(cmul(b, clog(a)))
    a_zero = a.re.eq(0) & a.im.eq(0)
    zero_base = cselect((b.re > 0) & b.im.eq(0), cconst(0.0, 0.0, a.re), cconst(math.nan, math.nan, a.re))
    result = cselect(a_zero, zero_base, power)
    return cselect(b.re.eq(0) & b.im.eq(0), cconst(1.0, 0.0, a.re), result)


def cexpm1(z: C) -> C:
    """numpy's formula: (expm1(x) cos y - 2 sin^2(y/2), exp(x) sin y)."""
    half = call("sin", z.im * 0.5)
    return C(call("expm1", z.re) * call("cos", z.im) - half * half * 2.0, call("exp", z.re) * call("sin", z.im))


def csign(z: C) -> C:
    """z / |z| (0 for 0), dividing by the complex |z| + 0i as numpy's reference does."""
    magnitude = cabs(*z)
    zero = magnitude.eq(0)
    quotient = cdiv(z, C(select(zero, 1.0, magnitude), magnitude.like(0.0)))
    return cselect(zero, cconst(0.0, 0.0, z.re), quotient)


# ---- the rules -----------------------------------------------------------------------------------
# rule(b, op, args) -> one C (complex) or Real per result of op, or None to keep op complex. args
# holds a C per complex operand and a Real per real one.

Rule = Callable[[Builder, Op, list], list | None]
EXPANSIONS: dict[str, Rule] = {}


def expands(*names: str):
    def register(rule):
        for name in names:
            EXPANSIONS[name] = rule
        return rule
    return register


def elementwise(fn):
    """A rule from a function of the operands to the one result."""
    return lambda b, op, args: [fn(*args)]


ELEMENTWISE_RULES = {
    "add": lambda x, y: C(x.re + y.re, x.im + y.im),
    "sub": lambda x, y: C(x.re - y.re, x.im - y.im),
    "mul": cmul,
    "div": cdiv,
    "neg": lambda x: C(-x.re, -x.im),
    "conj": lambda x: C(x.re, -x.im),
    "real": lambda x: x.re,
    "imag": lambda x: x.im,
    "complex": lambda re, im: C(re, im),
    "abs": lambda x: cabs(*x),
    "sign": csign,
    "eq": lambda x, y: x.re.eq(y.re) & x.im.eq(y.im),
    "ne": lambda x, y: x.re.ne(y.re) | x.im.ne(y.im),
    "exp": cexp,
    "expm1": cexpm1,
    "log": clog,
    "log1p": lambda x: clog(C(x.re + 1.0, x.im)),
    "sqrt": csqrt,
    "rsqrt": lambda x: cdiv(cconst(1.0, 0.0, x.re), csqrt(x)),
    "pow": cpow,
    "sin": lambda x: C(call("sin", x.re) * call("cosh", x.im), call("cos", x.re) * call("sinh", x.im)),
    "cos": lambda x: C(call("cos", x.re) * call("cosh", x.im), -(call("sin", x.re) * call("sinh", x.im))),
    "sinh": lambda x: C(call("sinh", x.re) * call("cos", x.im), call("cosh", x.re) * call("sin", x.im)),
    "cosh": lambda x: C(call("cosh", x.re) * call("cos", x.im), call("sinh", x.re) * call("sin", x.im)),
    "tanh": ctanh,
    "tan": ctan,
    "logistic": clogistic,
}

for _name, _fn in ELEMENTWISE_RULES.items():
    expands(_name)(elementwise(_fn))


@expands("broadcast_in_dim", "reshape", "transpose", "slice", "rev", "pad", "concatenate", "dynamic_slice",
         "dynamic_update_slice", "dynamic_update_slice_in_place", "gather", "select", "copy")
def per_part(b, op, args):
    """The op on the real parts, then on the imaginary parts (index and predicate operands shared)."""
    re = b.op(op.name, *[a.re if isinstance(a, C) else a for a in args], **op.attrs)
    im = b.op(op.name, *[a.im if isinstance(a, C) else a for a in args], **op.attrs)
    return [C(re, im)]


@expands("scatter", "scatter_in_place")
def scatter(b, op, args):
    return per_part(b, op, args) if op.attrs["reduction"] in ("set", "add") else None


@expands("constant")
def constant(b, op, args):
    value = op.attrs["value"]
    return [C(b.op("constant", value=np.array(value.real)),
              b.op("constant", value=np.array(value.imag)))]


@expands("iota")
def iota(b, op, args):
    part = COMPLEX_PART[op.attrs["dtype"]]
    re = b.op("iota", **dict(op.attrs, dtype=part))
    return [C(re, re.like(0.0))]


@expands("convert")
def convert_rule(b, op, args):
    (x,), target = args, op.attrs["dtype"]
    if target not in COMPLEXES:  # complex -> real keeps the real part
        return [convert(x.re, target)]
    part = COMPLEX_PART[target]
    if isinstance(x, C):
        return [C(convert(x.re, part), convert(x.im, part))]
    re = convert(x, part)
    return [C(re, re.like(0.0))]


@expands("reduce")
def reduce(b, op, args):
    (x,) = args
    if op.attrs["reducer"] == "sum":
        return per_part(b, op, args)
    return [product_over(x, op.attrs["axes"])]


@expands("reduce_window")
def reduce_window(b, op, args):
    return per_part(b, op, args) if op.attrs["reducer"] == "sum" else None


@expands("cumulative")
def cumulative(b, op, args):
    (x,) = args
    if op.attrs["reducer"] == "sum":
        return per_part(b, op, args)
    return [running_product(x, op.attrs["axis"], op.attrs["reverse"])]


def apply(name: str, z: C, **attrs) -> C:
    return C(call(name, z.re, **attrs), call(name, z.im, **attrs))


def concatenate(x: C, y: C, axis: int) -> C:
    return C(call("concatenate", x.re, y.re, dimension=axis), call("concatenate", x.im, y.im, dimension=axis))


def slice_along(z: C, axis: int, start: int, limit: int, stride: int = 1) -> C:
    shape = z.re.type.shape
    return apply("slice", z, start_indices=tuple(start if d == axis else 0 for d in range(len(shape))),
                 limit_indices=tuple(limit if d == axis else n for d, n in enumerate(shape)),
                 strides=tuple(stride if d == axis else 1 for d in range(len(shape))))


def product_over(x: C, axes) -> C:
    """The product over `axes`: the axes moved last and merged, then halved by pairwise products."""
    shape = x.re.type.shape
    kept = [d for d in range(len(shape)) if d not in axes]
    kept_shape = tuple(shape[d] for d in kept)
    count = math.prod(shape[a] for a in axes)
    if count == 0:
        one = x.re.b.full(1.0, x.re.type.with_shape(kept_shape))
        return C(one, one.like(0.0))
    if kept + list(axes) != list(range(len(shape))):
        x = apply("transpose", x, permutation=tuple(kept + list(axes)))
    x = apply("reshape", x, new_sizes=kept_shape + (count,))
    axis = len(kept_shape)
    while count > 1:
        # An odd count's last element is carried to the next level as it is.
        pairs = cmul(slice_along(x, axis, 0, count - 1, 2), slice_along(x, axis, 1, count, 2))
        x = concatenate(pairs, slice_along(x, axis, count - 1, count), axis) if count % 2 else pairs
        count = count // 2 + count % 2
    return apply("reshape", x, new_sizes=kept_shape)


def running_product(x: C, axis: int, reverse: bool) -> C:
    """Inclusive products along `axis` (Hillis and Steele): step k multiplies in the value k back; the
    first k values are already final and kept as they are (so the first element is x's own, signed
    zeros included, as numpy's)."""
    n = x.re.type.shape[axis]
    if reverse:
        x = apply("rev", x, dimensions=(axis,))
    step = 1
    while step < n:
        x = concatenate(slice_along(x, axis, 0, step),
                        cmul(slice_along(x, axis, 0, n - step), slice_along(x, axis, step, n)), axis)
        step *= 2
    return apply("rev", x, dimensions=(axis,)) if reverse else x


@expands("dot_general", "conv_general_dilated")
def bilinear(b, op, args):
    """(a + ib)(c + id) as four real products: (ac - bd) + i(ad + bc)."""
    x, y = args
    preferred = op.attrs["preferred_element_type"]
    attrs = dict(op.attrs, preferred_element_type=COMPLEX_PART.get(preferred, preferred))

    def product(u, v):
        return b.op(op.name, u, v, **attrs)
    return [C(product(x.re, y.re) - product(x.im, y.im), product(x.re, y.im) + product(x.im, y.re))]


@expands("sort")
def sort(b, op, args):
    """A complex key sorts by its real, then its imaginary part (NaNs last in each): two real keys."""
    operands, num_keys = [], 0
    for k, a in enumerate(args):
        parts = [a.re, a.im] if isinstance(a, C) else [a]
        operands += parts
        num_keys += len(parts) if k < op.attrs["num_keys"] else 0
    results = iter(b.ops("sort", *operands, **dict(op.attrs, num_keys=num_keys)))
    return [C(next(results), next(results)) if isinstance(a, C) else next(results) for a in args]


@expands("optimization_barrier")
def barrier(b, op, args):
    """One barrier over every real part, so the parts stay apart as the whole values would."""
    parts = iter(b.ops(op.name, *[p for a in args for p in ((a.re, a.im) if isinstance(a, C) else (a,))]))
    return [C(next(parts), next(parts)) if isinstance(a, C) else next(parts) for a in args]


# ---- the pass ----------------------------------------------------------------------------------

# Data movement of a value that exists whole (a parameter, an fft's result) moves it whole, then
# splits: to the fusion pass that is a leaf (data movement of a parameter) read by `real`/`imag`,
# so it fuses with its readers; split first, it would move computed values and cut the fusion.
MOVED_WHOLE = frozenset({"broadcast_in_dim", "reshape", "transpose", "slice", "rev"})


class ComplexScope(Scope):
    """A scope that also maps each complex input value (by id) to the (re, im) values of its parts.

    `values` maps a complex value to a complex value only where one is built (a parameter, the
    result of an op kept complex, or a `complex` op made for a use that needs the whole value)."""

    def __init__(self, parent: "ComplexScope | None" = None):
        super().__init__(parent)
        self.parts: dict[int, tuple[Value, Value]] = dict(parent.parts) if parent else {}


class ComplexExpander(Rebuilder):
    def new_scope(self, parent):
        return ComplexScope(parent)

    def copy_region(self, region: Region, parent) -> Region:
        """A region that keeps its signature (the module's, a fusion's): complex params split, outputs joined."""
        scope = self.new_scope(parent)
        params = [Value(p.type, None, p.name_hint) for p in region.params]
        scope.bind(region.params, params)
        for old, new in zip(region.params, params):
            if is_complex(old):
                self.split(scope, old, new)
        for op in region.ops:
            self.copy_op(op, scope)
        return Region(params, scope.ops, [self.whole(scope, v) for v in region.outputs])

    def copy_flat_region(self, region: Region, parent: ComplexScope) -> Region:
        """A region of while/cond: each complex param and output becomes two real ones, (re, im)."""
        scope = self.new_scope(parent)
        params = []
        for p in region.params:
            if is_complex(p):
                part_type = p.type.with_dtype(COMPLEX_PART[p.type.dtype])
                scope.parts[id(p)] = (Value(part_type), Value(part_type))
                params += scope.parts[id(p)]
            else:
                params.append(Value(p.type, None, p.name_hint))
                scope.bind([p], params[-1:])
        for op in region.ops:
            self.copy_op(op, scope)
        return Region(params, scope.ops, self.flat(scope, region.outputs))

    def flat(self, scope: ComplexScope, values) -> list[Value]:
        return [v for value in values
                for v in (scope.parts[id(value)] if is_complex(value) else (scope.values[id(value)],))]

    def split(self, scope: ComplexScope, old: Value, new: Value):
        """Bind complex `old` to the built complex value `new` and to its parts."""
        scope.bind([old], [new])
        re = self.emit(scope, "real", [new], {})[0]
        im = self.emit(scope, "imag", [new], {})[0]
        scope.parts[id(old)] = (re, im)

    def whole(self, scope: ComplexScope, value: Value) -> Value:
        """The built value of `value`; a complex one made from its parts the first time it is needed."""
        if id(value) not in scope.values:
            scope.values[id(value)] = self.emit(scope, "complex", list(scope.parts[id(value)]), {})[0]
        return scope.values[id(value)]

    def copy_op(self, op: Op, scope: ComplexScope):
        if op.name in ("while", "cond"):
            return self.copy_control(op, scope)
        if not any(map(is_complex, list(op.operands) + list(op.results))):
            return super().copy_op(op, scope)
        if op.name in MOVED_WHOLE and id(op.operands[0]) in scope.values:
            return self.keep(op, scope)
        rule = EXPANSIONS.get(op.name)
        b = Builder(self, scope, op.location)
        args = [C(*(Real(b, v) for v in scope.parts[id(x)])) if is_complex(x) else Real(b, scope.values[id(x)])
                for x in op.operands]
        results = rule(b, op, args) if rule is not None else None
        if results is None:
            return self.keep(op, scope)
        for old, new in zip(op.results, results):
            if isinstance(new, C):
                scope.parts[id(old)] = (new.re.value, new.im.value)
            else:
                scope.bind([old], [new.value])

    def keep(self, op: Op, scope: ComplexScope):
        """Copy op with its complex operands and results whole."""
        operands = [self.whole(scope, v) for v in op.operands]
        results = self.emit(scope, op.name, operands, op.attrs, self.copy_regions(op, scope),
                            [v.type for v in op.results], op.location)
        for old, new in zip(op.results, results):
            if is_complex(old):
                self.split(scope, old, new)
            else:
                scope.bind([old], [new])

    def copy_control(self, op: Op, scope: ComplexScope):
        regions = [self.copy_flat_region(r, scope) for r in op.regions]
        head = [scope.values[id(op.operands[0])]] if op.name == "cond" else []
        carried = op.operands[1:] if op.name == "cond" else op.operands
        results = iter(self.emit(scope, op.name, head + self.flat(scope, carried), op.attrs, regions,
                                 location=op.location))
        for old in op.results:
            if is_complex(old):
                scope.parts[id(old)] = (next(results), next(results))
            else:
                scope.bind([old], [next(results)])


def has_complex(module: Module) -> bool:
    values = list(module.params) + [v for op in walk(module.body) for v in op.results]
    return any(map(is_complex, values))


def expand_complex(module: Module) -> Module:
    """A copy of `module` computing on real parts (see the module docstring); `module` itself when
    no value is complex."""
    if not has_complex(module):
        return module
    return eliminate_dead_code(ComplexExpander().run(module))
