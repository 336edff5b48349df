"""fusion: group the ops of every region into `fusion` ops (ir/ops/fusion.py), one kernel each.

What a fused region holds (the contract kernel generation relies on). Each value in it is either
  - a *leaf*: made by `constant`, `iota` or a data-movement op (broadcast_in_dim, reshape,
    transpose, slice, rev, pad, concatenate, dynamic_slice, convert) from region parameters and
    other leaves. A leaf may have any shape: a kernel computes its elements on demand by index
    arithmetic. A dynamic_slice's element c is its operand's c + s, s its start scalars clamped
    as the op's reference does; the starts (SCALAR_OPERANDS_FROM) may also be computed values;
  - *computed*: by an elementwise op (its operands have its shape, or are scalars), a `reduce`,
    or a *row broadcast* (broadcast_in_dim of a computed per-row value back over the reduced
    axes, the kept axes in order). A computed value has an iteration shape: for kind "loop" the
    one shape of all the fusion's results; for kind "reduction" the operand shape S of its
    reduces (all alike: one S, one set of reduced axes A) or the reduced shape S\\A. A 0-d
    computed value (a dynamic_slice's start arithmetic) needs none: the kernel computes it where
    it is read. A row broadcast needs rows of at most MAX_ROW_ELEMENTS: the kernel keeps a row
    on chip between its phases.
  Every result has an iteration shape. Softmax and layernorm over rows are one "reduction"
  fusion each: a kernel that reduces each row, broadcasts the result back and reduces again.

How groups form. Each fusible op starts as its own group; then, until nothing changes,
  - a group merges with the groups producing its operands (producer-consumer fusion), and
  - groups that read one value merge (sibling fusion: one multi-output kernel reads it once),
whenever the merged group keeps the contract above and the merge makes no cycle between groups:
merging A and B is illegal when a path A -> X -> B leads through a group X outside both (checked
on the group graph with networkx). A value a group makes and something outside it uses becomes
one of the fusion's results, but for a broadcast that expands its operand: each kernel reading one
broadcasts its operand itself (a broadcast read by several ops is first copied, one per reader),
so no kernel writes out broadcast data. A reshape left a group of its own (read by an unfused op, a
library call, or a result) stays a reshape: the executable runs it as a view, with no kernel.
Small constants, iota and data movement of these are not
grouped but copied into every fusion that reads them. Ops with regions (while, cond; their regions are
fused in turn), dot_general, convolutions, gather/scatter, sort, fft, ... stay unfused: they get
their own kernels or library calls. Constants stay at the top of their region.
Host callbacks are unfused, and the nodes with effects (a callback, a loop or branch holding one)
get edges in program order, so they run in the order the program made them.
"""
from __future__ import annotations

import math

import networkx as nx

from ..ir.core import Module, Op, Region, Value, walk
from ..ir.ops.callback import has_effects
from .opclasses import DATA_MOVEMENT, ELEMENTWISE, SOURCES
from .canonicalize import eliminate_common_subexpressions
from .rewrite import Rebuilder, Scope, uses_of
from .rules import is_unit_insertion

FUSIBLE = ELEMENTWISE | DATA_MOVEMENT | SOURCES | {"reduce"}
SMALL_CONSTANT_ELEMENTS = 1024   # constants up to this size are copied into the kernels that read them
MAX_ROW_ELEMENTS = 16384         # a row of f32 kept in 64 KiB of LDS, for multi-phase row kernels


# A leaf's operands from this position on are scalars it reads once, at the empty index, not element
# by element: they may be computed in the leaf's group, which leaves it a leaf (a 0-d computed value
# has no iteration shape: a kernel computes it where it is read).
SCALAR_OPERANDS_FROM = {"dynamic_slice": 1}   # its start indices


def is_expanding_broadcast(op: Op) -> bool:
    return op.name == "broadcast_in_dim" and op.result.type.size > op.operands[0].type.size


def reduced_shape(shape, axes) -> tuple[int, ...]:
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def is_row_broadcast(op: Op, shape, axes) -> bool:
    """A broadcast_in_dim from the reduced shape back to `shape` that puts each kept axis in place."""
    kept_axes = tuple(i for i in range(len(shape)) if i not in axes)
    return op.result.type.shape == tuple(shape) and op.attrs["broadcast_dimensions"] == kept_axes


