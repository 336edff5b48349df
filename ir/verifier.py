"""The verifier: checks a module against the graph IR's rules and names the op and line at fault.

  - every op is in the op table, and its type rule (operand, attribute and region counts,
    attribute kinds, the region signatures of control flow) accepts it and gives exactly the
    result types the op stores;
  - every value's array fits an int64 byte offset (ArraySizeVerifyError otherwise: its bytes overflow);
  - SSA: every value is defined once; an operand or a region's output is defined earlier in
    the same region or in an enclosing one (a region's parameters and values are visible only
    inside it); the module's outputs are defined at its top level.

Errors are `VerifyError("line 4: add: ...")`, the line being the op's line in str(module). The
first error in text order is reported, a region's ops before the op that holds the region (as
the parser reads them).
"""
from __future__ import annotations

from ..errors import ArraySizeVerifyError, TypeCheckError, VerifyError
from .core import Module, Op, Region, Value
from .opdef import OPS, fmt_types, infer_types
from .printer import render


def verify(module: Module) -> None:
    """Raise VerifyError naming the first op (in text order) that breaks a rule of the graph IR."""
    Verifier(module).check()


def name_the_op(opname: str, message: str) -> str:
    """Start an error message with the op's name (the type rules' own messages often do already)."""
    return message if message.startswith(opname) else f"{opname}: {message}"


class Verifier:
    def __init__(self, module: Module):
        self.module = module
        self.defined: set[int] = set()  # ids of all values defined so far, in text order
        self._printed = None

    @property
    def printed(self):
        # Printing is only needed for the error message, so it waits for the first error.
        if self._printed is None:
            self._printed = render(self.module)
        return self._printed

    def check(self):
        visible = self.region(self.module.body, set())
        for i, value in enumerate(self.module.outputs):
            if id(value) not in visible:
                line = len(self.printed.lines) - 1  # the `return` line
                raise VerifyError(f"line {line}: return: output {i} {self.describe(value)}")

    def fail(self, op: Op | None, message: str) -> VerifyError:
        """An error at `op`, or at the `func` line for the module's own parameters (op None)."""
        if op is None:
            return VerifyError(f"line 1: func: {message}")
        return VerifyError(f"line {self.printed.op_lines[id(op)]}: {name_the_op(op.name, message)}")

    def describe(self, value) -> str:
        """Why a value is not visible where it is used."""
        if not isinstance(value, Value):
            return f"is not a Value but a {type(value).__name__}"
        name = self.printed.names.get(id(value))
        if name is None:
            return f"({value.type}) is not defined anywhere in the module"
        return (f"{name} ({value.type}) is not visible here: it is defined later, or inside a region "
                f"that does not enclose this use")

    def region(self, region: Region, outer: set[int], owner: Op | None = None) -> set[int]:
        """Check a region's ops; returns the ids of the values visible at its end."""
        visible = set(outer)
        for i, param in enumerate(region.params):
            self.define(param, owner, f"parameter {i}")
            visible.add(id(param))
        for op in region.ops:
            self.op(op, visible)
            visible.update(id(v) for v in op.results)
        if owner is not None:
            for i, value in enumerate(region.outputs):
                if id(value) not in visible:
                    index = next(k for k, r in enumerate(owner.regions) if r is region)
                    raise self.fail(owner, f"region {index} yields, as output {i}, a value that {self.describe(value)}")
        return visible

    def define(self, value, op: Op | None, what: str):
        if not isinstance(value, Value):
            raise self.fail(op, f"{what} is not a Value but a {type(value).__name__}")
        if id(value) in self.defined:
            raise self.fail(op, f"{what} ({value.type}) is already defined elsewhere; SSA values are defined once")
        self.defined.add(id(value))
        problem = value.type.size_problem()
        if problem:
            raise ArraySizeVerifyError(str(self.fail(op, f"{what} {problem}")))

    def op(self, op: Op, visible: set[int]):
        if op.name not in OPS:
            raise self.fail(op, f"unknown op '{op.name}'")
        for i, value in enumerate(op.operands):
            if id(value) not in visible:
                raise self.fail(op, f"operand {i} {self.describe(value)}")
        for i, value in enumerate(op.results):
            self.define(value, op, f"result {i}")
        # Regions first, as the parser reads them: an error inside a region is the root cause of
        # the odd region signature the op's own rule would report.
        for region in op.regions:
            self.region(region, visible, owner=op)
        try:
            inferred = infer_types(op.name, [v.type for v in op.operands], op.attrs, op.regions)
        except TypeCheckError as error:
            raise self.fail(op, str(error)) from None
        except Exception as error:  # noqa: BLE001  (a rule that trips over input it does not validate)
            raise self.fail(op, f"the type rule failed on these operands and attributes "
                                f"({type(error).__name__}: {error})") from error
        stored = [v.type for v in op.results]
        if stored != inferred:
            raise self.fail(op, f"the result types ({fmt_types(stored)}) differ from the op's type rule "
                                f"({fmt_types(inferred)})")
