"""Element types and tensor types of the graph IR.

A tensor type is a dtype name and a static shape, printed `f32[4,8]` (`f32[]` for a scalar).
dtype names are short and fixed; numpy (with ml_dtypes for bf16) is the storage format.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import ml_dtypes
import numpy as np

NUMPY_DTYPES: dict[str, np.dtype] = {
    "bool": np.dtype(np.bool_),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16), "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "c64": np.dtype(np.complex64), "c128": np.dtype(np.complex128),
}
DTYPE_NAMES: dict[np.dtype, str] = {v: k for k, v in NUMPY_DTYPES.items()}

SIGNED_INTS = ("i8", "i16", "i32", "i64")
UNSIGNED_INTS = ("u8", "u16", "u32", "u64")
INTS = SIGNED_INTS + UNSIGNED_INTS
FLOATS = ("f16", "bf16", "f32", "f64")
COMPLEXES = ("c64", "c128")
INEXACT = FLOATS + COMPLEXES
NUMERIC = INTS + INEXACT

# The real dtype of a complex dtype's parts, and back.
COMPLEX_PART = {"c64": "f32", "c128": "f64"}
COMPLEX_OF = {"f32": "c64", "f64": "c128"}


def numpy_dtype(name: str) -> np.dtype:
    return NUMPY_DTYPES[name]


def native_dtype(dtype) -> np.dtype:
    """`dtype` in the machine's byte order: IR dtypes name values, whatever the byte order of an array."""
    dtype = np.dtype(dtype)
    return dtype if dtype.isnative else dtype.newbyteorder("=")


def dtype_name(dtype) -> str:
    """The IR name of a numpy dtype (or anything np.dtype accepts); KeyError if unsupported."""
    return DTYPE_NAMES[native_dtype(dtype)]


def is_supported_dtype(dtype) -> bool:
    try:
        return native_dtype(dtype) in DTYPE_NAMES
    except TypeError:
        return False


# Kernels index memory with int64 byte offsets: a larger array can be neither addressed nor held.
MAX_ARRAY_BYTES = 2**63 - 1


class TensorType(NamedTuple):
    dtype: str
    shape: tuple[int, ...]

    def __str__(self):
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """The element count, exact (an int64 product would wrap around for shapes no machine holds)."""
        return math.prod(map(int, self.shape))

    @property
    def nbytes(self) -> int:
        return self.size * self.numpy_dtype.itemsize

    def size_problem(self) -> str | None:
        """Why no machine holds an array of this type (its bytes overflow int64), or None."""
        if self.nbytes <= MAX_ARRAY_BYTES:
            return None
        return (f"{self} holds {self.size} elements, {format_bytes(self.nbytes)}: more than the "
                f"{MAX_ARRAY_BYTES} bytes an int64 offset addresses")

    @property
    def numpy_dtype(self) -> np.dtype:
        return NUMPY_DTYPES[self.dtype]

    def with_dtype(self, dtype: str) -> "TensorType":
        return TensorType(dtype, self.shape)

    def with_shape(self, shape) -> "TensorType":
        return TensorType(self.dtype, tuple(shape))


def format_bytes(nbytes: int) -> str:
    """`nbytes` exactly, and in binary units when that is shorter to read: "8000000000000 bytes (7.28 TiB)"."""
    for unit, power in (("YiB", 80), ("ZiB", 70), ("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30),
                        ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << power:
            return f"{nbytes} bytes ({nbytes / (1 << power):.3g} {unit})"
    return f"{nbytes} bytes"


def type_of_array(array: np.ndarray) -> TensorType:
    return TensorType(dtype_name(array.dtype), tuple(array.shape))
