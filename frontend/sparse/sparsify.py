"""`cdnajit.sparse.sparsify(f)`: f, written for dense arrays, run on sparse matrices (as
jax.experimental.sparse.sparsify). f is traced once on dense stand-ins of the sparse arguments
(their shape and dtype), then its graph is evaluated op by op inside a jit: an op whose operands
are all dense is recorded again as it is; an op with a sparse operand goes through its rule in
SPARSE_RULES, which computes on the sparse matrix (and may give a sparse result, e.g. `-A`, `A.T`,
`2 * A`). An op without a rule raises NotImplementedError naming it."""
from __future__ import annotations

import functools

import numpy as np

from .. import cnp
from ..jit import jit, make_graph
from ..tracing import Tracer, bind, located
from . import products
from .formats import BCSR, SparseMatrix


def dot_general(op, lhs, rhs):
    """bcoo_dot_general's rules (products.dot_general), one or two sparse operands."""
    attrs = op.attrs
    return products.dot_general(lhs, rhs, ((attrs["lhs_contracting"], attrs["rhs_contracting"]),
                                           (attrs["lhs_batch"], attrs["rhs_batch"])))


def multiply(op, lhs, rhs):
    if isinstance(lhs, SparseMatrix) and isinstance(rhs, SparseMatrix):
        raise NotImplementedError(located("sparsify: mul of two sparse matrices"))
    return lhs * rhs if isinstance(lhs, SparseMatrix) else rhs * lhs


def transpose(op, operand):
    return operand.transpose(tuple(op.attrs["permutation"]))


def summed(op, operand):
    if op.attrs["reducer"] != "sum":
        raise NotImplementedError(located(f"sparsify: reduce {op.attrs['reducer']} of a sparse matrix (sum only)"))
    return operand.sum(tuple(op.attrs["axes"]))


def reshape(op, operand):
    return (operand.to_bcoo() if isinstance(operand, BCSR) else operand).reshape(tuple(op.attrs["new_sizes"]))


# graph op -> rule(op, *operands) for operands of which at least one is sparse
SPARSE_RULES = {
    "dot_general": dot_general,                       # A @ x, x @ A, A @ B, batched: bcoo_dot_general's
    "mul": multiply,                                  # A * dense of A's shape (a broadcast scalar is one)
    "neg": lambda op, operand: operand * -1,          # -A
    "transpose": transpose,                           # A.T, a batched array's permutations
    "reduce": summed,                                 # any axes: sparse (JAX's), over all a dense scalar
    "reshape": reshape,                               # a BCOO's batch, sparse, dense dims among themselves
}


def stand_in(arg):
    """A concrete dense argument of a sparse (or traced) one's shape and dtype, to trace f on."""
    return np.zeros(arg.shape, np.dtype(str(arg.dtype))) if isinstance(arg, SparseMatrix | Tracer) else arg


def evaluate(module, *args):
    values = dict(zip(module.params, args))
    for op in module.body.ops:
        operands = [values[v] for v in op.operands]
        if any(isinstance(o, SparseMatrix) for o in operands):
            rule = SPARSE_RULES.get(op.name)
            if rule is None:
                raise NotImplementedError(located(f"sparsify: {op.name} has no sparse rule (rules: "
                                                  f"{', '.join(SPARSE_RULES)})"))
            results = [rule(op, *operands)]
        else:
            if op.regions:
                raise NotImplementedError(located(f"sparsify: {op.name} (an op with regions) is not supported"))
            results = bind(op.name, [cnp.asarray(o) for o in operands], op.attrs)
        values.update(zip(op.results, results))
    outputs = [values[v] for v in module.body.outputs]
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def sparsify(fn):
    """fn run on sparse matrices (BCOO, BCSR) where it takes dense arrays: positional arguments."""
    compiled = {}

    @functools.wraps(fn)
    def run(*args):
        signature = tuple((type(a).__name__, np.shape(a), str(getattr(a, "dtype", type(a)))) for a in args)
        if signature not in compiled:
            module = make_graph(fn)(*[stand_in(a) for a in args])
            compiled[signature] = jit(functools.partial(evaluate, module))
        return compiled[signature](*args)
    return run
