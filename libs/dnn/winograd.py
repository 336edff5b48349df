"""The Winograd solvers F(2x2, 3x3) and F(4x4, 3x3) (MIOpen's ConvWinograd, Lavin and Gray's minimal
filtering), as a graph rewrite of a 3x3, stride-1 convolution: with tiles of m x m outputs, a = m + 2,

    V[p, t, c] = (B^T d B)[p]    d the a x a input tile t of feature c    library_call dnn.winograd_input
    U[p, c, k] = (G g G^T)[p]    g the 3x3 taps of (k, c)                   library_call dnn.winograd_filter
    M[p, t, k] = sum_c V[p, t, c] U[p, c, k]                                 a dot_general: libs/blas's batched GEMM
    y[tile t]  = epilogue(A^T M[:, t, k] A + bias)                          library_call dnn.winograd_output

over the a^2 transform points p, so the GEMM multiplies a^2 / m^2 products per output where the
convolution multiplies 9: 2.25x fewer for F(2x2), 4x for F(4x4). Tiles run over (n, output rows / m,
output columns / m), the last ones cut at the output's edge; the input tile reads zero outside x
(the padding). Each transform kernel computes in the accumulator dtype (f32 for f16 and bf16) and
rounds once: V and U to x's dtype (the GEMM's operands), the GEMM accumulates in f32 (f16, bf16) and
M stays there, so the output transform rounds once to y's dtype after the bias and activation (the
epilogue the matcher absorbs into dnn.winograd_output as into dnn.conv_fwd).

Error model (Barabasz et al., "Error analysis and improving the accuracy of Winograd convolution for
deep neural networks", 2020): rounding V and U to x's dtype (eps_in each) and the GEMM's sum over C
(C eps_acc) err by at most the products' magnitudes carried through the absolute transforms,
E = |A^T| (sum_c (|G| |g| |G^T|) * (|B^T| |d| |B|)) |A|, and each transform's own arithmetic by
2a eps_acc of it: |y - conv(x, w)| <= (2 eps_in + (C + 6a) eps_acc) E + eps_out |y|. Against the
direct convolution's C*9 eps_acc sum |x||w|, E is larger by up to `growth(m)` (the worst output's
factor, sum_r |A^T_ir| |G|_r |B^T|_r squared over both dimensions, |M|_r a row's absolute sum): 64 for
F(2x2), 2304 for F(4x4). So the heuristic takes F(4x4) for f32 and f64 only, and F(2x2) for f16 too;
bf16 (8 bits) is left to im2col + GEMM. Tests force them on every float dtype with that bound.

The choice is made at match time, as im2col's (one library call is one kernel; this solver is four):
`choose` compares the modelled times of im2col + GEMM and both tile sizes (`modelled_time`), or takes
the rewrite `forced` names (tests, as the find-db's winner would).
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from fractions import Fraction as Fr

import numpy as np

from ...ir import kernel as K
from ...ir.core import Value
from ...ir.opdef import compute_dtype
from ...ir.targets import Target, get_target
from ...ir.types import NUMPY_DTYPES, dtype_name, numpy_dtype
from ...lowering.emit_ops import all_of
from ...lowering.emitters import operand_buffers
from ..blas.matcher import SUPPORTED
from ..blas.routines import split_epilogue
from .direct import apply_epilogue, unravel
from .problem import row_major

# m -> (B^T, G, A^T) of F(m, 3) (Lavin and Gray 2016, interpolation points 0, +-1 for m = 2 and
# 0, +-1, +-2 for m = 4, and infinity).
TRANSFORMS = {
    2: ([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [Fr(1, 2), Fr(1, 2), Fr(1, 2)], [Fr(1, 2), Fr(-1, 2), Fr(1, 2)], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]]),
    4: ([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
         [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
        [[Fr(1, 4), 0, 0], [Fr(-1, 6), Fr(-1, 6), Fr(-1, 6)], [Fr(-1, 6), Fr(1, 6), Fr(-1, 6)],
         [Fr(1, 24), Fr(1, 12), Fr(1, 6)], [Fr(1, 24), Fr(-1, 12), Fr(1, 6)], [0, 0, 1]],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]),
}
SOLVERS = {"winograd_f2": 2, "winograd_f4": 4}
# The dtypes the heuristic takes each tile size for (the error model above); forced, any float.
PRECISE_ENOUGH = {2: ("f64", "f32", "f16"), 4: ("f64", "f32")}
FEATURES = 64    # a workgroup: 64 consecutive features of some tiles (of one input feature, for the filter)
FEATURES_PER_ITEM = 4    # of one tile, taken by a transform's work-item: 16 bytes of f32
# The input transform takes FEATURES_PER_ITEM features only where their tile values fit this many 32-bit
# registers: 4 features of a 6x6 f32 tile (144) took 257 VGPRs on gfx942, one wave per SIMD to hide 36
# loads' latency, where one feature takes 60 (8 waves); 4 of a 4x4 f32 or f16 tile (64) take 73.
WIDE_INPUT_REGISTERS = 64
# Where x's columns are innermost (NCHW) and a row holds ROW_WINDOW_BYTES, a work-item reads each row of its
# tile as a window of consecutive elements that starts inside the row (`row_window`), so that the loads merge
# into 16-byte ones; the elements are then picked from the window by selects.
ROW_WINDOW_BYTES = 16
# Shares of the target's peak the model credits: libs/blas's GEMM (as gemm_1x1's) and the transforms'
# vector arithmetic.
GEMM_EFFICIENCY, TRANSFORM_EFFICIENCY = 0.7, 0.25

FORCED = {"rewrite": None}


@contextmanager
def forced(name: str):
    """Within the block, convolutions take rewrite `name` (winograd_f2 or winograd_f4: 3x3 stride-1 ones;
    im2col; fft: fft_conv.py) where it applies, whatever the model says (stamp() puts it in compiled
    programs' cache keys)."""
    if name not in (*SOLVERS, "im2col", "fft"):
        raise ValueError(f"dnn: no convolution rewrite {name!r} (rewrites: {', '.join(SOLVERS)}, im2col, fft)")
    before, FORCED["rewrite"] = FORCED["rewrite"], name
    try:
        yield
    finally:
        FORCED["rewrite"] = before


def im2col_forced() -> bool:
    """Whether `forced("im2col")` is in effect: then im2col + GEMM also takes the small convolutions the
    blocked direct solver would (matcher.py)."""
    return FORCED["rewrite"] == "im2col"


def stamp() -> str:
    return f"forced {FORCED['rewrite']}" if FORCED["rewrite"] else ""


def points(m: int) -> int:
    return (m + 2) ** 2


def growth(m: int) -> float:
    """The error model's factor: max over outputs i of (sum_r |A^T_ir| |G|_r |B^T|_r)^2."""
    bt, g, at = TRANSFORMS[m]
    row_sum = lambda matrix, r: float(sum(abs(v) for v in matrix[r]))
    return max(sum(abs(float(at[i][r])) * row_sum(g, r) * row_sum(bt, r) for r in range(m + 2)) for i in range(m)) ** 2


def tiles(out_size, m: int) -> list[int]:
    return [-(-o // m) for o in out_size]


# ---- applicability and the model ------------------------------------------------------------------

def refuse(lhs: Value, rhs: Value, attrs: dict) -> str | None:
    """None when the Winograd rewrite applies (to either tile size), else why not."""
    dtype = lhs.type.dtype
    window = [rhs.type.shape[d] for d in attrs["rhs_spec"][2:]]
    if len(window) != 2 or window != [3, 3]:
        return f"a {'x'.join(map(str, window))} window (Winograd takes 3x3)"
    if any(v != 1 for key in ("window_strides", "lhs_dilation", "rhs_dilation") for v in attrs[key]):
        return "strides or dilations (Winograd takes stride 1, no dilation)"
    if attrs["feature_group_count"] != 1 or attrs["batch_group_count"] != 1:
        return "a grouped convolution"
    if dtype not in ("f64", "f32", "f16", "bf16") or (attrs["preferred_element_type"] or dtype) not in SUPPORTED[dtype]:
        return f"{dtype} operands"
    if lhs.type.size == 0 or rhs.type.size == 0 or any(o <= 0 for o in out_sizes(lhs, attrs)):
        return "empty operands or output"
    return None


def out_sizes(lhs: Value, attrs) -> list[int]:
    return [lhs.type.shape[attrs["lhs_spec"][2 + j]] + sum(attrs["padding"][j]) - 2 for j in range(2)]


def kernel_time(flops: float, elements: float, itemsize: int, peak: float, target: Target) -> float:
    return max(flops / peak, elements * itemsize / target.hbm_bandwidth)


def im2col_time(n: int, c: int, k: int, in_size, out_size, taps: int, dtype: str, target: Target) -> float:
    """Seconds im2col + GEMM takes in the model: the patches written (and x read), then libs/blas's GEMM
    reading them at its share of the matrix peak."""
    item = NUMPY_DTYPES[dtype].itemsize
    x, y, rows = n * c * math.prod(in_size), n * k * math.prod(out_size), n * math.prod(out_size)
    return (kernel_time(0, x + 2 * rows * taps * c, item, target.peak(dtype) * TRANSFORM_EFFICIENCY, target)
            + kernel_time(2 * rows * taps * c * k, rows * taps * c + taps * c * k + y, item,
                          target.peak(dtype, "matrix") * GEMM_EFFICIENCY, target))


def modelled_time(rewrite: str, n: int, c: int, k: int, in_size, out_size, dtype: str, target: Target) -> float:
    """Seconds the rewrite's kernels take on `target` in the model: each kernel max(flops at its share of
    the peak, its reads and writes at HBM bandwidth)."""
    item = NUMPY_DTYPES[dtype].itemsize
    acc = NUMPY_DTYPES[dtype_name(compute_dtype(numpy_dtype(dtype)))].itemsize
    gemm_peak = target.peak(dtype, "matrix") * GEMM_EFFICIENCY
    vector_peak = target.peak(dtype) * TRANSFORM_EFFICIENCY
    x, y = n * c * math.prod(in_size), n * k * math.prod(out_size)
    if rewrite == "im2col":
        return im2col_time(n, c, k, in_size, out_size, 9, dtype, target)
    m = SOLVERS[rewrite]
    a, t = m + 2, n * math.prod(tiles(out_size, m))
    v, u, product = a * a * t * c, a * a * c * k, a * a * t * k
    lanes = lambda features: -(-features // FEATURES) * FEATURES    # the transforms' workgroups' work-items
    return (kernel_time(4 * a * a * a * t * lanes(c), x * a * a / (m * m) + v, item, vector_peak, target)
            + kernel_time(4 * a * a * 3 * c * lanes(k), 9 * c * k + u, item, vector_peak, target)
            + kernel_time(2 * product * c, v + u, item, gemm_peak, target) + product * (acc - item) / target.hbm_bandwidth
            + kernel_time(4 * a * a * m * t * lanes(k), product * acc / item + y, item, vector_peak, target))


def choose(lhs: Value, rhs: Value, attrs: dict, im2col_applies: bool) -> tuple[int | None, str]:
    """(the tile size m, or None for im2col + GEMM; why). The forced rewrite where it applies, else the
    least modelled time on the default target among im2col + GEMM (where it applies) and the tile sizes
    precise enough for the dtype."""
    if refuse(lhs, rhs, attrs) is not None:
        return None, "Winograd does not apply"
    if FORCED["rewrite"] is not None:
        return SOLVERS.get(FORCED["rewrite"]), f"forced {FORCED['rewrite']}"
    times = candidate_times(lhs, rhs, attrs)
    if im2col_applies:
        times["im2col"] = im2col_time(*sizes_of(lhs, rhs, attrs), 9, lhs.type.dtype, get_target())
    best = min(times, key=times.get) if times else "im2col"
    return SOLVERS.get(best), ", ".join(f"{name} {t * 1e6:.3g} us" for name, t in times.items())


def sizes_of(lhs: Value, rhs: Value, attrs: dict) -> tuple:
    """(N, C, K, input sizes, output sizes) of a convolution Winograd applies to."""
    spec = attrs["lhs_spec"]
    return (lhs.type.shape[spec[0]], lhs.type.shape[spec[1]], rhs.type.shape[attrs["rhs_spec"][0]],
            [lhs.type.shape[d] for d in spec[2:]], out_sizes(lhs, attrs))


def candidate_times(lhs: Value, rhs: Value, attrs: dict) -> dict[str, float]:
    """The modelled seconds of the tile sizes the heuristic would take for the convolution (none where
    Winograd does not apply)."""
    if refuse(lhs, rhs, attrs) is not None:
        return {}
    dtype = lhs.type.dtype
    return {name: modelled_time(name, *sizes_of(lhs, rhs, attrs), dtype, get_target()) for name, m in SOLVERS.items()
            if dtype in PRECISE_ENOUGH[m]}


# ---- the rewrite -----------------------------------------------------------------------------------

def winograd_conv(m_, lhs: Value, rhs: Value, attrs: dict, result_type, m: int) -> Value:
    acc = dtype_name(compute_dtype(numpy_dtype(lhs.type.dtype)))
    v = m_.op("library_call", lhs, library="dnn", routine="winograd_input", solution="", tile=m,
              padding=attrs["padding"], lhs_spec=attrs["lhs_spec"], row_window=row_window(lhs.type, attrs["lhs_spec"], m))
    u = m_.op("library_call", rhs, library="dnn", routine="winograd_filter", solution="", tile=m,
              rhs_spec=attrs["rhs_spec"])
    product = m_.op("dot_general", v, u, lhs_contracting=(2,), rhs_contracting=(1,), lhs_batch=(0,), rhs_batch=(0,),
                    preferred_element_type=None if acc == lhs.type.dtype else acc)
    out_spec = attrs["out_spec"]
    return m_.op("library_call", product, library="dnn", routine="winograd_output", solution="", tile=m,
                 out_spec=out_spec, out_size=tuple(result_type.shape[d] for d in out_spec[2:]),
                 result_dtype=result_type.dtype, epilogue="none", clamp_min=None, clamp_max=None)


# ---- the transforms, in kernel IR and in numpy -----------------------------------------------------

def combination(coefficients, exprs, dtype: str) -> K.Expr:
    """sum of coefficient * expr, skipping zeros and multiplying by +-1 as an add or subtract."""
    total = None
    for coefficient, expr in zip(coefficients, exprs):
        if coefficient == 0:
            continue
        term = expr if abs(coefficient) == 1 else expr * K.Const(float(abs(coefficient)), dtype)
        if total is None:
            total = term if coefficient > 0 else -term
        else:
            total = total + term if coefficient > 0 else total - term
    return K.Const(0.0, dtype) if total is None else total


def transform(left, values, dtype: str, prefix: str) -> tuple[list[K.Stmt], list[list[K.Var]]]:
    """(statements, result) of left @ values @ left^T, `values` a matrix of expressions, through
    variables (each intermediate row once)."""
    stmts, half, result = [], [], []
    for r, row in enumerate(left):
        half.append([K.Var(f"{prefix}h{r}_{j}", dtype) for j in range(len(values[0]))])
        stmts += [K.Let(var, combination(row, [values[i][j] for i in range(len(values))], dtype))
                  for j, var in enumerate(half[r])]
    for r in range(len(left)):
        result.append([K.Var(f"{prefix}{r}_{s}", dtype) for s in range(len(left))])
        stmts += [K.Let(result[r][s], combination(left[s], half[r], dtype)) for s in range(len(left))]
    return stmts, result


def numpy_transform(left, values: np.ndarray) -> np.ndarray:
    """left @ values @ left^T over the last two axes, in values' dtype."""
    matrix = np.array([[float(v) for v in row] for row in left], values.dtype)
    return matrix @ values @ matrix.T


def grid_of(features: K.Expr, count: K.Expr, feature_name: str, major_name: str):
    """(feature var, major var, their Lets, the guard, grid, workgroup) of the filter transform's workgroups of
    FEATURES consecutive output features of one input feature: a one-dimensional workgroup, whose work-item
    loop the host vectorizes (its writes consecutive, the input feature invariant in it)."""
    feature, major = K.Var(feature_name, "i64"), K.Var(major_name, "i64")
    lets = [K.Let(feature, K.workgroup_id(0).cast("i64") * FEATURES + K.workitem_id(0).cast("i64")),
            K.Let(major, K.workgroup_id(1).cast("i64"))]
    return feature, major, lets, features, ((features + (FEATURES - 1)) / FEATURES, count), (FEATURES,)


def guarded(features: K.Expr, body) -> K.Stmt:
    """body(full) for the work-items of a feature below `features`: a workgroup whose features all are runs
    body(True) unguarded (a uniform branch, so the host's work-item loop has no condition and vectorizes),
    the others body(False) under a test per work-item."""
    full = (K.workgroup_id(0).cast("i64") + 1) * FEATURES <= features
    inside = K.workgroup_id(0).cast("i64") * FEATURES + K.workitem_id(0).cast("i64") < features
    return K.If(full, body(True), [K.If(inside, body(False))], uniform=True)


def spec_shape(spec, sizes) -> list:
    """Memory-order sizes of an operand whose (first, second, spatial...) dimensions lie at `spec`."""
    shape = [None] * len(spec)
    for dim, size in zip(spec, sizes):
        shape[dim] = size
    return shape


def offset(coords, strides, spec) -> K.Expr:
    return sum((coord * strides[dim] for coord, dim in zip(coords[1:], spec[1:])), coords[0] * strides[spec[0]])


def clamped(value: K.Expr, low, high) -> K.Expr:
    return K.minimum(K.maximum(value, low), high)


def span_work(features: K.Expr, count: K.Expr, per_item: int, body, fast: K.Expr | None = None):
    """(grid, workgroup, statements) of workgroups of FEATURES work-items over FEATURES consecutive features of
    `per_item` consecutive tiles (of `count`): a span (ir/kernel.py: SpanOffset) of per_item rows (tiles) of
    FEATURES columns (features), so that AMDGPU gives a work-item per_item consecutive features of one tile
    (its accesses along the features merge into 16-byte ones) and the host's work-item loop runs over
    consecutive features of one tile (it vectorizes, the tile invariant in it). Tiles past the last, and the
    last workgroup's features past the last, move back (those elements are computed twice, storing the same
    values) instead of being tested, so that a work-item's features stay consecutive: a workgroup whose
    features all lie below `features` takes them as they are (a uniform branch; the host's loop then reads
    and writes consecutive elements), the others clamped, which takes `features` >= per_item.
    `body(elements, whole)` gives the statements of the work-item's (label, feature, tile) elements, the
    labels naming their variables; the whole branch also takes `fast` (uniform) where given."""
    block, first_tile = K.workgroup_id(0).cast("i64") * FEATURES, K.workgroup_id(1).cast("i64") * per_item

    def elements(whole: bool):
        chosen = []
        for k in range(per_item):
            column = K.span_offset(per_item, k, part="column")
            row = K.span_offset(per_item, k, part="row").cast("i64")
            if whole:
                feature = block + column.cast("i64")
            else:
                within = column % per_item
                feature = K.minimum(block + (column - within).cast("i64"), features - per_item) + within.cast("i64")
            # Each branch's variables are its own: the host keeps a variable that two regions share per work-item.
            chosen.append((f"{k}" if whole else f"{k}e", feature, K.minimum(first_tile + row, count - 1)))
        return chosen

    whole = block + FEATURES <= features if fast is None else (block + FEATURES <= features) & fast
    stmts = [K.If(whole, body(elements(True), True), body(elements(False), False), uniform=True)]
    return ((features + (FEATURES - 1)) / FEATURES, (count + (per_item - 1)) / per_item), (FEATURES,), stmts


def row_window(x_type, lhs_spec, m: int) -> int:
    """The elements a work-item of the input transform reads per tile row at once: a whole number of
    ROW_WINDOW_BYTES covering a tile row, where x's columns are innermost and a row holds that many (0: each
    element at its own column, clamped into x)."""
    item = np.dtype(NUMPY_DTYPES[x_type.dtype]).itemsize
    per_vector = max(1, ROW_WINDOW_BYTES // item)
    window = -(-(m + 2) // per_vector) * per_vector
    columns_innermost = lhs_spec[3] == len(lhs_spec) - 1
    return window if columns_innermost and x_type.shape[lhs_spec[3]] >= window else 0


def moved(values: list, move: K.Expr, count: int, moves: int) -> list:
    """values[move:move + count] for a runtime move in [0, moves), through a select per element and bit of
    move (a barrel shifter)."""
    bits = max(1, (moves - 1).bit_length())
    for bit in range(bits):
        step = 1 << bit
        # After this step, element q is values[q + (move mod 2 step)]: what the remaining bits still need.
        needed = count + ((1 << bits) - 1 - (2 * step - 1))
        taken = ((move / step) % 2).eq(1)
        values = [K.select(taken, values[q + step], values[q]) if q + step < len(values) else values[q]
                  for q in range(min(needed, len(values)))]
    return values[:count]


def features_per_item(features: int) -> int:
    """FEATURES_PER_ITEM where there are that many features (span_work moves the last ones back), else 1."""
    return FEATURES_PER_ITEM if features >= FEATURES_PER_ITEM else 1


def input_kernel(op, name: str) -> K.Kernel:
    """A work-item per tile and 4 consecutive input features (span_work) where features are innermost in x and
    their tiles fit WIDE_INPUT_REGISTERS (one feature elsewhere, or where there are fewer): reads each a x a
    tile (zero outside x, read at coordinates clamped into x, or, with the call's row_window, each tile row as
    a window starting inside x's row), writes its a^2 transform points a T*C apart."""
    m, spec, x_type, window = op.attrs["tile"], op.attrs["lhs_spec"], op.operands[0].type, op.attrs["row_window"]
    a, acc = m + 2, dtype_name(compute_dtype(numpy_dtype(x_type.dtype)))
    param = lambda label: K.ScalarParam(label, "i64")
    n, c, h, w, th, tw, pad_h, pad_w = map(param, ("n", "c", "h", "w", "th", "tw", "pad_h", "pad_w"))
    height, width = (x_type.shape[d] for d in spec[2:])
    out = [height + sum(op.attrs["padding"][0]) - 2, width + sum(op.attrs["padding"][1]) - 2]
    arguments = (("n", x_type.shape[spec[0]]), ("c", x_type.shape[spec[1]]), ("h", height), ("w", width),
                 *zip(("th", "tw"), tiles(out, m)), ("pad_h", op.attrs["padding"][0][0]), ("pad_w", op.attrs["padding"][1][0]))
    x_shape = spec_shape(spec, [n, c, h, w])
    x_buf, v_buf = operand_buffers(op)
    count = n * th * tw
    x_buf = K.GlobalBuffer(x_buf.name, x_buf.dtype, n * c * h * w, True)
    v_buf = K.GlobalBuffer(v_buf.name, v_buf.dtype, count * c * (a * a))
    strides = row_major(x_shape)
    # Consecutive features are consecutive elements of x only where they are innermost in memory (NHWC);
    # elsewhere (NCHW) a work-item's features lie planes apart, and taking several gains no wide load.
    # Several features' tiles must also fit WIDE_INPUT_REGISTERS.
    tile_registers = a * a * FEATURES_PER_ITEM * max(1, np.dtype(NUMPY_DTYPES[acc]).itemsize // 4)
    per_item = features_per_item(x_type.shape[spec[1]]) \
        if spec[1] == len(spec) - 1 and tile_registers <= WIDE_INPUT_REGISTERS else 1

    def tile_values(k: str, feature: K.Var, tile: K.Var) -> tuple[list[K.Stmt], list[list[K.Expr]]]:
        """(statements, the a x a values of x's tile, zero outside x) of the work-item's k-th element."""
        stmts, (batch, tile_row, tile_col) = unravel(tile, [n, th, tw], f"t{k}_")
        row0, col0 = K.Var(f"row0_{k}", "i64"), K.Var(f"col0_{k}", "i64")
        stmts += [K.Let(row0, tile_row * m - pad_h), K.Let(col0, tile_col * m - pad_w)]
        rows = [K.Var(f"x_row{k}_{i}", "i64") for i in range(a)]
        stmts += [K.Let(var, clamped(row0 + i, 0, h - 1)) for i, var in enumerate(rows)]
        inside = [[all_of([row0 + i >= 0, row0 + i < h, col0 + j >= 0, col0 + j < w]) for j in range(a)] for i in range(a)]
        if window:
            # Row i's window: `window` consecutive elements from a start clamped so that all lie in x's row
            # (its loads merge into 16-byte ones). Tile column j is window element j + shift: shift is 0
            # inside x, and elsewhere the columns that fall outside the window lie outside x. With a zeros
            # on either side of the window, column j is element j + a + shift, which `moved` takes through
            # log2 steps of selects on the bits of a + shift (a select per column and shift took 48
            # uniform conditions per tile, which spilled SGPRs on gfx942; this takes 4).
            start, move = K.Var(f"x_start{k}", "i64"), K.Var(f"x_move{k}", "i64")
            stmts += [K.Let(start, clamped(col0, 0, w - window)), K.Let(move, clamped(col0 - start + a, 0, a + window))]
            zero = K.Const(0.0, x_type.dtype)
            loaded = [[K.Var(f"x{k}_{i}_{q}", x_type.dtype) for q in range(window)] for i in range(a)]
            stmts += [K.Let(loaded[i][q], x_buf[offset([batch, feature, rows[i], start], strides, spec) + q])
                      for i in range(a) for q in range(window)]
            values = [moved([zero] * a + loaded[i] + [zero] * a, move, a, a + window + 1) for i in range(a)]
        else:
            cols = [K.Var(f"x_col{k}_{j}", "i64") for j in range(a)]
            stmts += [K.Let(var, clamped(col0 + j, 0, w - 1)) for j, var in enumerate(cols)]
            values = [[x_buf[offset([batch, feature, rows[i], cols[j]], strides, spec)] for j in range(a)] for i in range(a)]
        return stmts, [[K.select(inside[i][j], values[i][j].cast(acc), K.Const(0.0, acc)) for j in range(a)]
                       for i in range(a)]

    def body(elements, whole):
        # Element after element: the host splits the work-item loop after each one's stores, so that a loop
        # holds one element's values (all four at once spill on the host).
        stmts = []
        for k, feature_value, tile_value in elements:
            feature, tile = K.Var(f"feature{k}", "i64"), K.Var(f"tile{k}", "i64")
            reads, values = tile_values(k, feature, tile)
            d = [[K.Var(f"d{k}_{i}_{j}", acc) for j in range(a)] for i in range(a)]
            stmts += [K.Let(feature, feature_value), K.Let(tile, tile_value), *reads]
            stmts += [K.Let(d[i][j], values[i][j]) for i in range(a) for j in range(a)]
            transformed, v = transform(TRANSFORMS[m][0], d, acc, f"v{k}_")
            stmts += transformed + [K.Store(v_buf, (K.Const(i * a + j, "i64") * count + tile) * c + feature,
                                            v[i][j].cast(x_type.dtype)) for i in range(a) for j in range(a)]
        return stmts

    grid, workgroup, stmts = span_work(c, count, per_item, body)
    return K.Kernel(name, params=(x_buf, v_buf, n, c, h, w, th, tw, pad_h, pad_w), grid=grid,
                    workgroup_size=workgroup, body=stmts, arguments=arguments)


def filter_kernel(op, name: str) -> K.Kernel:
    """A work-item per (input feature, output feature), consecutive output features in consecutive
    work-items: reads the 3x3 taps, writes the a^2 transform points a C*K apart."""
    m, spec, w_type = op.attrs["tile"], op.attrs["rhs_spec"], op.operands[0].type
    a, acc = m + 2, dtype_name(compute_dtype(numpy_dtype(w_type.dtype)))
    c, k = K.ScalarParam("c", "i64"), K.ScalarParam("k", "i64")
    w_buf, u_buf = operand_buffers(op)
    w_buf = K.GlobalBuffer(w_buf.name, w_buf.dtype, k * c * 9, True)
    u_buf = K.GlobalBuffer(u_buf.name, u_buf.dtype, c * k * (a * a))
    out_feature, feature, lets, inside, grid, workgroup = grid_of(k, c, "out_feature", "feature")
    strides = row_major(spec_shape(spec, [k, c, K.Const(3, "i64"), K.Const(3, "i64")]))
    body = []
    g = [[K.Var(f"g{i}_{j}", acc) for j in range(3)] for i in range(3)]
    body += [K.Let(g[i][j], w_buf[offset([out_feature, feature, K.Const(i, "i64"), K.Const(j, "i64")], strides, spec)]
                   .cast(acc)) for i in range(3) for j in range(3)]
    stmts, u = transform(TRANSFORMS[m][1], g, acc, "u")
    body += stmts + [K.Store(u_buf, (K.Const(i * a + j, "i64") * c + feature) * k + out_feature, u[i][j].cast(w_type.dtype))
                     for i in range(a) for j in range(a)]
    return K.Kernel(name, params=(w_buf, u_buf, c, k), grid=grid, workgroup_size=workgroup,
                    body=[guarded(inside, lambda full: lets + body)],
                    arguments=(("c", w_type.shape[spec[1]]), ("k", w_type.shape[spec[0]])))


def edge_values(y, last_row: K.Expr, last_col: K.Expr, dtype: str, prefix: str) -> tuple[list[K.Stmt], list]:
    """(Lets, the m x m variables of y[min(i, last_row)][min(j, last_col)]), last_row and last_col >= 0."""
    m, stmts = len(y), []
    along_cols = [[K.Var(f"{prefix}c{i}_{j}", dtype) for j in range(m)] for i in range(m)]
    picked = [[K.Var(f"{prefix}{i}_{j}", dtype) for j in range(m)] for i in range(m)]
    for i in range(m):
        for j in range(m):
            stmts.append(K.Let(along_cols[i][j], y[i][j] if j == 0 else
                               K.select(last_col >= j, y[i][j], along_cols[i][j - 1])))
    for i in range(m):
        for j in range(m):
            stmts.append(K.Let(picked[i][j], along_cols[i][j] if i == 0 else
                               K.select(last_row >= i, along_cols[i][j], picked[i - 1][j])))
    return stmts, picked


def output_kernel(op, name: str) -> K.Kernel:
    """A work-item per (tile, output feature), or per tile and 4 consecutive features (span_work): reads
    the tile's a^2 points of M, writes its m x m outputs inside y, each with the bias and activation
    in the accumulator and rounded once."""
    attrs, m_type = op.attrs, op.operands[0].type
    m, spec, acc = attrs["tile"], attrs["out_spec"], m_type.dtype
    a = m + 2
    param = lambda label: K.ScalarParam(label, "i64")
    n, k, ho, wo, th, tw = map(param, ("n", "k", "ho", "wo", "th", "tw"))
    counts = tiles(attrs["out_size"], m)
    arguments = [("n", m_type.shape[1] // math.prod(counts)), ("k", m_type.shape[2]),
                 *zip(("ho", "wo"), attrs["out_size"]), *zip(("th", "tw"), counts)]
    buffers = operand_buffers(op)
    count = n * th * tw
    shapes = [count * k * (a * a)] + [k] * (len(buffers) - 2) + [n * k * ho * wo]
    buffers = [K.GlobalBuffer(b.name, b.dtype, size, b.readonly) for b, size in zip(buffers, shapes)]
    m_buf, y_buf = buffers[0], buffers[-1]
    clamp, scalars = None, [n, k, ho, wo, th, tw]
    if split_epilogue(attrs["epilogue"])[1] == "clamp":
        clamp = tuple(K.ScalarParam(label, acc) for label in ("clamp_min", "clamp_max"))
        arguments += [("clamp_min", -math.inf if attrs["clamp_min"] is None else attrs["clamp_min"]),
                      ("clamp_max", math.inf if attrs["clamp_max"] is None else attrs["clamp_max"])]
        scalars += list(clamp)
    per_item = features_per_item(m_type.shape[2])
    strides = row_major(spec_shape(spec, [n, k, ho, wo]))
    bias = buffers[1] if len(buffers) == 3 else None
    # A workgroup whose tiles all lie inside y stores unguarded (no branch per output); the others test each
    # output. Its tiles (span_work's) are told by workgroup_id(1) itself, so the branch is uniform.
    first_tile = K.workgroup_id(1).cast("i64") * per_item
    group_tiles = [K.minimum(first_tile + r, count - 1) for r in range(per_item)]
    full_tiles = all_of([((t / tw % th + 1) * m <= ho) & ((t % tw + 1) * m <= wo) for t in group_tiles])

    def body(elements, whole):
        # Element after element, as the input transform's.
        stmts = []
        for e, feature_value, tile_value in elements:
            feature, tile = K.Var(f"feature{e}", "i64"), K.Var(f"tile{e}", "i64")
            coords_stmts, (batch, tile_row, tile_col) = unravel(tile, [n, th, tw], f"t{e}_")
            stmts += [K.Let(feature, feature_value), K.Let(tile, tile_value), *coords_stmts]
            points_at = [[K.Var(f"m{e}_{i}_{j}", acc) for j in range(a)] for i in range(a)]
            stmts += [K.Let(points_at[i][j], m_buf[(K.Const(i * a + j, "i64") * count + tile) * k + feature].cast(acc))
                      for i in range(a) for j in range(a)]
            transformed, y = transform(TRANSFORMS[m][2], points_at, acc, f"y{e}_")
            stmts += transformed
            rows, cols = list(range(m)), list(range(m))
            if not whole:
                # An output past y's edge stores instead the tile's last one inside y before it, so that every
                # store is unconditional and every point of M is read whatever the tile (a load used only
                # under a branch would be sunk into it, out of the 16-byte loads of the work-item's features).
                last_row, last_col = K.Var(f"last_row{e}", "i64"), K.Var(f"last_col{e}", "i64")
                stmts += [K.Let(last_row, ho - 1 - tile_row * m), K.Let(last_col, wo - 1 - tile_col * m)]
                picks, y = edge_values(y, last_row, last_col, acc, f"y{e}_edge")
                stmts += picks
                rows, cols = [K.minimum(i, last_row) for i in rows], [K.minimum(j, last_col) for j in cols]
            for i in range(m):
                for j in range(m):
                    row, col = tile_row * m + rows[i], tile_col * m + cols[j]
                    value = apply_epilogue(attrs["epilogue"], bias, clamp, y[i][j], feature)
                    stmts.append(K.Store(y_buf, offset([batch, feature, row, col], strides, spec),
                                           value.cast(attrs["result_dtype"])))
        return stmts

    grid, workgroup, stmts = span_work(k, count, per_item, body, full_tiles)
    return K.Kernel(name, params=(*buffers, *scalars), grid=grid, workgroup_size=workgroup,
                    body=stmts, arguments=tuple(arguments))
