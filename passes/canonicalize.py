"""canonicalize: constant folding, algebraic simplification (rules.py), CSE and DCE, to a fixed point.

One sweep (`simplify`) rebuilds the module op by op; each op, as it is built, is
  1. rewritten by the first rule of rules.RULES that matches it (the replacement is built the same way);
  2. folded to a constant when all its operands are constants, its result has at most FOLD_LIMIT
     elements and folding does not grow the constant data (a broadcast of a scalar stays one); a
     `library_call` is never folded: its reference is a numpy model of the library's kernels, and
     the program asked for the kernels (as XLA leaves custom calls alone);
  3. replaced by an earlier op with the same name, operands and attributes (CSE; ops with regions
     are never merged). A region sees the ops of its enclosing regions, never the reverse.
An `optimization_barrier` is never folded or merged: what reads its results stays apart from what
reads its operands (checkpoint's recomputation from the forward pass). Nor is a `host_callback` or
an `io_callback`: each runs the user's function when the program runs. A `pure_callback` is never folded (the user's
function runs when the program runs, never at compile time).
`cond` with a constant index (or one branch) is replaced by the chosen branch's ops; `while` whose
condition is constantly false by its initial values. Then DCE drops what nothing uses.
`canonicalize` repeats simplify + DCE until a sweep changes nothing.
"""
from __future__ import annotations

import numpy as np

from ..ir.core import Module, Op, Value, walk
from ..ir.ops.callback import EFFECT_OPS
from ..ir.opdef import get_opdef
from .patterns import splat_value
from .rewrite import DeadCodeRemover, Rebuilder, Scope, build_op, eliminate_dead_code, live_ops
from .rules import RULES

FOLD_LIMIT = 100_000       # elements: larger results are not materialised as constants
MAX_SWEEPS = 20            # a safety net: every rule shrinks the module, so few sweeps are needed


def attr_key(value):
    """A hashable, exact form of an attribute: arrays by dtype, shape and bytes; floats by repr (0.0 != -0.0)."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
    if isinstance(value, tuple):
        return tuple(attr_key(v) for v in value)
    if isinstance(value, (float, complex, np.floating, np.complexfloating)):
        return (type(value).__name__, repr(value))
    return value


def is_false(value: Value) -> bool:
    scalar = splat_value(value)
    return scalar is not None and not scalar


class SimplifyScope(Scope):
    """A scope with a CSE table: (op name, operand ids, attributes) -> results."""

    def __init__(self, parent: "SimplifyScope | None" = None):
        super().__init__(parent)
        self.cse: dict = dict(parent.cse) if parent else {}


class Builder:
    """What a rule's rewrite uses to build ops: each is simplified as it is built."""

    def __init__(self, simplifier: "Simplifier", scope: SimplifyScope, location):
        self.simplifier, self.scope, self.location = simplifier, scope, location

    def op(self, name: str, *operands: Value, **attrs) -> Value:
        (result,) = self.simplifier.emit(self.scope, name, list(operands), attrs, location=self.location)
        return result

    def splat(self, scalar, type) -> Value:
        """`scalar` converted to `type`'s dtype, broadcast to its shape."""
        value = self.op("constant", value=np.array(scalar).astype(type.numpy_dtype))
        return self.op("broadcast_in_dim", value, shape=type.shape, broadcast_dimensions=()) if type.shape else value


