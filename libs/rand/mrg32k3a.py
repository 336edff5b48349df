"""MRG32k3a (P. L'Ecuyer, "Good parameters and implementations for combined multiple recursive random
number generators", Operations Research 47(1), 1999), seeded and reduced exactly as rocRAND's
mrg32k3a_engine, written twice over: in Python integers (the reference) and on kernel-IR expressions.

Two order-3 recurrences, s1[n] = a12 s1[n-2] - a13n s1[n-3] mod m1 and s2[n] = a21 s2[n-1] - a23n s2[n-3]
mod m2; the output is p1 - p2 in [1, m1] (p1 - p2 + m1 when p1 <= p2), and rocRAND's 32-bit word is
(output - 1) * (2^32 - 1) / (m1 - 1) rounded down in double. The reductions are rocRAND's: a fold of
the high word (2^32 = m + c mod m, c = 209 or 22853) then one conditional subtraction (two folds for m2).

Skip-ahead: each recurrence is a 3 x 3 matrix mod its m, so n steps are the product of the matrices'
2^k-th powers over the set bits k of n; JUMPS holds them for k < 64 and, for rocRAND's subsequences of
2^76 words (L'Ecuyer's substreams), the 2^(76 + k)-th at 64 + k (computed at import by squaring).
"""
from __future__ import annotations

import numpy as np

from ...ir import kernel as K
from .xorwow import jump_bit_set

M1, M2 = 4294967087, 4294944443
M1C, M2C = 209, 22853                     # 2^32 mod m1, 2^32 mod m2
SUBSEQUENCE_LOG2 = 76                     # rocRAND's subsequence (L'Ecuyer's substream): 2^76 words
A12, A13N, A21, A23N = 1403580, 810728, 527612, 1370589
UINT_NORM = 1.000000048661607             # (2^32 - 1) / (m1 - 1), as rocRAND rounds it
NORM = 2.3283065498378288e-10             # rocRAND's ROCRAND_MRG32K3A_NORM_DOUBLE, 1 / m1: its uniforms
DEFAULT_SEED = 12345                      # rocRAND's seed in place of 0
U64 = (1 << 64) - 1
U32 = (1 << 32) - 1


def fold(p: int, c: int, m: int, folds: int) -> int:
    """rocRAND's mod_m1 (folds=1) / mod_m2 (folds=2) of a u64."""
    for _ in range(folds):
        p = (c * (p >> 32) + (p & U32)) & U64
    return p - m if p >= m else p


def mod1(p: int) -> int: return fold(p, M1C, M1, 1)
def mod2(p: int) -> int: return fold(p, M2C, M2, 2)


def mul_mod(x: int, seed: int, mod) -> int:
    """rocRAND's mod_mul_m1/m2(x, seed): x split at 2^17 so each partial product is reduced."""
    hi, lo = x >> 17, x & 0x1FFFF
    return mod(((mod((hi * seed) & U64) << 17) + mod((lo * seed) & U64)) & U64)


def seeded(seed: int) -> tuple[list[int], list[int]]:
    """rocRAND's mrg32k3a_engine(seed, 0, 0): (g1, g2), three u32 words each."""
    seed = seed or DEFAULT_SEED
    x, y = (seed & U32) ^ 0x55555555, ((seed >> 32) ^ 0xAAAAAAAA) & U32
    g1 = [mul_mod(v, seed, mod1) & U32 for v in (x, y, x)]
    g2 = [mul_mod(v, seed, mod2) & U32 for v in (y, x, y)]
    return g1, g2


def step(g1: list[int], g2: list[int]) -> tuple[int, list[int], list[int]]:
    """One step: (output in [1, m1], g1, g2)."""
    p1 = mod1(A12 * g1[1] + A13N * ((M1 - g1[0]) & U32))
    p2 = mod2(A21 * g2[2] + A23N * ((M2 - g2[0]) & U32))
    return (p1 - p2) + (M1 if p1 <= p2 else 0), [g1[1], g1[2], p1], [g2[1], g2[2], p2]


def word(output: int) -> int:
    """rocRAND's rocrand(state) on an output: a u32."""
    return int(float(output - 1) * UINT_NORM)


def word_numpy(outputs: np.ndarray) -> np.ndarray:
    return ((outputs.astype(np.float64) - 1.0) * UINT_NORM).astype(np.uint32)


def _matrix_power_table(matrix, m) -> np.ndarray:
    out = []
    for _ in range(SUBSEQUENCE_LOG2 + 64):
        out.append([v for row in matrix for v in row])
        matrix = [[sum(matrix[i][t] * matrix[t][j] for t in range(3)) % m for j in range(3)] for i in range(3)]
    return np.array(out[:64] + out[SUBSEQUENCE_LOG2:], np.uint64)


# u64[128, 2, 9]: [k, 0] = A1^(2^k) mod m1, [k, 1] = A2^(2^k) mod m2, row-major; [64 + k] the 2^(76 + k)-th.
JUMPS = np.stack([_matrix_power_table([[0, 1, 0], [0, 0, 1], [M1 - A13N, A12, 0]], M1),
                  _matrix_power_table([[0, 1, 0], [0, 0, 1], [M2 - A23N, 0, A21]], M2)], axis=1)


