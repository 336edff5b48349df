"""Random programs of cdnajit.numpy and lax calls, compiled and interpreted, compared (hypothesis).

Hypothesis draws a program: one to three input arrays of one dtype and broadcast-compatible random
shapes (0- and 1-sized dimensions, sizes past 64), then a few steps, each making a new value from
earlier ones: elementwise chains with broadcasting and Python scalars, where, reductions over
random axes, reshapes, transposes, slices, concatenate, pad, matmul, cumsum, sort, argmax,
indexing and `.at[]` updates, fori_loop and cond, dtype conversions, transcendental functions.
The program runs under `cj.jit` (compiled) and `cj.jit(backend="interpret")`; the results must
agree, within these bounds (the `assert_close` fixture, tests/conftest.py):

- exact: every op but the ones below computes the same IEEE operations in the same order on both
  backends (f16/bf16 ops in f32, rounded once per op), so values are compared bit for bit;
- sums, products, means, matmul and `.at[].add` may run in another order. The generator allows
  them on floats only while the operand holds small multiples of 2^-g whose sums and products,
  counted in units of their grain, stay below 2^(significand bits): then every order gives the
  exact result. Each value carries its bound and grain (inputs: multiples of 1/4 up to 4); a
  division, a square root or a bound past the limit makes it an arbitrary float;
- transcendental functions are within 4 ulp (f32, f64) or 1 ulp (f16, bf16) of the interpreter's
  (tests/differential/test_ops_compiled.py says why). Their results only go through steps that
  keep that bound on each element (data movement, neg, abs, max/min, sort) to the output.

Runs are derandomized (the same programs every run) with no example database, and the example
count is fixed; `--hypothesis-seed` does not change them.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, replace

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax

FLOATS = ("f16", "bf16", "f32", "f64")
DTYPES = FLOATS + ("i8", "i32", "i64", "u8", "u32", "bool")
NUMPY = {name: np.dtype(ml_dtypes.bfloat16) if name == "bf16" else np.dtype(
    {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i32": "int32", "i64": "int64",
     "u8": "uint8", "u32": "uint32", "bool": "bool"}[name]) for name in DTYPES}
SIZES = (3, 5, 1, 2, 7, 65, 0)   # sampled_from draws evenly; it shrinks toward the first
DIGITS = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}   # significand bits: integers up to 2^digits are exact
MAX_ELEMENTS = 400
GRAIN = 2   # float inputs are multiples of 2^-GRAIN


@dataclass(frozen=True)
class Info:
    """What the generator knows of a value: its shape and dtype, a bound on its magnitude while it
    holds small multiples of 2^-grain (None: an arbitrary value), and whether it carries a
    transcendental's error."""
    shape: tuple
    dtype: str
    bound: float | None = 4.0
    approx: bool = False
    grain: int = 0

    @property
    def is_float(self):
        return self.dtype in FLOATS

    def exact_sums(self, magnitude: float, grain: int | None = None) -> bool:
        """Whether results of at most `magnitude`, multiples of 2^-grain (default: this value's), are
        exact in any order of operations: their significands then need at most DIGITS bits."""
        if not self.is_float:
            return self.dtype != "bool"  # integers wrap, and wrapping arithmetic is associative
        grain = self.grain if grain is None else grain
        return not self.approx and self.bound is not None and magnitude * 2.0 ** grain <= 2.0 ** DIGITS[self.dtype]


def scaled(info: Info, factor: float | None) -> Info:
    """The info of a value of `info`'s kind whose magnitude bound is multiplied by `factor`."""
    bound = None if info.bound is None or factor is None else info.bound * factor
    return replace(info, bound=bound)


def power(base: float, exponent: int) -> float:
    """base ** exponent, saturating at 1e300 instead of overflowing."""
    return math.exp(min(exponent * math.log(max(base, 1.0)), 690.0))


