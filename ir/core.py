"""The graph IR's data model: values, ops, regions and modules.

A module is one function: a region whose parameters are the function's arguments and whose
outputs are its results. An op reads SSA values, has attributes (plain Python data: ints,
floats, bools, strings, dtype names, tuples of these, numpy arrays for constants) and zero
or more regions (the bodies of control flow). Ops inside a region may use values defined
earlier in any enclosing region (implicit capture, as in MLIR).

Value names are not stored: the printer numbers values in definition order, so two modules
are equal exactly when they print to the same text.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .types import TensorType


class Value:
    """An SSA value: a region parameter or one result of an op."""

    __slots__ = ("type", "producer", "name_hint")

    def __init__(self, type: TensorType, producer: "Op | None" = None, name_hint: str | None = None):
        self.type = type
        self.producer = producer
        self.name_hint = name_hint

    def __repr__(self):
        return f"Value({self.type})"


@dataclass(eq=False)
class Region:
    params: list[Value] = field(default_factory=list)
    ops: list["Op"] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)

    @property
    def param_types(self) -> list[TensorType]:
        return [p.type for p in self.params]

    @property
    def output_types(self) -> list[TensorType]:
        return [v.type for v in self.outputs]


@dataclass(eq=False)
class Op:
    name: str
    operands: list[Value]
    attrs: dict
    results: list[Value]
    regions: list[Region] = field(default_factory=list)
    # The user's source position (file:line) that created the op, for error messages. Not printed.
    location: str | None = None

    @property
    def result(self) -> Value:
        (value,) = self.results
        return value


@dataclass(eq=False)
class Module:
    name: str
    body: Region
    # Parameters whose buffers the caller donates (jit's donate_argnums): the program may write
    # results over them (passes/in_place.py). Printed as `%0: f32[4] donated`.
    donated: frozenset = frozenset()

    @property
    def params(self) -> list[Value]:
        return self.body.params

    @property
    def outputs(self) -> list[Value]:
        return self.body.outputs

    def __str__(self):
        from .printer import print_module
        return print_module(self)

    def __eq__(self, other):
        return isinstance(other, Module) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))


def make_op(name: str, operands, attrs: dict, result_types, regions=(), location=None) -> Op:
    """Create an op and its result values (does not check its types: see opdef.infer_types)."""
    op = Op(name, list(operands), dict(attrs), [], list(regions), location)
    op.results = [Value(t, op) for t in result_types]
    return op


def walk(region: Region):
    """Every op of a region and of its nested regions, in order (pre-order)."""
    for op in region.ops:
        yield op
        for inner in op.regions:
            yield from walk(inner)
