"""The graph IR's op families; importing this package fills the op table (ir.opdef.OPS)."""
from . import callback, control, elementwise, fft, linalg, reduce, shape, sort, special  # noqa: F401
from . import fusion  # noqa: F401
from . import library  # noqa: F401
from . import sharding  # noqa: F401
