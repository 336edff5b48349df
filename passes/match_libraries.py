"""match_libraries: contractions, and the ops a library can fuse with them, become `library_call`s.

It runs after canonicalize and before fusion. The registered libraries' pattern tables (their
`rules`, ir/ops/library.py), in registration order, are applied as the module is rebuilt op by op: each op, as it is built, is
replaced by the first rule that matches it and does not decline. Ops are built in order, so a
rule sees its operands already matched, and a chain (dot_general, scale, add C, add bias,
activation) folds into one call in one sweep. The calls and ops left unread are then dropped (DCE).

Absorbing ops into a call must not make the graph compute the call twice: a rewrite asks
`m.owns(value)` whether the ops it matched are the only readers of the call's result `value`
and of everything they compute from it, counted in the input module (outputs count as readers).
"""
from __future__ import annotations

from collections import Counter

from ..ir.core import Module, Op, Value, walk
from ..ir.ops.library import LIBRARIES
from ..ir.targets import Target, get_target
from .rewrite import Rebuilder, Scope, build_op, eliminate_dead_code

# How far below a rule's root `owns` looks for the ops that read the call's result. Deeper than any
# pattern (gelu's is 9 ops deep), and it bounds the search; a reader missed makes `owns` say no.
MAX_PATTERN_DEPTH = 16


def use_counts(module: Module) -> Counter:
    """How many times each value (by id) is read: by ops, by the yields of regions and as an output."""
    counts = Counter(map(id, module.outputs))
    for op in walk(module.body):
        counts.update(map(id, op.operands))
        for region in op.regions:
            counts.update(map(id, region.outputs))
    return counts


class Match:
    """What a rewrite gets as `m`: a builder of ops in the module being built, and `owns`."""

    def __init__(self, matcher: "LibraryMatcher", scope: Scope, root: Op):
        self.matcher, self.scope, self.root = matcher, scope, root

    def op(self, name: str, *operands: Value, **attrs) -> Value:
        (result,) = self.ops(name, *operands, **attrs)
        return result

    def ops(self, name: str, *operands: Value, **attrs) -> list[Value]:
        """The results of a new op of any number of results (a library_call of several, a sort's rewrite)."""
        return self.matcher.emit(self.scope, name, list(operands), attrs, location=self.root.location)

    def owns(self, value: Value, inputs=()) -> bool:
        """Whether the matched ops (from the root down to `value`) are the only readers of `value` and of the
        values between it and the root, and none of `inputs` (the new call's other operands) is computed
        from `value`: then the call that made `value` is left unread."""
        depends: dict[int, bool] = {}

        def reaches(v: Value, depth: int = MAX_PATTERN_DEPTH) -> bool:
            if v is value:
                return True
            if v.producer is None or depth == 0:
                return False
            if id(v) not in depends:
                depends[id(v)] = any([reaches(u, depth - 1) for u in v.producer.operands])
            return depends[id(v)]

        if any(reaches(v) for v in inputs):
            return False
        reads: Counter = Counter()
        pending, seen = [self.root], {id(self.root)}
        while pending:
            op = pending.pop()
            for operand in filter(reaches, op.operands):
                reads[operand] += 1
                if operand is not value and id(operand.producer) not in seen:
                    seen.add(id(operand.producer))
                    pending.append(operand.producer)
        return all(self.matcher.input_reads(v) == n for v, n in reads.items())


class LibraryMatcher(Rebuilder):
    def __init__(self, module: Module, rules):
        self.uses = use_counts(module)
        self.input_of: dict[int, Value] = {}    # a built value (by id) -> the input value it stands for
        self.rules_by_op: dict[str, list] = {}  # the rules whose pattern's top op has that name, in table order
        for pattern, rewrite in rules:
            for name in pattern.ops:
                self.rules_by_op.setdefault(name, []).append((pattern, rewrite))

    def input_reads(self, value: Value) -> int | None:
        """How many times the input value that `value` stands for is read; None for a value rules built."""
        source = self.input_of.get(id(value))
        return None if source is None else self.uses[id(source)]

    def copy_op(self, op: Op, scope: Scope):
        super().copy_op(op, scope)
        self.input_of.update(zip(map(id, scope.lookup(op.results)), op.results))

    def emit(self, scope, name, operands, attrs, regions=(), types=None, location=None) -> list[Value]:
        candidate = build_op(name, operands, attrs, regions, types, location)
        for pattern, rewrite in self.rules_by_op.get(name, ()):
            bindings = pattern.match_op(candidate, {})
            if bindings is not None:
                replacement = rewrite(Match(self, scope, candidate), **bindings)
                if replacement is not None:
                    # A rewrite of a one-result op returns a value; of a several-result op (sort), a list.
                    replacements = list(replacement) if isinstance(replacement, (list, tuple)) else [replacement]
                    assert [v.type for v in replacements] == [v.type for v in candidate.results], (name, replacement)
                    return replacements
        scope.ops.append(candidate)
        return candidate.results


def library_rules() -> list:
    """The registered libraries' rules, in registration order."""
    return [rule for library in LIBRARIES.values() for rule in library.rules]


def match_libraries(module: Module, rules=None) -> Module:
    """A copy of `module` with its contractions (and what they fuse) as library calls."""
    return eliminate_dead_code(LibraryMatcher(module, library_rules() if rules is None else rules).run(module))


class SolutionSelector(Rebuilder):
    """Copies a module, naming in every library_call the solution its library selects for `target`."""

    def __init__(self, target: Target):
        self.target = target

    def emit(self, scope, name, operands, attrs, regions=(), types=None, location=None) -> list[Value]:
        select = LIBRARIES[attrs["library"]].select if name == "library_call" else None
        if select is not None and not attrs["solution"]:
            candidate = build_op(name, operands, attrs, regions, types, location)
            attrs = {**attrs, "solution": select(candidate, self.target)}
        return super().emit(scope, name, operands, attrs, regions, types, location)


def select_solutions(module: Module, target: Target | None = None) -> Module:
    """A copy of `module` whose library calls name the solution each runs on `target` (default gfx942)."""
    return SolutionSelector(target or get_target()).run(module)


select_solutions.takes_target = True
