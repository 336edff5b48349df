"""JAX's type promotion rules, with 64-bit types enabled (jax_enable_x64 = True).

Types form a lattice; promoting two types gives their least upper bound. Python scalars are
*weakly typed*: they sit at the weak nodes `i*`, `f*`, `c*` and take the dtype of the array
they meet instead of widening it (`f16_array * 2.0` stays f16). A result is weak only when
the join is a weak node; a weak value's concrete dtype is i64, f64 or c128.
"""
from __future__ import annotations

import functools

import networkx as nx
import numpy as np

from ..ir.types import INEXACT, NUMPY_DTYPES, dtype_name

# JAX's dtype of the tangents of integer and bool values: a structured dtype of no bytes. Arrays of
# it hold no data, so they never enter a traced program: transformations and jit pass them around it.
float0 = np.dtype([("float0", np.void, 0)])


def is_float0(value) -> bool:
    return isinstance(value, (np.ndarray, np.generic)) and value.dtype == float0


WEAK_INT, WEAK_FLOAT, WEAK_COMPLEX = "i*", "f*", "c*"
WEAK_DEFAULT = {WEAK_INT: "i64", WEAK_FLOAT: "f64", WEAK_COMPLEX: "c128"}

LATTICE = nx.DiGraph([
    ("bool", WEAK_INT),
    (WEAK_INT, "u8"), (WEAK_INT, "i8"),
    ("u8", "u16"), ("u16", "u32"), ("u32", "u64"),
    ("u8", "i16"), ("u16", "i32"), ("u32", "i64"),
    ("i8", "i16"), ("i16", "i32"), ("i32", "i64"),
    ("u64", WEAK_FLOAT), ("i64", WEAK_FLOAT),
    (WEAK_FLOAT, "f16"), (WEAK_FLOAT, "bf16"), (WEAK_FLOAT, WEAK_COMPLEX),
    ("f16", "f32"), ("bf16", "f32"), ("f32", "f64"),
    (WEAK_COMPLEX, "c64"), ("f32", "c64"), ("f64", "c128"), ("c64", "c128"),
])


@functools.cache
def _upper_bounds(node: str) -> frozenset:
    return frozenset(nx.descendants(LATTICE, node) | {node})


@functools.cache
def _join(a: str, b: str) -> str:
    common = _upper_bounds(a) & _upper_bounds(b)
    # The least upper bound is the common bound that every other common bound is above.
    (least,) = [n for n in common if common <= _upper_bounds(n)]
    return least


def lattice_node(dtype: str, weak: bool) -> str:
    if not weak:
        return dtype
    kind = "f" if dtype == "bf16" else NUMPY_DTYPES[dtype].kind  # ml_dtypes' bfloat16 has numpy kind 'V'
    return {"b": "bool", "i": WEAK_INT, "u": WEAK_INT, "f": WEAK_FLOAT, "c": WEAK_COMPLEX}[kind]


def promote(*typed: tuple[str, bool]) -> tuple[str, bool]:
    """The (dtype, weak) that (dtype, weak) pairs promote to."""
    node = lattice_node(*typed[0])
    for dtype, weak in typed[1:]:
        node = _join(node, lattice_node(dtype, weak))
    if node in WEAK_DEFAULT:
        return WEAK_DEFAULT[node], True
    return node, False


def promote_types(a, b) -> np.dtype:
    """jnp.promote_types: the numpy dtype two (strong) dtypes promote to."""
    return NUMPY_DTYPES[promote((dtype_name(a), False), (dtype_name(b), False))[0]]


def is_complex(dtype: str) -> bool:
    return NUMPY_DTYPES[dtype].kind == "c"


def is_inexact(dtype: str) -> bool:
    return dtype in INEXACT


def is_integer(dtype: str) -> bool:
    return NUMPY_DTYPES[dtype].kind in "iu"


def is_bool(dtype: str) -> bool:
    return dtype == "bool"


# jnp's to-inexact rule (dtypes.to_inexact_dtype), with 64-bit types enabled: bools and integers of up
# to 32 bits become float32, 64-bit integers float64; floats and complexes are kept.
TO_INEXACT = {"bool": "f32", "i8": "f32", "i16": "f32", "i32": "f32", "u8": "f32", "u16": "f32", "u32": "f32",
              "i64": "f64", "u64": "f64"}


def to_inexact(dtype: str) -> str:
    """The inexact dtype jnp computes a float function of `dtype` in (cos, divide, mean...)."""
    return TO_INEXACT.get(dtype, dtype)
