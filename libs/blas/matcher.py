"""The BLAS pattern table: contractions in the graph become GEMM `library_call`s, as hipBLASLt fuses them.

Each rule is a (pattern, rewrite) pair, as in passes/rules.py. passes/match_libraries.py runs the
table on each op as it rebuilds the module, so a rule sees its operands already matched: first a
`dot_general` becomes a GEMM (`gemm_from_dot`), then the ops that follow it are absorbed one at a
time, each only while the GEMM has not yet applied a later step of

    D = activation(alpha * op(A) @ op(B) + beta * C + bias)

A rewrite is called as `rewrite(m, **bindings)`: `m.op(name, *operands, **attrs)` builds an op and
`m.owns(value)` tells whether the matched ops are the only readers of `value` (and of what they
compute from it), so absorbing them leaves the old GEMM unread instead of computing it twice.
It returns the value that replaces the matched root, or None to decline.

How a dot_general maps to a GEMM (libs' row-major convention, routines.py): its batch, free
and contracting dimensions are flattened into B, M (or N) and K. An operand whose dimensions lie
in the order (batch, free, contracting) or (batch, contracting, free) is reshaped, which moves no
data; the second order is a transposed operand (trans_a / trans_b). Transposes feeding the
dot_general are looked through (their permutation composes with the dimension numbers); scalar
factors of the operands are not (`peeled`), those of the result go to alpha. An operand in neither
order is transposed into the first one. dot_generals without contracting dimensions (outer products,
products with scalars) and dtypes the library lacks (SUPPORTED) stay as they are.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ...ir.core import Op, Value
from ...ir.opdef import compute_dtype
from ...ir.types import FLOATS, dtype_name, numpy_dtype
from ...passes.patterns import Pat, splat_value
from .routines import ACTIVATIONS, CLAMP, split_epilogue

# operand dtype -> the result dtypes the library computes it to (f16/bf16 accumulate in f32, i8 in i32)
SUPPORTED = {"f64": ("f64",), "f32": ("f32",), "f16": ("f16", "f32"), "bf16": ("bf16", "f32"), "i8": ("i32",),
             "c64": ("c64",)}


def in_dtype(value, dtype: str):
    """A Python number of `dtype`'s kind: alpha and beta are stored as the GEMM's result type holds them."""
    return np.asarray(value).astype(numpy_dtype(dtype)).item()


# ---- dot_general -> GEMM -------------------------------------------------------------------------

def constant_factor(value: Value) -> tuple[Value, object] | None:
    """(x, s) when `value` is x * s or s * x with s a constant (s as a Python number); else None."""
    op = value.producer
    if op is None or op.name != "mul":
        return None
    for operand, factor in [op.operands, op.operands[::-1]]:
        scalar = splat_value(factor)
        if scalar is not None:
            return operand, scalar.item()
    return None


def peeled(value: Value) -> tuple[Value, tuple[int, ...]]:
    """(source, permutation): `value` is transpose(source, permutation), looking through transposes.
    A constant factor of an operand stays an operand's: folded into alpha it would change what
    overflows (JAX's (x * 1e30) @ y is NaN where x * 1e30 is inf and y is 0) and the sign of a zero
    sum (a negative alpha makes JAX's +0 a -0)."""
    permutation = tuple(range(value.type.ndim))
    while (op := value.producer) is not None and op.name == "transpose":
        permutation = tuple(op.attrs["permutation"][p] for p in permutation)
        value = op.operands[0]
    return value, permutation


def lies_in_order(shape, *groups) -> bool:
    """Whether the dimensions of `groups`, one after the other, are the array's dimensions in order
    (1-sized ones anywhere): then a reshape flattens each group without moving data."""
    listed = [d for group in groups for d in group if shape[d] != 1]
    return listed == [d for d, size in enumerate(shape) if size != 1]


def as_matrices(m, source: Value, batch, rows, columns, batched: bool) -> tuple[Value, bool]:
    """(operand, transposed): `source` as matrices [B, R, C] of its (batch, rows, columns) dimensions,
    or [B, C, R] (transposed) if that order needs no data movement; B is left out when not `batched`."""
    shape = source.type.shape
    transposed = not lies_in_order(shape, batch, rows, columns) and lies_in_order(shape, batch, columns, rows)
    if not transposed and not lies_in_order(shape, batch, rows, columns):
        source = m.op("transpose", source, permutation=tuple(batch) + tuple(rows) + tuple(columns))
    size = lambda dims: math.prod(shape[d] for d in dims)
    matrix = (size(columns), size(rows)) if transposed else (size(rows), size(columns))
    new_shape = ((size(batch),) if batched else ()) + matrix
    return (source if source.type.shape == new_shape else m.op("reshape", source, new_sizes=new_shape)), transposed


def free_dimensions(ndim, contracting, batch, permutation):
    """The free dimensions of a dot_general operand, in the result's order, as dimensions of its source."""
    return [permutation[d] for d in range(ndim) if d not in contracting and d not in batch]


def gemm_from_dot(m, lhs, rhs, dot):
    attrs, result = dot.attrs, dot.result.type
    if not attrs["lhs_contracting"] or result.dtype not in SUPPORTED.get(lhs.type.dtype, ()):
        return None
    lhs, lhs_perm = peeled(lhs)
    rhs, rhs_perm = peeled(rhs)
    lhs_batch = [lhs_perm[d] for d in attrs["lhs_batch"]]
    rhs_batch = [rhs_perm[d] for d in attrs["rhs_batch"]]
    lhs_free = free_dimensions(len(lhs_perm), attrs["lhs_contracting"], attrs["lhs_batch"], lhs_perm)
    rhs_free = free_dimensions(len(rhs_perm), attrs["rhs_contracting"], attrs["rhs_batch"], rhs_perm)
    # K flattens the contracting pairs in one order on both sides: the lhs's, unless only the rhs's needs no copy.
    pairs = sorted((lhs_perm[a], rhs_perm[b]) for a, b in zip(attrs["lhs_contracting"], attrs["rhs_contracting"]))
    lhs_k, rhs_k = [a for a, _ in pairs], [b for _, b in pairs]
    lhs_fits = (lies_in_order(lhs.type.shape, lhs_batch, lhs_free, lhs_k)
                or lies_in_order(lhs.type.shape, lhs_batch, lhs_k, lhs_free))
    if not lhs_fits:
        pairs.sort(key=lambda pair: pair[1])
        lhs_k, rhs_k = [a for a, _ in pairs], [b for _, b in pairs]
    batch_size = math.prod(lhs.type.shape[d] for d in lhs_batch)
    batched = bool(lhs_batch) and batch_size != 1
    a, trans_a = as_matrices(m, lhs, lhs_batch, lhs_free, lhs_k, batched)
    b, trans_b = as_matrices(m, rhs, rhs_batch, rhs_k, rhs_free, batched)
    rows, columns = a.type.shape[-1 if trans_a else -2], b.type.shape[-2 if trans_b else -1]
    routine = "strided_batched_gemm" if batched else "gemv" if 1 in (rows, columns) else "gemm"
    call = m.op("library_call", a, b, library="blas", routine=routine, solution="", trans_a=trans_a, trans_b=trans_b,
                alpha=in_dtype(1, result.dtype), beta=in_dtype(0, result.dtype), epilogue="none",
                result_dtype=result.dtype, compute_dtype=dtype_name(compute_dtype(numpy_dtype(result.dtype))),
                clamp_min=None, clamp_max=None)
    return call if call.type == result else m.op("reshape", call, new_sizes=result.shape)


# ---- absorbing the ops that follow a GEMM ------------------------------------------------------------

@dataclass
class Gemm:
    call: Op                            # the library_call
    view: tuple[int, ...] | None        # the shape the graph reads its result in, when reshaped

    @property
    def epilogue(self) -> tuple[bool, str | None]:
        return split_epilogue(self.call.attrs["epilogue"])

    @property
    def is_plain(self) -> bool:
        """Whether only alpha has been applied: C, bias and activation may follow."""
        return self.call.attrs["beta"] == 0 and self.call.attrs["epilogue"] == "none"

    def rebuilt(self, m, operands=None, **changes) -> Value:
        """The GEMM with some attributes changed (and operands, if given), read in the same view."""
        call = m.op("library_call", *(operands or self.call.operands), **{**self.call.attrs, **changes})
        return m.op("reshape", call, new_sizes=self.view) if self.view is not None else call

    def in_call_shape(self, m, value: Value) -> Value:
        """A value of the view's shape, reshaped to the call's result."""
        return m.op("reshape", value, new_sizes=self.call.result.type.shape) if self.view is not None else value


def absorbable(m, value: Value, inputs=()) -> Gemm | None:
    """The GEMM that computes `value`, if the matched ops are its only readers (and the new operands
    `inputs` do not read it)."""
    op, view = value.producer, None
    if op is not None and op.name == "reshape":
        op, view = op.operands[0].producer, value.type.shape
    if op is None or op.name != "library_call" or op.attrs["library"] != "blas" or not m.owns(value, inputs):
        return None
    return Gemm(op, view)


def scaled_result(m, x, y):
    """x * s or s * x, s a constant: alpha *= s."""
    for product, factor in [(x, y), (y, x)]:
        scalar = splat_value(factor)
        if scalar is not None and (gemm := absorbable(m, product)) and gemm.is_plain:
            return gemm.rebuilt(m, alpha=in_dtype(gemm.call.attrs["alpha"] * scalar.item(), factor.type.dtype))
    return None


def negated_result(m, x):
    if (gemm := absorbable(m, x)) and gemm.is_plain:
        return gemm.rebuilt(m, alpha=in_dtype(-gemm.call.attrs["alpha"], x.type.dtype))
    return None


def added_c(m, x, y, sign=1):
    """x + C or C + x (sign 1), x - C or C - x (sign -1), C a tensor or a constant times one: beta = +-1
    or +-s; C - x negates alpha (an SGD update W - lr * X^T G is one GEMM reading W). Bit for bit the
    same sums: the epilogue adds beta * C to alpha * acc, and -(a * acc) is (-a) * acc exactly.
    A broadcast C is left alone: the GEMM would read it materialised, an extra pass over memory."""
    # (the GEMM's value, C, the GEMM's sign, C's sign)
    for product, c, product_sign, c_sign in [(x, y, 1, sign), (y, x, sign, 1)]:
        if c.producer is not None and c.producer.name == "broadcast_in_dim":
            continue
        gemm = absorbable(m, product, inputs=[c])
        if gemm and gemm.is_plain:
            c, scale = constant_factor(c) or (c, 1)
            beta = in_dtype(c_sign * scale, c.type.dtype)
            alpha = in_dtype(product_sign * gemm.call.attrs["alpha"], x.type.dtype)
            return gemm.rebuilt(m, [*gemm.call.operands, gemm.in_call_shape(m, c)], alpha=alpha, beta=beta)
    return None


def added_bias(m, x, bias, row):
    """x + broadcast(bias) along the rows (bias: one value per column): the epilogue adds it."""
    if bias.type.ndim != 1 or row.attrs["broadcast_dimensions"] != (x.type.ndim - 1,):
        return None
    gemm = absorbable(m, x, inputs=[bias])
    if gemm is None or gemm.epilogue != (False, None) or gemm.call.result.type.shape[-1:] != bias.type.shape:
        return None
    return gemm.rebuilt(m, [*gemm.call.operands, bias], epilogue="bias")


def activated(name):
    """The rewrite applying activation `name` to the GEMM bound to x."""
    def rewrite(m, x):
        gemm = absorbable(m, x)
        if gemm is None or gemm.epilogue[1] is not None or x.type.dtype not in ACTIVATIONS[name][1]:
            return None
        return gemm.rebuilt(m, epilogue=name if gemm.epilogue == (False, None) else f"bias_{name}")
    return rewrite


def relu6_of_relu(m, x):
    """min(x, 6) of a GEMM whose activation is relu -> relu6 (nn.relu6 is min(max(x, 0), 6))."""
    gemm = absorbable(m, x)
    if gemm is None or gemm.epilogue[1] != "relu" or x.type.dtype not in ACTIVATIONS["relu6"][1]:
        return None
    return gemm.rebuilt(m, epilogue="bias_relu6" if gemm.epilogue[0] else "relu6")


def clamp_bounds(attrs) -> tuple | None:
    """The bounds (low, high; None: unbounded) a call's epilogue clamps its result to after the bias:
    (None, None) without an activation, relu's (0, None), the clamp's; None for another activation."""
    activation = split_epilogue(attrs["epilogue"])[1]
    if activation is None:
        return None, None
    if activation == "relu":
        return 0.0, None
    return (attrs["clamp_min"], attrs["clamp_max"]) if activation == CLAMP else None


def bounded(side: str, bound: float, low, high) -> tuple:
    """(low, high) after max(., bound) or min(., bound) of min(max(y, low), high): max(min(y, h), c) =
    min(max(y, c), max(h, c)) and min(min(y, h), c) = min(y, min(h, c)), None an infinite bound."""
    if side == "max":
        return (bound if low is None else max(low, bound)), (None if high is None else max(high, bound))
    return low, (bound if high is None else min(high, bound))


def hard_tanh_bounds(high, high_value, low, low_value) -> tuple[float, float] | None:
    """(lo, hi) of where(x > hi, hi, where(x < lo, lo, x)) (nn.hard_tanh's form) = clamp(lo, x, hi), when
    its four operands are the finite constants of such a clamp (lo <= hi); else None."""
    values = [splat_value(v) for v in (high, high_value, low, low_value)]
    if any(v is None or not math.isfinite(v) for v in values) or values[0] != values[1] or values[2] != values[3] \
            or values[2] > values[0]:
        return None
    return float(values[2]), float(values[0])


def clamped(side: str):
    """The rewrite absorbing max(x, c) or min(x, c) of a constant c into the GEMM bound to x (lax.clamp,
    cnp.clip write them) as its clamp epilogue (only floats: the bounds are floats; only finite bounds:
    max and min of a NaN propagate it, which the clamp epilogue does not)."""
    def rewrite(m, x, bound):
        gemm = absorbable(m, x, inputs=[bound])
        value = splat_value(bound)
        if gemm is None or value is None or not math.isfinite(value) or x.type.dtype not in FLOATS \
                or bound.type.dtype != x.type.dtype or clamp_bounds(gemm.call.attrs) is None:
            return None
        low, high = bounded(side, float(value), *clamp_bounds(gemm.call.attrs))
        return gemm.rebuilt(m, epilogue="bias_clamp" if gemm.epilogue[0] else "clamp", clamp_min=low, clamp_max=high)
    return rewrite


def hard_tanh(m, x, high, high_value, low, low_value):
    """nn.hard_tanh's where(x > hi, hi, where(x < lo, lo, x)) of the GEMM bound to x -> the clamp epilogue."""
    bounds = hard_tanh_bounds(high, high_value, low, low_value)
    gemm = absorbable(m, x, inputs=[high, high_value, low, low_value])
    if bounds is None or gemm is None or x.type.dtype not in FLOATS or gemm.epilogue[1] is not None \
            or any(v.type.dtype != x.type.dtype for v in (high, high_value, low, low_value)):
        return None
    return gemm.rebuilt(m, epilogue="bias_clamp" if gemm.epilogue[0] else "clamp", clamp_min=bounds[0],
                        clamp_max=bounds[1])


def transposed_result(m, x, root):
    """transpose(D) swapping its matrix dimensions -> the GEMM of the swapped operands: D^T = op(B)^T op(A)^T.
    Not with C or bias, which the GEMM would have to read transposed."""
    batch = tuple(range(x.type.ndim - 2))
    gemm = absorbable(m, x) if root.attrs["permutation"] == batch + (len(batch) + 1, len(batch)) else None
    if gemm is None or gemm.view or gemm.call.attrs["beta"] != 0 or gemm.epilogue[0]:
        return None
    a, b = gemm.call.operands
    return gemm.rebuilt(m, [b, a], trans_a=not gemm.call.attrs["trans_b"], trans_b=not gemm.call.attrs["trans_a"])


# ---- the activations as the graph writes them ----------------------------------------------------------

def is_constant_near(value: Value, target: float) -> bool:
    """A constant that is `target` to the precision of its dtype, or to 1e-9 (users write sqrt(2/pi) to 10
    digits)."""
    scalar = splat_value(value)
    if scalar is None or value.type.dtype not in FLOATS:
        return False
    tolerance = max(float(ml_dtypes.finfo(value.type.numpy_dtype).eps), 1e-9)
    return abs(float(scalar) - target) <= tolerance * abs(target)


x = Pat.var("x")


def gelu_shapes(one_plus_g):
    """x * (1 + g) / 2, associated as x * half(1 + g), half(x) * (1 + g) and half(x * (1 + g)); half(p) is
    p * 0.5 or p / 2."""
    def halves(p):
        return [Pat.op("mul", p, Pat.splat(0.5)), Pat.op("div", p, Pat.splat(2))]
    return ([Pat.op("mul", x, half) for half in halves(one_plus_g)]
            + [Pat.op("mul", half, one_plus_g) for half in halves(x)]
            + halves(Pat.op("mul", x, one_plus_g)))


c1, c2 = Pat.var("c1"), Pat.var("c2")
# x^3 as cnp writes x**3 (x * (x * x)) or as pow(x, 3.0)
CUBES = [Pat.op("mul", x, Pat.op("mul", x, x)), Pat.op("pow", x, Pat.splat(3))]


def activation_rules(activated) -> list:
    """The activations as the graph writes them, each rule applying `activated(name)` (a rewrite of x):
    gelu (tanh and erf forms), silu = x * logistic(x), relu = max(x, 0), tanh, sigmoid. libs/dnn applies
    the same table to its convolutions."""
    def if_constants(name, **targets):
        rewrite = activated(name)

        def checked(m, x, **constants):
            return rewrite(m, x) if all(is_constant_near(constants[k], t) for k, t in targets.items()) else None
        return checked
    # gelu, tanh form: 1 + tanh(c1 * (x + c2 * x^3)) with c1 = sqrt(2/pi), c2 = 0.044715
    gelu_tanh = [(shape, if_constants("gelu_tanh", c1=math.sqrt(2 / math.pi), c2=0.044715))
                 for cube in CUBES
                 for shape in gelu_shapes(Pat.op("add", Pat.splat(1), Pat.op("tanh", Pat.op(
                     "mul", c1, Pat.op("add", x, Pat.op("mul", c2, cube))))))]
    # gelu, erf form: 1 + erf(x / c1) with c1 = sqrt(2), or 1 + erf(x * c1) with c1 = 1/sqrt(2)
    gelu_erf = [(shape, if_constants("gelu_erf", c1=target))
                for scaling, target in [("div", math.sqrt(2)), ("mul", math.sqrt(0.5))]
                for shape in gelu_shapes(Pat.op("add", Pat.splat(1), Pat.op("erf", Pat.op(scaling, x, c1))))]
    return [*gelu_tanh, *gelu_erf,
            (Pat.op("mul", x, Pat.op("logistic", x)), activated("silu")),
            (Pat.op("max", x, Pat.splat(0)), activated("relu")),
            (Pat.op("tanh", x), activated("tanh")),
            (Pat.op("logistic", x), activated("sigmoid"))]


RULES = [
    # dot_general(a, b) -> library_call blas gemm / gemv / strided_batched_gemm, transposes and scales of a, b absorbed
    (Pat.op("dot_general", Pat.var("lhs"), Pat.var("rhs"), name="dot"), gemm_from_dot),
    # transpose(gemm(a, b)) of the matrix dimensions -> gemm(b, a), transposes flipped
    (Pat.op("transpose", x, name="root"), transposed_result),
    # gelu (tanh and erf forms), silu = x * logistic(x), relu = max(x, 0), tanh, sigmoid -> the epilogue
    *activation_rules(activated),
    # min(gemm with relu, 6) -> relu6 (canonicalize puts the constant second)
    (Pat.op("min", x, Pat.splat(6)), relu6_of_relu),
    # max(gemm, c), min(gemm, c) of a constant (either operand order) -> the clamp epilogue, the bounds composed
    *[(Pat.op(side, *operands), clamped(side)) for side in ("max", "min")
      for operands in [(x, Pat.var("bound")), (Pat.var("bound"), x)]],
    # where(x > hi, hi, where(x < lo, lo, x)) (nn.hard_tanh) -> the clamp epilogue
    (Pat.op("select", Pat.op("gt", x, Pat.var("high")), Pat.var("high_value"),
            Pat.op("select", Pat.op("lt", x, Pat.var("low")), Pat.var("low_value"), x)), hard_tanh),
    # gemm * s -> alpha *= s; -gemm -> alpha = -alpha
    (Pat.op("mul", x, Pat.var("y")), scaled_result),
    (Pat.op("neg", x), negated_result),
    # gemm + broadcast(bias) along rows -> epilogue "bias"
    (Pat.op("add", x, Pat.op("broadcast_in_dim", Pat.var("bias"), name="row")), added_bias),
    # gemm + C, gemm + s * C -> beta = 1 or s; gemm - C -> beta = -1; C - gemm -> alpha = -alpha, beta = 1
    (Pat.op("add", x, Pat.var("y")), added_c),
    (Pat.op("sub", x, Pat.var("y")), lambda m, x, y: added_c(m, x, y, sign=-1)),
]
