"""Reads the graph IR's text format (ir/printer.py, ir/grammar.lark) back into a Module.

lark parses the text into a tree; `ModuleBuilder` walks it in order, resolving value names in
nested scopes (a region sees its enclosing regions' values, and its own values end with it),
reading each attribute by the kind the op table declares, and running the op's type rule to
check the printed result types. Every problem is a `ParseError` with line:column and the text
at fault; lark's own exceptions never escape.
"""
from __future__ import annotations

import functools
import importlib.resources
import json

import lark
import numpy as np
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..errors import ParseError, TypeCheckError
from .core import Module, Region, Value, make_op
from .opdef import ATTR_KINDS, OPS, fmt_types, infer_types
from .printer import cast_floats
from .types import COMPLEXES, FLOATS, INTS, NUMPY_DTYPES, TensorType
from .verifier import name_the_op

INT64_MIN, INT64_END, UINT64_END = -2**63, 2**63, 2**64

# How the syntax error messages name the grammar's terminals.
TERMINAL_NAMES = {"VALUE": "a value name (%0)", "NAME": "a name", "INT": "an integer", "FLOAT": "a float",
                  "STRING": "a quoted string", "SYMBOL": "a function name (@f)",
                  "$END": "the end of the text", "<END-OF-FILE>": "the end of the text"}

KIND_NAMES = {"int": "an integer", "ints": "a list of integers, like [0, 1]", "float": "a number",
              "bool": "true or false", "str": 'a quoted string, like "sum"',
              "dtype": f"a dtype name ({', '.join(NUMPY_DTYPES)})", "array": "a dense<...> literal",
              "int_pairs": "a list of integer pairs, like [[0, 1], [2, 3]]",
              "scalar": "a number, true, false or a complex (re, im)"}


@functools.cache
def grammar() -> lark.Lark:
    text = importlib.resources.files("cdnajit.ir").joinpath("grammar.lark").read_text()
    return lark.Lark(text, parser="lalr", propagate_positions=True)


def parse(text: str) -> Module:
    """The module printed as `text` (the inverse of str(module)); raises ParseError."""
    if not isinstance(text, str):
        raise ParseError(f"IR text must be a str, got {type(text).__name__}")
    try:
        tree = grammar().parse(text)
    except UnexpectedInput as error:
        raise syntax_error(error, text) from None
    try:
        return ModuleBuilder(text).build(tree)
    except RecursionError:  # thousands of nested brackets or regions: no real module looks like that
        raise ParseError("the text nests too deeply to read") from None


def syntax_error(error: UnexpectedInput, text: str) -> ParseError:
    if isinstance(error, UnexpectedCharacters):
        line, column = error.line, error.column
        return ParseError(f"unexpected character {error.char!r}", line, column, error.char)
    token = error.token if isinstance(error, UnexpectedToken) else None
    expected = sorted(describe_terminal(name) for name in getattr(error, "expected", ()) or ())
    expected_text = f"; expected {' or '.join(expected)}" if expected else ""
    if token is None or token.type == "$END":
        line = text.count("\n") + 1
        column = len(text) - (text.rfind("\n") + 1) + 1
        return ParseError(f"unexpected end of the text{expected_text}", line, column, "")
    return ParseError(f"unexpected {str(token)!r}{expected_text}", token.line, token.column, str(token))


def describe_terminal(name: str) -> str:
    if name in TERMINAL_NAMES:
        return TERMINAL_NAMES[name]
    terminal = next((t for t in grammar().terminals if t.name == name), None)
    return repr(terminal.pattern.value) if terminal is not None and terminal.pattern.type == "str" else name


