"""Control flow with regions: while (cond and body regions) and cond (one region per branch).

fori_loop and scan are traced to `while`; lax.cond and lax.switch to `cond`.
"""
from ..opdef import define, fmt_types, require
from ..types import INTS


def while_infer(types, attrs, regions):
    cond, body = regions
    require(cond.param_types == types and body.param_types == types,
            f"while: cond and body parameters ({fmt_types(cond.param_types)}; {fmt_types(body.param_types)}) "
            f"must match the initial values ({fmt_types(types)})")
    require([str(t) for t in cond.output_types] == ["bool[]"],
            f"while: cond must yield one bool[], got ({fmt_types(cond.output_types)})")
    require(body.output_types == types,
            f"while: body yields ({fmt_types(body.output_types)}) but the loop carries ({fmt_types(types)})")
    return types


def while_loop(*init, regions):
    cond, body = regions
    carry = list(init)
    while bool(cond(*carry)[0]):
        carry = body(*carry)
    return tuple(carry)


define("while", infer=while_infer, reference=while_loop, num_regions=2,
       doc="regions: cond (carry -> bool[]), body (carry -> carry)")


def cond_infer(types, attrs, regions):
    require(len(types) >= 1, "cond needs an index operand")
    index, *operands = types
    require(index.shape == () and index.dtype in INTS, f"cond: the branch index must be an integer scalar, got {index}")
    outputs = regions[0].output_types
    for i, branch in enumerate(regions):
        require(branch.param_types == operands,
                f"cond: branch {i} takes ({fmt_types(branch.param_types)}) but the operands are ({fmt_types(operands)})")
        require(branch.output_types == outputs,
                f"cond: branch {i} yields ({fmt_types(branch.output_types)}) but branch 0 yields ({fmt_types(outputs)})")
    return outputs


def cond(index, *operands, regions):
    chosen = min(max(int(index), 0), len(regions) - 1)  # clamped, as lax.switch
    return tuple(regions[chosen](*operands))


define("cond", infer=cond_infer, reference=cond, num_regions=None,
       doc="operands: integer index (clamped to the branches), then the branches' operands")
