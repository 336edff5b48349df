"""sort: sorts several arrays of one shape along a dimension by their first operands, as lax.sort."""
import numpy as np

from ..opdef import compute_dtype, define, fmt_types, require, set_rules
from .rules import is_differentiable


def sort_infer(types, attrs, regions):
    dimension, num_keys = attrs["dimension"], attrs["num_keys"]
    require(len(types) >= 1, "sort needs at least one operand")
    first = types[0]
    require(all(t.shape == first.shape for t in types), f"sort: operands must have one shape, got {fmt_types(types)}")
    require(0 <= dimension < first.ndim, f"sort: dimension {dimension} out of range for {first}")
    require(1 <= num_keys <= len(types), f"sort: num_keys {num_keys} must be between 1 and the {len(types)} operands")
    return types


def sort_keys(operand):
    """The numpy sort keys of one operand, most significant first: complex numbers order by real
    then imaginary part; NaNs go last (a NaN test before the value) and -0.0 equals 0.0."""
    parts = [operand.real, operand.imag] if operand.dtype.kind == "c" else [operand]
    keys = []
    for part in parts:
        part = part.astype(compute_dtype(part.dtype))
        if part.dtype.kind == "f":
            keys += [np.isnan(part), np.where(np.isnan(part), 0, part)]
        else:
            keys.append(part)
    return keys


def sort(*operands, dimension, is_stable, num_keys):
    keys = [key for operand in operands[:num_keys] for key in sort_keys(operand)]
    order = np.lexsort(keys[::-1], axis=dimension)  # lexsort is stable; its last key is the primary one
    return tuple(np.take_along_axis(operand, order, axis=dimension) for operand in operands)


define("sort", infer=sort_infer, reference=sort, attrs={"dimension": "int", "is_stable": "bool", "num_keys": "int"},
       doc="sorts all operands along dimension by the first num_keys operands, lexicographically; "
           "NaNs last, -0.0 equal to 0.0; is_stable keeps the order of equal keys")


def sort_jvp(b, op, primals, tangents, outs):
    """The tangents ride along as more operands (not keys): each is permuted as its operand is."""
    positions = [i for i, t in enumerate(tangents) if t is not None]
    results = b.ops("sort", list(primals) + [tangents[i] for i in positions], op.attrs)
    out_tangents = [None] * len(primals)
    for i, t in zip(positions, results[len(primals):]):
        out_tangents[i] = t
    return out_tangents


def sort_vjp(b, op, primals, outs, cts):
    """Sorting the positions along with the keys gives the permutation; sorting the cotangents by
    those positions puts each back where its element came from."""
    dimension = op.attrs["dimension"]
    shape = primals[0].type.shape
    positions = b.op("iota", dtype="i64", shape=shape, dimension=dimension)
    permutation = b.ops("sort", list(primals) + [positions], op.attrs)[-1]
    back = {"dimension": dimension, "is_stable": True, "num_keys": 1}
    return [None if ct is None or not is_differentiable(x.type) else b.ops("sort", [permutation, ct], back)[1]
            for ct, x in zip(cts, primals)]


def sort_batch(b, op, operands, batched):
    operands = [b.move_batch_to_front(x, f) for x, f in zip(operands, batched)]
    attrs = {**op.attrs, "dimension": op.attrs["dimension"] + 1}
    return b.ops("sort", operands, attrs), [True] * len(operands)


set_rules("sort", jvp=sort_jvp, vjp=sort_vjp, batch=sort_batch)