def broadcast(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


# ---- steps: each draws its parameters and returns (function of the values, info of the result) ----
# A step function gets the list of values computed so far (tracers while tracing) and returns one.

def unary_step(draw, values):
    i = draw(st.integers(0, len(values) - 1))
    info = values[i]
    if info.dtype == "bool":
        return (lambda v: ~v[i]), info
    names = ["neg", "abs", "square"] + (["floor", "round", "sqrt_abs"] if info.is_float else ["invert"])
    if info.approx:
        names = ["neg", "abs"]
    name = draw(st.sampled_from(names))
    fns = {"neg": lambda v: -v[i], "abs": lambda v: cnp.abs(v[i]), "square": lambda v: v[i] * v[i],
           "floor": lambda v: cnp.floor(v[i]), "round": lambda v: cnp.round(v[i]),
           "sqrt_abs": lambda v: cnp.sqrt(cnp.abs(v[i])), "invert": lambda v: ~v[i]}
    factor = {"square": info.bound, "sqrt_abs": None, "invert": 1}.get(name, 1.0)
    grain = {"square": 2 * info.grain, "floor": 0, "round": 0}.get(name, info.grain)
    return fns[name], replace(scaled(info, factor if info.bound is not None else None), grain=grain)


def binary_step(draw, values):
    i = draw(st.integers(0, len(values) - 1))
    a = values[i]
    partners = [j for j, b in enumerate(values) if b.dtype == a.dtype and broadcast(a.shape, b.shape) is not None
                and not (a.approx or b.approx)]
    use_scalar = not partners or draw(st.booleans())
    if a.dtype == "bool":
        ops = {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "ne": lambda x, y: x != y}
        name = draw(st.sampled_from(sorted(ops)))
        if use_scalar:
            return (lambda v: ops[name](v[i], True)), a
        j = draw(st.sampled_from(partners))
        return (lambda v: ops[name](v[i], v[j])), Info(broadcast(a.shape, values[j].shape), "bool")
    if a.approx:  # a transcendental's result: only max/min with a constant keep its ulp bound
        c = draw(st.sampled_from([-0.5, 0.0, 0.5]))
        return (lambda v: cnp.maximum(v[i], c)), a
    ops = {"add": (lambda x, y: x + y, "add"), "sub": (lambda x, y: x - y, "add"),
           "mul": (lambda x, y: x * y, "mul"), "max": (cnp.maximum, "max"), "min": (cnp.minimum, "max"),
           "where": (lambda x, y: cnp.where(x > y, x, y), "max"),
           "div": ((lambda x, y: x / y) if a.is_float else (lambda x, y: x // y), "div")}
    name = draw(st.sampled_from(sorted(ops)))
    fn, rule = ops[name]
    if use_scalar:
        scalar = draw(st.sampled_from([0, 1, 2, 3, -1, -2] if a.dtype not in ("u8", "u32") else [0, 1, 2, 3]))
        if a.is_float and draw(st.booleans()):
            scalar = float(scalar) + 0.5
        b = Info((), a.dtype, abs(scalar) + 0.5, grain=1) if isinstance(scalar, float) else \
            Info((), a.dtype, float(abs(scalar)))
        operand = lambda v: scalar
    else:
        j = draw(st.sampled_from(partners))
        b, operand = values[j], (lambda v: v[j])
    bound = None
    if a.bound is not None and b.bound is not None:
        bound = {"add": a.bound + b.bound, "mul": a.bound * b.bound, "max": max(a.bound, b.bound),
                 "div": None if a.is_float else a.bound}[rule]
    shape = broadcast(a.shape, b.shape)
    grain = a.grain + b.grain if rule == "mul" else max(a.grain, b.grain)
    return (lambda v: fn(v[i], operand(v))), Info(shape, a.dtype, bound, grain=grain)


def reduce_step(draw, values):
    i = draw(st.integers(0, len(values) - 1))
    info = values[i]
    rank = len(info.shape)
    axes = draw(st.one_of(st.none(), st.integers(-rank, rank - 1) if rank else st.none(),
                          st.sets(st.integers(0, rank - 1), max_size=rank).map(tuple) if rank else st.none()))
    reduced = range(rank) if axes is None else [axes % rank] if isinstance(axes, int) else axes
    terms = math.prod(info.shape[a] for a in reduced)
    keepdims = draw(st.booleans())
    shape = tuple(1 if a in reduced else d for a, d in enumerate(info.shape) if keepdims or a not in reduced)
    if info.dtype == "bool":
        name = draw(st.sampled_from(["any", "all"]))
        fn = cnp.any if name == "any" else cnp.all
        return (lambda v: fn(v[i], axis=axes, keepdims=keepdims)), Info(shape, "bool")
    names = ["max", "min"] if terms else []
    if info.exact_sums(terms * (info.bound or 1)):
        names += ["sum", "mean"]
    if info.exact_sums(power(info.bound or 1, terms), info.grain * terms):
        names += ["prod"]
    if not names:
        return unary_step(draw, values)
    name = draw(st.sampled_from(names))
    fn = {"max": cnp.max, "min": cnp.min, "sum": cnp.sum, "mean": cnp.mean, "prod": cnp.prod}[name]
    dtype = info.dtype
    if name in ("sum", "prod") and dtype in ("i8", "i32", "u8", "u32"):
        dtype = "i64" if dtype[0] == "i" else "u64"  # numpy's default accumulator for small integers
    if name == "mean":
        dtype = dtype if info.is_float else "f64"
    bound = {"max": info.bound, "min": info.bound, "sum": (info.bound or 0) * terms, "mean": None,
             "prod": power(info.bound or 1, terms)}[name] if info.bound is not None else None
    grain = info.grain * terms if name == "prod" else info.grain
    out = Info(shape, dtype if dtype in NUMPY else info.dtype, bound, info.approx, grain)
    return (lambda v: fn(v[i], axis=axes, keepdims=keepdims)), out


def movement_step(draw, values):
    i = draw(st.integers(0, len(values) - 1))
    info = values[i]
    shape, rank = info.shape, len(info.shape)
    name = draw(st.sampled_from(["reshape", "transpose", "slice", "flip", "concatenate", "pad", "broadcast"]
                                if rank else ["reshape", "broadcast"]))
    if name == "reshape":
        size = math.prod(shape)
        first = draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0] or [0]))
        new = (first, -1) if first else (0, 3)
        return (lambda v: cnp.reshape(v[i], new)), replace(info, shape=(first, size // first if first else 3))
    if name == "transpose":
        perm = tuple(draw(st.permutations(range(rank))))
        return (lambda v: cnp.transpose(v[i], perm)), replace(info, shape=tuple(shape[p] for p in perm))
    if name == "slice":
        axis = draw(st.integers(0, rank - 1))
        start, stop = sorted(draw(st.lists(st.integers(-shape[axis] - 1, shape[axis] + 1), min_size=2, max_size=2)))
        step = draw(st.sampled_from([1, 2, 3, -1, -2]))
        index = (slice(None),) * axis + (slice(start, stop, step),)
        return (lambda v: v[i][index]), replace(info, shape=np.empty(shape, np.int8)[index].shape)
    if name == "flip":
        axis = draw(st.integers(0, rank - 1))
        return (lambda v: cnp.flip(v[i], axis)), info
    if name == "concatenate":
        axis = draw(st.integers(0, rank - 1))
        others = [j for j, o in enumerate(values) if o.dtype == info.dtype and len(o.shape) == rank and
                  all(a == b for k, (a, b) in enumerate(zip(o.shape, shape)) if k != axis)]
        j = draw(st.sampled_from(others))
        merged = tuple(d + values[j].shape[axis] if k == axis else d for k, d in enumerate(shape))
        bound = None if info.bound is None or values[j].bound is None else max(info.bound, values[j].bound)
        return (lambda v: cnp.concatenate([v[i], v[j]], axis)), Info(merged, info.dtype, bound,
                                                                      info.approx or values[j].approx,
                                                                      max(info.grain, values[j].grain))
    if name == "pad":
        widths = [tuple(draw(st.integers(0, 2)) for _ in range(2)) for _ in range(rank)]
        padded = tuple(d + lo + hi for d, (lo, hi) in zip(shape, widths))
        return (lambda v: cnp.pad(v[i], widths)), replace(info, shape=padded)
    target = (draw(st.sampled_from([1, 2, 3])),) + shape
    return (lambda v: cnp.broadcast_to(v[i], target)), replace(info, shape=target)


def matmul_step(draw, values):
    candidates = [i for i, o in enumerate(values) if len(o.shape) in (1, 2) and o.dtype != "bool" and not o.approx]
    if not candidates:
        return movement_step(draw, values)
    i = draw(st.sampled_from(candidates))
    info = values[i]
    k = info.shape[-1]
    if not info.exact_sums(k * (info.bound or 1) ** 2 + 1, 2 * info.grain):
        return movement_step(draw, values)
    bound = None if info.bound is None else k * info.bound ** 2
    if len(info.shape) == 1:
        return (lambda v: cnp.matmul(v[i], v[i])), Info((), info.dtype, bound, grain=2 * info.grain)
    return (lambda v: v[i] @ v[i].T), Info((info.shape[0], info.shape[0]), info.dtype, bound, grain=2 * info.grain)


def scan_sort_step(draw, values):
    candidates = [i for i, o in enumerate(values) if o.shape and o.dtype != "bool"]
    if not candidates:
        return unary_step(draw, values)
    i = draw(st.sampled_from(candidates))
    info = values[i]
    axis = draw(st.integers(0, len(info.shape) - 1))
    names = ["sort"]
    if not info.approx:
        names += ["argsort"] + (["argmax", "argmin"] if info.shape[axis] else [])
        if info.exact_sums(info.shape[axis] * (info.bound or 1)):
            names.append("cumsum")
    name = draw(st.sampled_from(names))
    if name == "sort":
        return (lambda v: cnp.sort(v[i], axis=axis)), info
    if name == "cumsum":
        dtype = {"i8": "i64", "i32": "i64", "u8": "u64", "u32": "u64"}.get(info.dtype, info.dtype)
        return (lambda v: cnp.cumsum(v[i], axis=axis)), Info(info.shape, dtype if dtype in NUMPY else "i64",
                                                              None if info.bound is None else
                                                              info.bound * info.shape[axis], grain=info.grain)
    fn = {"argsort": cnp.argsort, "argmax": cnp.argmax, "argmin": cnp.argmin}[name]
    shape = info.shape if name == "argsort" else info.shape[:axis] + info.shape[axis + 1:]
    return (lambda v: fn(v[i], axis=axis)), Info(shape, "i64", float(max(info.shape[axis], 1)))


def indexing_step(draw, values):
    candidates = [i for i, o in enumerate(values) if o.shape and o.shape[0] and not o.approx]
    if not candidates:
        return unary_step(draw, values)
    i = draw(st.sampled_from(candidates))
    info = values[i]
    n = info.shape[0]
    index = np.array(draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=5)))
    name = draw(st.sampled_from(["take", "set", "add", "max"]))
    if name == "take":
        return (lambda v: v[i][index]), replace(info, shape=index.shape + info.shape[1:])
    update = True if info.dtype == "bool" else 1
    if name == "add" and info.dtype != "bool":
        if not info.exact_sums(index.size * (info.bound or 1) + index.size):
            name = "set"
        bound = None if info.bound is None else info.bound + index.size
        return (lambda v: v[i].at[index].add(update)), replace(info, bound=bound)
    fn = {"set": lambda x: x.at[index].set(update), "max": lambda x: x.at[index].max(update),
          "add": lambda x: x.at[index].set(update)}[name]
    bound = None if info.bound is None else max(info.bound, 1.0)
    return (lambda v: fn(v[i])), replace(info, bound=bound)


def control_step(draw, values):
    candidates = [i for i, o in enumerate(values) if o.dtype != "bool" and not o.approx]
    if not candidates:
        return unary_step(draw, values)
    i = draw(st.sampled_from(candidates))
    info = values[i]
    if draw(st.booleans()):
        trips = draw(st.integers(0, 3))
        body = lambda k, c: c + c - (k % 2).astype(c.dtype)
        bound = None if info.bound is None else info.bound * 2 ** trips + 2 ** trips
        return (lambda v: lax.fori_loop(0, trips, body, v[i])), replace(info, bound=bound)
    threshold = draw(st.sampled_from([0, 1, 3]))
    pred = lambda x: cnp.any(x > threshold)
    return (lambda v: lax.cond(pred(v[i]), lambda x: x + x, lambda x: -x, v[i])), scaled(info, 2.0)


def convert_step(draw, values):
    i = draw(st.integers(0, len(values) - 1))
    info = values[i]
    if info.approx:  # a rounding difference could cross an integer, or widen into many ulp
        return unary_step(draw, values)
    target = draw(st.sampled_from([d for d in DTYPES if d != info.dtype]))
    if target == "bool":
        bound = 1.0
    elif target not in FLOATS:
        bound = float(np.iinfo(NUMPY[target]).max)
    else:  # small integers stay exact in a float type whose significand holds them
        source = info.bound if info.is_float else min(info.bound or 2.0 ** 64, float(np.iinfo(NUMPY[info.dtype]).max)
                                                       if info.dtype != "bool" else 1.0)
        fits = source is not None and source * 2.0 ** info.grain <= 2.0 ** DIGITS[target]
        return (lambda v: v[i].astype(NUMPY[target])), Info(info.shape, target, source if fits else None,
                                                             grain=info.grain)
    return (lambda v: v[i].astype(NUMPY[target])), Info(info.shape, target, bound)


TRANSCENDENTAL = {"exp": cnp.exp, "tanh": cnp.tanh, "sin": cnp.sin, "log1p_abs": lambda x: cnp.log1p(cnp.abs(x)),
                  "logistic": lax.logistic, "erf": lax.erf, "expm1": cnp.expm1}


def transcendental_step(draw, values):
    candidates = [i for i, o in enumerate(values) if o.is_float and not o.approx]
    if not candidates:
        return unary_step(draw, values)
    i = draw(st.sampled_from(candidates))
    names = sorted(TRANSCENDENTAL)
    if values[i].bound is None or values[i].bound > 1e4:  # sin is accurate for |x| up to ~1e5 (mathlib.py)
        names.remove("sin")
    name = draw(st.sampled_from(names))
    return (lambda v: TRANSCENDENTAL[name](v[i])), Info(values[i].shape, values[i].dtype, None, True)


STEPS = [unary_step, binary_step, binary_step, reduce_step, movement_step, movement_step, matmul_step,
         scan_sort_step, indexing_step, control_step, convert_step, transcendental_step]


# ---- programs ---------------------------------------------------------------------------------

def shapes(draw):
    """One to three broadcast-compatible shapes of at most MAX_ELEMENTS elements."""
    while True:
        full = tuple(draw(st.sampled_from(SIZES)) for _ in range(draw(st.sampled_from((2, 1, 3, 0)))))
        if math.prod(full) <= MAX_ELEMENTS:
            break
    result = [full]
    for _ in range(draw(st.integers(0, 2))):
        cut = draw(st.integers(0, len(full)))
        result.append(tuple(1 if draw(st.booleans()) else d for d in full[cut:]))
    return result


def input_array(draw, dtype, shape, specials):
    """Small numbers: integers |x| <= 4, and for floats multiples of 1/4 (GRAIN) with sometimes NaN,
    infinities and -0.0."""
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    low = 0 if dtype in ("u8", "u32") else -4
    values = rng.integers(low, 5, shape).astype(np.float64)
    if dtype == "bool":
        return values > 0
    if dtype in FLOATS:
        values = np.asarray(rng.integers(low * 2 ** GRAIN, 4 * 2 ** GRAIN + 1, shape) / 2 ** GRAIN)
    if specials and dtype in FLOATS:
        chosen = rng.random(shape) < 0.1
        values[chosen] = rng.choice([np.nan, np.inf, -np.inf, -0.0], int(chosen.sum()))
    return values.astype(NUMPY[dtype])


class Step:
    """A step's function, printed as its source line and the values it captured (for failure reports)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, values):
        return self.fn(values)

    def __repr__(self):
        captured = {name: cell.cell_contents for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__)
                    if not callable(cell.cell_contents)}
        return f"{inspect.getsource(self.fn).strip()}  # {captured}"


@st.composite
def programs(draw):
    dtype = draw(st.sampled_from(DTYPES))
    specials = draw(st.booleans())
    args = [input_array(draw, dtype, s, specials) for s in shapes(draw)]
    infos = [Info(a.shape, dtype, 1.0 if dtype == "bool" else 4.0, grain=GRAIN if dtype in FLOATS else 0)
             for a in args]
    steps = []
    for _ in range(draw(st.sampled_from((3, 2, 4, 5, 6, 1)))):
        step = draw(st.sampled_from(STEPS))
        fn, info = step(draw, infos)
        steps.append(Step(fn))
        infos.append(info)
    extra = draw(st.integers(len(args), len(infos) - 1))  # a second output: an earlier step or an input
    outputs = (len(infos) - 1, extra)
    return args, steps, [infos[k] for k in outputs], outputs


def as_function(steps, outputs):
    def program(*args):
        values = list(args)
        for fn in steps:
            values.append(fn(values))
        return tuple(values[k] for k in outputs)
    return program


@settings(max_examples=250, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(programs())
def test_random_programs_compiled_match_the_interpreter(assert_close, program):
    args, steps, infos, outputs = program
    fn = as_function(steps, outputs)
    expected = cj.jit(fn, backend="interpret")(*args)
    actual = cj.jit(fn)(*args)
    for k, (a, e, info) in enumerate(zip(actual, expected, infos)):
        ulps = (1 if info.dtype in ("f16", "bf16") else 4) if info.approx else 0
        assert_close(np.asarray(a), np.asarray(e), ulps=ulps, what=f"output {k}")
