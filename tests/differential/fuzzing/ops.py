"""The op families a random program draws from. Each entry draws its operands and parameters from
the values made so far (`Gen`), writes its call as Python source, and evaluates its oracle.

A node is (op name, operand indices, parameters); the values of a program are its nodes' results,
in order, inputs being nodes too. Control-flow nodes hold a `Block`, a body drawn the same way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import elementwise as ew
from . import structural as st
from .jaxtypes import ALL, kind, np_dtype, promote, real_of, to_inexact
from .values import UNKNOWN, Val, exact, make_input

SIZES = (0, 1, 1, 2, 3, 3, 4, 5, 7, 8, 16, 31, 32, 33, 63, 64, 65, 127, 129, 257, 1000)
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "float16", "bfloat16", "float32",
          "float64", "float32", "float64", "complex64", "complex128")
MAX_ELEMENTS = 1 << 16   # per value
MAX_WORK = 1 << 21       # multiply-adds per contraction (the oracle forms every product)
SCALARS = (0, 1, 2, -1, 3, 7, 127, 255, -128, 2 ** 31 - 1, 0.5, -2.5, 1e-3, 3.0, 1e30, float("inf"),
           float("nan"), -0.0, 1j, 0.5 - 2j)


@dataclass
class Node:
    op: str
    args: tuple = ()
    params: dict = field(default_factory=dict)


@dataclass
class Block:
    """A body: `n_params` parameters, then nodes over them; `output` is the index of its result."""
    n_params: int
    nodes: list
    output: int

    def evaluate(self, args: list) -> Val:
        vals = list(args)
        for node in self.nodes:
            vals.append(evaluate(node, vals))
        return vals[self.output]


# Ops whose result is weakly typed when their first operand is (JAX's rule: elementwise functions
# and data movement keep a weak type; reductions, casts, arg-ops and loops drop it).
INTEGER_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
KEEP_WEAK = {"unary", "slice", "reshape", "gather", "scatter", "combine"}
# jnp.log2 and jnp.log10 are log(x) times a constant of the result's dtype, which is strong: JAX
# 0.10.2 gives a strong result for a weak operand (fuzz seed 1818, program 1818012459).
STRONG_UNARY = {"log2", "log10"}


def evaluate(node, vals) -> Val:
    """The oracle's value of `node` given the values before it."""
    result = OPS[node.op].evaluate(node, vals)
    keeps = node.op in KEEP_WEAK and not (node.op == "unary" and node.params["name"] in STRONG_UNARY)
    keeps = keeps or (node.op == "sort" and node.params["name"] == "sort")
    # lax's cumulative functions keep a weak type (cummax, cummin, and any reversed one: fuzz seed
    # 2424, program 2424010611); jnp.cumsum and jnp.cumprod drop it.
    keeps = keeps or (node.op == "cumulative" and (node.params["name"] in ("cummax", "cummin") or node.params["reverse"]))
    if node.op == "combine" and node.params["name"] in ("concatenate", "stack"):
        keeps = False   # weak only when both operands are (the promotion says so), not when the first is
    if keeps and result.kind != "b" and node.args and vals[node.args[0]].weak:
        result.weak = True
    return result


