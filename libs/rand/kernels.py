"""What the rand library tells the compiler about a `library_call rand.generate`: its solution (the
generator, distribution and dtype: the code) and its kernel. Philox: one work-item per generator block
(four 32-bit words) writing that block's values. Sequential generators (XORWOW, MRG32k3a): one
work-item per run of BLOCKS_PER_ITEM blocks, which skips ahead to its run's first word with the jump
matrices (one matrix-vector product per set bit of the word's index) and then steps through the run.
MT19937: one workgroup per run of twists, jumped to it by its row of the call's jump table; MTGP32:
one workgroup for the stream. The size, the distribution's parameters and the Poisson table's size
and first value are scalar parameters, the seed, offset and Poisson table operands: one kernel per
solution."""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.targets import Target
from ...lowering.emitters import operand_buffers
from . import distributions, mrg32k3a, mt19937, mtgp32, philox, sobol, xorwow

WORKGROUP_ITEMS = 256
BLOCKS_PER_ITEM = 1024     # a sequential generator's run: its jump (up to 128 matrix products) is then
                           # a few operations per word


def solution_name(op: Op) -> str:
    a = op.attrs
    return f"{a['generator']}_{a['distribution']}_{a['dtype']}"


def select(op: Op, target: Target) -> str:
    return solution_name(op)


def explain(op: Op, target: Target) -> tuple[str, str]:
    if op.attrs["generator"] == "sobol32":
        return solution_name(op), "one work-item per value: the xor of direction numbers over a Gray code"
    if op.attrs["generator"] == "mt19937":
        return solution_name(op), (f"a workgroup per run of at least {mt19937.MIN_GROUP_ROUNDS} twists (at most "
                                   f"{mt19937.MAX_GROUPS} workgroups): the 624-word state in LDS, jumped to the "
                                   f"offset (a jump per set bit of its twists from 2^{mt19937.OFFSET_LOW_BITS}) "
                                   f"and to the run's first twist, each jump a correlation with the jump "
                                   f"polynomial, then each twist in three stretches of independent words, a "
                                   f"work-item per block of 4 words")
    if op.attrs["generator"] == "mtgp32":
        return solution_name(op), (f"one workgroup for the stream: the state a ring of {mtgp32.RING} words in LDS, "
                                   f"{mtgp32.STEP} independent words a step, a work-item per word, then per block "
                                   f"of 4 words; steps from the seed through the offset (no skip-ahead)")
    if op.attrs["generator"] in ("xorwow", "mrg32k3a"):
        return solution_name(op), (f"one work-item per run of {BLOCKS_PER_ITEM} blocks of 4 words: skip-ahead by "
                                   f"jump matrices, then {4 * BLOCKS_PER_ITEM} sequential steps")
    per_block = 4 // distributions.words_per_value(op.attrs["distribution"], op.attrs["dtype"], op.attrs["generator"])
    return solution_name(op), (f"one work-item per Philox block of 4 words (rocRAND's counter order): {per_block} "
                               f"values each")


class Body:
    """The statements of a work-item, with a fresh variable per named intermediate."""

    def __init__(self, prefix: str = "v"):
        self.stmts: list[K.Stmt] = []
        self.prefix = prefix

    def let(self, expr: K.Expr) -> K.Var:
        var = K.Var(f"{self.prefix}{len(self.stmts)}", expr.dtype)
        self.stmts.append(K.Let(var, expr))
        return var



def emit(op: Op, name: str, target: Target) -> K.Kernel:
    generator = op.attrs["generator"]
    if generator in SEQUENTIAL:
        return emit_sequential(op, name, SEQUENTIAL[generator])
    if generator == "mt19937":
        return emit_mt19937(op, name)
    if generator == "mtgp32":
        return emit_mtgp32(op, name)
    return (emit_sobol if generator == "sobol32" else emit_philox)(op, name)


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


