"""The graph IR's op families; importing this package fills the op table (ir.opdef.OPS)."""
from . import control, elementwise, linalg, reduce, shape  # noqa: F401