class Simplifier(Rebuilder):
    def __init__(self, rules=RULES, fold=True, cse=True):
        self.fold, self.cse = fold, cse
        self.rules_by_op: dict[str, list] = {}   # the rules whose pattern's top op has that name, in table order
        for pattern, rewrite in rules:
            for name in pattern.ops:
                self.rules_by_op.setdefault(name, []).append((pattern, rewrite))
        self.changes = 0   # rewrites, folds, CSE hits and control flow removed in this sweep

    def new_scope(self, parent):
        return SimplifyScope(parent)

    def copy_op(self, op: Op, scope: SimplifyScope):
        if op.name == "cond":
            branch = self.chosen_branch(op, scope)
            if branch is not None:
                scope.bind(branch.params, scope.lookup(op.operands[1:]))
                scope.bind(op.results, self.copy_ops(branch, scope))
                self.changes += 1
                return
        regions = self.copy_regions(op, scope)
        if op.name == "while" and is_false(regions[0].outputs[0]):
            scope.bind(op.results, scope.lookup(op.operands))
            self.changes += 1
            return
        results = self.emit(scope, op.name, scope.lookup(op.operands), op.attrs, regions,
                            [v.type for v in op.results], op.location)
        scope.bind(op.results, results)

    @staticmethod
    def chosen_branch(op: Op, scope: SimplifyScope):
        """The branch a `cond` always takes (clamped index, as lax.switch), or None if not known."""
        index = splat_value(scope.values[id(op.operands[0])])
        if len(op.regions) == 1:
            return op.regions[0]
        if index is None:
            return None
        return op.regions[min(max(int(index), 0), len(op.regions) - 1)]

    def emit(self, scope, name, operands, attrs, regions=(), types=None, location=None) -> list[Value]:
        candidate = build_op(name, operands, attrs, regions, types, location)
        replacement = self.rewrite(candidate, scope) or self.folded(candidate, scope)
        if replacement is not None:
            assert [v.type for v in replacement] == [v.type for v in candidate.results], (name, replacement)
            self.changes += 1
            return replacement
        key = self.cse_key(candidate)
        if key is not None and key in scope.cse:
            self.changes += 1
            return scope.cse[key]
        scope.ops.append(candidate)
        if key is not None:
            scope.cse[key] = candidate.results
        return candidate.results

    def rewrite(self, op: Op, scope: SimplifyScope) -> list[Value] | None:
        if len(op.results) != 1:
            return None
        for pattern, rewrite in self.rules_by_op.get(op.name, ()):
            bindings = pattern.match_op(op, {})
            if bindings is not None:
                result = rewrite(Builder(self, scope, op.location), **bindings)
                if result is not None:
                    return [result]
        return None

    def folded(self, op: Op, scope: SimplifyScope) -> list[Value] | None:
        """The op's results as constants, if it can and should be evaluated now."""
        if (not self.fold or op.regions or not op.operands or len(op.results) != 1
                or op.name in ("library_call", "optimization_barrier", "pure_callback") or op.name in EFFECT_OPS):
            return None
        producers = [v.producer for v in op.operands]
        if not all(p is not None and p.name == "constant" for p in producers):
            return None
        result_type = op.result.type
        if result_type.size > min(FOLD_LIMIT, sum(v.type.size for v in op.operands)):
            return None
        arrays = [p.attrs["value"] for p in producers]
        result = np.asarray(get_opdef(op.name).reference(*arrays, **op.attrs))
        value = np.array(result.astype(result_type.numpy_dtype, copy=False).reshape(result_type.shape))
        return self.emit(scope, "constant", [], {"value": value}, location=op.location)

    def cse_key(self, op: Op):
        if not self.cse or op.regions or op.name == "optimization_barrier" or op.name in EFFECT_OPS:
            return None
        return (op.name, tuple(map(id, op.operands)), tuple(sorted((k, attr_key(v)) for k, v in op.attrs.items())))


def simplify(module: Module, rules=RULES, fold=True, cse=True) -> Module:
    """One sweep of rewriting, constant folding and CSE (no DCE: replaced ops stay until it runs)."""
    return Simplifier(rules, fold, cse).run(module)


def fold_constants(module: Module) -> Module:
    """Constant folding alone, then DCE."""
    return eliminate_dead_code(simplify(module, rules=(), cse=False))


def eliminate_common_subexpressions(module: Module) -> Module:
    """CSE alone, then DCE."""
    return eliminate_dead_code(simplify(module, rules=(), fold=False))


def canonicalize(module: Module, rules=RULES) -> Module:
    """simplify + DCE, repeated until a sweep changes nothing. Does not modify `module`."""
    current = module
    for _ in range(MAX_SWEEPS):
        simplifier = Simplifier(rules)
        simplified = simplifier.run(current)
        live = live_ops(simplified)
        has_dead_ops = len(live) < sum(1 for _ in walk(simplified.body))
        current = DeadCodeRemover(live).run(simplified) if has_dead_ops else simplified
        if not simplifier.changes and not has_dead_ops:
            break
    return current
