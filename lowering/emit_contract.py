"""The kernel of dot_general (LDS-tiled) for the products no library takes.

It accumulates in the result dtype's accumulator (f16/bf16 results in f32, rounded once; integers
in the result dtype, wrapping), operands converted to it as they are read. Dimension orders are
free: offsets come from index arithmetic on the operands' own strides, no transposes.
It is a simple, correct kernel: passes/match_libraries.py makes the
dot_generals libs/blas supports GEMM library calls, so this dot_general kernel runs the others
(products without contracting dimensions, dtypes the library lacks). Convolutions are libs/dnn's
(every real convolution becomes a `library_call dnn.conv_fwd`; complex ones are expanded to real
ones before).
"""
from __future__ import annotations

import math

from ..ir import kernel as K
from .elemental import row_major_strides
from .emit_ops import index_dtype, offset, reject_complex, unravel
from .emitters import emitter, operand_buffers
from .tiling import accumulator_dtype

TILE = 16  # a TILE x TILE block of the result per workgroup of TILE x TILE work-items, K in steps of TILE


def dims_offset(index: K.Expr, dims, shape, strides, prefix: str) -> tuple[list[K.Stmt], K.Expr]:
    """Statements unravelling `index` over the sizes of `dims` (of an operand of `shape`), and the
    operand offset those coordinates make with the operand's `strides`."""
    stmts, coords = unravel(index, [shape[d] for d in dims], prefix)
    return stmts, offset(coords, [strides[d] for d in dims], index.dtype)


@emitter("dot_general")
def emit_dot_general(op, name):
    """result[b, m, n] = sum_k lhs[b, m, k] rhs[b, k, n], with b, m, n, k each standing for a group
    of dimensions. Workgroup (x, y, z) computes the TILE x TILE block at n0 = x * TILE, m0 = y * TILE
    of batch z; per step of K, its work-items stage one TILE x TILE tile of each operand in LDS
    (zeros outside the operands), wait at a barrier, and each accumulates its result element."""
    reject_complex(op)
    lhs, rhs, out = op.operands[0].type, op.operands[1].type, op.result.type
    lc, rc, lb, rb = (op.attrs[k] for k in ("lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch"))
    lhs_free = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rhs_free = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    batch, depth = math.prod(lhs.shape[d] for d in lb), math.prod(lhs.shape[d] for d in lc)
    rows, cols = math.prod(lhs.shape[d] for d in lhs_free), math.prod(rhs.shape[d] for d in rhs_free)
    params = operand_buffers(op)
    a, b, result = params
    dtype, wide = index_dtype(lhs.size, rhs.size, out.size), accumulator_dtype(out.dtype)
    lhs_strides, rhs_strides = row_major_strides(lhs.shape), row_major_strides(rhs.shape)
    a_tile, b_tile = K.LdsBuffer("a_tile", wide, TILE * TILE), K.LdsBuffer("b_tile", wide, TILE * TILE)

    tx, ty, z = (K.Var(label, dtype) for label in ("tx", "ty", "z"))
    names = ("m", "n", "kt", "kk", "a_base", "b_base", "a_k", "b_k")
    m, n, kt, kk, a_base, b_base, a_k, b_k = (K.Var(label, dtype) for label in names)
    acc = K.Var("acc", wide)
    body = [K.Let(tx, K.workitem_id(0).cast(dtype)), K.Let(ty, K.workitem_id(1).cast(dtype)),
            K.Let(z, K.workgroup_id(2).cast(dtype)),
            K.Let(m, K.workgroup_id(1).cast(dtype) * TILE + ty), K.Let(n, K.workgroup_id(0).cast(dtype) * TILE + tx)]
    # Offsets of this work-item's lhs row (batch z, row m) and rhs column (batch z, column n).
    for base, batch_dims, free, shape, strides, tag in [(a_base, lb, lhs_free, lhs.shape, lhs_strides, "a"),
                                                        (b_base, rb, rhs_free, rhs.shape, rhs_strides, "b")]:
        batch_stmts, batch_offset = dims_offset(z, batch_dims, shape, strides, f"{tag}_batch")
        free_stmts, free_offset = dims_offset(m if tag == "a" else n, free, shape, strides, f"{tag}_free")
        body += batch_stmts + free_stmts + [K.Let(base, batch_offset + free_offset)]

    # Step kt: this work-item stages lhs[m, kt*TILE + tx] and rhs[kt*TILE + ty, n].
    a_stmts, a_offset = dims_offset(a_k, lc, lhs.shape, lhs_strides, "a_c")
    b_stmts, b_offset = dims_offset(b_k, rc, rhs.shape, rhs_strides, "b_c")
    zero = K.Const(0, wide)
    step = [
        K.Let(a_k, kt * TILE + tx), K.Let(b_k, kt * TILE + ty),
        K.If((m < rows) & (a_k < depth), a_stmts + [K.Store(a_tile, ty * TILE + tx, a[a_base + a_offset].cast(wide))],
             [K.Store(a_tile, ty * TILE + tx, zero)]),
        K.If((b_k < depth) & (n < cols), b_stmts + [K.Store(b_tile, ty * TILE + tx, b[b_base + b_offset].cast(wide))],
             [K.Store(b_tile, ty * TILE + tx, zero)]),
        K.Barrier(),
        K.For(kk, 0, TILE, 1, [K.Assign(acc, acc + a_tile[ty * TILE + kk] * b_tile[kk * TILE + tx])]),
        K.Barrier(),
    ]
    body += [K.Let(acc, zero), K.For(kt, 0, -(-depth // TILE), 1, step, uniform=True),
             K.If((m < rows) & (n < cols), [K.Store(result, (z * rows + m) * cols + n, acc.cast(out.dtype))])]
    return K.Kernel(name, params=params, grid=(-(-cols // TILE), -(-rows // TILE), batch),
                    workgroup_size=(TILE, TILE), body=body, lds=[a_tile, b_tile])
