"""sort: sorts several arrays of one shape along a dimension by their first operands, as lax.sort."""
import numpy as np

from ..opdef import compute_dtype, define, fmt_types, require


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