class Scalars:
    """A generate kernel's scalar parameters (the count, the distribution's parameters) and their
    arguments; for Poisson also its table (`distributions.poisson_table`, the call's last operand):
    `buffers` are the call's other buffers, `tables` that one, to go before the result's."""

    def __init__(self, op: Op):
        a = op.attrs
        self.count = K.ScalarParam("count", "i64")
        self.mean, self.stddev = K.ScalarParam("mean", "f64"), K.ScalarParam("stddev", "f64")
        self.size, self.first = K.ScalarParam("table_size", "i64"), K.ScalarParam("first_value", "i64")
        self.params = {"bits": [self.count], "uniform": [self.count], "normal": [self.count, self.mean, self.stddev],
                       "log_normal": [self.count, self.mean, self.stddev],
                       "poisson": [self.count, self.size, self.first]}[a["distribution"]]
        *operands, out = operand_buffers(op)
        self.buffers, self.tables, values = [*operands, out], [], {"count": max(1, _size(op))}
        if a["distribution"] == "poisson":
            table, first = distributions.poisson_table(a["lam"])
            self.tables = [K.GlobalBuffer(operands[-1].name, "f64", 2 * self.size, readonly=True)]
            self.buffers = [*operands[:-1], out]
            values.update(table_size=table.shape[1], first_value=first)
        values.update(mean=a["mean"], stddev=a["stddev"])
        self.arguments = [(s.name, values[s.name]) for s in self.params]

    def values(self, op: Op, words: list[K.Expr], body: Body) -> list[K.Expr]:
        poisson = lambda word: distributions.poisson_kernel(word, self.tables[0], self.size, self.first, body.let)
        return distributions.values_kernel(words, op.attrs["distribution"], op.attrs["dtype"], self.mean, self.stddev,
                                           body.let, poisson, mrg=op.attrs["generator"] == "mrg32k3a")


SEQUENTIAL = {"xorwow": xorwow, "mrg32k3a": mrg32k3a}


def emit_sequential(op: Op, name: str, generator) -> K.Kernel:
    """Work-item t runs blocks [t B, (t + 1) B) of the call (B = BLOCKS_PER_ITEM), block b being words
    4 (first + b) .. 4 (first + b) + 3 of the subsequence's stream, first = offset / values per block;
    the state is seeded, jumped to the subsequence and the run's first word, then stepped four words a
    block."""
    a = op.attrs
    per_block = 4 // distributions.words_per_value(a["distribution"], a["dtype"], a["generator"])
    scalars = Scalars(op)
    count = scalars.count
    seed_in, offset_in, subsequence_in, table, out = scalars.buffers
    table = K.GlobalBuffer(table.name, table.dtype, table.count, readonly=True)
    out = K.GlobalBuffer(out.name, out.dtype, count)
    blocks = count / per_block + 2             # enough blocks for any offset's misalignment
    items = K.ceil_div(blocks, BLOCKS_PER_ITEM)
    body = Body()
    t = body.let(K.workgroup_id(0).cast("i64") * WORKGROUP_ITEMS + K.workitem_id(0).cast("i64"))
    offset = body.let(offset_in[0])
    skip = body.let((offset % K.Const(per_block, "u64")).cast("i64"))
    first_word = body.let((offset / K.Const(per_block, "u64") + (t * BLOCKS_PER_ITEM).cast("u64")) * K.Const(4, "u64"))
    state = [body.let(v) for v in _flatten(generator.seeded_kernel(body.let(seed_in[0]), body.let))]
    shape = _state_shape(generator)
    state_vars = _unflatten(state, shape)
    jump = generator.jump_kernel(*state_vars, first_word, body.let(subsequence_in[0]), table, "j")
    step = Body("s")
    current = state_vars
    words = []
    for _ in range(4):
        word, *current = generator.step_kernel(*current, step.let)
        words.append(word)
    values = scalars.values(op, words, step)
    b = K.Var("b", "i64")
    stores = []
    for j, value in enumerate(values):
        e = K.Var(f"e{j}", "i64")
        stores += [K.Let(e, (t * BLOCKS_PER_ITEM + b) * per_block + j - skip),
                   K.If((e >= 0) & (e < count), [K.Store(out, e, value)])]
    advance = [K.Assign(var, value) for var, value in zip(state, _flatten(tuple(current)))]
    run = K.For(b, 0, BLOCKS_PER_ITEM, 1, [*step.stmts, *stores, *advance])
    return K.Kernel(name, params=[seed_in, offset_in, subsequence_in, table, *scalars.tables, out, *scalars.params],
                    grid=(K.ceil_div(items, WORKGROUP_ITEMS),), workgroup_size=(WORKGROUP_ITEMS,),
                    body=[*body.stmts, K.If(t < items, [*jump, run])], arguments=scalars.arguments)


