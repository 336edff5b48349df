"""The sparse library's pattern table: the dense idiom of a CSR (or COO) product that a JAX user
writes without a sparse type, `segment_sum(vals * x[cols], row_ids, m)`, becomes `sparse.csrmv`.

In the graph that idiom is a scatter-add of `mul(vals, gather(x, cols))` into zeros of m rows, or
(jax.ops.segment_sum) a prim.segment_reduce sum of that product, whose blocks the rewrite fills with
the product and zeros.
The rewrite keeps its meaning for any ids: the gather clamps columns into [0, n) (the rewrite
clamps them), the scatter drops rows outside [0, m) (the rewrite moves them to m, and the row
starts that coo2csr finds leave the entries of row m past indptr[m], where csrmv reads nothing),
and ids in any order with repeats sum the same: a cond checks (one compare per entry, reduced)
whether the mapped ids are in order already, as a COO matrix built row by row has them, and then
runs coo2csr and csrmv on them directly; otherwise it sorts the entries by row first (the graph's
sort, which libs/prim runs as a radix sort). Only the order of the additions changes, as in any
library call. The optimized IR then shows the cond, `sparse.coo2csr` and `sparse.csrmv`.
"""
from __future__ import annotations

import numpy as np

from ...ir.core import Region, Value
from ...passes.match_libraries import Match
from ...passes.rewrite import Scope
from ...ir.types import TensorType
from ...passes.patterns import Pat
from .routines import CHUNK, VALUE_DTYPES
from .row_loop import fori_spmv, unwrapped


def filled(m, value, dtype: str, count) -> Value:
    """A vector of `count` copies of `value`."""
    scalar = m.op("constant", value=np.array(value, TensorType(dtype, ()).numpy_dtype))
    return m.op("broadcast_in_dim", scalar, shape=(count,), broadcast_dimensions=())


def branch_region(m, build) -> Region:
    """A cond's branch (no parameters: it reads the values built before it) whose ops `build(b)` makes
    through a Match `b` of its own."""
    inner = Match(m.matcher, Scope(m.scope), m.root)
    return Region([], inner.scope.ops, [build(inner)])


def segment_spmv(m, scatter, zeros, rows, vals, x, columns):
    """scatter-add(zeros[m], rows[nnz, 1], vals * gather(x[n], columns[nnz, 1])) -> csrmv."""
    if scatter.attrs["reduction"] != "add" or zeros.type.ndim != 1 or rows.type.shape[1:] != (1,):
        return None
    return csr_product(m, rows, vals, x, columns, zeros.type.shape[0])


def segment_reduce_spmv(m, call, rows, vals, x, columns):
    """prim.segment_reduce{sum}(vals * gather(x[n], columns[nnz, 1]), rows[nnz]) -> csrmv, its blocks
    (runs, m, 1) the product in the first run's block and zeros in the others (the graph sums them)."""
    attrs, (result,) = call.attrs, call.results
    if attrs["library"] != "prim" or attrs["routine"] not in ("segment_reduce", "segment_reduce_sorted") or \
            attrs["reducer"] != "sum" or rows.type.ndim != 1 or result.type.dtype != vals.type.dtype:
        return None
    runs, count, _ = result.type.shape
    y = csr_product(m, rows, vals, x, columns, count)
    if y is None:
        return None
    blocks = m.op("reshape", y, new_sizes=(1, count, 1))
    if runs == 1:
        return blocks
    zero = m.op("constant", value=np.array(0, TensorType(vals.type.dtype, ()).numpy_dtype))
    rest = m.op("broadcast_in_dim", zero, shape=(runs - 1, count, 1), broadcast_dimensions=())
    return m.op("concatenate", blocks, rest, dimension=0)


