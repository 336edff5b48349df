"""A convolution call's problem (its sizes, layouts and dtypes, as numbers) and its kernel parameters
(the same sizes as scalar parameters, so that one kernel serves every problem of its solution).

Naming, as MIOpen's: N the output batch, C the input features per group, K the output features,
G the feature groups, BG the batch groups; per spatial dimension j, in_size (H, W, D), out_size,
window (R, S, T), stride, pad (low side), lhs and rhs dilation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.opdef import compute_dtype
from ...ir.ops.linalg import swap_first_two
from ...ir.types import dtype_name, numpy_dtype
from ...lowering.emitters import operand_buffers
from ..blas.routines import split_epilogue

SPATIAL_SCALARS = ("in_size", "out_size", "window", "stride", "pad", "lhs_dilation", "rhs_dilation")


@dataclass(frozen=True)
class ConvProblem:
    n: int
    c: int
    k: int
    groups: int
    batch_groups: int
    in_size: tuple[int, ...]
    out_size: tuple[int, ...]
    window: tuple[int, ...]
    stride: tuple[int, ...]
    pad: tuple[tuple[int, int], ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]
    in_dtype: str
    result_dtype: str
    epilogue: str
    direction: str = "F"
    clamp: tuple = (None, None)     # the clamp epilogue's bounds (kernel parameters: not in the key)

    @classmethod
    def from_op(cls, op: Op) -> "ConvProblem":
        """The convolution a dnn call computes, as written (DIRECTIONS: the backward ones as the graph's
        convolutions the matcher took them from), with its direction."""
        a = op.attrs
        x, w, y = op.operands[0].type, op.operands[1].type, op.result.type
        spatial = range(x.ndim - 2)
        direction = DIRECTIONS[a["routine"]]
        return cls(y.shape[a["out_spec"][0]], w.shape[a["rhs_spec"][1]], w.shape[a["rhs_spec"][0]],
                   a["feature_group_count"], a["batch_group_count"],
                   tuple(x.shape[a["lhs_spec"][2 + j]] for j in spatial), tuple(y.shape[a["out_spec"][2 + j]] for j in spatial),
                   tuple(w.shape[a["rhs_spec"][2 + j]] for j in spatial), tuple(a["window_strides"]),
                   tuple(tuple(p) for p in a["padding"]), tuple(a["lhs_dilation"]), tuple(a["rhs_dilation"]),
                   tuple(a["lhs_spec"]), tuple(a["rhs_spec"]), tuple(a["out_spec"]), x.dtype, y.dtype,
                   a["epilogue"] if direction == "F" else "none", direction,
                   (a["clamp_min"], a["clamp_max"]) if direction == "F" else (None, None))

    @property
    def spatial(self) -> int:
        return len(self.in_size)

    @property
    def dilated(self) -> bool:
        """Whether x is lhs-dilated (a transposed convolution): the kernels' variant that skips the holes."""
        return any(d > 1 for d in self.lhs_dilation)

    @property
    def flip(self) -> bool:
        """Whether the kernels read w's taps reversed (backward data: the graph's rev(w), absorbed)."""
        return self.direction == "B"

    def forward(self) -> "ConvProblem":
        """The forward convolution whose backward pass this problem is (itself for "F"), as MIOpen
        describes a backward problem: x, w and y of the forward convolution. Backward data
        dx = conv(dy, rev(w)) with dy's positions lhs-dilated by the forward stride; backward weights
        dw = conv(x, dy) with batch and features swapped, dy's positions rhs-dilated by the stride.
        Of the forward high paddings that give dy's size, the least."""
        if self.direction == "F":
            return self
        spatial = range(self.spatial)
        if self.direction == "B":
            span = [(r - 1) * d for r, d in zip(self.window, self.rhs_dilation)]
            return ConvProblem(self.n, self.k, self.c, 1, 1, self.out_size, self.in_size, self.window, self.lhs_dilation,
                               tuple((s - lo, s - hi) for s, (lo, hi) in zip(span, self.pad)), self.stride,
                               self.rhs_dilation, self.out_spec, swap_first_two(self.rhs_spec), self.lhs_spec,
                               self.in_dtype, self.result_dtype, "none")
        stride, dilation = self.rhs_dilation, self.stride
        pad = tuple((lo, (o - 1) * s + (r - 1) * d + 1 - h - lo) for (lo, _), o, s, r, d, h in
                    zip(self.pad, self.window, stride, self.out_size, dilation, self.in_size))
        return ConvProblem(self.c, self.n, self.k, 1, 1, self.in_size, self.window, self.out_size,
                           stride, pad, self.lhs_dilation, dilation, swap_first_two(self.lhs_spec),
                           swap_first_two(self.out_spec), swap_first_two(self.rhs_spec), self.in_dtype,
                           self.result_dtype, "none")

    @property
    def acc_dtype(self) -> str:
        return dtype_name(compute_dtype(numpy_dtype(self.result_dtype)))

    @property
    def flops(self) -> int:
        """Multiply-adds times two, counting every tap (padding included), as MIOpen reports them."""
        return 2 * self.n * self.k * self.c * math.prod(self.out_size) * math.prod(self.window)

    def layout(self) -> str:
        """The layouts as MIOpen and lax name them: NCHW-style letters of x, w and y."""
        letters = "HWD"[:self.spatial] if self.spatial <= 3 else "".join(f"S{j}" for j in range(self.spatial))
        def name(spec, first, second):
            chars = [""] * len(spec)
            for letter, dim in zip((first, second, *letters), spec):
                chars[dim] = letter
            return "".join(chars)
        return f"{name(self.lhs_spec, 'N', 'C')}-{name(self.rhs_spec, 'O', 'I')}-{name(self.out_spec, 'N', 'C')}"

    def key(self) -> str:
        """MIOpen's problem key: N-C-H-W-K-R-S-pads-strides-dilations-group-layout-dtype-direction, of the
        forward convolution (`forward`) and the direction (F, B backward data, W backward weights)."""
        if self.direction != "F":
            return self.forward().key()[:-1] + self.direction
        join = lambda values: "x".join(str(v) for v in values)
        return "-".join([str(self.n * self.batch_groups), str(self.c * self.groups), join(self.in_size),
                         str(self.k), join(self.window), join(f"{lo}_{hi}" for lo, hi in self.pad), join(self.stride),
                         join(self.rhs_dilation), "l" + join(self.lhs_dilation), f"g{self.groups}",
                         f"bg{self.batch_groups}", self.layout(), self.in_dtype, "F"])

    def describe(self) -> str:
        if self.direction != "F":
            return f"{DIRECTION_NAMES[self.direction]} of {self.forward().describe()}"
        groups = f" groups {self.groups}" if self.groups > 1 else ""
        groups += f" batch groups {self.batch_groups}" if self.batch_groups > 1 else ""
        epilogue = f" {self.epilogue}" if self.epilogue != "none" else ""
        epilogue += f" [{self.clamp[0]}, {self.clamp[1]}]" if self.epilogue.endswith("clamp") else ""
        return (f"N{self.n} C{self.c * self.groups} {join_sizes(self.in_size)} -> K{self.k} window "
                f"{join_sizes(self.window)} stride {join_sizes(self.stride)}{groups} {self.layout()} "
                f"{self.in_dtype}->{self.result_dtype}{epilogue}")


