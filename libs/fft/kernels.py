"""What the FFT library tells the compiler about a `library_call fft.*`: its solution (the plan node
it runs and the kernel's variant: `stockham_len4096_radix[16,16,16]_per_group1`,
`bluestein_len10007_chirp`, ...), why, and its kernel (generator.py).

A stockham call's solution is its node's name and one of two variants, each compiled as a kernel of
its own (its count is part of the code, as a BLAS solution's tile):
  - `_lanes{L}`: L transforms side by side (generator.stockham_lanes_kernel), for the layouts
    `generator.lanes_of` gives lanes (strided entries, consecutive transforms: columns, rows written
    transposed, a convolution's rows);
  - `_per_group{P}`: P transforms per workgroup of the butterfly-major kernel, chosen by the batch
    (`per_group_by_batch`): many short transforms fill workgroups of about ITEMS_PER_GROUP elements
    when the workgroups that leaves still cover the target's CUs; a batch too small for that takes
    fewer per workgroup (a power of two), so that it spreads over more CUs, down to as few as keep
    every work-item of every pass busy (`least_group`; so radix-16 lengths, whose 1024 elements give
    a pass of radix 16 one wave of butterflies, are never spread, and lengths of small radices are).
A call whose `solution` names a variant runs it (a test or a user forcing one), once checked against
the call's layout and LDS; an unnamed one gets `select`'s.
"""
from __future__ import annotations

import math
import re

from ...ir.core import Op
from ...ir.kernel import Kernel
from ...ir.targets import Target
from .generator import (chirp_kernel, lanes_of, lanes_spread, part_of, pointwise_kernel, real_edge_kernel,
                        stockham_kernel, twiddles_kernel)
from .plan import LANES, Node, lds_limit
from .routines import complex_view, stockham_view

ITEMS_PER_GROUP = 1024   # the butterfly-major kernel's transforms per workgroup: at most about this many elements
VARIANT = re.compile(r"^(?P<node>.*)_(?P<kind>lanes|per_group)(?P<count>\d+)$")


def stockham_shape(op) -> tuple[int, int, int, int]:
    """[B, M, N, C] of a stockham call's transforms (routines.stockham_view)."""
    attrs = op.attrs
    return stockham_view(complex_view("fft.stockham", op.operands[0].type, attrs["input_kind"]), attrs).shape