def mat_vec(a, s: list[int], mod) -> list[int]:
    """rocRAND's mod_mat_vec_m1/m2."""
    return [mod(sum(mod(int(a[3 * r + c]) * s[c]) for c in range(3))) for r in range(3)]


def jump(g1: list[int], g2: list[int], n: int, subsequence: int = 0) -> tuple[list[int], list[int]]:
    """The state `subsequence` subsequences and n steps on."""
    for k in range(128):
        if ((n if k < 64 else subsequence) >> (k % 64)) & 1:
            g1, g2 = mat_vec(JUMPS[k, 0], g1, mod1), mat_vec(JUMPS[k, 1], g2, mod2)
    return g1, g2


def outputs(seed: int, first: int, count: int, subsequence: int = 0) -> np.ndarray:
    """Outputs first .. first + count - 1 (in [1, m1], uint32) of the seed's subsequence's stream."""
    g1, g2 = jump(*seeded(seed), first, subsequence)
    out = np.empty(count, np.uint32)
    for i in range(count):
        out[i], g1, g2 = step(g1, g2)
    return out


def words(seed: int, first: int, count: int, subsequence: int = 0) -> np.ndarray:
    """rocRAND's words (rocrand()) first .. first + count - 1 of the seed's subsequence's stream."""
    return word_numpy(outputs(seed, first, count, subsequence))


# -- kernel expressions (u64 arithmetic wraps as the Python above masks) --

def _u64(v: int) -> K.Const: return K.Const(v, "u64")


def fold_kernel(p: K.Expr, c: int, m: int, folds: int, let) -> K.Expr:
    for _ in range(folds):
        p = let(_u64(c) * (p >> _u64(32)) + (p & _u64(U32)))
    return let(K.select(p >= _u64(m), p - _u64(m), p))


def mod1_kernel(p, let): return fold_kernel(p, M1C, M1, 1, let)
def mod2_kernel(p, let): return fold_kernel(p, M2C, M2, 2, let)


def seeded_kernel(seed: K.Expr, let) -> tuple[list[K.Expr], list[K.Expr]]:
    seed = let(K.select(seed.eq(_u64(0)), _u64(DEFAULT_SEED), seed))
    x = let((seed & _u64(U32)) ^ _u64(0x55555555))
    y = let(((seed >> _u64(32)) ^ _u64(0xAAAAAAAA)) & _u64(U32))

    def mul_mod_kernel(v, mod):
        hi, lo = v >> _u64(17), v & _u64(0x1FFFF)
        return let(mod((mod(let(hi * seed), let) << _u64(17)) + mod(let(lo * seed), let), let).cast("u32"))
    return ([mul_mod_kernel(v, mod1_kernel) for v in (x, y, x)], [mul_mod_kernel(v, mod2_kernel) for v in (y, x, y)])


def step_kernel(g1: list[K.Expr], g2: list[K.Expr], let) -> tuple[K.Expr, list[K.Expr], list[K.Expr]]:
    """One step: (output in [1, m1] as u32, g1, g2); rocRAND's distributions take the output itself."""
    def term(a, v, m):
        return _u64(a) * (_u64(m) - v.cast("u64")).cast("u32").cast("u64")
    p1 = mod1_kernel(let(_u64(A12) * g1[1].cast("u64") + term(A13N, g1[0], M1)), let)
    p2 = mod2_kernel(let(_u64(A21) * g2[2].cast("u64") + term(A23N, g2[0], M2)), let)
    output = let((p1 - p2 + K.select(p1 <= p2, _u64(M1), _u64(0))).cast("u32"))
    return output, [g1[1], g1[2], p1.cast("u32")], [g2[1], g2[2], p2.cast("u32")]


def word_kernel(output: K.Expr, let) -> K.Expr:
    """rocrand()'s u32 from an output in [1, m1]."""
    return let(((output.cast("f64") - 1.0) * UINT_NORM).cast("u32"))


def jump_kernel(g1: list[K.Var], g2: list[K.Var], n: K.Expr, subsequence: K.Expr, table: K.Buffer, prefix: str
                ) -> list[K.Stmt]:
    """Statements moving the state vars `subsequence` subsequences and n (both u64) steps on by JUMPS'
    matrices over their set bits."""
    k = K.Var(f"{prefix}k", "i64")
    inner: list[K.Stmt] = []

    def let(expr):
        var = K.Var(f"{prefix}t{len(inner)}", expr.dtype)
        inner.append(K.Let(var, expr))
        return var
    updates = []
    for g, which, mod in ((g1, 0, mod1_kernel), (g2, 1, mod2_kernel)):
        for r in range(3):
            terms = [mod(let(table[(k * 2 + which) * 9 + 3 * r + c] * g[c].cast("u64")), let) for c in range(3)]
            updates.append((g[r], mod(let(terms[0] + terms[1] + terms[2]), let).cast("u32")))
    apply = [*inner, *[K.Assign(var, value) for var, value in updates]]
    return [K.For(k, 0, 128, 1, [K.If(jump_bit_set(n, subsequence, k), apply)])]
