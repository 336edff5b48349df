"""The table of differentiation and batching cases: one record per graph op that has rules (most use
one op on purpose; the graph test checks that every op with a rule appears in some case).

Each case is `Case(fn, args)`: `fn` a function of float64 arrays written with cdnajit's namespaces,
`args(rng)` its arguments, drawn inside the op's smooth domain (away from kinks, ties and poles, so
central differences are meaningful). `lane_args(rng)` are the arguments of one lane of a vmap.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

import cdnajit.lax as lax
import cdnajit.numpy as cnp
from cdnajit.frontend.tracing import bind1, constant


class Case(NamedTuple):
    fn: Callable
    args: Callable   # rng -> tuple of arrays


def uniform(low, high, *shape):
    return lambda rng: rng.uniform(low, high, shape)


def args_of(*makers):
    return lambda rng: tuple(make(rng) for make in makers)


def distinct(*shape):
    """Values far from each other (no ties for max/min/sort): a shuffled spaced ramp plus noise."""
    def make(rng):
        n = int(np.prod(shape))
        return (rng.permutation(n) * 0.37 + rng.uniform(-0.05, 0.05, n)).reshape(shape)
    return make


ANY = uniform(-1.5, 1.5, 3, 4)
POSITIVE = uniform(0.5, 2.0, 3, 4)
UNIT = uniform(-0.8, 0.8, 3, 4)
ABOVE_ONE = uniform(1.2, 3.0, 3, 4)

UNARY = {
    "neg": (lax.neg, ANY), "exp": (lax.exp, ANY), "exp2": (lax.exp2, ANY), "log": (lax.log, POSITIVE),
    "log2": (cnp.log2, POSITIVE), "log10": (cnp.log10, POSITIVE), "log1p": (lax.log1p, POSITIVE),
    "expm1": (lax.expm1, ANY), "sqrt": (lax.sqrt, POSITIVE), "rsqrt": (lax.rsqrt, POSITIVE),
    "cbrt": (lax.cbrt, POSITIVE), "tanh": (lax.tanh, ANY), "sinh": (lax.sinh, ANY), "cosh": (lax.cosh, ANY),
    "sin": (lax.sin, ANY), "cos": (lax.cos, ANY), "tan": (lax.tan, UNIT), "asin": (lax.asin, UNIT),
    "acos": (lax.acos, UNIT), "atan": (lax.atan, ANY), "asinh": (lax.asinh, ANY), "acosh": (lax.acosh, ABOVE_ONE),
    "atanh": (lax.atanh, UNIT), "logistic": (lax.logistic, ANY), "erf": (lax.erf, ANY),
    "abs": (lambda x: lax.abs(x * np.array([1.0, -1.0, 1.0, -1.0])), uniform(0.2, 1.0, 3, 4)),
    "lgamma": (lax.lgamma, POSITIVE), "digamma": (lax.digamma, POSITIVE), "erfc": (lax.erfc, ANY),
    "erf_inv": (lax.erf_inv, UNIT), "bessel_i0e": (lax.bessel_i0e, uniform(0.2, 1.5, 3, 4)),
    "bessel_i1e": (lax.bessel_i1e, uniform(0.2, 1.5, 3, 4)),
}

CASES: dict[str, Case] = {name: Case(fn, args_of(make)) for name, (fn, make) in UNARY.items()}
CASES.update({
    "add": Case(lax.add, args_of(ANY, ANY)),
    "sub": Case(lax.sub, args_of(ANY, ANY)),
    "mul": Case(lax.mul, args_of(ANY, ANY)),
    "div": Case(lax.div, args_of(ANY, POSITIVE)),
    "pow": Case(lax.pow, args_of(POSITIVE, ANY)),
    "max": Case(lax.max, args_of(distinct(3, 4), distinct(3, 4))),
    "min": Case(lax.min, args_of(distinct(3, 4), distinct(3, 4))),
    "atan2": Case(lax.atan2, args_of(ANY, POSITIVE)),
    "rem": Case(lax.rem, args_of(uniform(2.1, 2.6, 3, 4), uniform(0.9, 1.0, 3, 4))),
    "select": Case(lambda x, y: lax.select(x > 0.1, x * 2, y), args_of(ANY, ANY)),
    # lax.clamp traces to max and min; the passes make clamp ops, which the rules also meet.
    "clamp": Case(lambda x, y: bind1("clamp", [constant(-0.5, "f64"), x, constant(0.5, "f64")]) * y,
                  args_of(uniform(-1, 1, 3, 4), ANY)),
    # Through f32 the finite difference would see f32 rounding: the integer path has zero derivative.
    "convert": Case(lambda x: x * lax.convert_element_type(lax.convert_element_type(x * 3, np.int32), np.float64),
                    args_of(uniform(0.1, 0.3, 3, 4))),
    "broadcast_in_dim": Case(lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)) * cnp.arange(24.).reshape(2, 3, 4),
                             args_of(uniform(-1, 1, 3, 1))),
    "reshape": Case(lambda x: cnp.sin(x.reshape(4, 3)), args_of(ANY)),
    "transpose": Case(lambda x: cnp.sin(x.T) * cnp.arange(12.).reshape(4, 3), args_of(ANY)),
    "slice": Case(lambda x: x[1:, ::2] ** 2, args_of(ANY)),
    "dynamic_slice": Case(lambda x: lax.dynamic_slice(x, (1, 1), (2, 2)) ** 2, args_of(ANY)),
    "dynamic_update_slice": Case(lambda x, u: lax.dynamic_update_slice(x, u * u, (1, 2)) * 3,
                                 args_of(ANY, uniform(-1, 1, 2, 2))),
    "concatenate": Case(lambda x, y: cnp.concatenate([x, y ** 2], axis=1), args_of(ANY, uniform(-1, 1, 3, 2))),
    "pad": Case(lambda x, v: lax.pad(x, v, [(1, -1, 1), (0, 2, 0)]) ** 2, args_of(ANY, uniform(-1, 1))),
    "rev": Case(lambda x: lax.rev(x, (0,)) * cnp.arange(12.).reshape(3, 4), args_of(ANY)),
    "gather": Case(lambda x: x[np.array([2, 0, 2])] ** 2, args_of(ANY)),
    "scatter": Case(lambda x, u: x.at[np.array([0, 2, 0])].add(u ** 2), args_of(ANY, uniform(-1, 1, 3, 4))),
    # set: the last of the repeated row 0 stays, row 5 is out of bounds (dropped)
    "scatter_set": Case(lambda x, u: x.at[np.array([0, 2, 0, 5])].set(u ** 2) * x,
                        args_of(ANY, uniform(-1, 1, 4, 4))),
    # mul: row 0 gets two updates; of those, one zero at column 1 (its derivative is the other update's
    # value) and two at column 3 (all derivatives 0 there); row 5 is out of bounds (dropped)
    "scatter_mul": Case(lambda x, u: x.at[np.array([0, 2, 0, 5])].multiply(u) * x,
                        args_of(ANY, lambda rng: rng.uniform(-1.5, 1.5, (4, 4)) * np.array(
                            [[1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 1, 0], [1, 1, 1, 1.0]]))),
    # min/max: x's first 3 rows, the updates its last 4 (distinct values: no ties), row 5 dropped
    "scatter_max": Case(lambda xu: xu[:3].at[np.array([0, 2, 0, 5])].max(xu[3:]), args_of(distinct(7, 4))),
    "scatter_min": Case(lambda xu: xu[:3].at[np.array([1, 1, 9, 0])].min(xu[3:] ** 2), args_of(distinct(7, 4))),
    "reduce_sum": Case(lambda x: cnp.sum(x ** 2, axis=1), args_of(ANY)),
    "reduce_max": Case(lambda x: cnp.max(x, axis=0), args_of(distinct(3, 4))),
    "reduce_min": Case(lambda x: cnp.min(x, axis=1), args_of(distinct(3, 4))),
    "reduce_prod": Case(lambda x: cnp.prod(x, axis=(0, 2)), args_of(uniform(0.5, 1.5, 3, 2, 4))),
    "reduce_prod_zero": Case(lambda x: cnp.prod(x * np.array([1.0, 0.0, 1.0, 1.0]), axis=1), args_of(ANY)),
    "cumulative": Case(lambda x: cnp.cumsum(x ** 2, axis=1), args_of(ANY)),
    "cummax_cummin": Case(lambda x: (lax.cummax(x, axis=1), lax.cummin(x ** 3, axis=0, reverse=True),
                                     lax.cummax(x, axis=0, reverse=True)), args_of(distinct(3, 4))),
    # Exact zeros in the operand: the derivative holds there too (no division in the rules).
    "cumprod": Case(lambda x: (lax.cumprod(x, axis=1), lax.cumprod(x, axis=0, reverse=True), cnp.cumprod(x[:, :1])),
                    args_of(lambda rng: rng.uniform(-1.5, 1.5, (3, 4)) * np.array([1.0, 0.0, 1.0, 1.0]))),
    "dot_general": Case(lambda a, b: a @ b, args_of(ANY, uniform(-1, 1, 4, 2))),
    "dot_general_batched": Case(lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                                args_of(uniform(-1, 1, 2, 3, 4), uniform(-1, 1, 2, 4, 5))),
    "zeta": Case(lambda q: lax.zeta(cnp.full_like(q, 3.0), q), args_of(POSITIVE)),
    "complex": Case(lambda x, y: lax.real(lax.complex(x, y) * lax.complex(y, x))
                    + lax.imag(lax.conj(lax.complex(x, y) ** 2)), args_of(ANY, ANY)),
    "abs_complex": Case(lambda x, y: lax.abs(lax.complex(x, y)), args_of(POSITIVE, ANY)),
    "sort": Case(lambda x: cnp.sort(x, axis=1) * cnp.arange(4.), args_of(distinct(3, 4))),
    "conv_general_dilated": Case(
        lambda x, w: lax.conv_general_dilated(x, w, (2, 1), [(1, 0), (1, 2)], rhs_dilation=(1, 2),
                                              dimension_numbers=("NHWC", "HWIO", "NHWC")),
        args_of(uniform(-1, 1, 2, 5, 6, 3), uniform(-1, 1, 3, 2, 3, 4))),
    "conv_grouped": Case(
        lambda x, w: lax.conv_general_dilated(x, w, (2, 1), [(1, 1), (0, 2)], feature_group_count=2),
        args_of(uniform(-1, 1, 2, 4, 5, 6), uniform(-1, 1, 6, 2, 3, 2))),
    "conv_grouped_nhwc": Case(
        lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", rhs_dilation=(2, 1), feature_group_count=3,
                                              dimension_numbers=("NHWC", "HWIO", "NHWC")),
        args_of(uniform(-1, 1, 2, 5, 4, 6), uniform(-1, 1, 2, 3, 2, 3))),
    "conv_batch_grouped": Case(
        lambda x, w: lax.conv_general_dilated(x, w, (1, 2), [(1, 0), (0, 1)], rhs_dilation=(2, 1), batch_group_count=2),
        args_of(uniform(-1, 1, 4, 3, 5, 6), uniform(-1, 1, 4, 3, 2, 3))),
    "conv_batch_grouped_nhwc": Case(
        lambda x, w: lax.conv_general_dilated(x, w, (2, 1), "SAME", batch_group_count=3,
                                              dimension_numbers=("NHWC", "HWIO", "NHWC")),
        args_of(uniform(-1, 1, 6, 4, 5, 2), uniform(-1, 1, 3, 2, 2, 6))),
    "conv_lhs_dilated": Case(
        lambda x, w: lax.conv_general_dilated(x, w, (1, 1), [(0, 1), (2, 1)], lhs_dilation=(2, 1)),
        args_of(uniform(-1, 1, 2, 3, 4, 5), uniform(-1, 1, 2, 3, 2, 3))),
    "reduce_window_sum": Case(lambda x: lax.reduce_window(x ** 2, 0.0, lax.add, (2, 2), (1, 2), [(1, 0), (0, 1)]),
                              args_of(ANY)),
    "reduce_window_max": Case(lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 3), (1, 1), [(0, 1), (1, 1)]),
                              args_of(distinct(3, 4))),
    # Windows tiling the operand (pooling): the cotangent parts interleaved; ties (relu's zeros) go to
    # the first element of the window.
    "max_pool": Case(lambda x: lax.reduce_window(cnp.maximum(x, 0.0), -np.inf, lax.max, (2, 2), (2, 2), "VALID"),
                     args_of(distinct(5, 4))),
    "fft": Case(lambda x, y: lax.real(cnp.fft.fft(lax.complex(x, y)) * (1 + 2j))
                + lax.imag(cnp.fft.ifft(lax.complex(y, x))), args_of(ANY, ANY)),
    "rfft_irfft": Case(lambda x: (lax.real(cnp.fft.rfft(x) * (2 - 1j)), cnp.fft.irfft(lax.complex(x, x * x)[:, :3], n=5),
                                  cnp.fft.irfft(lax.complex(x * x, x)[:, :3], n=4)),
                       args_of(uniform(-1, 1, 3, 5))),
    "cond": Case(lambda x: lax.cond(x.sum() > 0, lambda v: cnp.sin(v) * x, lambda v: v ** 3, x), args_of(ANY)),
    "fori_loop": Case(lambda x: lax.fori_loop(0, 3, lambda i, c: cnp.sin(c) * x + i, x), args_of(ANY)),
    "scan": Case(lambda x: lax.scan(lambda c, r: (c * r + 1.0, cnp.tanh(c)), cnp.ones(4), x), args_of(ANY)),
    "optimization_barrier": Case(lambda x, y: cnp.sin(lax.optimization_barrier((x, y * y))[1]) * x,
                                 args_of(ANY, ANY)),
})

# Forward mode only (reverse mode of a while_loop is not defined, as in JAX).
FORWARD_ONLY = {
    "while_loop": Case(lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, cnp.sin(c[1]) * x), (0, x))[1],
                       args_of(ANY)),
}

# Ops whose rules say their derivative is zero or that have no float results: covered by the graph
# test's list, not by finite differences.
ZERO_DERIVATIVE_OPS = {"bitcast_convert", "sign", "floor", "ceil", "round", "trunc", "is_finite", "not", "and", "or", "xor",
                       "shift_left", "shift_right_logical", "shift_right_arithmetic", "eq", "ne", "lt", "le", "gt",
                       "ge", "argmax", "argmin",
                       "host_callback"}   # a token; tests/transforms/test_debug_callbacks.py tests its rules
# Ops whose JVP rule raises, as JAX's: tests/transforms/test_pure_callback.py tests them.
UNDIFFERENTIABLE_OPS = {"pure_callback", "io_callback"}
# Ops with rules that traced programs do not contain: the passes make them (copy, fma).
PASS_MADE_OPS = {"copy", "fma"}


def known_answer_draws(name: str, case: Case):
    """(arguments, a tangent per argument, cotangent(n): n values for the flattened output) of the case
    `name`: what tests/transforms/test_jax_op_rules.py and its generator evaluate, drawn alike."""
    rng = np.random.default_rng(sum(map(ord, name)) + 7)
    args = case.args(rng)
    direction = tuple(rng.normal(size=np.shape(a)) for a in args)
    return args, direction, lambda n: rng.normal(size=n)
