"""A small pattern matcher over graph-IR values, for tables of rewrite rules (as tinygrad's UPat).

    Pat.op("add", Pat.var("x"), Pat.splat(0))      matches add(x, 0) and add(0, x), binding x

A pattern matches a value:
  - `Pat.var(name, dtypes)` matches any value (of one of `dtypes`, if given) and binds it; a name
    bound twice must be the same value, so `Pat.op("sub", x, x)` matches x - x only;
  - `Pat.op(names, *operands, name=...)` matches the result of a one-result op called one of
    `names` whose operands match `operands`, in either order for commutative ops; `name=` binds
    the op itself so a rewrite can read its attributes. `Pat.any_op(names, name)` ignores operands;
  - `Pat.splat(value)` matches a constant, or a broadcast of a constant, whose every element is
    `value` converted to the constant's dtype, compared bit for bit (so 0.0 and -0.0 differ).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.core import Op, Value
from .opclasses import COMMUTATIVE


def splat_value(value: Value):
    """The one element a constant (or a broadcast of a constant) repeats, as a numpy scalar; else None."""
    op = value.producer
    while op is not None and op.name == "broadcast_in_dim":
        op = op.operands[0].producer
    if op is None or op.name != "constant" or op.attrs["value"].size == 0:
        return None
    flat = np.ascontiguousarray(op.attrs["value"]).reshape(-1)
    first = flat[:1]
    return first[0] if flat.tobytes() == first.tobytes() * flat.size else None


def same_bits(scalar, value) -> bool:
    """Whether numpy scalar `scalar` is `value` converted to its dtype, bit for bit."""
    return np.asarray(scalar).tobytes() == np.asarray(value).astype(np.asarray(scalar).dtype).tobytes()


@dataclass(frozen=True)
class Pat:
    kind: str                       # "var", "op" or "splat"
    name: str | None = None         # the binding
    ops: frozenset = frozenset()    # op names, for "op"
    operands: tuple | None = None   # operand patterns, for "op"; None matches any operands
    dtypes: tuple | None = None     # the matched value's allowed dtypes
    value: object = None            # the scalar, for "splat"

    @staticmethod
    def var(name: str, dtypes=None) -> "Pat":
        return Pat("var", name, dtypes=tuple(dtypes) if dtypes else None)

    @staticmethod
    def op(names, *operands: "Pat", name: str | None = None, dtypes=None) -> "Pat":
        names = frozenset([names] if isinstance(names, str) else names)
        return Pat("op", name, names, tuple(operands), tuple(dtypes) if dtypes else None)

    @staticmethod
    def any_op(names, name: str) -> "Pat":
        return Pat("op", name, frozenset([names] if isinstance(names, str) else names), None)

    @staticmethod
    def splat(value, name: str | None = None) -> "Pat":
        return Pat("splat", name, value=value)

    def match(self, value: Value, bindings: dict) -> dict | None:
        """The bindings extended by matching `value`, or None if it does not match."""
        if self.dtypes is not None and value.type.dtype not in self.dtypes:
            return None
        if self.kind == "var":
            bound = bindings.get(self.name)
            if bound is not None:
                return bindings if bound is value else None
            return {**bindings, self.name: value}
        if self.kind == "splat":
            scalar = splat_value(value)
            if scalar is None or not same_bits(scalar, self.value):
                return None
            return {**bindings, self.name: value} if self.name else bindings
        if value.producer is not None and len(value.producer.results) != 1:
            return None  # an operand pattern names one op's one result
        return self.match_op(value.producer, bindings)

    def match_op(self, op: Op | None, bindings: dict) -> dict | None:
        """Match a rule's root op (of any number of results: a sort's rule rewrites all of them)."""
        if op is None or op.name not in self.ops:
            return None
        bound = {**bindings, self.name: op} if self.name else bindings
        if self.operands is None:
            return bound
        if len(op.operands) != len(self.operands):
            return None
        orders = [self.operands]
        if op.name in COMMUTATIVE:
            orders.append(self.operands[::-1])
        for patterns in orders:
            found = bound
            for pattern, operand in zip(patterns, op.operands):
                found = pattern.match(operand, found)
                if found is None:
                    break
            else:
                return found
        return None
