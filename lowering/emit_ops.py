"""Building blocks shared by the kernel emitters of the ops the fusion pass leaves on their own.

Those ops get simple, correct generated kernels here (the libraries under libs/ replace
the heavy ones); each family has its module, registered with `@emitter` (lowering/emitters.py):
  emit_contract.py  dot_general (LDS-tiled)
  emit_indexing.py  gather, scatter, dynamic_slice, dynamic_update_slice
  emit_scan.py      cumulative, argmax, argmin, reduce_window
  emit_sort.py      sort (merge sort in LDS per row, rank sort for long rows)
Most kernels run one work-item per output element (`one_item_per_element`), index arithmetic
turning the linear index into coordinates (`unravel`) and coordinates into offsets (`offset`).
"""
from __future__ import annotations

import math

from ..ir import kernel as K
from ..ir.core import Op
from ..ir.types import COMPLEXES
from .elemental import row_major_strides

WORKGROUP_ITEMS = 256


def reject_complex(op: Op) -> None:
    """NotImplementedError naming the op and the complex dtype, when an operand or result has one."""
    for value in list(op.operands) + list(op.results):
        if value.type.dtype in COMPLEXES:
            raise NotImplementedError(f"generated kernel for {op.name}: complex dtype {value.type.dtype} "
                                      "is not supported yet")


def index_dtype(*counts: int) -> str:
    """The integer dtype of index arithmetic: i32 while every element count fits it."""
    return "i32" if max(counts, default=0) < 2 ** 31 else "i64"


def unravel(index: K.Expr, shape, prefix: str) -> tuple[list[K.Stmt], list[K.Var]]:
    """Statements defining `prefix0, prefix1, ...`: the row-major coordinates of `index` in `shape`."""
    stmts, coords = [], []
    for d, (size, stride) in enumerate(zip(shape, row_major_strides(shape))):
        coord = K.Var(f"{prefix}{d}", index.dtype)
        value = index / stride if stride > 1 else index
        if d > 0:  # the first coordinate needs no wrap: the index is in range
            value = value % size
        stmts.append(K.Let(coord, value if size > 1 else K.Const(0, index.dtype)))
        coords.append(coord)
    return stmts, coords


def offset(coords, strides, dtype: str) -> K.Expr:
    """The linear offset sum(coords[d] * strides[d]) (dimensions of stride 0 left out)."""
    terms = [coord if stride == 1 else coord * stride for coord, stride in zip(coords, strides) if stride]
    total = terms[0] if terms else K.Const(0, dtype)
    for term in terms[1:]:
        total = total + term
    return total


def row_layout(shape, axis):
    """(rows, row length, stride along the row) of the rows of `shape` along `axis`."""
    inner = math.prod(shape[axis + 1:])
    return math.prod(shape[:axis]) * inner, shape[axis], inner


def row_start(r: K.Expr, length: int, inner: int) -> K.Expr:
    """The offset of row r's first element."""
    return (r / inner) * (length * inner) + r % inner if inner > 1 else r * length


def linear_item(dtype: str) -> K.Expr:
    """The work-item's index over a 1-D grid of WORKGROUP_ITEMS-sized workgroups, in `dtype`."""
    return K.workgroup_id(0).cast(dtype) * WORKGROUP_ITEMS + K.workitem_id(0).cast(dtype)


def one_item_per_element(name: str, params, count: int, body, dtype: str, private=()) -> K.Kernel:
    """A kernel running `body(i)` (statements) for every i in [0, count), one work-item each."""
    i = K.Var("i", dtype)
    stmts = [K.Let(i, linear_item(dtype)), K.If(i < count, body(i))]
    return K.Kernel(name, params=params, grid=(-(-count // WORKGROUP_ITEMS),), workgroup_size=(WORKGROUP_ITEMS,),
                    body=stmts, private=private)


def all_of(conditions) -> K.Expr:
    """The conjunction of boolean expressions (true for none)."""
    conditions = list(conditions)
    result = conditions[0] if conditions else K.Const(True, "bool")
    for condition in conditions[1:]:
        result = result & condition
    return result


def loop_nest(counters: list[K.Var], sizes, body: list[K.Stmt]) -> list[K.Stmt]:
    """Nested `for` loops, the first counter outermost, around `body`."""
    for counter, size in reversed(list(zip(counters, sizes))):
        body = [K.For(counter, 0, size, 1, body)]
    return body


# ---- reducers on kernel expressions ------------------------------------------------------

def combine(reducer: str, a: K.Expr, b: K.Expr) -> K.Expr:
    """a <reducer> b, for the graph IR's reducer names (and scatter's add/mul); on bool, sum and max
    are `or`, prod and min are `and`, as numpy's ufuncs on bool are."""
    if a.dtype == "bool":
        return a | b if reducer in ("sum", "add", "max", "or") else a & b
    if reducer in ("sum", "add"):
        return a + b
    if reducer in ("prod", "mul"):
        return a * b
    if reducer == "max":
        return K.maximum(a, b)
    if reducer == "min":
        return K.minimum(a, b)
    return a & b if reducer == "and" else a | b