class Group:
    """A fusion group, with what the contract checks need to know about it."""

    def __init__(self, members, leaves, computed_shapes, signature, outputs, first, last):
        self.members: set[int] = members                # op indices
        self.leaves: set[int] = leaves                  # the members that are leaves
        self.computed_shapes: set = computed_shapes     # the shapes of the computed values
        self.signature = signature                      # (S, A) of the group's reduces, or None
        self.outputs: list[Value] = outputs             # the values something outside the group reads
        self.first, self.last = first, last             # smallest and largest member

    @property
    def kind(self) -> str:
        return "reduction" if self.signature else "loop"


class FusionPlan:
    """The fusion groups of one region's ops, found as the module docstring says.

    Groups are nodes of a networkx graph (named by an op index) whose edges are the data
    dependencies; unfused ops are nodes too, so paths through them count.
    """

    def __init__(self, region: Region, exact: bool = False):
        """`exact`: search every path for cycles, without makes_cycle's pruning."""
        self.ops, self.exact = region.ops, exact
        self.producer = {id(v): i for i, op in enumerate(self.ops) for v in op.results}
        self.operand_producers = [[self.producer.get(id(v)) for v in op.operands] for op in self.ops]
        self.users: dict[int, list[int]] = {}
        for j, op in enumerate(self.ops):
            for v in uses_of(op):
                readers = self.users.setdefault(id(v), [])
                if j not in readers:
                    readers.append(j)
        self.escaping = set(map(id, region.outputs))
        self.copied = self.find_copied_ops()
        nodes = [i for i, op in enumerate(self.ops) if op.name != "constant" and i not in self.copied]
        self.graph = nx.DiGraph()
        self.graph.add_nodes_from(nodes)
        for j in nodes:
            for v in uses_of(self.ops[j]):
                i = self.producer.get(id(v))
                if i is not None and i != j and self.graph.has_node(i):
                    self.graph.add_edge(i, j)
        effects = [i for i in nodes if has_effects(self.ops[i])]
        self.graph.add_edges_from(zip(effects, effects[1:]))   # callbacks in program order
        self.group_of = {i: i for i in nodes}
        self.groups = {i: self.single_group(i) for i in nodes if self.is_fusible(i)}
        self.merge_until_done()

    def is_fusible(self, i: int) -> bool:
        op = self.ops[i]
        if op.name == "constant":
            return op.result.type.size <= SMALL_CONSTANT_ELEMENTS
        if op.name in ELEMENTWISE:  # operands of the result's shape, or scalars (clamp's bounds)
            return all(v.type.shape in (op.result.type.shape, ()) for v in op.operands)
        return op.name in FUSIBLE

    def find_copied_ops(self) -> set[int]:
        """Ops computed from small constants alone and read only by fusible ops: copied, not grouped."""
        from_constants: set[int] = set()
        for i, op in enumerate(self.ops):
            if (self.is_fusible(i) and op.name in SOURCES | DATA_MOVEMENT
                    and all(p in from_constants for p in self.operand_producers[i])):
                from_constants.add(i)
        copied = {i for i in from_constants
                  if not any(id(v) in self.escaping for v in self.ops[i].results)
                  and all(self.is_fusible(u) for v in self.ops[i].results for u in self.users.get(id(v), []))}
        # A copy re-makes its operands too, so its producers must be copied as well: one that is not
        # (it is also read by an unfused op, a `cond`) is a kernel's result the copy would read
        # before the schedule, which knows no edge through a copied op, has made it.
        changed = True
        while changed:
            kept = {i for i in copied if all(p is None or p in copied or p not in from_constants
                                             or self.ops[p].name == "constant" for p in self.operand_producers[i])}
            changed, copied = kept != copied, kept
        return copied

    def is_copied(self, value: Value) -> bool:
        """Whether fusions copy the op making `value` instead of reading it (also for enclosing regions' constants)."""
        op = value.producer
        if op is not None and op.name == "constant":
            return op.result.type.size <= SMALL_CONSTANT_ELEMENTS
        i = self.producer.get(id(value))
        return i is not None and i in self.copied

    def used_outside(self, value: Value, members: set[int]) -> bool:
        return id(value) in self.escaping or any(u not in members and u not in self.copied
                                                 for u in self.users.get(id(value), []))

    def single_group(self, i: int) -> Group:
        op = self.ops[i]
        is_leaf = op.name in SOURCES or op.name in DATA_MOVEMENT   # its operands come from outside
        signature = (op.operands[0].type.shape, op.attrs["axes"]) if op.name == "reduce" else None
        outputs = [v for v in op.results if self.used_outside(v, {i})]
        return Group({i}, {i} if is_leaf else set(), set() if is_leaf else {op.result.type.shape}, signature,
                     outputs, i, i)

    def can_compute(self, op: Op, signature) -> bool:
        """Whether a data-movement op that reads a computed value keeps the contract."""
        if op.name in ELEMENTWISE or op.name == "bitcast_convert" and op.result.type.shape == op.operands[0].type.shape:
            return True   # elementwise: a bitcast between dtypes of one width
        if op.name != "broadcast_in_dim" or signature is None:
            return False
        shape, axes = signature
        return is_row_broadcast(op, shape, axes) and math.prod(shape[a] for a in axes) <= MAX_ROW_ELEMENTS

    def merged(self, a: Group, b: Group) -> Group | None:
        """The union of two groups, or None if it breaks the fused-region contract."""
        if a.signature and b.signature and a.signature != b.signature:
            return None
        signature = a.signature or b.signature
        members = a.members | b.members
        leaves = a.leaves | b.leaves
        computed_shapes = a.computed_shapes | b.computed_shapes
        changed = True
        while changed:  # leaves that now read a computed value of the group are computed, and so on
            changed = False
            for i in list(leaves):
                moved = self.operand_producers[i][:SCALAR_OPERANDS_FROM.get(self.ops[i].name)]
                if any(p in members and p not in leaves for p in moved):
                    if not self.can_compute(self.ops[i], signature):
                        return None
                    leaves.discard(i)
                    computed_shapes.add(self.ops[i].result.type.shape)
                    changed = True
        outputs = [v for v in a.outputs + b.outputs if self.used_outside(v, members)]
        if any(is_expanding_broadcast(v.producer) for v in outputs):
            return None
        output_shapes = {v.type.shape for v in outputs}
        if signature:
            shape, axes = signature
            iteration_shapes = {shape, reduced_shape(shape, axes)}
        else:
            iteration_shapes = output_shapes or computed_shapes
            if len(iteration_shapes) > 1:
                return None
        if not computed_shapes - {()} <= iteration_shapes or not output_shapes <= iteration_shapes:
            return None
        return Group(members, leaves, computed_shapes, signature, outputs, min(a.first, b.first), max(a.last, b.last))

    def span(self, node: int) -> tuple[int, int]:
        group = self.groups.get(node)
        return (group.first, group.last) if group else (node, node)

    def makes_cycle(self, a: int, b: int) -> bool:
        """Whether merging groups a and b would close a cycle: one reaches the other through a third group.

        An edge from X to Y needs an op of X before an op of Y, so X's first op before Y's last:
        that bound skips most searches. It holds for a path only while the groups on it are runs
        of consecutive ops; a group whose ops straddle another node can carry a path back, which
        the bound misses (and `plan_region` then plans again with `exact`).
        """
        for source, target in ((a, b), (b, a)):
            for successor in self.graph.successors(source):
                if (successor != target and (self.exact or self.span(successor)[0] < self.span(target)[1])
                        and nx.has_path(self.graph, successor, target)):
                    return True
        return False

    def try_merge(self, i: int, j: int) -> bool:
        """Merge the groups of ops i and j if that is legal; whether they were merged."""
        a, b = self.group_of[i], self.group_of[j]
        if a == b or a not in self.groups or b not in self.groups:
            return False
        merged = self.merged(self.groups[a], self.groups[b])
        if merged is None or self.makes_cycle(a, b):
            return False
        keep, gone = (a, b) if len(self.groups[a].members) >= len(self.groups[b].members) else (b, a)
        nx.contracted_nodes(self.graph, keep, gone, self_loops=False, copy=False)
        for member in self.groups.pop(gone).members:
            self.group_of[member] = keep
        self.groups[keep] = merged
        return True

    def merge_until_done(self):
        changed = True
        while changed:
            changed = False
            for j in range(len(self.ops)):  # producer-consumer
                if j in self.group_of:
                    for i in self.operand_producers[j]:
                        if i in self.group_of:
                            changed |= self.try_merge(i, j)
            for value_id, users in self.users.items():  # siblings
                if value_id in self.producer and self.producer[value_id] not in self.group_of:
                    continue  # a constant or a copied op: reading one is no reason to merge
                readers = [u for u in users if u in self.group_of]
                for other in readers[1:]:
                    changed |= self.try_merge(readers[0], other)

    def schedule(self) -> list[int]:
        """The nodes (groups and unfused ops) in an order that respects their dependencies."""
        return list(nx.lexicographical_topological_sort(self.graph, key=lambda node: self.span(node)[0]))


