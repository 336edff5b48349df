"""licm: loop-invariant code motion (XLA's WhileLoopInvariantCodeMotion). An op of a `while`'s
condition or body whose operands are all defined outside the loop (or are results of other such
ops) computes the same value every iteration: it moves before the loop and runs once.

Not moved:
- sources (constants, iota): the executable holds a constant once anyway, and fusion computes
  an iota where it is read, for free;
- ops whose result has more elements than their operands together (a broadcast, a pad): inside
  the loop fusion reads them by index arithmetic, outside they would be materialized.
  An op that leaves reads its copy of such ops, made before the loop too;
- ops with regions (loops, branches) and ops inside a `cond`'s branches, which run only when
  taken;
- host callbacks (ir/ops/callback.py), which run once per iteration.

A move takes an op out of one loop; the pass repeats until nothing moves, so an op invariant in
nested loops leaves them all.
"""
from __future__ import annotations

from ..ir.core import Module, Op, Region
from ..ir.ops.callback import EFFECT_OPS
from .opclasses import SOURCES
from .rewrite import Rebuilder, Scope, eliminate_dead_code


def movable(op: Op) -> bool:
    if op.name in SOURCES or op.regions or op.name in EFFECT_OPS:   # a callback runs every iteration
        return False
    return sum(v.type.size for v in op.results) <= sum(v.type.size for v in op.operands)


def invariant_ops(loop: Op) -> tuple[list[Op], set[int]]:
    """(the ops of the loop's regions that run once before it, in their order; the ids of those
    among them that leave the loop). The others are sources and size-inflating ops that the
    leaving ones read: they run before the loop for them, and stay inside for the loop's own
    ops (dead code elimination drops an inside copy that nothing reads)."""
    inside = set()          # ids of values the loop's regions define (parameters and results)
    for region in loop.regions:
        inside.update(map(id, region.params))
        for op in region.ops:
            inside.update(map(id, op.results))
    invariant, producers = [], {}
    for region in loop.regions:
        for op in region.ops:
            if not op.regions and not any(id(v) in inside for v in op.operands):
                invariant.append(op)
                inside.difference_update(map(id, op.results))
                producers.update((id(v), op) for v in op.results)
    leaving = {id(op) for op in invariant if movable(op)}
    needed = set(leaving)
    for op in reversed(invariant):
        if id(op) in needed:
            needed.update(id(producers[id(v)]) for v in op.operands if id(v) in producers)
    return [op for op in invariant if id(op) in needed], leaving


class InvariantMover(Rebuilder):
    """Copies a module, emitting each loop's invariant ops before the loop instead of inside it."""

    def __init__(self):
        self.moved: set[int] = set()

    def copy_op(self, op: Op, scope: Scope):
        if id(op) in self.moved:
            return                       # emitted before its loop
        if op.name == "while":
            before, leaving = invariant_ops(op)
            self.moved |= leaving
            for inner in before:
                results = self.emit(scope, inner.name, scope.lookup(inner.operands), inner.attrs, (),
                                    [v.type for v in inner.results], inner.location)
                scope.bind(inner.results, results)
        super().copy_op(op, scope)


def has_invariant_ops(region: Region) -> bool:
    for op in region.ops:
        if op.name == "while" and invariant_ops(op)[1]:
            return True
        if any(has_invariant_ops(inner) for inner in op.regions):
            return True
    return False


def licm(module: Module) -> Module:
    if not has_invariant_ops(module.body):
        return module
    while has_invariant_ops(module.body):
        module = InvariantMover().run(module)
    return eliminate_dead_code(module)
