"""The graph IR's text format (MLIR-like, one op a line); ir/parser.py reads it back exactly.

    func @gelu(%0: f32[8,16], %1: f32[16]) -> (f32[8,16]) {
      %2 = broadcast_in_dim(%1) {shape = [8, 16], broadcast_dimensions = [1]} : f32[8,16]
      %3 = add(%0, %2) : f32[8,16]
      %4 = constant() {value = dense<[0.5, -inf, nan]>} : f32[3]
      %5, %6 = while(%0, %4) : (f32[8,16], f32[3]) {
        ^(%7: f32[8,16], %8: f32[3]):
          ...
          yield %9
        ^(%10: f32[8,16], %11: f32[3]):
          ...
          yield %12, %13
      }
      return %3
    }

Values are numbered in definition order. Ops with regions print them after the result types,
each region opening with its parameters (`^(...):`) and closing with `yield`. A module name
that is not an identifier is quoted (`@"<lambda>"`).

Attributes print in the order of the op table: strings quoted, dtypes bare, tuples in brackets,
`none` for an absent optional value, constants as `dense<...>` nested lists (shape and dtype
come from the op's result type; complex elements are `(re, im)`). A float prints as the
shortest decimal that reads back, through float64, to the same bits in its own dtype.

A malformed module still prints (for error messages): an operand that was never defined prints
as `%undefined` and an attribute value of no known kind as `<unprintable ...>`; neither parses.
"""
from __future__ import annotations

import json
import re

import numpy as np

from ..errors import TypeCheckError
from .core import Module, Region
from .opdef import OPS
from .types import COMPLEX_PART, COMPLEXES, DTYPE_NAMES, FLOATS, NUMPY_DTYPES

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*")


def cast_floats(values, dtype) -> np.ndarray:
    """Real numbers read as float64, rounded to `dtype`: how the parser builds float constants."""
    with np.errstate(all="ignore"):  # 1e300 in an f32 constant is inf, as IEEE rounding says
        return np.asarray(values, np.float64).astype(dtype)


def format_float(value, dtype: np.dtype) -> str:
    x = float(value)
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    exact = repr(x)  # float64's repr reads back exactly, so it is always a correct answer
    if dtype.itemsize == 8:
        return exact
    bits = np.asarray(value, dtype).tobytes()
    for digits in range(1, 10):
        short = f"{x:.{digits}g}"
        if cast_floats(float(short), dtype).tobytes() == bits:
            break
    if not any(c in short for c in ".e"):
        short += ".0"  # keep it a float literal: `100` would read as an integer
    return min(exact, short, key=len)


def format_scalar(value) -> str:
    """A bool, integer, float or complex literal; numpy scalars print in their own dtype's precision."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, np.generic):
        name = DTYPE_NAMES.get(value.dtype)
    else:
        name = {float: "f64", complex: "c128"}.get(type(value))
    if name in COMPLEXES:
        part = NUMPY_DTYPES[COMPLEX_PART[name]]
        return f"({format_float(value.real, part)}, {format_float(value.imag, part)})"
    if name in FLOATS:
        return format_float(value, NUMPY_DTYPES[name])
    return unprintable(value)


def format_dense(array: np.ndarray) -> str:
    if array.dtype not in DTYPE_NAMES:
        return unprintable(array)

    def nested(a):
        if a.ndim == 0:
            return format_scalar(a[()])
        return "[" + ", ".join(nested(sub) for sub in a) + "]"
    return f"dense<{nested(array)}>"


def unprintable(value) -> str:
    return f"<unprintable {type(value).__name__}>"


def format_attr(value, kind: str | None = None) -> str:
    """An attribute value; `kind` (from the op table) tells a str attribute from a dtype name."""
    if value is None:
        return "none"
    if isinstance(value, str):
        is_dtype = value in NUMPY_DTYPES and (kind or "").rstrip("?") != "str"
        return value if is_dtype else json.dumps(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    if isinstance(value, np.ndarray):
        return format_dense(value)
    return format_scalar(value)


def format_module_name(name) -> str:
    return "@" + (name if isinstance(name, str) and IDENTIFIER.fullmatch(name) else json.dumps(str(name)))


def attr_kinds(op) -> dict:
    """The kinds of an op's attributes, as far as the op table knows them (the printer prints broken ops too)."""
    opdef = OPS.get(op.name)
    if opdef is None:
        return {}
    try:
        return opdef.attr_kinds(op.attrs)
    except TypeCheckError:  # attributes that name no registered routine: printed as they are
        return opdef.attrs


class Printer:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.lines: list[str] = []
        self.op_lines: dict[int, int] = {}  # id(op) -> its 1-based line in the text

    def name(self, value) -> str:
        return self.names.get(id(value), "%undefined")

    def define(self, value) -> str:
        self.names[id(value)] = f"%{len(self.names)}"
        return self.names[id(value)]

    def attrs_text(self, op) -> str:
        kinds = attr_kinds(op)
        order = [key for key in kinds if key in op.attrs] + sorted(set(op.attrs) - set(kinds))
        items = [f"{key} = {format_attr(op.attrs[key], kinds.get(key))}" for key in order]
        return " {" + ", ".join(items) + "}" if items else ""

    def print_region(self, region: Region, indent: str):
        params = ", ".join(f"{self.define(p)}: {p.type}" for p in region.params)
        self.lines.append(f"{indent}^({params}):")
        self.print_ops(region, indent + "  ")
        self.lines.append(f"{indent}  " + keyword_line("yield", [self.name(v) for v in region.outputs]))

    def print_ops(self, region: Region, indent: str):
        for op in region.ops:
            operands = ", ".join(self.name(v) for v in op.operands)
            types = [str(v.type) for v in op.results]
            type_text = types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"
            results = ", ".join(self.define(v) for v in op.results)
            head = f"{indent}{results} = " if op.results else indent
            line = f"{head}{op.name}({operands}){self.attrs_text(op)} : {type_text}"
            self.op_lines[id(op)] = len(self.lines) + 1
            if not op.regions:
                self.lines.append(line)
                continue
            self.lines.append(line + " {")
            for region_ in op.regions:
                self.print_region(region_, indent + "  ")
            self.lines.append(indent + "}")


def keyword_line(keyword: str, names) -> str:
    return f"{keyword} {', '.join(names)}" if names else keyword


def render(module: Module) -> Printer:
    printer = Printer()
    params = ", ".join(f"{printer.define(p)}: {p.type}" + (" donated" if i in module.donated else "")
                       for i, p in enumerate(module.params))
    results = ", ".join(str(v.type) for v in module.outputs)
    printer.lines.append(f"func {format_module_name(module.name)}({params}) -> ({results}) {{")
    printer.print_ops(module.body, "  ")
    printer.lines.append("  " + keyword_line("return", [printer.name(v) for v in module.outputs]))
    printer.lines.append("}")
    return printer


def print_module(module: Module) -> str:
    return "\n".join(render(module).lines) + "\n"
