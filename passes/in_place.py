"""in_place: updates that write into their operand's buffer, and the copies that make that safe
(XLA's can-share-buffer analysis and copy insertion). The last pass: it sees the ops that run.

`dynamic_update_slice` and `scatter` become their in-place forms (ir/ops/shape.py:
IN_PLACE_FORMS) when their region owns the operand's buffer and nothing reads that buffer after
the update; an in-place form where that does not hold (written by hand in IR text) goes back to
its plain form, so a compiled program never writes over an array it does not own. The executable binds the result to the operand's array, and the kernel writes only
the updated elements: an update of one element inside a loop costs O(1), not a copy.

Buffers. A reshape is a view (the executable runs it as one), so each value has the set of
*roots* (buffers) it may hold: a kernel's result (a fusion, a library call, an update, a copy) is
a fresh root; a reshape or an in-place update holds its operand's roots; a `cond` result, or a
`while` result the loop does not own, may hold any root its operands or its regions' captured
values hold, or a new one. A region *owns* a root that no one outside it can read: its kernels'
results, the parameters of a loop body that its `while` hands over owned (below), and a module's
donated arguments (`Module.donated`). The other arguments (the caller's arrays), constants and
values of enclosing regions are never owned.

An update is in place when its operand holds exactly one root r, r is owned, no other operand of
the update may hold r, and no later op (nor any op inside a later op's regions) reads a value
defined before the update that may hold r, nor does the region yield one.

Loops. A `while` owns carry k when its body, owning it, would write carry k's buffer in place
(directly or through an inner loop), and yields as carry k that buffer or a fresh one of its own
that no other yielded value may hold. The initial value must then be the loop's alone: where the
enclosing region does not own it, still reads it afterwards, or the loop reads it otherwise too (as
another carry, or captured), a `copy` before the loop gives the loop its own buffer, once per entry
of the loop instead of once per update.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ..ir.core import Module, Op, Region, Value, walk
from ..ir.ops.shape import IN_PLACE_FORMS, IN_PLACE_OPS
from .rewrite import Rebuilder, Scope, uses_of

PLAIN_FORMS = {**{plain: plain for plain in IN_PLACE_FORMS}, **{v: k for k, v in IN_PLACE_FORMS.items()}}
VIEWS = frozenset({"reshape"})   # ops the executable runs as a view of their operand
HELD = frozenset({"constant"})   # results the executable holds across calls: never written


@dataclass
class Decisions:
    in_place: set[int] = field(default_factory=set)            # ids of the updates made in place
    copies: dict[int, set[int]] = field(default_factory=dict)  # while id -> its operands copied first

    def merge(self, other: "Decisions") -> None:
        self.in_place |= other.in_place
        self.copies.update(other.copies)


_roots = itertools.count()


def new_root() -> int:
    return next(_roots)


def region_uses(op: Op):
    """The values an op's regions read (captured ones included), not its operands."""
    for region in op.regions:
        for inner in region.ops:
            yield from uses_of(inner)
        yield from region.outputs


