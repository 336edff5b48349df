"""Pytrees as JAX defines them: nested tuples, lists, dicts (keys sorted), namedtuples and None;
everything else is a leaf. A `TreeDef` is hashable, so it can key the jit cache."""
from __future__ import annotations

from typing import Any, NamedTuple


class TreeDef(NamedTuple):
    kind: str                 # "leaf", "none", "tuple", "list", "dict" or "namedtuple"
    aux: Any                  # dict keys, or the namedtuple class
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
        return {"tuple": f"({inner})", "list": f"[{inner}]"}.get(self.kind, f"{getattr(self.aux, '__name__', '')}({inner})")


LEAF = TreeDef("leaf", None, ())


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(tree) -> tuple[list, TreeDef]:
    leaves: list = []

    def visit(node) -> TreeDef:
        if node is None:
            return TreeDef("none", None, ())
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
        return node.aux(*children)

    return build(treedef)


def tree_leaves(tree) -> list:
    return tree_flatten(tree)[0]


def tree_map(fn, tree, *rest):
    leaves, treedef = tree_flatten(tree)
    others = [tree_flatten(r)[0] for r in rest]
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *others)])
