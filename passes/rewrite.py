"""Rebuilding a module op by op: the engine of every pass that returns a new module.

A pass never mutates its input. `Rebuilder` copies a module into fresh values and ops; a pass
subclasses it and overrides `emit` (to replace an op as it is copied) or `copy_op` (to drop or
inline one). Ops inside a region may use values of enclosing regions, so the map from input
values to built values is scoped: a region sees its parents' entries, never the reverse.
"""
from __future__ import annotations

from ..ir.core import Module, Op, Region, Value, make_op
from ..ir.opdef import infer_types
from ..ir.ops.callback import has_effects


# Ops whose regions are closed: they read only their parameters (a fusion's kernel). Their regions are
# copied in a fresh scope, so no rewrite can make them capture a value of the enclosing region.
ISOLATED_FROM_ABOVE = frozenset({"fusion"})


class Scope:
    """A region being built: its ops so far, and the map from input values (by id) to built values."""

    def __init__(self, parent: "Scope | None" = None):
        self.ops: list[Op] = []
        self.values: dict[int, Value] = dict(parent.values) if parent else {}

    def lookup(self, values) -> list[Value]:
        return [self.values[id(v)] for v in values]

    def bind(self, old_values, new_values):
        self.values.update(zip(map(id, old_values), new_values))


class Rebuilder:
    """Copies a module; subclasses rewrite ops on the way by overriding `emit` or `copy_op`."""

    def run(self, module: Module) -> Module:
        return Module(module.name, self.copy_region(module.body, None), module.donated)

    def new_scope(self, parent: Scope | None) -> Scope:
        return Scope(parent)

    def copy_region(self, region: Region, parent: Scope | None) -> Region:
        scope = self.new_scope(parent)
        params = [Value(p.type, None, p.name_hint) for p in region.params]
        scope.bind(region.params, params)
        outputs = self.copy_ops(region, scope)
        return Region(params, scope.ops, outputs)

    def copy_ops(self, region: Region, scope: Scope) -> list[Value]:
        """Copy a region's ops into `scope` (its parameters must be bound); returns its outputs there."""
        for op in region.ops:
            self.copy_op(op, scope)
        return scope.lookup(region.outputs)

    def copy_regions(self, op: Op, scope: Scope) -> list[Region]:
        parent = None if op.name in ISOLATED_FROM_ABOVE else scope
        return [self.copy_region(r, parent) for r in op.regions]

    def copy_op(self, op: Op, scope: Scope):
        regions = self.copy_regions(op, scope)
        results = self.emit(scope, op.name, scope.lookup(op.operands), op.attrs, regions,
                            [v.type for v in op.results], op.location)
        scope.bind(op.results, results)

    def emit(self, scope: Scope, name, operands, attrs, regions=(), types=None, location=None) -> list[Value]:
        """Append op `name` to `scope`; returns its results."""
        op = build_op(name, operands, attrs, regions, types, location)
        scope.ops.append(op)
        return op.results


def build_op(name, operands, attrs, regions=(), types=None, location=None) -> Op:
    """A new op, its result types inferred by the op table when not given."""
    if types is None:
        types = infer_types(name, [v.type for v in operands], attrs, regions)
    return make_op(name, operands, attrs, types, regions, location)


def uses_of(op: Op):
    """The values `op` reads: its operands and, in its regions, every value their ops or yields read."""
    yield from op.operands
    for region in op.regions:
        for inner in region.ops:
            yield from uses_of(inner)
        yield from region.outputs


def copy_module(module: Module) -> Module:
    """A deep copy of `module`: fresh values, ops and regions."""
    return Rebuilder().run(module)


class DeadCodeRemover(Rebuilder):
    """Copies only the ops in `live` (a set of op ids)."""

    def __init__(self, live: set[int]):
        self.live = live

    def copy_op(self, op: Op, scope: Scope):
        if id(op) in self.live:
            super().copy_op(op, scope)


def mark_live(region: Region, live_values: set[int], live: set[int]):
    """Add to `live` every op of `region` (and of nested regions) that an output depends on.

    An op none of whose results is used is dead, `while` and `cond` included, unless it has an
    effect (ir/ops/callback.py: a host callback, or a region op holding one), which runs whether or
    not its results are read. Walking backwards sees every use before its definition, captured
    uses included.
    """
    live_values.update(map(id, region.outputs))
    for op in reversed(region.ops):
        if any(id(v) in live_values for v in op.results) or has_effects(op):
            live.add(id(op))
            live_values.update(map(id, op.operands))
            for inner in op.regions:
                mark_live(inner, live_values, live)


def live_ops(module: Module) -> set[int]:
    """The ids of the ops (in every region) that the module's outputs depend on."""
    live: set[int] = set()
    mark_live(module.body, set(), live)
    return live


def eliminate_dead_code(module: Module) -> Module:
    """DCE: a copy of `module` without the ops whose results nothing uses (in every region)."""
    return DeadCodeRemover(live_ops(module)).run(module)
