"""Pytrees as JAX defines them: nested tuples, lists, dicts (keys sorted), namedtuples, None and the
node types registered with `register_pytree_node`; everything else is a leaf. A `TreeDef` is
hashable, so it can key the jit cache (a registered node's auxiliary data must be hashable, as in JAX)."""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple


class TreeDef(NamedTuple):
    kind: str                 # "leaf", "none", "tuple", "list", "dict", "namedtuple" or "custom"
    aux: Any                  # dict keys, the namedtuple class, or (registered type, its aux data)
    children: tuple

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(child.num_leaves for child in self.children)

    def __str__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(str, self.children))
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c}" for k, c in zip(self.aux, self.children))
            return "{" + inner + "}"
        if self.kind == "custom":
            return f"CustomNode({self.aux[0].__name__}[{self.aux[1]!r}], [{inner}])"
        return {"tuple": f"({inner})", "list": f"[{inner}]"}.get(self.kind, f"{getattr(self.aux, '__name__', '')}({inner})")


LEAF = TreeDef("leaf", None, ())


class NodeType(NamedTuple):
    flatten: Callable      # node -> (children, aux data)
    unflatten: Callable    # (aux data, children) -> node


REGISTERED: dict[type, NodeType] = {}


def register_pytree_node(nodetype: type, flatten_func, unflatten_func) -> None:
    """jax.tree_util.register_pytree_node: instances of `nodetype` are tree nodes, flattened to
    (children, hashable aux data) and rebuilt by unflatten_func(aux data, children)."""
    if nodetype in REGISTERED:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
    REGISTERED[nodetype] = NodeType(flatten_func, unflatten_func)


def register_pytree_node_class(cls):
    """jax.tree_util.register_pytree_node_class: a class with `tree_flatten()` and the classmethod
    `tree_unflatten(aux, children)` becomes a node type (a decorator)."""
    register_pytree_node(cls, lambda node: node.tree_flatten(), cls.tree_unflatten)
    return cls


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(tree) -> tuple[list, TreeDef]:
    leaves: list = []
    return leaves, flatten_into(tree, leaves)


# Module-level recursions, not closures: a nested function that calls itself is a reference cycle
# (function -> its closure cell -> function) that holds the leaves it closes over, so a call's
# arrays (a jitted program's results, however large) would live until the cyclic collector runs.
def flatten_into(node, leaves: list) -> TreeDef:
    """`node`'s TreeDef, appending its leaves to `leaves`."""
    if node is None:
        return TreeDef("none", None, ())
    registered = REGISTERED.get(type(node))
    if registered is not None:
        children, aux = registered.flatten(node)
        return TreeDef("custom", (type(node), aux), tuple(flatten_into(c, leaves) for c in children))
    if _is_namedtuple(node):   # its fields, even where its class iterates otherwise (random.PRNGKeyArray)
        return TreeDef("namedtuple", type(node), tuple(flatten_into(c, leaves) for c in tuple.__iter__(node)))
    if isinstance(node, tuple):
        return TreeDef("tuple", None, tuple(flatten_into(c, leaves) for c in node))
    if isinstance(node, list):
        return TreeDef("list", None, tuple(flatten_into(c, leaves) for c in node))
    if isinstance(node, dict):
        keys = tuple(sorted(node))
        return TreeDef("dict", keys, tuple(flatten_into(node[k], leaves) for k in keys))
    leaves.append(node)
    return LEAF


def tree_unflatten(treedef: TreeDef, leaves):
    return build_from(treedef, iter(leaves))


def build_from(node: TreeDef, items):
    """The tree `node` describes, its leaves taken in order from the iterator `items`."""
    if node.kind == "leaf":
        return next(items)
    if node.kind == "none":
        return None
    children = [build_from(c, items) for c in node.children]
    if node.kind == "tuple":
        return tuple(children)
    if node.kind == "list":
        return children
    if node.kind == "dict":
        return dict(zip(node.aux, children))
    if node.kind == "custom":
        return REGISTERED[node.aux[0]].unflatten(node.aux[1], children)
    return node.aux(*children)


def tree_leaves(tree) -> list:
    return tree_flatten(tree)[0]


def tree_structure(tree) -> TreeDef:
    return tree_flatten(tree)[1]


def tree_map(fn, tree, *rest):
    """fn applied to the leaves of `tree` and the corresponding leaves of `rest` (same structure)."""
    leaves, treedef = tree_flatten(tree)
    others = []
    for other in rest:
        other_leaves, other_def = tree_flatten(other)
        if other_def != treedef:
            raise ValueError(f"Custom node type mismatch; expected type: {treedef}; got {other_def}."
                             if other_def.kind != treedef.kind else
                             f"tree_map: the trees differ in structure: {treedef} and {other_def}")
        others.append(other_leaves)
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *others)])


class Partial(functools.partial):
    """jax.tree_util.Partial: a functools.partial that is a pytree, its arguments the leaves and its
    function part of the structure (so it can be passed to jit-compiled functions)."""

    def __new__(cls, func, *args, **kw):
        if isinstance(func, functools.partial):   # flattened as one Partial, as JAX does
            args, kw, func = func.args + args, {**func.keywords, **kw}, func.func
        return super().__new__(cls, func, *args, **kw)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, children: Partial(func, *children[0], **children[1]))
