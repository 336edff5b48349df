"""The graph IR: types, ops (the op table), modules, text format, verifier and interpreter."""
from . import ops  # noqa: F401  (fills the op table)
from .core import Module, Op, Region, Value, make_op, walk
from .interpreter import interpret
from .opdef import OPS, OpDef, infer_types
from .printer import print_module
from .types import TensorType, dtype_name, numpy_dtype

__all__ = ["Module", "Op", "Region", "Value", "TensorType", "OPS", "OpDef", "make_op", "walk", "infer_types",
           "interpret", "print_module", "dtype_name", "numpy_dtype"]