def plan_region(region: Region) -> FusionPlan:
    """The fusion plan of a region: with makes_cycle's pruning, or, where that let a cycle
    through, with every path searched."""
    plan = FusionPlan(region)
    return plan if nx.is_directed_acyclic_graph(plan.graph) else FusionPlan(region, exact=True)


def is_reshape(op: Op) -> bool:
    """A reshape, or a broadcast adding only 1-sized dimensions (canonicalize's form of such a reshape:
    the same elements in the same order)."""
    return op.name == "reshape" or (op.name == "broadcast_in_dim" and is_unit_insertion(op))


def is_view(plan: FusionPlan, group: Group) -> bool:
    """A group of reshapes only, each of a value made outside it or of another of them: the executable
    runs each as a view of its operand (a bitcast), with no kernel. Several come from the library
    matcher, which reshapes a GEMM's operands: siblings, reshapes of one value for several GEMMs,
    merge, and a reshape of a GEMM's result joins the reshape that views it as the next one's operand."""
    results = {id(plan.ops[i].result) for i in group.members}
    return all(is_reshape(plan.ops[i]) and (id(plan.ops[i].operands[0]) in results
                                            or not plan.is_copied(plan.ops[i].operands[0]))
               for i in group.members)


class Fuser(Rebuilder):
    def copy_op(self, op: Op, scope: Scope):
        if op.name == "fusion":  # already a kernel: copied as it is
            Rebuilder().copy_op(op, scope)
        else:
            super().copy_op(op, scope)

    def copy_ops(self, region: Region, scope: Scope) -> list[Value]:
        plan = plan_region(region)
        for op in region.ops:
            if op.name == "constant":
                self.copy_op(op, scope)
        for node in plan.schedule():
            group = plan.groups.get(node)
            if group is None:
                self.copy_op(plan.ops[node], scope)
            elif group.outputs and is_view(plan, group):
                for i in sorted(group.members):
                    op = plan.ops[i]
                    scope.bind(op.results, self.emit(scope, "reshape", scope.lookup(op.operands),
                                                     {"new_sizes": op.result.type.shape}, location=op.location))
            elif group.outputs:
                self.emit_fusion(plan, group, scope)
        return scope.lookup(region.outputs)

    def emit_fusion(self, plan: FusionPlan, group: Group, scope: Scope):
        inner = Scope()
        inputs: list[Value] = []

        def make_available(value: Value):
            if id(value) in inner.values:
                return
            if plan.is_copied(value):
                for operand in value.producer.operands:
                    make_available(operand)
                self.copy_op(value.producer, inner)
            else:
                inputs.append(value)
                inner.values[id(value)] = Value(value.type)

        for i in sorted(group.members):
            for operand in plan.ops[i].operands:
                make_available(operand)
            self.copy_op(plan.ops[i], inner)
        position = {id(v): k for k, v in enumerate(v for i in sorted(group.members) for v in plan.ops[i].results)}
        outputs = sorted(group.outputs, key=lambda v: position[id(v)])
        body = Region([inner.values[id(v)] for v in inputs], inner.ops, inner.lookup(outputs))
        results = self.emit(scope, "fusion", scope.lookup(inputs), {"kind": group.kind}, [body])
        scope.bind(outputs, results)


