"""Named classes of graph-IR ops that the rewrite rules and fusion refer to (as tinygrad's GroupOp)."""
from ..ir.opdef import OPS

# Every op of the elementwise family (ir/ops/elementwise.py) that reads operands: its operands have
# its result's shape (clamp's bounds may be scalars). Read from the op table, so a new one joins by itself.
ELEMENTWISE = frozenset(name for name, opdef in OPS.items()
                        if opdef.infer.__module__.endswith("ops.elementwise") and opdef.num_operands != 0)

# Binary ops whose operands may be swapped (the pattern matcher tries both orders).
COMMUTATIVE = frozenset({"add", "mul", "max", "min", "and", "or", "xor", "eq", "ne"})

# Ops that only move or convert data: inside a fused kernel each output element is found by index
# arithmetic on the operands, so they can be recomputed on demand wherever they are used
# (dynamic_slice's element c is its operand's c + the clamped start scalars).
DATA_MOVEMENT = frozenset({"broadcast_in_dim", "reshape", "transpose", "slice", "rev", "pad", "concatenate",
                           "dynamic_slice", "convert", "bitcast_convert"})

# Ops without operands that generate their data.
SOURCES = frozenset({"constant", "iota"})