class Gen:
    """Drawing state: the random generator, the values so far, and the nesting depth."""

    def __init__(self, rng: np.random.Generator, vals: list, depth: int = 0, allow_inputs: bool = True):
        self.rng, self.vals, self.depth, self.allow_inputs = rng, vals, depth, allow_inputs

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def pick(self, ok=lambda v: True):
        """The index of a random value satisfying `ok`, recent values likelier; None if none does."""
        found = [i for i, v in enumerate(self.vals) if ok(v)]
        if not found:
            return None
        weights = np.array([1.0 + i for i in found])
        return int(self.rng.choice(found, p=weights / weights.sum()))

    def shape(self, rank=None, limit=MAX_ELEMENTS):
        big = self.rng.random() < 0.1
        for _ in range(20):
            r = int(self.rng.integers(0, 5)) if rank is None else rank
            shape = tuple(int(self.choice(SIZES)) for _ in range(r))
            if big and r:
                shape = shape[:-1] + (int(self.choice((4096, 1000, 65536 // max(1, math.prod(shape[:-1]) or 1)))),)
            # zero-sized dimensions count as 1: padding or broadcasting may fill the others
            if math.prod(max(d, 1) for d in shape) <= (limit if big else 2048):
                return shape
        return (3,) * (rank or 0)

    def input(self, shape=None, dtype=None) -> Node:
        shape = self.shape() if shape is None else shape
        dtype = dtype or self.choice(DTYPES)
        return Node("input", (), {"shape": tuple(shape), "dtype": dtype, "seed": int(self.rng.integers(1 << 30)),
                                  "specials": bool(self.rng.random() < 0.5 and kind(dtype) != "c")})


# ---- op entries ---------------------------------------------------------------------------------
# Each is (draw(g) -> Node | None, source(node, names) -> str, evaluate(node, vals) -> Val).

OPS = {}


def op(name, weight=1.0):
    def register(cls):
        OPS[name] = cls()
        OPS[name].weight = weight
        return cls
    return register


def axes_of(g: Gen, rank: int):
    """None, an axis, or a tuple of axes (negative ones too)."""
    r = g.rng.random()
    if r < 0.25 or not rank:
        return None
    if r < 0.6:
        return int(g.rng.integers(-rank, rank))
    return tuple(sorted(set(int(a) for a in g.rng.integers(0, rank, int(g.rng.integers(0, rank + 1))))))


def normal_axes(axes, rank):
    if axes is None:
        return tuple(range(rank))
    if isinstance(axes, int):
        return (axes % rank,)
    return tuple(a % rank for a in axes)


@op("input", 0.3)
class Input:
    def draw(self, g):
        if not g.allow_inputs or sum(1 for v in g.vals if getattr(v, "is_input", False)) >= 3:
            return None
        return g.input()

    def source(self, node, names):
        raise AssertionError("inputs are parameters")

    def evaluate(self, node, vals):
        p = node.params
        array = p["array"] if "array" in p else make_input(p["shape"], p["dtype"], p["seed"], p["specials"])
        for axis, start, stop in p.get("cuts", ()):   # cut by the shrinker
            array = np.take(array, range(start, stop), axis=axis)
        v = exact(array, p["dtype"])
        v.is_input = True
        return v


@op("unary", 3)
class Unary:
    def draw(self, g):
        i = g.pick(lambda v: v.kind != "b" or True)
        v = g.vals[i]
        if v.kind == "c":
            name = g.choice(["neg", "abs", "square", "conj", "real", "imag", "exp"])
        elif v.kind == "b":
            name = g.choice(["invert", "isnan_b", "sin", "exp"])
        else:
            names = list(ew.FLOAT_UNARY) + list(ew.SAME_UNARY) + list(ew.PREDICATES)
            if v.kind in "iu":
                names += ["invert"] * 3
            name = g.choice(names)
        if name == "isnan_b":
            name = "invert"
        if v.kind in "iu" and name in ew.PREDICATES:
            name = "neg"
        if v.kind == "b" and name in ("neg", "sign", "round", "square"):
            name = "invert"
        return Node("unary", (i,), {"name": name, "dtype": v.dtype})

    def source(self, node, names):
        name, a = node.params["name"], names[0]
        if name in ew.FLOAT_UNARY:
            template = ew.FLOAT_UNARY[name][0]
            if template.startswith("lax.") and kind(node.params["dtype"]) in "iub":   # lax takes floats only
                a = f"{a}.astype(cnp.{to_inexact(node.params['dtype'])})"
            return template.format(a)
        if name in ew.SAME_UNARY:
            return ew.SAME_UNARY[name][0].format(a)
        if name == "invert":
            return f"~{a}"
        return f"cnp.{name}({a})"

    def evaluate(self, node, vals):
        name, v = node.params["name"], vals[node.args[0]]
        if name in ("conj", "real", "imag"):
            fn = {"conj": np.conj, "real": np.real, "imag": np.imag}[name]
            return Val(np.array(fn(v.ref)), v.dtype if name == "conj" else real_of(v.dtype), v.err.copy())
        if name == "exp" and v.kind == "c":
            x = v.wide()
            with np.errstate(all="ignore"):
                y = np.exp(x)
                err = np.where(v.err > 0, UNKNOWN, 4 * st.unit_roundoff(v.dtype) * 2 * np.abs(y) + 0.0)
                err = np.where(np.abs(x.imag) > 1e4, UNKNOWN, err)
            return ew.rounded(y, v.dtype, err)
        if name in (ew.FLOAT_UNARY) and (name not in ("floor", "ceil", "round", "trunc", "sign") or v.kind == "f"):
            return ew.unary_float(name, v)
        if name in ("floor", "ceil", "round", "trunc") or (name == "sign" and v.kind in "iu"):
            if name == "sign":
                return Val(np.sign(v.ref).astype(v.ref.dtype), v.dtype, v.err.copy())
            return v
        if name in ew.SAME_UNARY:
            if v.kind == "b":
                return Val(v.ref.copy(), v.dtype, v.err.copy())
            return ew.unary_same(name, v)
        if name in ew.PREDICATES:
            return ew.predicate(name, v)
        return ew.invert(v)


BINARY_NAMES = list(ew.COMPARISONS) + list(ew.ARITHMETIC) + ["+", "-", "*", "+", "*", "/"]


@op("binary", 4)
class Binary:
    def draw(self, g):
        i = g.pick()
        a = g.vals[i]
        for _ in range(10):
            name = g.choice(BINARY_NAMES)
            if g.rng.random() < 0.3:
                value = g.choice(SCALARS)
                if name in ("<<", ">>") and isinstance(value, int):
                    value = abs(value) % 70
                if not ew.fits(value, a.dtype) and not (kind(promote(a.dtype, ew.weak(value))[0]) in "fc"
                                                         and a.kind in "iub"):
                    continue
                if a.kind == "u" and isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
                    continue
                if ew.binary_dtype(name, a.dtype, ew.weak(value)) is None:
                    continue
                swap = bool(g.rng.random() < 0.3)
                return Node("binary", (i,), {"name": name, "scalar": value, "swap": swap})
            j = g.pick(lambda b: _broadcasts(a.shape, b.shape) and
                       math.prod(np.broadcast_shapes(a.shape, b.shape)) <= MAX_ELEMENTS)
            if j is None or ew.binary_dtype(name, a.dtype, g.vals[j].dtype) is None:
                continue
            return Node("binary", (i, j), {"name": name})
        return None

    def source(self, node, names):
        p = node.params
        a = names[0]
        b = names[1] if len(names) > 1 else _scalar_source(p["scalar"])
        if p.get("swap"):
            a, b = b, a
        if p["name"] in ("maximum", "minimum", "power", "arctan2"):
            return f"cnp.{p['name']}({a}, {b})"
        return f"{a} {p['name']} {b}"

    def evaluate(self, node, vals):
        p = node.params
        a = vals[node.args[0]]
        if len(node.args) > 1:
            b = vals[node.args[1]]
            types = (a.type_name, b.type_name)
        else:
            types = (a.type_name, ew.weak(p["scalar"]))
            b = ew.scalar_val(p["scalar"], promote(*types)[0])
        dtype = ew.binary_dtype(p["name"], *types)
        if p["name"] == "power" and len(node.args) == 1 and type(p["scalar"]) is int and not p.get("swap"):
            # lax.integer_pow keeps a weak operand weak (fuzz seed 2626, program 2626008085)
            result = ew.integer_pow(ew.convert(a, dtype), p["scalar"])
            result.weak = promote(*types)[1]
            return result
        if p.get("swap"):
            a, b = b, a
        result = ew.binary(p["name"], a, b, dtype)
        result.weak = p["name"] not in ew.COMPARISONS and promote(*types)[1]
        exponent = types[0] if p.get("swap") else types[1]
        if p["name"] == "power" and exponent in INTEGER_DTYPES and exponent != "bool":
            # jnp.power to a traced integer array: lax.pow's (or integer squaring's) strong result;
            # a bool exponent is promoted as any operand (1e30 ** bool_array stays weak), and so
            # is an integer base: uint64 ** int8 is the weak float of their promotion (fuzz seed
            # 2929, program 2929010023)
            base = types[1] if p.get("swap") else types[0]
            result.weak = base in INTEGER_DTYPES and promote(*types)[1]
        return result


def loop_index(k: int) -> Val:
    """fori_loop's index with Python int bounds: a weak int64, as JAX's (uint64 + i stays uint64)."""
    index = exact(np.array(k), "int64")
    index.weak = True
    return index


def _scalar_source(value):
    if isinstance(value, float) and not math.isfinite(value):
        return f"float('{value}')"
    return repr(value)


def _broadcasts(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


@op("where", 1)
class Where:
    def draw(self, g):
        c = g.pick(lambda v: v.kind == "b")
        if c is None:
            return None
        shape = g.vals[c].shape
        i = g.pick(lambda v: _broadcasts(v.shape, shape) and math.prod(np.broadcast_shapes(v.shape, shape)) <= MAX_ELEMENTS)
        j = g.pick(lambda v: _broadcasts(v.shape, shape) and _broadcasts(v.shape, g.vals[i].shape) and
                   math.prod(np.broadcast_shapes(v.shape, shape, g.vals[i].shape)) <= MAX_ELEMENTS)
        return Node("where", (c, i, j))

    def source(self, node, names):
        return f"cnp.where({names[0]}, {names[1]}, {names[2]})"

    def evaluate(self, node, vals):
        c, a, b = (vals[k] for k in node.args)
        dtype, weak = promote(a.type_name, b.type_name)
        result = ew.where(c, a, b, dtype)
        result.weak = weak
        return result


@op("cast", 1.5)
class Cast:
    def draw(self, g):
        i = g.pick()
        target = g.choice(ALL)
        if g.vals[i].kind == "c" and kind(target) != "c":
            return Node("unary", (i,), {"name": "real"})
        return Node("cast", (i,), {"dtype": target})

    def source(self, node, names):
        return f"{names[0]}.astype(cnp.{_dtype_name(node.params['dtype'])})"

    def evaluate(self, node, vals):
        return ew.convert(vals[node.args[0]], node.params["dtype"])


@op("reduce", 2)
class Reduce:
    def draw(self, g):
        i = g.pick()
        v = g.vals[i]
        names = ["any", "all"] if v.kind == "b" else ["sum", "sum", "prod", "max", "min", "mean"]
        if v.kind == "c":
            names = ["sum", "prod", "mean"]
        name = g.choice(names)
        axes = axes_of(g, len(v.shape))
        if name in ("max", "min") and 0 in [v.shape[a] for a in normal_axes(axes, len(v.shape))]:
            name = "sum" if v.kind != "b" else "any"
        if name in ("max", "min") and v.size == 0 if hasattr(v, "size") else False:
            return None
        return Node("reduce", (i,), {"name": name, "axis": axes, "keepdims": bool(g.rng.random() < 0.3)})

    def source(self, node, names):
        p = node.params
        return f"cnp.{p['name']}({names[0]}, axis={p['axis']!r}, keepdims={p['keepdims']})"

    def evaluate(self, node, vals):
        p, v = node.params, vals[node.args[0]]
        axes = normal_axes(p["axis"], len(v.shape))
        if len(set(axes)) != len(axes):
            raise ValueError("repeated axis")
        return st.reduce(p["name"], v, axes, p["keepdims"])


@op("argreduce", 0.7)
class ArgReduce:
    def draw(self, g):
        i = g.pick(lambda v: v.shape and v.kind != "c" and min(v.shape) > 0)
        if i is None:
            return None
        rank = len(g.vals[i].shape)
        return Node("argreduce", (i,), {"name": g.choice(["argmax", "argmin"]), "axis": int(g.rng.integers(-rank, rank))})

    def source(self, node, names):
        return f"cnp.{node.params['name']}({names[0]}, axis={node.params['axis']})"

    def evaluate(self, node, vals):
        v = vals[node.args[0]]
        return st.argreduce(node.params["name"], v, node.params["axis"] % len(v.shape))


@op("cumulative", 1)
class Cumulative:
    def draw(self, g):
        i = g.pick(lambda v: v.shape)
        if i is None:
            return None
        v = g.vals[i]
        names = ["cumsum", "cumprod"] + (["cummax", "cummin"] if v.kind in "iuf" else [])
        rank = len(v.shape)
        return Node("cumulative", (i,), {"name": g.choice(names), "axis": int(g.rng.integers(-rank, rank)),
                                         # reverse= needs lax's functions, which take numbers only
                                         "reverse": v.kind != "b" and bool(g.rng.random() < 0.3), "rank": rank})

    def source(self, node, names):
        p = node.params
        if p["name"] in ("cummax", "cummin") or p["reverse"]:
            axis = p["axis"] % p["rank"]   # lax takes no negative axes
            return f"lax.{p['name']}({names[0]}, axis={axis}, reverse={p['reverse']})"
        return f"cnp.{p['name']}({names[0]}, axis={p['axis']})"

    def evaluate(self, node, vals):
        p, v = node.params, vals[node.args[0]]
        return st.cumulative(p["name"], v, p["axis"] % len(v.shape), p["reverse"])


@op("contract", 1.2)
class Contract:
    """matmul with broadcast batch dimensions (the partner a new input or an earlier value), A @ A^T,
    and einsum with transposed operands."""

    def draw(self, g):
        i = g.pick(lambda v: 1 <= len(v.shape) <= 3)
        if i is None:
            return None
        a = g.vals[i]
        kdim = a.shape[-1]
        form = g.choice(["matmul", "matmul", "gram", "einsum"] if len(a.shape) >= 2 else ["matmul"])
        if form == "gram":
            if len(a.shape) < 2 or a.shape[-2] * math.prod(a.shape) > MAX_WORK or a.shape[-2] ** 2 > MAX_ELEMENTS:
                return None
            return Node("contract", (i,), {"form": "gram"})
        j = g.pick(lambda b: len(b.shape) >= (2 if form == "einsum" else 1) and (b.shape[-2] if len(b.shape) >= 2 else b.shape[0]) == kdim
                   and _batch_ok(a.shape, b.shape) and b is not a)
        if j is None or g.rng.random() < 0.5:
            if not g.allow_inputs:
                return None
            rank = int(g.rng.integers(2 if form == "einsum" else 1, 5))
            n = int(g.choice((1, 2, 3, 5, 16, 33, 64, 65)))
            batch = list(a.shape[:-2]) if len(a.shape) >= 2 else []
            batch = [d if g.rng.random() < 0.7 else 1 for d in batch]
            if rank > 2 and g.rng.random() < 0.4:
                batch = [int(g.choice((1, 2)))] + batch
            shape = tuple(batch[-(rank - 2):] if rank > 2 else []) + ((kdim, n) if rank >= 2 else (kdim,))
            if math.prod(shape) > MAX_ELEMENTS or math.prod(a.shape) * n > MAX_WORK:
                return None
            dtype = a.dtype if g.rng.random() < 0.7 else g.choice(DTYPES)
            return [g.input(shape, dtype), Node("contract", (i, -1), {"form": form})]
        if math.prod(a.shape) * (g.vals[j].shape[-1] if len(g.vals[j].shape) >= 2 else 1) > MAX_WORK:
            return None
        return Node("contract", (i, j), {"form": form})

    def source(self, node, names):
        form = node.params["form"]
        if form == "gram":
            return f"{names[0]} @ cnp.swapaxes({names[0]}, -1, -2)"
        if form == "einsum":
            sa, sb, out = self.letters(node.params["ranks"])
            return f"cnp.einsum('{sa},{sb}->{out}', {names[0]}, cnp.swapaxes({names[1]}, -1, -2))"
        return f"{names[0]} @ {names[1]}"

    @staticmethod
    def letters(ranks):
        """einsum letters for `a @ b` with ranks (ra, rb), b transposed ('...kn' written as '...nk')."""
        ra, rb = ranks
        batch = "abcd"[:max(ra, rb) - 2] if max(ra, rb) > 2 else ""
        sa = batch[len(batch) - (ra - 2):] + "mk" if ra >= 2 else "k"
        sb = batch[len(batch) - (rb - 2):] + "nk" if rb >= 2 else "k"
        out = batch + ("m" if ra >= 2 else "") + ("n" if rb >= 2 else "")
        return sa, sb, out

    def evaluate(self, node, vals):
        a = vals[node.args[0]]
        if node.params["form"] == "gram":
            b = st.moved(a, lambda x: np.swapaxes(x, -1, -2))
        else:
            b = vals[node.args[1]]
        dtype, weak = promote(a.type_name, b.type_name)   # int64 @ uint64 is a weak f64, as JAX's
        if node.params["form"] == "einsum" and len(b.shape) >= 2:
            node.params["ranks"] = (len(a.shape), len(b.shape))
        ra, rb = len(a.shape), len(b.shape)
        if ra == 1 and rb == 1:
            spec = ("k", "k", "")
        else:
            batch_rank = max(ra, rb) - 2 if min(ra, rb) >= 2 else max(ra - 2, rb - 2, 0)
            batch = "abcd"[:batch_rank]
            sa = (batch[len(batch) - (ra - 2):] + "mk") if ra >= 2 else "k"
            sb = (batch[len(batch) - (rb - 2):] + "kn") if rb >= 2 else "k"
            out = batch + ("m" if ra >= 2 else "") + ("n" if rb >= 2 else "")
            spec = (sa, sb, out)
        a, b = ew.convert(a, dtype), ew.convert(b, dtype)
        # broadcast the batch dimensions explicitly (einsum wants equal sizes)
        ab = np.broadcast_shapes(a.shape[:-2] if ra >= 2 else (), b.shape[:-2] if rb >= 2 else ())
        if ra > 2 or rb > 2:
            a = _broadcast_batch(a, ab, ra)
            b = _broadcast_batch(b, ab, rb)
            spec = ("abcd"[:len(ab)] + "mk" if ra >= 2 else "k", "abcd"[:len(ab)] + "kn" if rb >= 2 else "k",
                    "abcd"[:len(ab)] + ("m" if ra >= 2 else "") + ("n" if rb >= 2 else ""))
        result = st.contract(a, b, dtype, *spec)
        result.weak = weak
        return result


def _batch_ok(a, b):
    if len(a) < 2 or len(b) < 2:
        return True
    return _broadcasts(a[:-2], b[:-2])


def _broadcast_batch(v: Val, batch, rank):
    if rank < 2:
        return v
    shape = tuple(batch) + v.shape[-2:]
    return Val(np.broadcast_to(v.ref, shape), v.dtype, np.broadcast_to(v.err, shape))


@op("sort", 1)
class Sort:
    def draw(self, g):
        i = g.pick(lambda v: v.shape and v.kind != "c")
        if i is None:
            return None
        rank = len(g.vals[i].shape)
        return Node("sort", (i,), {"name": g.choice(["sort", "argsort"]), "axis": int(g.rng.integers(-rank, rank))})

    def source(self, node, names):
        return f"cnp.{node.params['name']}({names[0]}, axis={node.params['axis']})"

    def evaluate(self, node, vals):
        v = vals[node.args[0]]
        axis = node.params["axis"] % len(v.shape)
        return st.sort(v, axis) if node.params["name"] == "sort" else st.argsort(v, axis)


@op("reshape", 1.5)
class Reshape:
    def draw(self, g):
        i = g.pick()
        v = g.vals[i]
        size = math.prod(v.shape)
        kind_ = g.choice(["reshape", "transpose", "expand", "squeeze", "ravel"])
        if kind_ == "reshape":
            factors = _factors(size)
            g.rng.shuffle(factors)
            k = int(g.rng.integers(1, 5))
            shape = [1] * k
            for f in factors:
                shape[int(g.rng.integers(k))] *= f
            if size == 0:
                shape = [0] + [int(g.choice((1, 2, 3))) for _ in range(k - 1)]
            if g.rng.random() < 0.3 and size:
                shape[int(g.rng.integers(k))] = -1
            return Node("reshape", (i,), {"kind": "reshape", "shape": tuple(shape)})
        if kind_ == "transpose":
            return Node("reshape", (i,), {"kind": "transpose", "perm": tuple(int(p) for p in g.rng.permutation(len(v.shape)))})
        if kind_ == "expand":
            return Node("reshape", (i,), {"kind": "expand", "axis": int(g.rng.integers(-len(v.shape) - 1, len(v.shape) + 1))})
        if kind_ == "squeeze":
            return Node("reshape", (i,), {"kind": "squeeze"})
        return Node("reshape", (i,), {"kind": "ravel"})

    def source(self, node, names):
        p, a = node.params, names[0]
        return {"reshape": lambda: f"cnp.reshape({a}, {p.get('shape')!r})",
                "transpose": lambda: f"cnp.transpose({a}, {p.get('perm')!r})",
                "expand": lambda: f"cnp.expand_dims({a}, {p.get('axis')})",
                "squeeze": lambda: f"cnp.squeeze({a})", "ravel": lambda: f"cnp.ravel({a})"}[p["kind"]]()

    def evaluate(self, node, vals):
        p = node.params
        fn = {"reshape": lambda x: np.reshape(x, p.get("shape")), "transpose": lambda x: np.transpose(x, p.get("perm")),
              "expand": lambda x: np.expand_dims(x, p.get("axis")), "squeeze": np.squeeze, "ravel": np.ravel}[p["kind"]]
        return st.moved(vals[node.args[0]], fn)


def _factors(n):
    out, d = [], 2
    while n > 1 and d * d <= n:
        while n % d == 0:
            out.append(d)
            n //= d
        d += 1
    return out + ([n] if n > 1 else [])


@op("slice", 1.5)
class Slice:
    def draw(self, g):
        i = g.pick(lambda v: v.shape)
        v = g.vals[i] if i is not None else None
        if v is None:
            return None
        index = []
        for d in v.shape:
            r = g.rng.random()
            if r < 0.4:
                index.append(slice(None))
            elif r < 0.55 and d:
                index.append(int(g.rng.integers(-d, d)))
            else:
                lo, hi = sorted(int(x) for x in g.rng.integers(-d - 2, d + 3, 2))
                index.append(slice(lo, hi, int(g.choice((1, 1, 2, 3, -1, -2)))))
        return Node("slice", (i,), {"index": tuple(index)})

    def source(self, node, names):
        parts = []
        for s in node.params["index"]:
            if isinstance(s, int):
                parts.append(str(s))
            else:
                parts.append(":".join("" if x is None else str(x) for x in (s.start, s.stop)) +
                             ("" if s.step in (None, 1) else f":{s.step}"))
        return f"{names[0]}[{', '.join(parts)}]" if parts else f"{names[0]}[()]"

    def evaluate(self, node, vals):
        return st.moved(vals[node.args[0]], lambda x: x[node.params["index"]])


@op("gather", 1.5)
class Gather:
    """Integer-array indexing: constant indices (negative ones too), or an integer value mod n."""

    def draw(self, g):
        i = g.pick(lambda v: v.shape and v.shape[0])
        if i is None:
            return None
        v = g.vals[i]
        axis = int(g.rng.integers(0, min(2, len(v.shape))))
        n = v.shape[axis]
        if n == 0:
            return None
        j = g.pick(lambda w: w.kind in "iu" and 0 < len(w.shape) <= 2 and math.prod(w.shape) <= 4096)
        rest = math.prod(v.shape) // n
        if j is not None and g.rng.random() < 0.5 and math.prod(g.vals[j].shape) * rest <= MAX_ELEMENTS:
            return Node("gather", (i, j), {"axis": axis, "n": n})
        count = int(g.choice((1, 3, 8, 65)))
        if count * rest > MAX_ELEMENTS:
            return None
        index = g.rng.integers(-n, n, count)
        return Node("gather", (i,), {"axis": axis, "index": index})

    def source(self, node, names):
        p = node.params
        index = f"{names[1]}.astype(cnp.int64) % {p['n']}" if len(names) > 1 else f"np.array({p['index'].tolist()})"
        return f"{names[0]}[{':, ' * p['axis']}{index}]"

    def evaluate(self, node, vals):
        p = node.params
        v = vals[node.args[0]]
        if len(node.args) > 1:
            w = vals[node.args[1]]
            index = Val(np.remainder(w.ref.astype(np.int64), p["n"]), "int64", w.err)
        else:
            index = exact(p["index"], "int64")
        return st.gather(v, index, p["axis"])


@op("scatter", 1.5)
class Scatter:
    def draw(self, g):
        i = g.pick(lambda v: v.shape and v.shape[0])
        if i is None:
            return None
        v = g.vals[i]
        n = v.shape[0]
        index = g.rng.integers(-n, n, int(g.choice((1, 2, 5, 40))))
        mode = g.choice(["set", "add", "min", "max"] if v.kind != "c" else ["set", "add"])
        target = (len(index),) + v.shape[1:]
        j = g.pick(lambda w: w.dtype == v.dtype and _broadcasts_to(w.shape, target))
        if j is not None and g.rng.random() < 0.6:
            return Node("scatter", (i, j), {"mode": mode, "index": index})
        value = g.choice([s for s in SCALARS if ew.fits(s, v.dtype) and not (v.kind == "u" and s < 0)
                          and not (v.kind in "iub" and isinstance(s, float))] or [1])
        if v.kind == "b":
            value = True
        return Node("scatter", (i,), {"mode": mode, "index": index, "scalar": value})

    def source(self, node, names):
        p = node.params
        update = names[1] if len(names) > 1 else _scalar_source(p["scalar"])
        return f"{names[0]}.at[np.array({p['index'].tolist()})].{p['mode']}({update})"

    def evaluate(self, node, vals):
        p = node.params
        v = vals[node.args[0]]
        update = vals[node.args[1]] if len(node.args) > 1 else ew.scalar_val(p["scalar"], v.dtype)
        return st.scatter(p["mode"], v, p["index"], update)


def _dtype_name(dtype):
    return "bool_" if dtype == "bool" else dtype


def _broadcasts_to(shape, target):
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


@op("combine", 1.5)
class Combine:
    """concatenate, stack, pad, roll, flip, broadcast_to."""

    def draw(self, g):
        i = g.pick()
        v = g.vals[i]
        rank = len(v.shape)
        name = g.choice(["concatenate", "stack", "pad", "roll", "flip", "broadcast_to", "broadcast_to"]
                        if rank else ["broadcast_to", "stack"])
        if name == "concatenate":
            axis = int(g.rng.integers(-rank, rank))
            j = g.pick(lambda w: len(w.shape) == rank and all(x == y for k, (x, y) in enumerate(zip(w.shape, v.shape))
                                                               if k != axis % rank))
            return Node("combine", (i, j), {"name": name, "axis": axis})
        if name == "stack":
            j = g.pick(lambda w: w.shape == v.shape)
            return Node("combine", (i, j), {"name": name, "axis": int(g.rng.integers(-rank - 1, rank + 1))})
        if name == "pad":
            widths = tuple((int(g.rng.integers(0, 3)), int(g.rng.integers(0, 3))) for _ in range(rank))
            return Node("combine", (i,), {"name": name, "widths": widths,
                                          "mode": g.choice(["constant", "edge"]) if min(v.shape) else "constant"})
        if name == "roll":
            return Node("combine", (i,), {"name": name, "shift": int(g.rng.integers(-70, 70)),
                                          "axis": g.choice([None, int(g.rng.integers(0, rank))])})
        if name == "flip":
            return Node("combine", (i,), {"name": name, "axis": int(g.rng.integers(0, rank))})
        lead = tuple(int(g.choice((1, 2, 3, 5, 80))) for _ in range(int(g.rng.integers(0, 3))))
        shape = lead + tuple(int(g.choice((d, 80, 3))) if d == 1 else d for d in v.shape)
        if math.prod(shape) > MAX_ELEMENTS:
            return None
        return Node("combine", (i,), {"name": name, "shape": shape})

    def source(self, node, names):
        p, a = node.params, names[0]
        return {"concatenate": lambda: f"cnp.concatenate([{a}, {names[-1]}], axis={p.get('axis')})",
                "stack": lambda: f"cnp.stack([{a}, {names[-1]}], axis={p.get('axis')})",
                "pad": lambda: f"cnp.pad({a}, {p.get('widths')!r}, mode={p.get('mode')!r})",
                "roll": lambda: f"cnp.roll({a}, {p.get('shift')}, axis={p.get('axis')})",
                "flip": lambda: f"cnp.flip({a}, {p.get('axis')})",
                "broadcast_to": lambda: f"cnp.broadcast_to({a}, {p.get('shape')!r})"}[p["name"]]()

    def evaluate(self, node, vals):
        p = node.params
        v = vals[node.args[0]]
        name = p["name"]
        if name in ("concatenate", "stack"):
            w = vals[node.args[1]]
            dtype, weak = promote(v.type_name, w.type_name)
            v, w = ew.convert(v, dtype), ew.convert(w, dtype)
            fn = np.concatenate if name == "concatenate" else np.stack
            return Val(fn([v.ref, w.ref], axis=p["axis"]), dtype, fn([v.err, w.err], axis=p["axis"]), weak)
        if name == "pad":
            out = st.moved(v, lambda x: np.pad(x, p["widths"], mode=p["mode"]))
            return out
        fn = {"roll": lambda x: np.roll(x, p.get("shift"), axis=p.get("axis")),
              "flip": lambda x: np.flip(x, p.get("axis")),
              "broadcast_to": lambda x: np.broadcast_to(x, p.get("shape"))}[name]
        return st.moved(v, fn)


# ---- control flow: bodies are Blocks drawn like programs ------------------------------------------

BODY_OPS = ("unary", "binary", "binary", "cast", "reduce", "combine", "slice", "sort", "cumulative")


def draw_body(g: Gen, params: list) -> Block:
    """A body over `params` whose result has params[0]'s shape and dtype."""
    inner = Gen(g.rng, list(params), g.depth + 1, allow_inputs=False)
    nodes = []
    for _ in range(int(g.rng.integers(1, 4))):
        node = OPS[g.choice(BODY_OPS)].draw(inner)
        if node is None or isinstance(node, list):
            continue
        try:
            val = evaluate(node, inner.vals)
        except Exception:
            continue
        nodes.append(node)
        inner.vals.append(val)
    carry = params[0]
    fit = [k for k, v in enumerate(inner.vals) if _broadcasts_to(v.shape, carry.shape) and k >= len(params)]
    out = fit[-1] if fit else 0
    nodes.append(Node("fit", (out, 0), {"shape": carry.shape, "dtype": carry.dtype}))
    return Block(len(params), nodes, len(params) + len(nodes) - 1)


@op("fit", 0)
class Fit:
    """Brings a body's result (operand 0) to the carry's (operand 1) shape and dtype."""

    def draw(self, g):
        return None

    def source(self, node, names):
        # the carry's own dtype, as a JAX user writes it: a dtype defect upstream then does not stop tracing
        return f"cnp.broadcast_to({names[0]}, {names[1]}.shape).astype({names[1]}.dtype)"

    def evaluate(self, node, vals):
        v = vals[node.args[0]]
        v = ew.convert(st.moved(v, lambda x: np.broadcast_to(x, node.params["shape"])), node.params["dtype"])
        return Val(v.ref, v.dtype, v.err)   # astype's result is strong, whatever its operand was


@op("control", 1.2)
class Control:
    def draw(self, g):
        if g.depth >= 1:
            return None
        i = g.pick(lambda v: math.prod(v.shape) <= 4096)
        if i is None:
            return None
        v = g.vals[i]
        form = g.choice(["fori_loop", "while_loop", "cond", "scan"])
        if form == "scan":
            if not v.shape or not v.shape[0]:
                return None
            carry = Val(v.ref[0] if v.shape[0] else np.zeros(v.shape[1:], v.ref.dtype), v.dtype, np.zeros(v.shape[1:]))
            return Node("control", (i,), {"form": form, "body": draw_body(g, [carry, carry])})
        params = [v] if form != "fori_loop" else [v, loop_index(0)]
        node = Node("control", (i,), {"form": form, "body": draw_body(g, params), "trips": int(g.rng.integers(0, 4))})
        if form == "cond":
            node.params["other"] = draw_body(g, [v])
            node.params["threshold"] = float(g.choice((0.0, 1.0, -1.0)))
            node.params["complex"] = v.kind == "c"
        return node

    def source(self, node, names):
        raise AssertionError("control nodes are written by programs.write_nodes")

    def evaluate(self, node, vals):
        p = node.params
        v = vals[node.args[0]]
        body = p["body"]
        if p["form"] in ("fori_loop", "while_loop"):
            # The body ends in an astype (fit), a strong result: JAX makes a weak init strong to match.
            carry = Val(v.ref, v.dtype, v.err)
            for k in range(p["trips"]):
                args = [carry] + ([loop_index(k)] if p["form"] == "fori_loop" else [])
                carry = body.evaluate(args)
            return carry
        if p["form"] == "cond":
            total = st.reduce("sum", ew.convert(v, "float64") if v.kind != "c" else ew.convert(v, "complex128"),
                              tuple(range(len(v.shape))), False)
            t = total.ref.real if v.kind == "c" else total.ref
            pred = bool(t > p["threshold"])
            chosen = (body if pred else p["other"]).evaluate([v])
            if not (abs(t - p["threshold"]) > total.err) or np.isnan(t):
                chosen = Val(chosen.ref, chosen.dtype, np.full(chosen.shape, UNKNOWN))
            return chosen
        carry = Val(v.ref[0], v.dtype, v.err[0]) if v.shape[0] else None
        if carry is None:
            return Val(np.zeros(v.shape[1:], np_dtype(v.dtype)), v.dtype, np.zeros(v.shape[1:]))
        outs = []
        for k in range(v.shape[0]):
            carry = body.evaluate([carry, Val(v.ref[k], v.dtype, v.err[k])])
            outs.append(carry)
        return carry