# The direction of each convolution routine, as MIOpen's keys name them.
DIRECTIONS = {"conv_fwd": "F", "conv_bwd_data": "B", "conv_bwd_weights": "W"}
DIRECTION_NAMES = {"B": "backward data", "W": "backward weights"}


def join_sizes(sizes) -> str:
    return "x".join(str(s) for s in sizes)


class ConvParams:
    """A problem's sizes as i64 scalar parameters of a kernel, the buffers (their element counts extents
    of them), the arguments binding them to the call, and index arithmetic on the three layouts."""

    def __init__(self, op: Op, problem: ConvProblem):
        p = self.problem = problem
        self.dtype = "i64"
        param = lambda name: K.ScalarParam(name, self.dtype)
        self.n, self.c, self.k, self.groups, self.batch_groups = (param(n) for n in ("n", "c", "k", "g", "bg"))
        # Output features per feature group and per batch group (kernels divide by them; a grid may not).
        self.k_per_group, self.k_per_batch_group = param("kg"), param("kbg")
        self.spatial = {name: [param(f"{name}{j}") for j in range(p.spatial)] for name in SPATIAL_SCALARS}
        values = {"in_size": p.in_size, "out_size": p.out_size, "window": p.window, "stride": p.stride,
                  "pad": [lo for lo, _ in p.pad], "lhs_dilation": p.lhs_dilation, "rhs_dilation": p.rhs_dilation}
        self.arguments = [("n", p.n), ("c", p.c), ("k", p.k), ("g", p.groups), ("bg", p.batch_groups),
                          ("kg", p.k // p.groups), ("kbg", p.k // p.batch_groups)] + \
            [(f"{name}{j}", values[name][j]) for name in SPATIAL_SCALARS for j in range(p.spatial)]
        self.scalars = [self.n, self.c, self.k, self.groups, self.batch_groups, self.k_per_group,
                        self.k_per_batch_group] + \
            [s for name in SPATIAL_SCALARS for s in self.spatial[name]]
        self.x_shape = self.shape(p.lhs_spec, [self.n * self.batch_groups, self.c * self.groups], "in_size")
        self.w_shape = self.shape(p.rhs_spec, [self.k, self.c], "window")
        self.y_shape = self.shape(p.out_spec, [self.n, self.k], "out_size")
        shapes = [self.x_shape, self.w_shape] + [[self.k]] * split_epilogue(p.epilogue)[0] + [self.y_shape]
        self.buffers = [K.GlobalBuffer(b.name, b.dtype, product(shape), b.readonly)
                        for b, shape in zip(operand_buffers(op), shapes)]
        # The clamp epilogue's bounds, in the accumulator's dtype (an unbounded side clamps at infinity).
        self.clamp = None
        if split_epilogue(p.epilogue)[1] == "clamp":
            self.clamp = tuple(K.ScalarParam(name, p.acc_dtype) for name in ("clamp_min", "clamp_max"))
            self.arguments += [("clamp_min", -math.inf if p.clamp[0] is None else p.clamp[0]),
                               ("clamp_max", math.inf if p.clamp[1] is None else p.clamp[1])]
            self.scalars += list(self.clamp)
        self.params = self.buffers + self.scalars
        self.x_strides, self.w_strides, self.y_strides = (row_major(s) for s in (self.x_shape, self.w_shape, self.y_shape))

    def shape(self, spec, leading, spatial_name) -> list[K.Expr]:
        """The memory-order sizes of an operand whose (first, second, spatial...) dimensions lie at `spec`."""
        sizes = [None] * len(spec)
        for dim, size in zip(spec, leading + self.spatial[spatial_name]):
            sizes[dim] = size
        return sizes

    def w_taps(self, taps) -> list[K.Expr]:
        """w's tap coordinates of the convolution's taps `taps`: reversed where the problem flips w."""
        if not self.problem.flip:
            return list(taps)
        return [size - 1 - t for t, size in zip(taps, self.spatial["window"])]

    @staticmethod
    def offset(coords, strides, spec) -> K.Expr:
        """The offset of the element whose (first, second, spatial...) coordinates are `coords`."""
        total = None
        for coord, dim in zip(coords, spec):
            term = coord * strides[dim]
            total = term if total is None else total + term
        return total


def product(values) -> K.Expr:
    total = values[0]
    for v in values[1:]:
        total = total * v
    return total


def row_major(shape) -> list[K.Expr]:
    """Row-major strides of sizes given as expressions (the last one 1)."""
    strides = [K.Const(1, "i64")]
    for size in reversed(shape[1:]):
        strides.insert(0, strides[0] * size if not is_one(strides[0]) else size)
    return strides


def is_one(expr) -> bool:
    return isinstance(expr, K.Const) and expr.value == 1
