"""The graph IR: types, ops (the op table), modules, text format, verifier and interpreter."""
from ..errors import ParseError, VerifyError
from . import ops  # noqa: F401  (fills the op table)
from .core import Module, Op, Region, Value, make_op, walk
from .interpreter import interpret
from .opdef import OPS, OpDef, infer_types
from .parser import parse
from .printer import print_module
from .types import TensorType, dtype_name, numpy_dtype
from .verifier import verify

__all__ = ["Module", "Op", "Region", "Value", "TensorType", "OPS", "OpDef", "make_op", "walk", "infer_types",
           "interpret", "print_module", "dtype_name", "numpy_dtype", "parse", "verify", "ParseError", "VerifyError"]