def emit_mt19937(op: Op, name: str) -> K.Kernel:
    """Workgroup g runs the call's rounds [R0 + g G, R0 + (g + 1) G) (mt19937.py's parallelism; R0 the
    round of block first = offset / values per block): it seeds the state in LDS (init_genrand of the
    u64 seed's low word, or init_by_array of a u32 key), twists R0 mod 2^OFFSET_LOW_BITS times, jumps
    by the table's row of each higher set bit of R0, then by its own row (mt19937.jump_kernel), and
    runs its rounds: a twist, then work-item l < 156 converts words 4 l .. 4 l + 3 of the tempered
    state, global block 156 r + l."""
    a = op.attrs
    per_block = 4 // distributions.words_per_value(a["distribution"], a["dtype"], a["generator"])
    scalars = Scalars(op)
    count = scalars.count
    seed_in, offset_in, table, out = scalars.buffers
    groups_value, group_rounds_value = mt19937.layout(_size(op), per_block)
    groups, group_rounds = K.ScalarParam("groups", "i64"), K.ScalarParam("group_rounds", "i64")
    width = K.ScalarParam("jump_width", "i64")
    table = K.GlobalBuffer(table.name, "i32", (groups + mt19937.OFFSET_JUMPS) * width, readonly=True)
    out = K.GlobalBuffer(out.name, out.dtype, count)
    sequence = K.LdsBuffer("mt", "u32", mt19937.SEQUENCE_WORDS)   # the state at N; a jump's twists below
    body = Body()
    lid = body.let(K.workitem_id(0))
    g = body.let(K.workgroup_id(0).cast("i64"))
    offset = body.let(offset_in[0])
    skip = body.let((offset % K.Const(per_block, "u64")).cast("i64"))
    first = body.let((offset / K.Const(per_block, "u64")).cast("i64"))
    last = body.let(first + (count + skip + per_block - 1) / per_block)   # one past the call's last block
    start = body.let(first / mt19937.BLOCKS + g * group_rounds)
    stop = body.let(K.minimum(start + group_rounds, (last + mt19937.BLOCKS - 1) / mt19937.BLOCKS))
    if seed_in.dtype == "u64":
        seeding = mt19937.seed_kernel(sequence, seed_in[0], lid, mt19937.N)
    else:
        key = K.GlobalBuffer(seed_in.name, "u32", op.operands[0].type.shape[0], readonly=True)
        seeding = mt19937.seed_by_array_kernel(sequence, key, lid, mt19937.N)
    r = K.Var("r", "i64")
    step = Body("o")
    block = step.let(r * mt19937.BLOCKS + lid.cast("i64"))
    words = [mt19937.temper_kernel(sequence[mt19937.N + lid * 4 + j], step.let) for j in range(4)]
    values = scalars.values(op, words, step)
    stores = []
    for j, value in enumerate(values):
        e = K.Var(f"e{j}", "i64")
        stores += [K.Let(e, (block - first) * per_block + j - skip),
                   K.If((e >= 0) & (e < count), [K.Store(out, e, value)])]
    rounds = K.For(r, start, stop, 1, [*mt19937.twist_kernel(sequence, lid, mt19937.N),
                                        K.If(lid < K.Const(mt19937.BLOCKS, "i32"), [*step.stmts, *stores]),
                                        K.Barrier()], uniform=True)
    offset_rounds = body.let(first / mt19937.BLOCKS)
    offset_twists = K.For(K.Var("t", "i64"), 0, offset_rounds & ((1 << mt19937.OFFSET_LOW_BITS) - 1), 1,
                          mt19937.twist_kernel(sequence, lid, mt19937.N), uniform=True)
    k = K.Var("k", "i64")     # the offset's jump by 2^(k + OFFSET_LOW_BITS) twists, table row groups + k
    offset_jumps = K.For(k, 0, mt19937.OFFSET_JUMPS, 1, [
        K.If(((offset_rounds >> (k + mt19937.OFFSET_LOW_BITS)) & 1).ne(K.Const(0, "i64")),
             mt19937.jump_kernel(sequence, table, (groups + k) * width, lid, "f"), uniform=True)], uniform=True)
    run = [*seeding, offset_twists, offset_jumps, *mt19937.jump_kernel(sequence, table, g * width, lid), rounds]
    return K.Kernel(name, params=[seed_in, offset_in, table, *scalars.tables, out, *scalars.params, groups,
                                  group_rounds, width],
                    grid=(groups,), workgroup_size=(mt19937.ITEMS,), lds=[sequence],
                    body=[*body.stmts, K.If(start < stop, run, uniform=True)],
                    arguments=[*scalars.arguments, ("groups", groups_value), ("group_rounds", group_rounds_value),
                               ("jump_width", op.operands[2].type.shape[1])])


