"""The graph IR's text format (MLIR-like, one op a line); ir/parser.py reads it back exactly.

    func @gelu(%0: f32[8,16], %1: f32[16]) -> (f32[8,16]) {
      %2 = broadcast_in_dim(%1) {shape = [8, 16], broadcast_dimensions = [1]} : f32[8,16]
      %3 = add(%0, %2) : f32[8,16]
      return %3
    }

Ops with regions print them after the result types, each region opening with its parameters
(`^(%4: i32[]):`) and closing with `yield`. Values are numbered in definition order.
Attributes print in the order of the op table; strings are quoted, dtypes bare, tuples in
brackets, constants as `dense<...>`. Floats print with Python's repr, which round-trips.
"""
from __future__ import annotations

import json

import numpy as np

from .core import Module, Region
from .opdef import get_opdef


def format_scalar(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (complex, np.complexfloating)):
        return f"({format_scalar(float(value.real))}, {format_scalar(float(value.imag))})"
    value = float(value)
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def format_dense(array: np.ndarray) -> str:
    def nested(a):
        if a.ndim == 0:
            return format_scalar(a[()])
        return "[" + ", ".join(nested(sub) for sub in a) + "]"
    # Half floats print through float32, whose repr of the exact value round-trips.
    return f"dense<{nested(array)}>"


def format_attr(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        from .types import NUMPY_DTYPES
        return value if value in NUMPY_DTYPES else json.dumps(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    if isinstance(value, np.ndarray):
        return format_dense(value)
    return format_scalar(value)


class Printer:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.lines: list[str] = []

    def name(self, value) -> str:
        return self.names[id(value)]

    def define(self, value) -> str:
        self.names[id(value)] = f"%{len(self.names)}"
        return self.names[id(value)]

    def attrs_text(self, op) -> str:
        opdef = get_opdef(op.name)
        order = list(opdef.attrs) + sorted(set(op.attrs) - set(opdef.attrs))
        items = [f"{key} = {self.attr_text(op, key)}" for key in order if key in op.attrs]
        return " {" + ", ".join(items) + "}" if items else ""

    def attr_text(self, op, key):
        value = op.attrs[key]
        # dtype attributes and string attributes differ only in quoting; the op table says which.
        if get_opdef(op.name).attrs.get(key, "").rstrip("?") == "str":
            return json.dumps(value)
        return format_attr(value)

    def print_region(self, region: Region, indent: str):
        params = ", ".join(f"{self.define(p)}: {p.type}" for p in region.params)
        self.lines.append(f"{indent}^({params}):")
        self.print_ops(region, indent + "  ")
        self.lines.append(f"{indent}  yield " + ", ".join(self.name(v) for v in region.outputs))

    def print_ops(self, region: Region, indent: str):
        for op in region.ops:
            operands = ", ".join(self.name(v) for v in op.operands)
            types = [str(v.type) for v in op.results]
            type_text = types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"
            results = ", ".join(self.define(v) for v in op.results)
            head = f"{indent}{results} = " if op.results else indent
            line = f"{head}{op.name}({operands}){self.attrs_text(op)} : {type_text}"
            if not op.regions:
                self.lines.append(line)
                continue
            self.lines.append(line + " {")
            for region_ in op.regions:
                self.print_region(region_, indent + "  ")
            self.lines.append(indent + "}")


def print_module(module: Module) -> str:
    printer = Printer()
    params = ", ".join(f"{printer.define(p)}: {p.type}" for p in module.params)
    results = ", ".join(str(v.type) for v in module.outputs)
    printer.lines.append(f"func @{module.name}({params}) -> ({results}) {{")
    printer.print_ops(module.body, "  ")
    printer.lines.append("  return " + ", ".join(printer.name(v) for v in module.outputs))
    printer.lines.append("}")
    return "\n".join(printer.lines) + "\n"
