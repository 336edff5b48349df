"""`shard_map`: per-device code over a mesh inside a traced program (frontend/shard_map.py).

    %r = shard_map(%x) {mesh = "i=4", in_specs = "i", out_specs = ""} : f32[8]
        ^(%p: f32[2]): ... yield %q          (the per-device function, on one device's shards)

The region is the function traced on one device's shard shapes, its collectives in their per-device
form (`library_call ccl.*`). A spec is written as the sharding constraint's (dims by ';', a dim's
mesh axes by ','), the specs of the operands (results) by '|'. A result's global shape is its
per-device shape times its out_spec's axes. The op has no reference: the partitioner
(passes/partition.py) inlines it into the per-device program (each operand resharded to its
in_spec, the region's ops run on every device, each result sharded as its out_spec says), so a
program holding one always runs partitioned.
"""
from __future__ import annotations

import math

from ..opdef import define, fmt_types, require
from ..types import TensorType


def spec_text(spec) -> str:
    """A spec as attributes hold it: dims by ';', a dim's axes by ','."""
    return ";".join(",".join(axes) for axes in spec)


def spec_of_text(text: str, ndim: int) -> tuple:
    dims = text.split(";") if ndim else []
    return tuple(tuple(a for a in dim.split(",") if a) for dim in dims)


def specs_text(specs) -> str:
    return "|".join(spec_text(spec) for spec in specs)


def specs_of_text(text: str, ndims: list[int]) -> list[tuple]:
    parts = text.split("|") if ndims else []
    require(len(parts) == len(ndims), f"shard_map: specs {text!r} are not one per value ({len(ndims)})")
    return [spec_of_text(part, ndim) for part, ndim in zip(parts, ndims)]


def mesh_sizes(text: str) -> dict[str, int]:
    """A mesh attribute ("data=2,model=4") as axis -> size."""
    return {name: int(size) for name, size in (axis.split("=") for axis in text.split(","))}


def devices_of(sizes: dict, axes) -> int:
    return math.prod(sizes[a] for a in axes)


def shard_map_infer(types, attrs, regions):
    (body,) = regions
    sizes = mesh_sizes(attrs["mesh"])
    require(body.param_types == [TensorType(t.dtype, tuple(n // devices_of(sizes, axes) for n, axes in zip(t.shape, spec)))
                                 for t, spec in zip(types, specs_of_text(attrs["in_specs"], [t.ndim for t in types]))],
            f"shard_map: the body takes ({fmt_types(body.param_types)}), not the shards of ({fmt_types(types)}) "
            f"under in_specs {attrs['in_specs']!r}")
    outs = body.output_types
    return [TensorType(t.dtype, tuple(n * devices_of(sizes, axes) for n, axes in zip(t.shape, spec)))
            for t, spec in zip(outs, specs_of_text(attrs["out_specs"], [t.ndim for t in outs]))]


def shard_map(*operands, regions, **attrs):
    raise NotImplementedError("shard_map has no reference: passes/partition.py inlines it, so a program holding "
                              "one runs partitioned")


define("shard_map", infer=shard_map_infer, reference=shard_map, num_regions=1,
       attrs={"mesh": "str", "in_specs": "str", "out_specs": "str"},
       doc="region: the per-device function over one device's shards; attrs: the mesh and the specs")