def emit_mtgp32(op: Op, name: str) -> K.Kernel:
    """A round: work-item l computes word STEP r + l, stores the state word N ahead in the LDS ring and
    its output in LDS (the workgroup's WORKGROUP_ITEMS work-items are STEP words); work-item l < BLOCKS
    converts outputs 4 l .. 4 l + 3."""
    state, outputs = K.LdsBuffer("mtgp", "u32", mtgp32.RING), K.LdsBuffer("mtgp_out", "u32", mtgp32.STEP)
    tables = K.LdsBuffer("mtgp_tables", "u32", 2 * len(mtgp32.TBL))

    def step(r, lid):
        recur = Body("g")
        k = recur.let(r * mtgp32.STEP + lid.cast("i64"))
        new_word, output = mtgp32.step_kernel(state, tables, k, recur.let)
        return [*recur.stmts, K.Store(state, (k + mtgp32.N) & (mtgp32.RING - 1), new_word),
                K.Store(outputs, lid, output), K.Barrier()]

    def seeding(seed, lid):   # the tables' stores before the seeding's barrier
        return [K.If(lid.eq(K.Const(0, "i32")), mtgp32.tables_kernel(tables)), *mtgp32.seed_kernel(state, seed, lid)]
    return emit_single_stream(op, name, [state, outputs, tables], seeding, step, mtgp32.BLOCKS,
                              lambda lid, let: [outputs[lid * 4 + j] for j in range(4)])


