"""The implicit-GEMM solver's kernel: per feature group g, the GEMM

    y[rows, cols] = A[rows, depth] @ B[depth, cols]      rows = (n, output position), cols = output
                                                          feature of g, depth = (tap, input feature)
    A[(n, o), (t, c)] = x[n, g*C + c, o*stride + t*rdil - pad]   (zero on padding and lhs-dilation holes)
    B[(t, c), k]      = w[g*K/G + k, c, t]

computed as the LDS-tiled dot_general kernel is, except that A's tiles are gathered from x as they are
staged: the im2col matrix is never written to memory. Workgroup (x, y, g) computes the TILE x TILE block
of y at cols x*TILE, rows y*TILE of group g; per step of TILE depth values its work-items stage one
element of each tile (zeros past the edges), wait at a barrier and accumulate one output each.
Every size is a scalar parameter (problem.py).
"""
from __future__ import annotations

from ...ir import kernel as K
from ...lowering.emit_ops import all_of
from .direct import epilogue, tap_position, unravel
from .problem import ConvParams, product

TILE = 16


def implicit_gemm_kernel(op, problem, name: str) -> K.Kernel:
    params = ConvParams(op, problem)
    p, dtype, acc_dtype = problem, params.dtype, problem.acc_dtype
    x, w, y = params.buffers[0], params.buffers[1], params.buffers[-1]
    window, out_size = params.spatial["window"], params.spatial["out_size"]
    rows = params.n * product(out_size)
    cols = params.k_per_group
    depth = params.c * product(window)
    a_tile, b_tile = K.LdsBuffer("a_tile", acc_dtype, TILE * TILE), K.LdsBuffer("b_tile", acc_dtype, TILE * TILE)
    tx, ty, g = (K.Var(label, dtype) for label in ("tx", "ty", "group"))
    m, col, kt, kk, a_k, b_k = (K.Var(label, dtype) for label in ("m", "col", "kt", "kk", "a_k", "b_k"))
    acc = K.Var("acc", acc_dtype)
    zero = K.Const(0, acc_dtype)
    body = [K.Let(tx, K.workitem_id(0).cast(dtype)), K.Let(ty, K.workitem_id(1).cast(dtype)),
            K.Let(g, K.workgroup_id(2).cast(dtype)),
            K.Let(m, K.workgroup_id(1).cast(dtype) * TILE + ty), K.Let(col, K.workgroup_id(0).cast(dtype) * TILE + tx)]
    # This work-item's row: its batch and output position (clamped to the last row past the edge).
    row_stmts, row = unravel(K.minimum(m, rows - 1), [params.n] + out_size, "r")
    body += row_stmts
    feature = K.Var("feature", dtype)
    body.append(K.Let(feature, g * params.k_per_group + K.minimum(col, cols - 1)))

    # Step kt: stage A[m, kt*TILE + tx] and B[kt*TILE + ty, col].
    a_stmts, a_coords = unravel(a_k, window + [params.c], "a")
    valid, x_coords = [], []
    for j in range(p.spatial):
        ok, coord = tap_position(params, j, row[1 + j], a_coords[j], p.dilated)
        valid.append(ok)
        x_coords.append(coord)
    x_index = params.offset([row[0], g * params.c + a_coords[-1]] + x_coords, params.x_strides, p.lhs_spec)
    b_stmts, b_coords = unravel(b_k, window + [params.c], "b")
    w_index = params.offset([feature, b_coords[-1]] + params.w_taps(b_coords[:-1]), params.w_strides, p.rhs_spec)
    a_read = K.Var("a_read", acc_dtype)
    step = [
        K.Let(a_k, kt * TILE + tx), K.Let(b_k, kt * TILE + ty),
        K.Let(a_read, zero),
        K.If(a_k < depth, a_stmts + [K.If(all_of(valid), [K.Assign(a_read, x[x_index].cast(acc_dtype))])]),
        K.Store(a_tile, ty * TILE + tx, a_read),
        K.If((b_k < depth) & (col < cols), b_stmts + [K.Store(b_tile, ty * TILE + tx, w[w_index].cast(acc_dtype))],
             [K.Store(b_tile, ty * TILE + tx, zero)]),
        K.Barrier(),
        K.For(kk, 0, TILE, 1, [K.Assign(acc, acc + a_tile[ty * TILE + kk] * b_tile[kk * TILE + tx])]),
        K.Barrier(),
    ]
    y_index = params.offset([row[0], feature] + row[1:], params.y_strides, p.out_spec)
    body += [K.Let(acc, zero), K.For(kt, 0, (depth + (TILE - 1)) / TILE, 1, step, uniform=True),
             K.If((m < rows) & (col < cols),
                  [K.Store(y, y_index, epilogue(params, acc, feature).cast(p.result_dtype))])]
    grid = ((cols + (TILE - 1)) / TILE, (rows + (TILE - 1)) / TILE, params.groups)
    return K.Kernel(name, params=tuple(params.params), grid=grid, workgroup_size=(TILE, TILE), body=body,
                    lds=[a_tile, b_tile], arguments=tuple(params.arguments))
