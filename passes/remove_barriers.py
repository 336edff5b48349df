"""remove_barriers: each `optimization_barrier` replaced by its operands.

The barrier has done its work once canonicalize (no CSE or folding across it) and fusion (never
grouped, so no kernel computes through it) have run: what reads its results was kept apart from
what reads its operands. It runs right after fusion, where no pass that could merge them follows,
so the schedule, in_place and the backends never see the op.
"""
from __future__ import annotations

from ..ir.core import Module, Op, walk
from .rewrite import Rebuilder, Scope


class BarrierRemover(Rebuilder):
    def copy_op(self, op: Op, scope: Scope):
        if op.name == "optimization_barrier":
            scope.bind(op.results, scope.lookup(op.operands))
        else:
            super().copy_op(op, scope)


def remove_barriers(module: Module) -> Module:
    """A copy of `module` without optimization barriers (each result is its operand); `module` itself
    when it has none."""
    if not any(op.name == "optimization_barrier" for op in walk(module.body)):
        return module
    return BarrierRemover().run(module)
