"""The merge-path search's kernel (routines.py: merge_search): searchsorted of sorted queries by
merging them with the sorted array instead of a binary search per query, each result stored at
its query's place before the queries' sort (a permutation: no two work-items store one element).

The merge of a (n) and the queries v (m) puts a[i] before v[j] when a[i] sorts before v[j]
(side 'left': a[i] < v[j]; 'right': a[i] <= v[j], in jnp.sort's order where NaN is the largest);
v[j]'s result is the number of a's elements merged before it. A work-item takes DIAGONAL
consecutive steps of the merged sequence (ITEMS per workgroup): a binary search along its first
diagonal (d = i + j) finds where the merge path crosses it, then it walks its steps, writing each
query's count as it passes. Every work-item does the same work whatever the data (rocPRIM's and
ModernGPU's merge path), O(n + m) in all where a binary search per query is O(m log n) random reads.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emitters import operand_buffers

ITEMS = 64
DIAGONAL = 4096   # merge steps per work-item


def sorts_before(a: K.Expr, b: K.Expr, or_equal: bool) -> K.Expr:
    """a < b (or a <= b) in jnp.sort's order: NaN after every number."""
    if or_equal:
        return ~sorts_before(b, a, False)
    if not a.dtype.startswith(("f", "bf")):
        return a < b
    return (a < b) | (b.ne(b) & a.eq(a))


def merge_search_kernel(op: Op, name: str) -> K.Kernel:
    a_type, v_type = op.operands[0].type, op.operands[1].type
    or_equal = op.attrs["side"] == "right"
    idx = "i32" if a_type.size + v_type.size < 2 ** 31 - DIAGONAL else "i64"
    n, m = K.ScalarParam("n", idx), K.ScalarParam("m", idx)
    sized = {"in0": n, "in1": m, "in2": m, "out0": m}
    a, v, places, out = [K.GlobalBuffer(b.name, b.dtype, sized[b.name], b.readonly) for b in operand_buffers(op)]
    t, first, last, low, high, middle, i, j, step = (
        K.Var(x, idx) for x in ("t", "first", "last", "low", "high", "middle", "i", "j", "step"))
    take_a = K.Var("take_a", "bool")
    zero, one = K.Const(0, idx), K.Const(1, idx)
    clamp = lambda at, count: K.minimum(at, K.maximum(count - 1, zero))
    rounds = 64 if idx == "i64" else 32
    # The crossing of diagonal `first`: the a elements among its first merged steps, in [low, high).
    search = [K.Let(low, K.maximum(first - m, zero)), K.Let(high, K.minimum(first, n)),
              K.For(step, 0, rounds, 1, [
                  K.Let(middle, (low + high) / 2),
                  K.If(low < high, [K.If(sorts_before(a[clamp(middle, n)], v[clamp(first - 1 - middle, m)], or_equal),
                                         [K.Assign(low, middle + 1)], [K.Assign(high, middle)])])])]
    walk = [K.Let(i, low), K.Let(j, first - low),
            K.For(step, first, last, 1, [
                K.Let(take_a, (i < n) & ((j >= m) | sorts_before(a[clamp(i, n)], v[clamp(j, m)], or_equal))),
                K.If(take_a, [K.Assign(i, i + one)], [K.Store(out, places[j], i.cast("i32")), K.Assign(j, j + one)])])]
    body = [K.Let(t, K.workgroup_id(0).cast(idx) * ITEMS + K.workitem_id(0).cast(idx)),
            K.Let(first, t * DIAGONAL), K.Let(last, K.minimum(first + DIAGONAL, n + m)),
            K.If(first < last, search + walk)]
    return K.Kernel(name, params=[a, v, places, out, n, m], grid=((n + m + (ITEMS * DIAGONAL - 1)) / (ITEMS * DIAGONAL),),
                    workgroup_size=(ITEMS,), body=body,
                    arguments=(("n", a_type.shape[0]), ("m", v_type.shape[0])))


def describe(op: Op) -> str:
    return (f"searchsorted (side {op.attrs['side']}) of sorted queries by a merge path: {DIAGONAL} merge steps per "
            f"work-item from a binary search of its diagonal, {ITEMS} work-items per workgroup, each result stored at "
            f"its query's place before the sort")
