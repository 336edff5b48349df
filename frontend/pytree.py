"""Pytrees as JAX defines them: nested tuples, lists, dicts (keys sorted), namedtuples, None and the
classes registered with `register_pytree_node` (their static part in the TreeDef, as JAX's aux
data); everything else is a leaf. A `TreeDef` is hashable, so it can key the jit cache."""
from __future__ import annotations

from typing import Any, NamedTuple


class TreeDef(NamedTuple):
    kind: str                 # "leaf", "none", "tuple", "list", "dict", "namedtuple" or "node"
    aux: Any                  # dict keys, the namedtuple class, or a node's (class, static aux data)
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
        named = self.aux[0] if self.kind == "node" else self.aux
        return {"tuple": f"({inner})", "list": f"[{inner}]"}.get(self.kind, f"{getattr(named, '__name__', '')}({inner})")


LEAF = TreeDef("leaf", None, ())

# Registered classes: class -> (flatten: x -> (children, hashable aux), unflatten: (aux, children) -> x).
NODE_TYPES: dict[type, tuple] = {}


def register_pytree_node(cls: type, flatten, unflatten) -> None:
    """Make instances of `cls` pytree nodes (jax.tree_util.register_pytree_node): `flatten(x)` gives
    (children, aux), aux hashable and part of a jit signature; `unflatten(aux, children)` rebuilds x."""
    NODE_TYPES[cls] = (flatten, unflatten)


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(tree) -> tuple[list, TreeDef]:
    leaves: list = []

    def visit(node) -> TreeDef:
        if node is None:
            return TreeDef("none", None, ())
        if type(node) in NODE_TYPES:
            children, aux = NODE_TYPES[type(node)][0](node)
            return TreeDef("node", (type(node), aux), tuple(visit(c) for c in children))
        if _is_namedtuple(node):   # its fields, even where its class iterates otherwise (random.PRNGKeyArray)
            return TreeDef("namedtuple", type(node), tuple(visit(c) for c in tuple.__iter__(node)))
        if isinstance(node, tuple):
            return TreeDef("tuple", None, tuple(visit(c) for c in node))
        if isinstance(node, list):
            return TreeDef("list", None, tuple(visit(c) for c in node))
        if isinstance(node, dict):
            keys = tuple(sorted(node))
            return TreeDef("dict", keys, tuple(visit(node[k]) for k in keys))
        leaves.append(node)
        return LEAF

    return leaves, visit(tree)


def tree_unflatten(treedef: TreeDef, leaves):
    items = iter(leaves)

    def build(node: TreeDef):
        if node.kind == "leaf":
            return next(items)
        if node.kind == "none":
            return None
        children = [build(c) for c in node.children]
        if node.kind == "tuple":
            return tuple(children)
        if node.kind == "list":
            return children
        if node.kind == "dict":
            return dict(zip(node.aux, children))
        if node.kind == "node":
            cls, aux = node.aux
            return NODE_TYPES[cls][1](aux, children)
        return node.aux(*children)

    return build(treedef)


def tree_leaves(tree) -> list:
    return tree_flatten(tree)[0]


def tree_map(fn, tree, *rest):
    leaves, treedef = tree_flatten(tree)
    others = [tree_flatten(r)[0] for r in rest]
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *others)])
