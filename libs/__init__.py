"""libs: the built-in libraries (see docs/design.md, "The library contract").

A library is a package here that registers one `Library` (ir/ops/library.py): its routines, its
matcher rules, its solution selection and its kernel emitter. Importing this package registers
every built-in library: adding one is adding its folder and its line below.
"""
from . import blas  # noqa: F401
from . import ccl  # noqa: F401
from . import dnn  # noqa: F401
from . import fft  # noqa: F401
from . import prim  # noqa: F401
from . import rand  # noqa: F401
from . import solver  # noqa: F401
from . import sparse  # noqa: F401