class ModuleBuilder:
    def __init__(self, text: str):
        self.text = text
        self.scopes: list[dict[str, Value]] = []

    # ---- errors ---------------------------------------------------------------------------

    def error(self, node, message: str) -> ParseError:
        """A ParseError at a token or tree, quoting the text at fault unless the message already does."""
        if isinstance(node, lark.Token):
            line, column = node.line, node.column
        else:
            line, column = node.meta.line, node.meta.column
        snippet = self.snippet(node)
        if snippet not in message:
            message = f"{message}, at '{snippet}'"
        return ParseError(message, line, column, snippet)

    def snippet(self, node) -> str:
        text = str(node) if isinstance(node, lark.Token) else self.text[node.meta.start_pos:node.meta.end_pos]
        return text if len(text) <= 60 else text[:57] + "..."

    # ---- module, regions, ops -------------------------------------------------------------

    def build(self, tree) -> Module:
        symbol, params, result_types, *ops, returned = tree.children
        body = self.region(params, ops, returned)
        declared = self.types(result_types)
        if body.output_types != declared:
            raise self.error(returned if returned is not None else result_types,
                             f"the function returns ({fmt_types(body.output_types)}) but declares "
                             f"({fmt_types(declared)})")
        name = symbol[1:]
        if name.startswith('"'):
            name = self.string(symbol)
        donated = frozenset(i for i, param in enumerate(children(params)) if param.children[2] is not None)
        return Module(name, body, donated)

    def region(self, params, ops, outputs) -> Region:
        self.scopes.append({})
        region = Region()
        for param in children(params):
            name, type_node, donated = param.children
            if donated is not None and len(self.scopes) > 1:
                raise self.error(donated, "only the function's parameters may be donated, not a region's")
            region.params.append(self.define(name, Value(self.type(type_node))))
        region.ops = [self.op(node) for node in ops]
        region.outputs = [self.lookup(name) for name in children(outputs)]
        self.scopes.pop()
        return region

    def op(self, node):
        result_names, name, operand_names, attrs_node, types_node, regions_node = node.children
        opdef = OPS.get(str(name))
        if opdef is None:
            raise self.error(name, f"unknown op '{name}'")
        operands = [self.lookup(v) for v in children(operand_names)]
        result_types = self.types(types_node.children[0]) if types_node.data == "type_list" else [
            self.type(types_node.children[0])]
        names = children(result_names)
        if len(names) != len(result_types):
            raise self.error(types_node, f"{name}: {len(names)} result names but {len(result_types)} result types")
        attrs = self.attrs(name, opdef, attrs_node, result_types)
        regions = [self.region(*split_region(r)) for r in children(regions_node)]
        inferred = self.infer(name, [v.type for v in operands], attrs, regions)
        if inferred != result_types:
            raise self.error(types_node, f"{name}: the result types ({fmt_types(result_types)}) differ from "
                                         f"the op's type rule ({fmt_types(inferred)})")
        op = make_op(str(name), operands, attrs, result_types, regions)
        for result_name, value in zip(names, op.results):
            self.define(result_name, value)
        return op

    def infer(self, name, operand_types, attrs, regions):
        try:
            return infer_types(str(name), operand_types, attrs, regions)
        except TypeCheckError as error:
            raise self.error(name, name_the_op(str(name), str(error))) from None
        except Exception as error:  # noqa: BLE001  (a rule that trips over input it does not validate)
            raise self.error(name, f"{name}: the type rule failed on these operands and attributes "
                                   f"({type(error).__name__}: {error})") from error

    # ---- names and types ------------------------------------------------------------------

    def define(self, token, value: Value) -> Value:
        if any(str(token) in scope for scope in self.scopes):
            raise self.error(token, f"redefinition of {token}")
        self.scopes[-1][str(token)] = value
        return value

    def lookup(self, token) -> Value:
        for scope in reversed(self.scopes):
            if str(token) in scope:
                return scope[str(token)]
        raise self.error(token, f"unknown value {token}")

    def types(self, node) -> list[TensorType]:
        return [self.type(t) for t in children(node)]

    def type(self, node) -> TensorType:
        dtype, *dims = children(node)
        if dtype not in NUMPY_DTYPES:
            raise self.error(dtype, f"unknown dtype '{dtype}'; expected one of {', '.join(NUMPY_DTYPES)}")
        return TensorType(str(dtype), tuple(self.integer(d, 0, INT64_END, "a dimension") for d in dims))

    # ---- literals -------------------------------------------------------------------------

    def integer(self, token, low=INT64_MIN, end=INT64_END, what="an integer") -> int:
        value = int(token)
        if not low <= value < end:
            raise self.error(token, f"{what} must be in [{low}, {end}), got {token}")
        return value

    def string(self, token) -> str:
        try:
            return json.loads(token[token.index('"'):])
        except ValueError:
            raise self.error(token, f"malformed string {token}") from None

    def number(self, node):
        """An INT or FLOAT literal as a Python int or float; None for anything else."""
        if kind_of(node) == "INT":
            return self.integer(node, INT64_MIN, UINT64_END)
        return float(node) if kind_of(node) == "FLOAT" else None

    # ---- attributes -----------------------------------------------------------------------

    def attrs(self, opname, opdef, node, result_types) -> dict:
        attrs = {}
        pairs = [attr.children for attr in children(node)]
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise self.error(key, f"{opname}: attribute {key} is given twice")
            seen.add(key)
        # The op's own attributes first: with `more_attrs`, they decide what the others are.
        for key, value_node in pairs:
            if key in opdef.attrs:
                attrs[str(key)] = self.attr(opname, key, opdef.attrs[key], value_node, result_types)
        try:
            kinds = opdef.attr_kinds(attrs)
        except TypeCheckError as error:
            raise self.error(opname, str(error)) from None
        for key, value_node in pairs:
            if key not in kinds:
                known = ", ".join(kinds) or "none"
                raise self.error(key, f"{opname} has no attribute '{key}' (its attributes: {known})")
            if key not in opdef.attrs:
                attrs[str(key)] = self.attr(opname, key, kinds[key], value_node, result_types)
        return attrs

    def attr(self, opname, key, kind, value_node, result_types):
        optional = kind.endswith("?")
        kind = kind.rstrip("?")
        if optional and kind_of(value_node) == "NONE":
            return None
        value = ATTR_READERS[kind](self, value_node, result_types)
        if value is None:
            raise self.error(value_node, f"{opname}: attribute {key} must be {KIND_NAMES[kind]}"
                                         f"{' or none' if optional else ''}, got '{self.snippet(value_node)}'")
        return value

    # Readers of the attribute kinds: the value, or None when the text is not of that kind.

    def read_int(self, node, result_types):
        return self.integer(node) if kind_of(node) == "INT" else None

    def read_ints(self, node, result_types):
        if kind_of(node) != "list":
            return None
        values = [self.read_int(item, result_types) for item in children(node)]
        return None if None in values else tuple(values)

    def read_int_pairs(self, node, result_types):
        if kind_of(node) != "list":
            return None
        pairs = [self.read_ints(item, result_types) for item in children(node)]
        return None if any(p is None or len(p) != 2 for p in pairs) else tuple(pairs)

    def read_float(self, node, result_types):
        return self.number(node)

    def read_bool(self, node, result_types):
        return {"TRUE": True, "FALSE": False}.get(kind_of(node))

    def read_str(self, node, result_types):
        return self.string(node) if kind_of(node) == "STRING" else None

    def read_dtype(self, node, result_types):
        return str(node) if kind_of(node) == "NAME" and node in NUMPY_DTYPES else None

    def read_complex(self, node, result_types):
        if kind_of(node) != "complex":
            return None
        re, im = (self.number(part) for part in node.children)
        return None if re is None or im is None else complex(re, im)

    def read_scalar(self, node, result_types):
        for read in (self.read_bool, self.read_complex, self.read_float):
            value = read(node, result_types)
            if value is not None:
                return value
        return None

    def read_array(self, node, result_types):
        """dense<...> with the dtype and shape of the op's (single) result type."""
        if kind_of(node) != "dense":
            return None
        if len(result_types) != 1:
            raise self.error(node, "a dense<...> attribute takes its type from the op's one result type")
        (result_type,) = result_types
        elements = []
        self.collect_elements(node.children[0], result_type, result_type.shape, elements)
        return self.elements_array(elements, result_type).reshape(result_type.shape)

    def collect_elements(self, node, result_type, shape, out):
        """The leaves of a nested-list literal in row-major order, checking it has `shape`."""
        is_list = kind_of(node) == "list"
        if not shape and not is_list:
            out.append(node)
            return
        if not shape or not is_list or len(children(node)) != shape[0]:
            raise self.error(node, f"dense literal does not have the shape of {result_type}")
        for item in children(node):
            self.collect_elements(item, result_type, shape[1:], out)

    def elements_array(self, elements, result_type) -> np.ndarray:
        dtype, name = result_type.numpy_dtype, result_type.dtype
        if name == "bool":
            values = [self.read_bool(e, None) for e in elements]
        elif name in INTS:
            info = np.iinfo(dtype)
            values = [self.integer(e, int(info.min), int(info.max) + 1, f"an {name} element")
                      if kind_of(e) == "INT" else None for e in elements]
        elif name in FLOATS:
            values = [self.number(e) for e in elements]
        else:
            assert name in COMPLEXES
            values = [self.read_complex(e, None) for e in elements]
        for element, value in zip(elements, values):
            if value is None:
                raise self.error(element, f"a dense literal of {result_type} cannot hold '{self.snippet(element)}'")
        if name in FLOATS:
            return cast_floats(values, dtype)
        with np.errstate(all="ignore"):  # complex parts round to the part dtype, as floats do
            return np.array(values, dtype=dtype if name not in COMPLEXES else np.complex128).astype(dtype)


ATTR_READERS = {"int": ModuleBuilder.read_int, "ints": ModuleBuilder.read_ints, "float": ModuleBuilder.read_float,
                "bool": ModuleBuilder.read_bool, "str": ModuleBuilder.read_str, "dtype": ModuleBuilder.read_dtype,
                "array": ModuleBuilder.read_array, "int_pairs": ModuleBuilder.read_int_pairs,
                "scalar": ModuleBuilder.read_scalar}
assert set(ATTR_READERS) == ATTR_KINDS, "every attribute kind needs a reader"


def kind_of(node) -> str:
    """A token's terminal (INT, FLOAT, STRING, NAME, TRUE, FALSE, NONE) or a tree's rule (list, complex, dense)."""
    return node.type if isinstance(node, lark.Token) else node.data


def children(node) -> list:
    """The items of an optional list node (`[a ("," a)*]`), which lark gives as None or [None] when empty."""
    return [] if node is None else [c for c in node.children if c is not None]


def split_region(node):
    params, *ops, outputs = node.children
    return params, ops, outputs
