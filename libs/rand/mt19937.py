"""MT19937 (M. Matsumoto and T. Nishimura, "Mersenne Twister", ACM TOMACS 8(1), 1998), seeded by
mt19937ar's init_genrand (a 32-bit seed, as std::mt19937 and numpy's RandomState(seed) seed it) or
init_by_array (a key of 32-bit words, as numpy's RandomState(key) seeds it), written twice over: in
numpy (the reference) and as workgroup kernels.

The state is N = 624 words; a regeneration (the "twist") replaces word i by
mt[i + M] ^ twist(upper bit of mt[i], lower 31 bits of mt[i + 1]) with M = 397, indices mod N, in
increasing i, so words i >= N - M read words regenerated earlier in the same twist. Word i reads the
new word i - (N - M), so the twist falls into three stretches of independent words: [0, 227) reads
only old words, [227, 454) reads the new [0, 227), [454, 624) the new [227, 397) (word 623 reads the
new word 0 as its lower bits). Output word k of a regeneration is word k tempered; the stream's first
624 words come from the first twist of the seeded state.

Jump-ahead: write x_0, x_1, ... for the sequence of state words (x_0 .. x_623 the seeded state, the
twist after t twists holding x_624t .. x_624t+623). Its bits obey the linear recurrence of the
generator's characteristic polynomial phi (degree 19937, 135 terms: CHARACTERISTIC_TERMS, the minimal
polynomial of the most significant bits, by Berlekamp-Massey), so if x^J = sum c_i x^i mod phi, then
word x_{B+J+j} = xor of x_{B+i+j} over the set coefficients c_i, for every j >= 1 and the most
significant bit at j = 0 (the low 31 bits of the state's first word are never read again nor output,
as mt19937ar). The state J words on is thus a correlation of c with the next 19937 + 623 words, 32
twists of the state (H. Haramoto et al., "Efficient jump ahead for F2-linear random number
generators", INFORMS J. Computing 20(3), 2008, by a sliding window; here as the plain correlation,
parallel over the state's 624 words). `jump_table` holds c's set bits for each workgroup's jump.

Parallelism: workgroup g runs the rounds (a round: a twist, then its 624 words converted, a block of
four words per work-item) [R0 + g G, R0 + (g + 1) G) of the call, G = `group_rounds`, R0 the round
of the call's first block: it seeds the state (one work-item), twists R0 mod 2^OFFSET_LOW_BITS times,
jumps 2^k twists for each higher set bit k of R0 (the offset's jumps, the same rows in every call),
jumps G g twists, then runs its rounds. A jump costs about as much as 2^OFFSET_LOW_BITS twists.
"""
from __future__ import annotations

import functools

import numpy as np

from ...ir import kernel as K

