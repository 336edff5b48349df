"""A random-program tester: programs of cdnajit.numpy and lax calls, compiled and interpreted, each
output checked against an oracle of numpy evaluated with JAX's dtype rules.

Programs (programs.generate): DAGs of 3 to 30 ops over 1 to 3 inputs (contractions may add an
input as their partner), drawn from the families of ops.py: elementwise (transcendental included),
comparisons, casts between all dtypes, Python scalars (weak types), where, reshape/transpose/
squeeze/expand_dims, slices with steps, integer-array indexing (constant or computed indices),
`.at[].set/add/min/max` with duplicate indices, reductions, arg-reductions, cumulative ops (reverse
too), matmul with broadcast batch dimensions, A @ A^T, einsum of a transposed operand, sort and
argsort, concatenate/stack/pad/roll/flip/broadcast_to, and fori_loop, while_loop, cond and scan
whose bodies are drawn from the same families. Shapes have 0 to 4 dimensions of sizes that cross
vector and workgroup boundaries (0, 1, 31..33, 63..65, 127, 129, 257, 1000, 4096, up to 64 Ki
elements); inputs of every dtype hold small numbers, normals and the dtype's edge values (NaN,
+-Inf, -0.0, subnormals, the largest finite values, integer extremes).

Oracle (values.py, elementwise.py, structural.py). Each value carries its reference `ref`, computed
in float64 (complex128, or the integer type itself, which wraps as JAX's does) from the operands'
references converted to JAX's result dtype (jaxtypes.py: promotion lattice with weak types,
to-inexact, sum's integer widening), then rounded to that dtype; and a per-element bound `err`
on |computed - ref|:

- Correctly rounded ops (+ - * / sqrt, conversions, min/max, abs, neg, data movement, comparisons,
  remainder) on exact operands are exact: ref is then what IEEE arithmetic in the dtype gives
  (float64 then one rounding is correct rounding for f32, f16 and bf16 results, as 53 >= 2p + 2),
  so values are compared bit for bit, signs of zeros included. Integers, bools, NaN positions and
  infinities are always compared exactly where the value is determined.
- An op may add its own error: transcendentals k ulp of the result (k = 4, the math library's
  measured maximum rounded up (README); +2 for float64, numpy's own float64 error); complex
  products 2 ulp of |a||b|, complex quotients 8 ulp of |a|/|b|.
- Sums of n terms in any order (sum, mean, cumsum, matmul's K products, `.at[].add` duplicates):
  2 n u sum|x_i| + sum err_i, u the unit roundoff of the result dtype (the textbook bound
  gamma_n ~ n u for any order, doubled because the float64 reference has its own, smaller, error);
  products likewise with relative errors. A value whose partial sums or products could overflow
  or underflow in some order (sum|x| > max, etc.) is left undetermined.
- Operand errors propagate: a + b: ea + eb; a * b: |a| eb + |b| ea + ea eb; a / b:
  (|a| eb + |b| ea) / (|b| (|b| - eb)); monotone functions: the spread of f over [x - e, x + e];
  sin/cos: 1-Lipschitz; sort, max, min, data movement: the largest bound moved; plus one rounding.
- Discontinuous results (comparisons, floor/round/sign, casts to integers, argmax/argsort, cond's
  predicate, a NaN appearing in the operand's interval) are exact where the operands' intervals
  do not straddle a jump, and undetermined (not compared) elsewhere. Values JAX leaves open
  (integer division by zero, the winner of a `.at[].set` through a duplicate index, the sign of
  max(-0.0, 0.0), sin/cos beyond |x| 1e5 in f32) are undetermined too.

The bounds are never widened to make a run pass: a failure is a defect of the compiler, the
interpreter or the oracle, and is reported with a shrunk repro (programs.shrink).
"""
