"""JAX's dtype rules (with `jax_enable_x64`), written out here so the tester catches a compiler whose
result dtypes differ from JAX's: the type-promotion lattice with weak types, and the map from an
integer or bool dtype to the inexact dtype that `jnp.sin`, `/` or `mean` compute in.

Each name below is a numpy dtype name; "i*", "f*", "c*" are the weak types of Python ints, floats
and complexes. The lattice is JAX's (jax._src.dtypes), written from its documentation's table.
"""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
ALL = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "bfloat16", "float32", "float64", "complex64", "complex128")

# Each type's immediate successors: the least upper bound of two types is the least type above both.
_ABOVE = {
    "bool": ["i*"], "i*": ["uint8", "int8"], "f*": ["c*", "float16", "bfloat16"], "c*": ["complex64"],
    "uint8": ["int16", "uint16"], "uint16": ["int32", "uint32"], "uint32": ["int64", "uint64"], "uint64": ["f*"],
    "int8": ["int16"], "int16": ["int32"], "int32": ["int64"], "int64": ["f*"],
    "float16": ["float32"], "bfloat16": ["float32"], "float32": ["float64", "complex64"],
    "float64": ["complex128"], "complex64": ["complex128"], "complex128": [],
}
_WEAK_DEFAULT = {"i*": "int64", "f*": "float64", "c*": "complex128"}


@functools.cache
def _upper_set(t: str) -> frozenset:
    return frozenset([t]).union(*(_upper_set(u) for u in _ABOVE[t]))


def np_dtype(name: str) -> np.dtype:
    return BFLOAT16 if name == "bfloat16" else np.dtype(name)


def name_of(dtype) -> str:
    dtype = np.dtype(dtype)
    return "bfloat16" if dtype == BFLOAT16 else dtype.name


@functools.cache
def _join(a: str, b: str) -> str:
    common = _upper_set(a) & _upper_set(b)
    least = [t for t in common if all(t in _upper_set(o) for o in [a, b]) and
             all(u == t or t not in _upper_set(u) for u in common)]
    assert len(least) == 1, (a, b, least)
    return least[0]


def promote(*types: str) -> tuple[str, bool]:
    """The result of combining operands of these types (dtype names, or "i*"/"f*"/"c*" for Python
    scalars): (dtype name, whether the result is weakly typed)."""
    result = functools.reduce(_join, types)
    return _WEAK_DEFAULT.get(result, result), result in _WEAK_DEFAULT


def to_inexact(name: str) -> str:
    """The dtype jnp's floating functions compute an integer or bool operand in (8- to 32-bit integers
    and bool: float32; 64-bit: float64)."""
    if name in ("int64", "uint64"):
        return "float64"
    if name == "bool" or name.startswith(("int", "uint")):
        return "float32"
    return name


def sum_dtype(name: str) -> str:
    """sum and prod promote integers to the 64-bit integer of their signedness, and bool to int64."""
    if name == "bool" or name.startswith("int"):
        return "int64"
    return "uint64" if name.startswith("uint") else name


def real_of(name: str) -> str:
    return {"complex64": "float32", "complex128": "float64"}.get(name, name)


def kind(name: str) -> str:
    """'b', 'i', 'u', 'f' or 'c'."""
    return "f" if name == "bfloat16" else np.dtype(name).kind