class BroadcastSplitter(Rebuilder):
    """Gives each op that reads a shared expanding broadcast a copy of its own, made just before it."""

    def __init__(self, module: Module):
        readers: dict[int, int] = {}
        for op in walk(module.body):
            for v in list(op.operands) + [v for region in op.regions for v in region.outputs]:
                readers[id(v)] = readers.get(id(v), 0) + 1
        for v in module.outputs:
            readers[id(v)] = readers.get(id(v), 0) + 1
        self.shared = {id(op) for op in walk(module.body) if is_expanding_broadcast(op) and readers[id(op.result)] > 1}

    def copy_op(self, op: Op, scope: Scope):
        if not any(id(v.producer) in self.shared for v in op.operands):
            return super().copy_op(op, scope)
        operands = [self.emit(scope, v.producer.name, scope.lookup(v.producer.operands), v.producer.attrs)[0]
                    if id(v.producer) in self.shared else scope.values[id(v)] for v in op.operands]
        results = self.emit(scope, op.name, operands, op.attrs, self.copy_regions(op, scope),
                            [v.type for v in op.results], op.location)
        scope.bind(op.results, results)


def fuse(module: Module) -> Module:
    """A copy of `module` with its ops grouped into `fusion` ops (see the module docstring).

    CSE first merges the library matcher's reshapes of one operand for several calls (else a kernel
    writes the operand once per reshape); CSE at the end merges the broadcasts that copies of shared
    ones left side by side in a kernel.
    """
    module = eliminate_common_subexpressions(module)
    fused = Fuser().run(BroadcastSplitter(module).run(module))
    return eliminate_common_subexpressions(fused)