N, M = 624, 397
MATRIX_A, UPPER, LOWER = 0x9908B0DF, 0x80000000, 0x7FFFFFFF
STRETCHES = ((0, N - M), (N - M, 2 * (N - M)), (2 * (N - M), N))   # independent words of a twist
BLOCKS = N // 4                                                    # distribution blocks a twist
ITEMS = 256                                                        # work-items of a workgroup
STATE_SLOTS = -(-N // ITEMS)                                       # state words a work-item, in a jump
SEQUENCE_WORDS = N + ITEMS * STATE_SLOTS                           # LDS of a jump: two twists and the
                                                                   # reads of the slots past N
DEGREE = 19937
CHARACTERISTIC_TERMS = (   # the exponents of phi's nonzero terms
    0, 1189, 1416, 1585, 1643, 1870, 2493, 2773, 3000, 3227, 3454, 3681, 3908, 4135, 4362, 4753, 5661, 6337, 6569,
    7129, 7477, 7525, 7583, 7752, 7979, 8206, 9505, 9901, 9969, 10128, 10693, 10761, 10920, 11089, 11147, 11157,
    11215, 11321, 11374, 11384, 11485, 11611, 11712, 11717, 11838, 11881, 11944, 11997, 12277, 12335, 12393, 12504,
    12509, 12620, 12673, 12731, 12736, 12789, 12905, 12958, 12963, 13137, 13185, 13190, 13243, 13301, 13412, 13528,
    13533, 13639, 13697, 13760, 13813, 13866, 14093, 14151, 14209, 14320, 14325, 14436, 14547, 14552, 14605, 14721,
    14774, 14779, 14953, 15001, 15006, 15059, 15117, 15228, 15344, 15349, 15455, 15513, 15576, 15629, 15682, 15909,
    15967, 16025, 16136, 16141, 16252, 16363, 16368, 16421, 16537, 16590, 16595, 16817, 16822, 16875, 16933, 17044,
    17160, 17271, 17329, 17445, 17498, 17725, 17783, 17841, 17952, 18068, 18179, 18237, 18406, 18633, 18691, 18860,
    19087, 19314, 19937)
CHUNKS = -(-DEGREE // N)          # a jump's coefficients by twist: chunk q's words come from twists q and q + 1
HEADER = 2 + CHUNKS               # a jump table row: chunks used, chunk q's first entry at 1 + q, then entries
MIN_GROUP_ROUNDS = 2048           # a workgroup's rounds at least: its jump (32 twists and a correlation of
                                  # about 10^4 words a work-item) then costs a fifth of its rounds on the host
MAX_GROUPS = 64
OFFSET_LOW_BITS = 9               # an offset's rounds below 2^9 are twisted, the higher bits jumped
OFFSET_JUMPS = 64 - OFFSET_LOW_BITS
JUMP_TWISTS = 4096                # the reference's words jump rather than twist further than this


def seeded(seed) -> np.ndarray:
    """mt19937ar's init_genrand(seed & 0xffffffff) of an integer seed; init_by_array of a 1-D key."""
    if np.ndim(seed):
        return seeded_by_array(np.asarray(seed, np.uint32))
    mt = [int(seed) & 0xFFFFFFFF]
    for i in range(1, N):
        mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xFFFFFFFF)
    return np.array(mt, np.uint32)


def seeded_by_array(key: np.ndarray) -> np.ndarray:
    """mt19937ar's init_by_array(key, len(key))."""
    mt = [int(v) for v in seeded(19650218)]
    i, j = 1, 0
    for _ in range(max(N, len(key))):
        mt[i] = ((mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525)) + int(key[j]) + j) & 0xFFFFFFFF
        i, j = i + 1, (j + 1) % len(key)
        if i >= N:
            mt[0], i = mt[N - 1], 1
    for _ in range(N - 1):
        mt[i] = ((mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941)) - i) & 0xFFFFFFFF
        i += 1
        if i >= N:
            mt[0], i = mt[N - 1], 1
    mt[0] = UPPER
    return np.array(mt, np.uint32)


def twist(mt: np.ndarray) -> np.ndarray:
    """The next state, stretch by stretch (each stretch's words are independent)."""
    mt = mt.copy()
    for lo, hi in STRETCHES:
        i = np.arange(lo, hi)
        y = (mt[i] & np.uint32(UPPER)) | (mt[(i + 1) % N] & np.uint32(LOWER))
        mt[i] = mt[(i + M) % N] ^ (y >> np.uint32(1)) ^ np.where(y & np.uint32(1), np.uint32(MATRIX_A), np.uint32(0))
    return mt


def temper(y: np.ndarray) -> np.ndarray:
    y = y ^ (y >> np.uint32(11))
    y = y ^ ((y << np.uint32(7)) & np.uint32(0x9D2C5680))
    y = y ^ ((y << np.uint32(15)) & np.uint32(0xEFC60000))
    return y ^ (y >> np.uint32(18))


