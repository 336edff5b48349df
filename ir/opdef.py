"""The op table: one `OpDef` per graph-IR op.

An entry holds everything the IR needs to know about an op, in one place:
  - `attrs`: the attribute names and their kinds (read by the parser and the verifier); an op whose
    attributes depend on its other attributes (`library_call`: each library routine has its own)
    also has `more_attrs(attrs) -> {name: kind}`, the rest given the ones in `attrs`;
  - `infer`: the shape/dtype rule, (operand types, attrs, regions) -> result types, raising
    `TypeCheckError` with a message naming the problem;
  - `reference`: the numpy implementation used by the interpreter, (*arrays, **attrs) ->
    array or tuple of arrays. Ops with regions also receive `regions=[callable, ...]`, each
    callable running one region on arrays and returning its outputs as a list.
The printer, parser, verifier, interpreter and the tracer all read this table; adding an op is
one `define(...)` call in a family module under ir/ops/.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ..errors import TypeCheckError
from .types import NUMPY_DTYPES, TensorType

# Attribute kinds. A trailing "?" means the attribute may be None (printed `none`).
ATTR_KINDS = {"int", "ints", "float", "bool", "str", "dtype", "array", "int_pairs", "scalar"}


@dataclass(frozen=True)
class OpDef:
    name: str
    infer: Callable
    reference: Callable
    attrs: dict = field(default_factory=dict)
    # Number of operands, or None for variadic (the infer rule checks the count then).
    num_operands: int | None = None
    # Number of regions, or None for "one or more" (the branches of `cond`).
    num_regions: int = 0
    doc: str = ""
    more_attrs: Callable[[dict], dict] | None = None
    jvp: Callable | None = None
    vjp: Callable | None = None
    batch: Callable | None = None

    def attr_kinds(self, attrs: dict) -> dict:
        """Every attribute of the op and its kind, given its attributes (only `more_attrs` reads them)."""
        return self.attrs if self.more_attrs is None else {**self.attrs, **self.more_attrs(attrs)}


OPS: dict[str, OpDef] = {}


def define(name, *, infer, reference, attrs=None, num_operands=None, num_regions=0, doc="", more_attrs=None):
    if name in OPS:
        raise ValueError(f"op {name!r} is defined twice")
    for kind in (attrs or {}).values():
        assert kind.rstrip("?") in ATTR_KINDS, (name, kind)
    OPS[name] = OpDef(name, infer, reference, dict(attrs or {}), num_operands, num_regions, doc, more_attrs)
    return OPS[name]


def set_rules(name, **rules):
    """Give op `name` its transformation rules (jvp=, vjp=, batch=)."""
    assert set(rules) <= {"jvp", "vjp", "batch"}, rules
    OPS[name] = replace(OPS[name], **rules)


def get_opdef(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise TypeCheckError(f"unknown op '{name}'") from None


def check_attr_kind(kind: str, value) -> bool:
    """Whether `value` is a well-formed attribute of `kind`."""
    if kind.endswith("?"):
        if value is None:
            return True
        kind = kind[:-1]
    is_int = lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
    if kind == "int":
        return is_int(value)
    if kind == "ints":
        return isinstance(value, tuple) and all(is_int(v) for v in value)
    if kind == "float":
        return isinstance(value, (float, int)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "dtype":
        return value in NUMPY_DTYPES
    if kind == "array":
        return isinstance(value, np.ndarray)
    if kind == "int_pairs":
        return isinstance(value, tuple) and all(
            isinstance(p, tuple) and len(p) == 2 and all(is_int(v) for v in p) for p in value)
    if kind == "scalar":
        return isinstance(value, (bool, int, float, complex))
    raise AssertionError(kind)


def infer_types(name: str, operand_types, attrs: dict, regions=()) -> list[TensorType]:
    """Run an op's shape/dtype rule after checking its operand, attribute and region counts."""
    opdef = get_opdef(name)
    if opdef.num_operands is not None and len(operand_types) != opdef.num_operands:
        raise TypeCheckError(f"{name} takes {opdef.num_operands} operands, got {len(operand_types)}")
    # An op's own attributes first: with `more_attrs`, they decide what the others are.
    kinds = opdef.attr_kinds(attrs) if set(opdef.attrs) <= set(attrs) else opdef.attrs
    missing = set(kinds) - set(attrs)
    extra = set(attrs) - set(kinds)
    if missing or extra:
        raise TypeCheckError(f"{name}: missing attributes {sorted(missing)}, unknown attributes {sorted(extra)}"
                             if missing and extra else
                             f"{name}: missing attributes {sorted(missing)}" if missing else
                             f"{name}: unknown attributes {sorted(extra)}")
    for key, kind in kinds.items():
        if not check_attr_kind(kind, attrs[key]):
            raise TypeCheckError(f"{name}: attribute {key}={attrs[key]!r} is not a {kind}")
    if opdef.num_regions is None:
        if len(regions) < 1:
            raise TypeCheckError(f"{name} needs at least one region")
    elif len(regions) != opdef.num_regions:
        raise TypeCheckError(f"{name} takes {opdef.num_regions} regions, got {len(regions)}")
    return list(opdef.infer(list(operand_types), attrs, list(regions)))


# Helpers shared by the rules of the op families.

def fmt_types(types) -> str:
    return ", ".join(str(t) for t in types)


def require(condition, message):
    if not condition:
        raise TypeCheckError(message)


def require_dtype(opname, t: TensorType, allowed, what="operand"):
    require(t.dtype in allowed, f"{opname}: {what} of type {t} has dtype {t.dtype}; "
                                f"expected one of {', '.join(allowed)}")


def require_same_types(opname, types):
    require(all(t == types[0] for t in types),
            f"{opname}: operands must have the same type, got {fmt_types(types)}")


def require_axes(opname, axes, ndim, what="dimension"):
    require(all(0 <= a < ndim for a in axes) and len(set(axes)) == len(axes),
            f"{opname}: {what}s {list(axes)} are not distinct dimensions of a rank-{ndim} operand")


# Helpers shared by the numpy references.

def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a reference computes in: f16 and bf16 widen to f32 (and round once at the end), as
    XLA's CPU backend does; every other dtype computes in itself."""
    half_floats = (NUMPY_DTYPES["f16"], NUMPY_DTYPES["bf16"])
    return NUMPY_DTYPES["f32"] if np.dtype(dtype) in half_floats else np.dtype(dtype)


def round_to(array, dtype) -> np.ndarray:
    """A wide (f32 or f64) result rounded once to its narrow dtype; overflow gives inf, as IEEE says,
    without numpy's warning."""
    with np.errstate(over="ignore"):
        return np.asarray(array).astype(dtype)
