"""`fusion`: a group of ops the fusion pass (passes/fusion.py) made into one kernel.

Its one region holds the fused ops. The region is closed: it reads only its parameters, which
take the operands (the group's inputs from outside), and yields the results (the group's values
used outside). `kind` is "loop" (elementwise and data movement, one iteration space) or
"reduction" (the group holds reductions that share one operand shape and reduced axes).
"""
from ..opdef import define, fmt_types, require

FUSION_KINDS = ("loop", "reduction")


def fusion_infer(types, attrs, regions):
    (body,) = regions
    require(attrs["kind"] in FUSION_KINDS, f"fusion: kind {attrs['kind']!r} is not one of {', '.join(FUSION_KINDS)}")
    require(body.param_types == list(types),
            f"fusion: the region takes ({fmt_types(body.param_types)}) but the operands are ({fmt_types(types)})")
    return body.output_types


def fusion(*operands, kind, regions):
    (body,) = regions
    return tuple(body(*operands))


define("fusion", infer=fusion_infer, reference=fusion, attrs={"kind": "str"}, num_regions=1,
       doc="a fused kernel: the region runs on the operands and yields the results")