def words(seed, first: int, count: int) -> np.ndarray:
    """Output words first .. first + count - 1 of the seed's stream (uint32), twist after twist from
    the seed, or from the state `jumped` to the first's twist when that is more than JUMP_TWISTS away
    (the jump itself is checked against twisting in the tests)."""
    mt, out, skipped = seeded(seed), [], first // N
    if skipped > JUMP_TWISTS:
        mt = jumped(mt, N * skipped)
    else:
        skipped = 0
    for r in range(skipped, (first + count + N - 1) // N):
        mt = twist(mt)
        if (r + 1) * N > first:
            out.append(temper(mt))
    stream = np.concatenate(out) if out else np.zeros(0, np.uint32)
    start = first - (first // N) * N
    return stream[start:start + count]


# -- jump-ahead --

def _reduce(p: int) -> int:
    """p mod phi (polynomials over GF(2) as integers, bit i the coefficient of x^i)."""
    while p.bit_length() > DEGREE:
        high = p >> DEGREE
        p &= (1 << DEGREE) - 1
        for e in CHARACTERISTIC_TERMS[:-1]:
            p ^= high << e
    return p


def _times(a: int, b: int) -> int:
    """a b mod phi: b's bytes against a table of a's products with every byte."""
    products = [0] * 256
    for k in range(1, 256):
        low = k & -k
        products[k] = products[k ^ low] ^ (a << (low.bit_length() - 1))
    p = 0
    for i, byte in enumerate(b.to_bytes(max(1, (b.bit_length() + 7) // 8), "little")):
        p ^= products[byte] << (8 * i)
    return _reduce(p)


def jump_polynomial(words_ahead: int) -> int:
    """x^words_ahead mod phi, by squaring."""
    p = 1
    for bit in bin(words_ahead)[2:]:
        p = _times(p, p)
        if bit == "1":
            p = _reduce(p << 1)
    return p


def jumped(state: np.ndarray, words_ahead: int) -> np.ndarray:
    """The state words_ahead words on (a multiple of N: twists), by the correlation of
    jump_polynomial(words_ahead) with the state's next words (the kernel's algorithm, in numpy)."""
    sequence = [state]
    for _ in range(CHUNKS):
        sequence.append(twist(sequence[-1]))
    x = np.concatenate(sequence)
    out = np.zeros(N, np.uint32)
    for i in coefficients(jump_polynomial(words_ahead)):
        out ^= x[i:i + N]
    return out


def coefficients(p: int) -> np.ndarray:
    """The exponents of p's nonzero terms, increasing."""
    data = np.frombuffer(p.to_bytes(max(1, (p.bit_length() + 7) // 8), "little"), np.uint8)
    return np.flatnonzero(np.unpackbits(data, bitorder="little"))


def layout(count: int, per_block: int) -> tuple[int, int]:
    """(workgroups, rounds each) of a call of `count` values, `per_block` a block: enough rounds for
    any offset's misalignment (a round of slack at each end)."""
    blocks = -(-(count + per_block - 1) // per_block)
    rounds = -(-blocks // BLOCKS) + 1
    group_rounds = max(MIN_GROUP_ROUNDS, -(-rounds // MAX_GROUPS))
    return max(1, -(-rounds // group_rounds)), group_rounds


def _row(c: int) -> np.ndarray:
    """A jump table row of the polynomial c (int32): its set coefficients i by chunk q = i / N: the
    number of chunks up to the last with one, then the first entry of chunk q at 1 + q (the end of the
    last at 1 + CHUNKS), then the entries i - N q."""
    exponents = coefficients(c)
    chunk = exponents // N
    starts = HEADER + np.searchsorted(chunk, np.arange(CHUNKS + 1))
    return np.concatenate([[chunk[-1] + 1], starts, exponents - N * chunk]).astype(np.int32)


@functools.lru_cache(maxsize=1)
def offset_rows() -> tuple[np.ndarray, ...]:
    """The rows of the jumps by 2^k twists, k = OFFSET_LOW_BITS .. 63, by squaring."""
    c, rows = jump_polynomial(N << OFFSET_LOW_BITS), []
    for _ in range(OFFSET_JUMPS):
        rows.append(_row(c))
        c = _times(c, c)
    return tuple(rows)


@functools.lru_cache(maxsize=8)
def jump_table(groups: int, group_rounds: int) -> np.ndarray:
    """int32[groups + OFFSET_JUMPS, HEADER + entries]: row g < groups is the jump of g group_rounds
    twists, row groups + k - OFFSET_LOW_BITS that of 2^k twists (`_row`'s layout)."""
    step = jump_polynomial(N * group_rounds)
    rows, c = [], 1
    for _ in range(groups):
        rows.append(_row(c))
        c = _times(c, step)
    rows += offset_rows()
    table = np.zeros((len(rows), max(map(len, rows))), np.int32)
    for g, row in enumerate(rows):
        table[g, :len(row)] = row
    return table


# -- kernel statements --

def temper_kernel(y: K.Expr, let) -> K.Expr:
    y = let(y ^ (y >> K.Const(11, "u32")))
    y = let(y ^ ((y << K.Const(7, "u32")) & K.Const(0x9D2C5680, "u32")))
    y = let(y ^ ((y << K.Const(15, "u32")) & K.Const(0xEFC60000, "u32")))
    return let(y ^ (y >> K.Const(18, "u32")))


def _genrand_seeding(state: K.LdsBuffer, seed: K.Expr, base: int) -> list[K.Stmt]:
    """init_genrand's recurrence into state[base:base + N], by the work-item that runs it."""
    i, previous = K.Var("si", "i32"), K.Var("sp", "u32")
    step = [K.Assign(previous, previous ^ (previous >> K.Const(30, "u32"))),
            K.Assign(previous, previous * K.Const(1812433253, "u32") + i.cast("u32")),
            K.Store(state, base + i, previous)]
    return [K.Let(previous, seed), K.Store(state, base, previous), K.For(i, 1, N, 1, step)]


def seed_kernel(state: K.LdsBuffer, seed: K.Expr, lid: K.Expr, base: int = 0) -> list[K.Stmt]:
    """Work-item 0 writes init_genrand's state (a sequential recurrence) at `base`; then a barrier."""
    return [K.If(lid.eq(K.Const(0, "i32")), _genrand_seeding(state, seed.cast("u32"), base)), K.Barrier()]


def seed_by_array_kernel(state: K.LdsBuffer, key: K.GlobalBuffer, lid: K.Expr, base: int = 0) -> list[K.Stmt]:
    """Work-item 0 writes init_by_array(key)'s state at `base` (`seeded_by_array`'s loops); then a
    barrier."""
    i, j, n, previous = K.Var("ki", "i32"), K.Var("kj", "i32"), K.Var("kn", "i32"), K.Var("kp", "u32")
    at = lambda index: base + index

    def mix(factor: int, add: K.Expr) -> list[K.Stmt]:
        return [K.Let(previous, state[at(i - 1)]),
                K.Store(state, at(i), (state[at(i)] ^ ((previous ^ (previous >> K.Const(30, "u32")))
                                                       * K.Const(factor, "u32"))) + add),
                K.Assign(i, i + 1),
                K.If(i >= N, [K.Store(state, at(0), state[at(N - 1)]), K.Assign(i, K.Const(1, "i32"))])]
    first = mix(1664525, key[j] + j.cast("u32")) + [
        K.Assign(j, j + 1), K.If(j >= key.count, [K.Assign(j, K.Const(0, "i32"))])]
    second = mix(1566083941, K.Const(0, "u32") - i.cast("u32"))
    return [K.If(lid.eq(K.Const(0, "i32")), [
        *_genrand_seeding(state, K.Const(19650218, "u32"), base),
        K.Let(i, K.Const(1, "i32")), K.Let(j, K.Const(0, "i32")),
        K.For(n, 0, max(N, key.count), 1, first), K.For(n, 0, N - 1, 1, second),
        K.Store(state, at(0), K.Const(UPPER, "u32"))]),
        K.Barrier()]


def twist_kernel(state: K.LdsBuffer, lid: K.Expr, base: int = 0) -> list[K.Stmt]:
    """The twist of state[base:base + N] in LDS by a workgroup of at least N - M work-items, stretch by
    stretch: each work-item reads its word's operands, a barrier, writes the word, a barrier."""
    stmts = []
    for s, (lo, hi) in enumerate(STRETCHES):
        active = lid < K.Const(hi - lo, "i32")
        i = lid + lo
        value, y = K.Var(f"tw{s}", "u32"), K.Var(f"ty{s}", "u32")
        stmts += [K.Let(value, K.Const(0, "u32")), K.If(active, [
            K.Let(y, (state[base + i] & K.Const(UPPER, "u32")) | (state[base + (i + 1) % N] & K.Const(LOWER, "u32"))),
            K.Assign(value, state[base + (i + M) % N] ^ (y >> K.Const(1, "u32"))
                     ^ (K.Const(0, "u32") - (y & K.Const(1, "u32")) & K.Const(MATRIX_A, "u32")))]),
            K.Barrier(), K.If(active, [K.Store(state, base + i, value)]), K.Barrier()]
    return stmts


def jump_kernel(sequence: K.LdsBuffer, table: K.GlobalBuffer, row: K.Expr, lid: K.Expr,
                name: str = "j") -> list[K.Stmt]:
    """The state in sequence[N:2N] jumped by table row `row` (an i64 index of its first entry): per
    chunk q, the twist-q state copied to sequence[:N] and the state twisted to twist q + 1 in place, so
    that sequence[i + j] is word i + j of the chunk for i + j < 2N - 1; work-item l accumulates words
    j = l, l + ITEMS, l + 2 ITEMS of the jumped state (those past N read past the chunk, in
    SEQUENCE_WORDS, and are not stored), in a loop over the chunk's entries uniform across the
    workgroup, so that the host's work-item loops are its innermost (consecutive LDS loads); then the
    state is stored back. `name` prefixes its variables (a kernel may hold two jumps)."""
    js = [lid + ITEMS * m for m in range(STATE_SLOTS)]
    sums = [K.Var(f"{name}s{m}", "u32") for m in range(STATE_SLOTS)]
    owns = [j < N for j in js]
    q, p = K.Var(f"{name}q", "i64"), K.Var(f"{name}p", "i64")
    accumulate = K.For(p, table[row + 1 + q].cast("i64"), table[row + 2 + q].cast("i64"), 1, [
        K.Assign(s, s ^ sequence[table[row + p] + j]) for s, j in zip(sums, js)], uniform=True)
    chunk = [*(K.If(own, [K.Store(sequence, j, sequence[N + j])]) for own, j in zip(owns, js)), K.Barrier(),
             *twist_kernel(sequence, lid, N), accumulate, K.Barrier()]
    return [*(K.Let(s, K.Const(0, "u32")) for s in sums),
            K.For(q, 0, table[row].cast("i64"), 1, chunk, uniform=True),
            *(K.If(own, [K.Store(sequence, N + j, s)]) for own, j, s in zip(owns, js, sums)), K.Barrier()]