class RegionPlan:
    """The in-place decisions of one region, given which of its parameters it owns."""

    def __init__(self, region: Region, owned_params: set[int], decisions: Decisions):
        self.region, self.decisions = region, decisions
        self.param_roots = [new_root() for _ in region.params]
        self.roots: dict[int, frozenset] = {id(p): frozenset({r}) for p, r in zip(region.params, self.param_roots)}
        self.owned = {self.param_roots[i] for i in owned_params}
        self.made: set[int] = set()       # roots of the buffers this region's kernels made
        self.written: set[int] = set()    # owned roots written over in place (here or in inner loops)
        for index, op in enumerate(region.ops):
            self.plan_op(index, op)

    # -- what the region found --

    @property
    def written_params(self) -> set[int]:
        return {i for i, root in enumerate(self.param_roots) if root in self.written}

    def output_roots(self) -> list[frozenset]:
        return [self.roots_of(v) for v in self.region.outputs]

    # -- roots --

    def roots_of(self, value: Value) -> frozenset:
        # A value of an enclosing region (or of an inner region) is a root of its own, never owned here.
        return self.roots.get(id(value), frozenset({("elsewhere", id(value))}))

    def fresh(self) -> frozenset:
        root = new_root()
        self.made.add(root)
        self.owned.add(root)
        return frozenset({root})

    def sole_owned_root(self, value: Value) -> int | None:
        roots = self.roots_of(value)
        return next(iter(roots)) if len(roots) == 1 and next(iter(roots)) in self.owned else None

    def read_after(self, index: int, root: int) -> bool:
        """Whether an op after `index` (or inside one's regions), or the region's outputs, read a
        value that may hold `root` and is defined before op `index` (asked before op `index`'s
        results have roots, so those are the values that have them now)."""
        later = itertools.chain((v for op in self.region.ops[index + 1:] for v in uses_of(op)), self.region.outputs)
        return any(root in self.roots.get(id(v), ()) for v in later)

    # -- ops --

    def plan_op(self, index: int, op: Op) -> None:
        if op.name in PLAIN_FORMS:
            root = self.sole_owned_root(op.operands[0])
            if (root is not None and not any(root in self.roots_of(v) for v in op.operands[1:])
                    and not self.read_after(index, root)):
                self.decisions.in_place.add(id(op))
                self.written.add(root)
                self.roots[id(op.result)] = frozenset({root})
            else:
                self.roots[id(op.result)] = self.fresh()
        elif op.name in VIEWS:
            self.roots[id(op.result)] = self.roots_of(op.operands[0])
        elif op.name == "while":
            self.plan_while(index, op)
        elif op.name == "cond":
            for branch in op.regions:
                RegionPlan(branch, set(), self.decisions)
            self.bind_unowned(op)
        elif op.name in HELD:
            self.roots[id(op.result)] = frozenset({new_root()})
        else:
            for v in op.results:
                self.roots[id(v)] = self.fresh()

    def bind_unowned(self, op: Op, results=None) -> None:
        """Results that may hold any root the op reads, or a new one."""
        may = frozenset().union(*(self.roots_of(v) for v in uses_of(op))) | {new_root()}
        for v in results if results is not None else op.results:
            self.roots[id(v)] = may

    def plan_while(self, index: int, op: Op) -> None:
        cond, body = op.regions
        RegionPlan(cond, set(), self.decisions)
        carried = set(range(len(op.operands)))
        # The carries the body would write if it owned them all; of those, the ones it yields
        # unshared; then decided again with exactly those owned, until that holds.
        trial = RegionPlan(body, carried, Decisions())
        owned = trial.written_params & yielded_unshared(trial, carried)
        while True:
            decisions = Decisions()
            plan = RegionPlan(body, owned, decisions)
            kept = owned & yielded_unshared(plan, owned)
            if kept == owned:
                break
            owned = kept
        self.decisions.merge(decisions)
        inside = list(region_uses(op))
        copies = set()
        for k in sorted(owned):
            root = self.sole_owned_root(op.operands[k])
            also_read = root is None or any(root in self.roots_of(v) for j, v in enumerate(op.operands) if j != k) \
                or any(root in self.roots_of(v) for v in inside)
            if also_read or self.read_after(index, root):
                copies.add(k)
            else:
                self.written.add(root)
        if copies:
            self.decisions.copies[id(op)] = copies
        for k, v in enumerate(op.results):
            if k in owned:
                # The loop's own buffer: the copy's, one the body made, or the operand's (dead here).
                self.roots[id(v)] = self.fresh() if k in copies else self.roots_of(op.operands[k])
        self.bind_unowned(op, [v for k, v in enumerate(op.results) if k not in owned])


def yielded_unshared(plan: RegionPlan, candidates: set[int]) -> set[int]:
    """The carries k of `candidates` that the body yields as its parameter k's buffer or one it
    made, which no other yielded value may hold."""
    outputs = plan.output_roots()
    kept = set()
    for k in candidates:
        mine = outputs[k]
        own = len(mine) == 1 and (next(iter(mine)) == plan.param_roots[k] or next(iter(mine)) in plan.made)
        others = frozenset().union(*(r for j, r in enumerate(outputs) if j != k))
        if own and not mine & others:
            kept.add(k)
    return kept


class InPlaceRewriter(Rebuilder):
    """Copies the module with the decided updates in their in-place forms and the copies before loops."""

    def __init__(self, decisions: Decisions):
        self.decisions = decisions

    def copy_op(self, op: Op, scope: Scope):
        if op.name not in PLAIN_FORMS and id(op) not in self.decisions.copies:
            return super().copy_op(op, scope)
        regions = self.copy_regions(op, scope)
        operands = scope.lookup(op.operands)
        for k in sorted(self.decisions.copies.get(id(op), ())):
            (operands[k],) = self.emit(scope, "copy", [operands[k]], {}, location=op.location)
        name = op.name
        if name in PLAIN_FORMS:
            plain = PLAIN_FORMS[name]
            name = IN_PLACE_FORMS[plain] if id(op) in self.decisions.in_place else plain
        results = self.emit(scope, name, operands, op.attrs, regions, [v.type for v in op.results], op.location)
        scope.bind(op.results, results)


def in_place(module: Module) -> Module:
    decisions = Decisions()
    RegionPlan(module.body, set(module.donated), decisions)
    if not decisions.in_place and not any(op.name in IN_PLACE_OPS for op in walk(module.body)):
        return module
    return InPlaceRewriter(decisions).run(module)