def csr_product(m, rows, vals, x, columns, count: int):
    """The product y[count] of the COO entries (rows[nnz] or [nnz, 1], columns[nnz, 1], vals[nnz]) with
    x[n]: a cond on whether the mapped row ids are in order, coo2csr and csrmv (sorted by row first
    in the other branch), csrmv's carries scatter-added."""
    if x.type.ndim != 1 or vals.type.ndim != 1 or vals.type.dtype not in VALUE_DTYPES or \
            x.type.dtype != vals.type.dtype or columns.type.shape[1:] != (1,) or \
            not all(v.type.dtype[0] in "iu" for v in (rows, columns)) or vals.type.shape[0] == 0 or x.type.shape[0] == 0:
        return None
    nnz, n = vals.type.shape[0], x.type.shape[0]
    index = "i32" if max(count, n) < 2**31 - 1 else "i64"

    def vector(v):
        """v[nnz, 1] (or [nnz]) as a vector: the vector it was broadcast from if it was (the frontend's
        index column), so that the maps below fuse with the frontend's own (one pass over the ids, not two)."""
        made = v.producer
        if made is not None and made.name == "broadcast_in_dim" and made.operands[0].type.shape == (nnz,):
            return made.operands[0]
        return v if v.type.shape == (nnz,) else m.op("reshape", v, new_sizes=(nnz,))
    # Rows: ids outside [0, m) become m (as unsigned, a negative id is above m), sorted after every
    # row. i32 keys where the sizes allow: half the radix passes of i64. Columns: read by csrmv as the
    # gather reads them (column_map "clamp", or "wrap_clamp" for the frontend's negative-index wrap),
    # from the user's index array where it has the index dtype: no pass over them.
    def row_ids(b, ids):
        """ids mapped, built where they are used (the order check reads them fused from the user's
        ids, the sort's keys): the branch reading them in place gives coo2csr the user's ids and the map."""
        unsigned = b.op("convert", ids, dtype="u64")
        return b.op("convert", b.op("min", unsigned, filled(b, count, "u64", ids.type.shape[0])), dtype=index)

    column_ids, wrapped = unwrapped(vector(columns), n)
    made = column_ids.producer
    if made is not None and made.name == "convert" and made.operands[0].type.dtype == index and \
            column_ids.type.dtype in (index, "i64"):
        column_ids = made.operands[0]   # a widening of the user's index array: the same values
    if column_ids.type.dtype != index:
        column_ids = m.op("convert", m.op("clamp", m.op("constant", value=np.array(0, np.int64)),
                                          m.op("convert", vector(columns), dtype="i64"),
                                          m.op("constant", value=np.array(n - 1, np.int64))), dtype=index)
        wrapped = False
    column_map = "wrap_clamp" if wrapped else "clamp"
    raw = vector(rows)
    before = row_ids(m, m.op("slice", raw, start_indices=(0,), limit_indices=(nnz - 1,), strides=(1,)))
    after = row_ids(m, m.op("slice", raw, start_indices=(1,), limit_indices=(nnz,), strides=(1,)))
    in_order = m.op("reduce", m.op("le", before, after), reducer="and", axes=(0,))
    branch = m.op("convert", m.op("not", in_order), dtype="i32")   # 0: the rows are sorted already
    raw_readable = raw.type.dtype == index   # coo2csr gives indptr in its ids' dtype, csrmv takes one index dtype

    def product(b, rows, cols, values, row_map):
        (indptr,) = b.ops("library_call", rows, library="sparse", routine="coo2csr", solution="", rows=count,
                          row_map=row_map)
        y, carries, carry_rows = b.ops("library_call", indptr, cols, values, x, library="sparse",
                                       routine="csrmv", solution="", chunk=CHUNK, column_map=column_map)
        carry_index = b.op("reshape", carry_rows, new_sizes=(carry_rows.type.shape[0], 1))
        return b.op("scatter", y, carry_index, carries, reduction="add")

    def sorting(b):
        return product(b, *b.ops("sort", row_ids(b, raw), column_ids, vals, dimension=0, is_stable=True, num_keys=1),
                       row_map="clamp")

    in_place = branch_region(m, lambda b: product(b, raw, column_ids, vals, "unsigned_min") if raw_readable else
                             product(b, row_ids(b, raw), column_ids, vals, "clamp"))
    (y,) = m.matcher.emit(m.scope, "cond", [branch], {}, [in_place, branch_region(m, sorting)], location=m.root.location)
    return y



RULES = [
    # scatter_add(0[m], rows, vals * gather(x, cols)) -> cond(rows in order: coo2csr, csrmv; else sort by row
    # first), each scatter-adding csrmv's carries
    (Pat.op("scatter", Pat.splat(0, name="zeros"), Pat.var("rows"),
            Pat.op("mul", Pat.var("vals"), Pat.op("gather", Pat.var("x"), Pat.var("columns"))), name="scatter"),
     segment_spmv),
    # prim.segment_reduce{sum}(vals * gather(x, cols), rows) (jax.ops.segment_sum) -> the same, its blocks
    # the product and zeros
    (Pat.op("library_call", Pat.op("mul", Pat.var("vals"), Pat.op("gather", Pat.var("x"), Pat.var("columns"))),
            Pat.var("rows"), name="call"),
     segment_reduce_spmv),
    # while(i = 0, y) { i < m } { y.at[i].set(sum of the row's first width products, masked) } -> csrmv_ell
    (Pat.any_op("while", name="loop"), fori_spmv),
]
