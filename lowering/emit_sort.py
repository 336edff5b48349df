"""The sort kernel: all operands sorted along `dimension` by their first `num_keys` operands,
lexicographically, NaNs last, -0.0 equal to 0.0, stable (equal keys keep their order).

Rows of up to MAX_LDS_ROW elements: one workgroup per row sorts a permutation of the row in LDS
by bottom-up merge sort. In the pass of width w every element finds its place in the merged pair
of runs by a binary search in the other run (counting the elements that go before it: strictly
smaller ones in the later run, smaller or equal ones in the earlier run, which keeps the sort
stable), then writes its id there; passes alternate between two halves of the LDS buffer, with a
barrier between them. The keys are read from the operands by element id; at the end every
operand's row is gathered through the permutation.
Rows of 1024 elements or more are the prim library's (libs/prim: LSD radix sorts, matched from
the graph before lowering); this kernel sorts shorter rows, and rows up to MAX_LDS_ROW in a
pipeline without the library matcher.
"""
from __future__ import annotations

from ..ir import kernel as K
from ..ir.types import FLOATS
from .emit_ops import WORKGROUP_ITEMS, index_dtype, reject_complex, row_layout, row_start
from .emitters import emitter, operand_buffers

MAX_LDS_ROW = 8192  # two i32 permutations of the row fill the 64 KiB of LDS


def key_values(buffers, position: K.Expr) -> list[K.Expr]:
    """The sort keys of the element at `position`: bools compare as bytes."""
    return [b[position].cast("u8") if b.dtype == "bool" else b[position] for b in buffers]


def less(a: list[K.Expr], b: list[K.Expr]) -> K.Expr:
    """Whether keys `a` sort before keys `b` (lexicographic; NaN after everything, equal to NaN)."""
    result = None
    for x, y in reversed(list(zip(a, b))):
        if x.dtype in FLOATS:
            x_nan, y_nan = x.ne(x), y.ne(y)
            before = ~x_nan & (y_nan | (x < y))
            same = (x_nan & y_nan) | x.eq(y)
        else:
            before, same = x < y, x.eq(y)
        result = before if result is None else before | (same & result)
    return result


def let_keys(prefix: str, values: list[K.Expr]) -> tuple[list[K.Stmt], list[K.Var]]:
    names = [K.Var(f"{prefix}{k}", v.dtype) for k, v in enumerate(values)]
    return [K.Let(n, v) for n, v in zip(names, values)], names


@emitter("sort")
def emit_sort(op, name):
    reject_complex(op)
    shape = op.operands[0].type.shape
    rows, length, inner = row_layout(shape, op.attrs["dimension"])
    params = operand_buffers(op)
    inputs, outputs = params[:len(op.operands)], params[len(op.operands):]
    keys = inputs[:op.attrs["num_keys"]]
    dtype = index_dtype(op.operands[0].type.size)
    if length > MAX_LDS_ROW:
        raise NotImplementedError(f"sort: rows of {length} elements (more than {MAX_LDS_ROW}) are sorted by the prim "
                                  "library's radix sort, which this pipeline did not match")
    return merge_sort_kernel(name, params, inputs, outputs, keys, rows, length, inner, dtype)


def merge_sort_kernel(name, params, inputs, outputs, keys, rows, length, inner, dtype):
    items = WORKGROUP_ITEMS if length > 64 else 64
    perm = K.LdsBuffer("perm", "i32", 2 * max(length, 1))
    t, base, e, p, width, src, dst = (K.Var(n, dtype) for n in ("t", "base", "e", "pass_", "width", "src", "dst"))
    element = lambda id_: base + id_ * inner
    passes = (length - 1).bit_length()

    def merge_step():
        """Element e of the source permutation moves to its place in its merged pair of runs."""
        block, middle, end, me, count, probe, b = (K.Var(n, dtype) for n in (
            "block", "middle", "end", "me", "count", "probe", "b"))
        key_stmts, my_keys = let_keys("key", key_values(keys, element(me)))
        first_run = e < middle
        run_start = K.select(first_run, middle, block)
        run_length = K.select(first_run, end - middle, middle - block)
        candidate = K.Var("candidate", dtype)
        probe_stmts, probe_keys = let_keys("probe_key", key_values(keys, element(candidate)))
        # Elements of the earlier run go before equal elements of the later run.
        goes_before = K.select(first_run, less(probe_keys, my_keys), ~less(my_keys, probe_keys))
        # The other run holds at most width = 2^pass elements: steps 2^pass, ..., 2, 1 find the count.
        search = K.For(b, 0, p + 1, 1, [
            K.Let(probe, count + (K.Const(1, dtype) << (p - b))),
            K.If(probe <= run_length, [
                K.Let(candidate, perm[src + run_start + probe - 1].cast(dtype)), *probe_stmts,
                K.If(goes_before, [K.Assign(count, probe)])])])
        own_rank = e - K.select(first_run, block, middle)
        return [K.Let(block, (e >> (p + 1)) << (p + 1)),  # runs of width 2^pass pair up in blocks
                K.Let(middle, K.minimum(block + width, K.Const(length, dtype))),
                K.Let(end, K.minimum(block + 2 * width, K.Const(length, dtype))),
                K.Let(me, perm[src + e].cast(dtype)), *key_stmts,
                K.Let(count, K.Const(0, dtype)), search,
                K.Store(perm, dst + block + own_rank + count, me.cast("i32"))]

    final = K.Var("final", dtype)
    gather_stmts = [K.Let(final, perm[(passes % 2) * length + e].cast(dtype))] + \
        [K.Store(out, element(e), source[element(final)]) for source, out in zip(inputs, outputs)]
    body = [
        K.Let(t, K.workitem_id(0).cast(dtype)),
        K.Let(base, row_start(K.workgroup_id(0).cast(dtype), length, inner)),
        K.For(e, t, length, items, [K.Store(perm, e, e.cast("i32"))]),
        K.Barrier(),
        K.For(p, 0, passes, 1, [
            K.Let(width, K.Const(1, dtype) << p),
            K.Let(src, (p % 2) * length),
            K.Let(dst, length - src),
            K.For(e, t, length, items, merge_step()),
            K.Barrier()], uniform=True),
        K.For(e, t, length, items, gather_stmts),
    ]
    return K.Kernel(name, params=params, grid=(rows if length else 0,), workgroup_size=(items,), body=body,
                    lds=[perm])