def emit_single_stream(op: Op, name: str, lds, seed_stmts, round_stmts, blocks: int, words_of) -> K.Kernel:
    """One workgroup for the stream (MTGP32): `seed_stmts(seed, lid)` seeds the state in LDS,
    then rounds r = 0, 1, ... up to the call's last block each run `round_stmts(r, lid)` (the round's
    `blocks` blocks of new words, ending in a barrier); from the round holding block `first` (= offset /
    values per block) on, work-item l < blocks converts its four words `words_of(lid, let)`, global
    block blocks r + l, and stores its values; a barrier ends the round."""
    a = op.attrs
    per_block = 4 // distributions.words_per_value(a["distribution"], a["dtype"], a["generator"])
    scalars = Scalars(op)
    count = scalars.count
    seed_in, offset_in, out = scalars.buffers
    out = K.GlobalBuffer(out.name, out.dtype, count)
    body = Body()
    lid = body.let(K.workitem_id(0))
    offset = body.let(offset_in[0])
    skip = body.let((offset % K.Const(per_block, "u64")).cast("i64"))
    first = body.let((offset / K.Const(per_block, "u64")).cast("i64"))
    last = body.let(first + (count + skip + per_block - 1) / per_block)   # one past the call's last block
    r = K.Var("r", "i64")
    step = Body("o")
    block = step.let(r * blocks + lid.cast("i64"))
    values = scalars.values(op, words_of(lid, step.let), step)
    stores = []
    for j, value in enumerate(values):
        e = K.Var(f"e{j}", "i64")
        stores += [K.Let(e, (block - first) * per_block + j - skip),
                   K.If((e >= 0) & (e < count), [K.Store(out, e, value)])]
    convert = K.If((lid < K.Const(blocks, "i32")) & (r >= first / blocks), [*step.stmts, *stores])
    rounds = K.For(r, 0, (last + blocks - 1) / blocks, 1, [*round_stmts(r, lid), convert, K.Barrier()], uniform=True)
    return K.Kernel(name, params=[seed_in, offset_in, *scalars.tables, out, *scalars.params], grid=(1,),
                    workgroup_size=(WORKGROUP_ITEMS,), lds=lds,
                    body=[*body.stmts, *seed_stmts(seed_in[0], lid), rounds], arguments=scalars.arguments)


def _state_shape(generator) -> tuple[int, ...]:
    """The lengths of the state's parts: XORWOW (register of 5, counter), MRG32k3a (3, 3)."""
    return (xorwow.WORDS, 0) if generator is xorwow else (3, 3)


def _flatten(parts) -> list[K.Expr]:
    """A state (lists of words, or a lone word as XORWOW's counter) as one list."""
    return [w for part in parts for w in (part if isinstance(part, list) else [part])]


def _unflatten(words: list, shape: tuple[int, ...]):
    """The inverse of _flatten: a part of length 0 is a lone word."""
    parts, i = [], 0
    for length in shape:
        parts.append(words[i:i + length] if length else words[i])
        i += max(1, length)
    return parts


def emit_philox(op: Op, name: str) -> K.Kernel:
    a = op.attrs
    distribution, dtype = a["distribution"], a["dtype"]
    per_block = 4 // distributions.words_per_value(distribution, dtype, a["generator"])
    scalars = Scalars(op)
    count = scalars.count
    seed_in, offset_in, subsequence_in, out = scalars.buffers
    out = K.GlobalBuffer(out.name, out.dtype, count)
    items = count / per_block + 2             # enough blocks for any offset's misalignment
    body = Body()
    t = body.let(K.workgroup_id(0).cast("i64") * WORKGROUP_ITEMS + K.workitem_id(0).cast("i64"))
    seed, offset = body.let(seed_in[0]), body.let(offset_in[0])
    skip = body.let((offset % K.Const(per_block, "u64")).cast("i64"))
    block = body.let(offset / K.Const(per_block, "u64") + t.cast("u64"))
    subsequence = body.let(subsequence_in[0])
    counter = [body.let(block.cast("u32")), body.let((block >> K.Const(32, "u64")).cast("u32")),
               body.let(subsequence.cast("u32")), body.let((subsequence >> K.Const(32, "u64")).cast("u32"))]
    key = [body.let(seed.cast("u32")), body.let((seed >> K.Const(32, "u64")).cast("u32"))]
    words = philox.rounds_kernel(counter, key, body.let)
    values = scalars.values(op, words, body)
    stores = []
    for j, value in enumerate(values):
        e = K.Var(f"e{j}", "i64")
        stores += [K.Let(e, t * per_block + j - skip),
                   K.If((e >= 0) & (e < count), [K.Store(out, e, value)])]
    return K.Kernel(name, params=[seed_in, offset_in, subsequence_in, *scalars.tables, out, *scalars.params],
                    grid=(K.ceil_div(items, WORKGROUP_ITEMS),),
                    workgroup_size=(WORKGROUP_ITEMS,),
                    body=[*body.stmts, K.If(t < items, stores)], arguments=scalars.arguments)


def _size(op: Op) -> int:
    size = 1
    for d in op.result.type.shape:
        size *= d
    return size