def full_group(length: int) -> int:
    """The most transforms of `length` a workgroup takes: about ITEMS_PER_GROUP elements, at least one."""
    return max(1, ITEMS_PER_GROUP // length)


def least_group(radices: tuple[int, ...], target: Target) -> int:
    """The fewest transforms a workgroup takes when a batch is spread: as many as keep a wave's
    butterflies in every pass, the pass of the largest radix having the fewest (at most full_group).
    Fewer would leave work-items of that pass idle, which on the host cost as much as busy ones (its
    vectorized work-item loop): so spreading a batch costs the host no work-item slots per transform,
    only workgroups (1000 transforms of 27 spread from 37 to 8 a workgroup: 1.2x its CPU time; spread
    further, to one round of each pass, 1000 of 64 would take 2.4x)."""
    length = math.prod(radices)
    return min(full_group(length), -(-target.wave_size // (length // max(radices))))


def per_group_by_batch(transforms: int, radices: tuple[int, ...], target: Target) -> int:
    """The transforms per workgroup of the butterfly-major kernel for a batch of `transforms` of
    `radices` on `target`: the most that fill about ITEMS_PER_GROUP elements (at least one) if the
    workgroups that leaves are at least the target's CUs, else the largest power of two below it
    that still makes as many workgroups, but not below least_group (a small batch): a batch spreads
    over more CUs only as far as every work-item keeps a butterfly."""
    full, least = full_group(math.prod(radices)), least_group(radices, target)
    counts = [full] + [1 << e for e in reversed(range(full.bit_length())) if least <= 1 << e < full]
    return next((count for count in counts if -(-transforms // count) >= target.compute_units), counts[-1])


def selected_variant(op, target: Target) -> tuple[str, int]:
    """("lanes" or "per_group", its count) that the layout and the batch select (module docstring)."""
    lanes = lanes_of(op)
    if lanes:
        return "lanes", lanes
    b, m, _, c = stockham_shape(op)
    return "per_group", per_group_by_batch(b * m * c, tuple(op.attrs["radices"]), target)


def stockham_variant(op, target: Target) -> tuple[str, int]:
    """The variant a stockham call runs: the one its `solution` names, checked against the call, else
    selected_variant's."""
    length = math.prod(op.attrs["radices"])
    node = Node(length, tuple(op.attrs["radices"])).name
    named = VARIANT.match(op.attrs["solution"])
    if not op.attrs["solution"]:
        return selected_variant(op, target)
    if named is None or named["node"] != node:
        raise ValueError(f"fft.stockham: solution {op.attrs['solution']!r} is not a variant of {node} "
                         f"(expected {node}_lanes<L> or {node}_per_group<P>)")
    kind, count, part = named["kind"], int(named["count"]), part_of(op)
    spread = lanes_spread(op)
    if kind == "lanes" and (count not in LANES or not spread or spread % count or count * length > lds_limit(part)):
        raise ValueError(f"fft.stockham: solution {op.attrs['solution']!r}: lanes run {LANES} columns or rows "
                         f"written transposed whose spread ({spread}) they divide, {count} x {length} entries "
                         f"within LDS ({lds_limit(part)})")
    most = lds_limit(part, target.max_lds_bytes_per_workgroup) // length
    if kind == "per_group" and not 1 <= count <= most:
        raise ValueError(f"fft.stockham: solution {op.attrs['solution']!r}: 1 to {most} transforms of {length} per "
                         f"workgroup fit in {target.name}'s LDS ({target.max_lds_bytes_per_workgroup} bytes), "
                         f"not {count}")
    return kind, count


def stockham_options(op, kind: str, count: int) -> list[str]:
    attrs = op.attrs
    options = []
    if kind == "lanes":
        columns = stockham_shape(op)[3] > 1
        rows = "rows written transposed" if attrs["transpose"] else "rows in place"
        options.append(f"{count} transforms per workgroup side by side, one a lane: "
                       f"{'columns' if columns else rows}, their entries strided")
    options += ["times a spectrum between the passes and their inverse"] if attrs["spectrum"] != "none" else []
    options += [f"scale {attrs['scale']:g}"] if attrs["scale"] != 1.0 else []
    options += [f"the twiddles of length {attrs['twiddle_length']} after"] if attrs["twiddle_length"] else []
    options += ["transposed result"] if attrs["transpose"] else []
    options += [f"{attrs['input_kind']} input"] if attrs["input_kind"] != "complex" else []
    options += [f"{attrs['output_kind']} output"] if attrs["output_kind"] != "complex" else []
    options += ["a padded input times a conjugated factor"] if attrs["load_factor"] != "none" else []
    options += [f"times a {attrs['store_factor']} factor, {attrs['output_length']} positions"
                + (f" of {attrs['store_positions']}" if attrs["store_positions"] else "")] \
        if attrs["store_factor"] != "none" else []
    return options


def batch_reason(op, count: int, target: Target) -> str:
    """Why the butterfly-major kernel takes `count` transforms per workgroup (per_group_by_batch)."""
    b, m, _, c = stockham_shape(op)
    transforms, length = b * m * c, math.prod(op.attrs["radices"])
    full = full_group(length)
    groups = -(-transforms // count)
    if ("per_group", count) != selected_variant(op, target):
        return f"{count} transform{'s' * (count > 1)} per workgroup, named by the call's solution: {groups} workgroups"
    if count == full == 1:
        return f"one transform per workgroup (of {ITEMS_PER_GROUP} elements or more), {groups} workgroups"
    units, plural = target.compute_units, "s" * (groups != 1)
    if count == full and groups >= units:
        return (f"many transforms: {count} per workgroup (about {ITEMS_PER_GROUP} elements), {groups} workgroups "
                f"for the {units} CUs")
    fewer = f"not {full}, " if count < full else ""
    if groups >= units:
        return (f"a batch of {transforms}: {count} per workgroup, {fewer}so that its {groups} workgroups cover "
                f"the {units} CUs")
    return (f"a batch of {transforms}: {count} per workgroup, {fewer}{groups} workgroup{plural} for the {units} CUs "
            f"(fewer transforms would leave work-items of a pass idle)")


def stockham_solution(op, target: Target) -> tuple[str, str]:
    kind, count = stockham_variant(op, target)
    node = Node(math.prod(op.attrs["radices"]), tuple(op.attrs["radices"])).name
    options = stockham_options(op, kind, count)
    if kind == "per_group":
        options.insert(0, batch_reason(op, count, target))
    elif ("lanes", count) != selected_variant(op, target):
        options.insert(0, "named by the call's solution")
    return f"{node}_{kind}{count}", f"the plan node, whole in LDS ({', '.join(options)})"


# routine -> (the solution's name, why) of a call and the target
SOLUTIONS = {
    "twiddles": lambda op, t: (f"twiddles_len{op.attrs['length']}"
                               + (f"_large{op.attrs['twiddle_length']}" if op.attrs["twiddle_length"] else ""),
                               "the node's twiddle table, computed once per call in f64"),
    "stockham": stockham_solution,
    "chirp": lambda op, t: (f"bluestein_len{op.attrs['length']}_chirp",
                            f"Bluestein's filter, padded to {op.attrs['size']}"),
    "pointwise": lambda op, t: (f"pointwise_{op.attrs['factor']}_{op.attrs['input_kind']}_{op.attrs['output_kind']}",
                                f"a product, padding or crop to {op.attrs['length']} of a plan's edge"),
    "rfft_post": lambda op, t: ("rfft_post", "a real transform's spectrum from the half-length complex FFT"),
    "irfft_pre": lambda op, t: ("irfft_pre", "a real inverse transform's half-length complex input"),
}
EMITTERS = {"twiddles": twiddles_kernel, "chirp": chirp_kernel, "pointwise": pointwise_kernel,
            "rfft_post": real_edge_kernel, "irfft_pre": real_edge_kernel}


def select(op: Op, target: Target) -> str:
    return SOLUTIONS[op.attrs["routine"]](op, target)[0]


def explain(op: Op, target: Target) -> tuple[str, str]:
    return SOLUTIONS[op.attrs["routine"]](op, target)


def emit(op: Op, name: str, target: Target) -> Kernel:
    if op.attrs["routine"] == "stockham":
        return stockham_kernel(op, name, *stockham_variant(op, target))
    return EMITTERS[op.attrs["routine"]](op, name)
