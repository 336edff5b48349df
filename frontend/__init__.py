"""The frontend: tracing, the cdnajit.numpy and cdnajit.lax namespaces, jit and its cache."""
from . import cnp, lax, methods  # noqa: F401  (methods installs Tracer's operators)
from .device import device_put
from .jit import Compiled, Jitted, Lowered, jit, make_graph
from .pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["cnp", "lax", "jit", "device_put", "make_graph", "Jitted", "Lowered", "Compiled", "tree_flatten", "tree_unflatten",
           "tree_map"]
