"""What the rand library tells the compiler about a `library_call rand.generate`: its solution (the
generator, distribution and dtype: the code) and its kernel, one work-item per generator block
(four 32-bit words) writing that block's values. The size, the distribution's parameters and the
Poisson loop's length are scalar parameters, the seed and offset operands: one kernel per solution."""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.targets import Target
from ...lowering.emitters import operand_buffers
from . import distributions, philox, sobol

WORKGROUP_ITEMS = 256


def solution_name(op: Op) -> str:
    a = op.attrs
    return f"{a['generator']}_{a['distribution']}_{a['dtype']}"


def select(op: Op, target: Target) -> str:
    return solution_name(op)


def explain(op: Op, target: Target) -> tuple[str, str]:
    if op.attrs["generator"] == "sobol32":
        return solution_name(op), "one work-item per value: the xor of direction numbers over a Gray code"
    per_block = 4 // distributions.words_per_value(op.attrs["distribution"], op.attrs["dtype"])
    return solution_name(op), f"one work-item per Philox block of 4 words: {per_block} values each"


class Body:
    """The statements of a work-item, with a fresh variable per named intermediate."""

    def __init__(self):
        self.stmts: list[K.Stmt] = []

    def let(self, expr: K.Expr) -> K.Var:
        var = K.Var(f"v{len(self.stmts)}", expr.dtype)
        self.stmts.append(K.Let(var, expr))
        return var

    def poisson_loop(self, u: K.Expr, lam: K.Expr, terms: K.Expr) -> K.Var:
        """The CDF's sequential search (distributions.poisson_numpy, the same arithmetic)."""
        n = len(self.stmts)
        k, p, cdf, i = K.Var(f"k{n}", "u32"), K.Var(f"p{n}", "f64"), K.Var(f"c{n}", "f64"), K.Var(f"i{n}", "i64")
        self.stmts += [K.Let(k, K.Const(0, "u32")), K.Let(p, K.exp(-lam)), K.Let(cdf, p),
                       K.For(i, 1, terms + 1, 1, [K.Assign(k, K.select(u > cdf, i.cast("u32"), k)),
                                                  K.Assign(p, p * (lam / i.cast("f64"))),
                                                  K.Assign(cdf, cdf + p)])]
        return k


def emit(op: Op, name: str, target: Target) -> K.Kernel:
    return (emit_sobol if op.attrs["generator"] == "sobol32" else emit_philox)(op, name)


def emit_sobol(op: Op, name: str) -> K.Kernel:
    """One work-item per value: dimension d = e / n, point offset + e % n, the xor of d's direction
    numbers over the point's Gray code bits."""
    a = op.attrs
    count, dimensions = K.ScalarParam("count", "i64"), K.ScalarParam("dimensions", "i64")
    _, offset_in, table, out = operand_buffers(op)
    table = K.GlobalBuffer(table.name, table.dtype, dimensions * sobol.BITS, readonly=True)
    out = K.GlobalBuffer(out.name, out.dtype, dimensions * count)
    e = K.Var("e", "i64")
    body = Body()
    d = body.let(e / count)
    n = body.let(offset_in[0] + (e % count).cast("u64"))
    gray = body.let((n ^ (n >> K.Const(1, "u64"))).cast("u32"))
    x = K.Const(0, "u32")
    for k in range(sobol.BITS):
        bit_set = ((gray >> K.Const(k, "u32")) & K.Const(1, "u32")).ne(K.Const(0, "u32"))
        x = body.let(x ^ K.select(bit_set, table[d * sobol.BITS + k], K.Const(0, "u32")))
    (value,) = [x] if a["distribution"] == "bits" else distributions.uniform_kernel([x], a["dtype"], body.let, 1)
    dims, points = op.result.type.shape
    return K.Kernel(name, params=[*operand_buffers(op)[:1], offset_in, table, out, count, dimensions],
                    grid=(K.ceil_div(dimensions * count, WORKGROUP_ITEMS),), workgroup_size=(WORKGROUP_ITEMS,),
                    body=[K.Let(e, K.workgroup_id(0).cast("i64") * WORKGROUP_ITEMS + K.workitem_id(0).cast("i64")),
                          K.If(e < dimensions * count, [*body.stmts, K.Store(out, e, value)])],
                    arguments=[("count", max(1, points)), ("dimensions", max(1, dims))])


def emit_philox(op: Op, name: str) -> K.Kernel:
    a = op.attrs
    distribution, dtype = a["distribution"], a["dtype"]
    per_block = 4 // distributions.words_per_value(distribution, dtype)
    count = K.ScalarParam("count", "i64")
    mean, stddev = K.ScalarParam("mean", "f64"), K.ScalarParam("stddev", "f64")
    lam, terms = K.ScalarParam("lam", "f64"), K.ScalarParam("terms", "i64")
    scalars = {"bits": [count], "uniform": [count], "normal": [count, mean, stddev], "log_normal": [count, mean, stddev],
               "poisson": [count, lam, terms]}[distribution]
    seed_in, offset_in, out = operand_buffers(op)
    out = K.GlobalBuffer(out.name, out.dtype, count)
    items = count / per_block + 2             # enough blocks for any offset's misalignment
    body = Body()
    t = body.let(K.workgroup_id(0).cast("i64") * WORKGROUP_ITEMS + K.workitem_id(0).cast("i64"))
    seed, offset = body.let(seed_in[0]), body.let(offset_in[0])
    skip = body.let((offset % K.Const(per_block, "u64")).cast("i64"))
    block = body.let(offset / K.Const(per_block, "u64") + t.cast("u64"))
    counter = [body.let(block.cast("u32")), body.let((block >> K.Const(32, "u64")).cast("u32")),
               K.Const(0, "u32"), K.Const(0, "u32")]
    key = [body.let(seed.cast("u32")), body.let((seed >> K.Const(32, "u64")).cast("u32"))]
    words = philox.rounds_kernel(counter, key, body.let)
    values = distributions.values_kernel(words, distribution, dtype, mean, stddev, lam, terms, body.let,
                                         body.poisson_loop)
    stores = []
    for j, value in enumerate(values):
        e = K.Var(f"e{j}", "i64")
        stores += [K.Let(e, t * per_block + j - skip),
                   K.If((e >= 0) & (e < count), [K.Store(out, e, value)])]
    arguments = {"count": max(1, _size(op)), "mean": a["mean"], "stddev": a["stddev"], "lam": a["lam"],
                 "terms": distributions.poisson_terms(a["lam"])}
    return K.Kernel(name, params=[seed_in, offset_in, out, *scalars], grid=(K.ceil_div(items, WORKGROUP_ITEMS),),
                    workgroup_size=(WORKGROUP_ITEMS,),
                    body=[*body.stmts, K.If(t < items, stores)],
                    arguments=[(s.name, arguments[s.name]) for s in scalars])


def _size(op: Op) -> int:
    size = 1
    for d in op.result.type.shape:
        size *= d
    return size
