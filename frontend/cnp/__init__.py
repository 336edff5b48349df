"""cdnajit.numpy: jax.numpy's names and semantics, traced into the graph IR.

Each family module defines `__all__`; this package re-exports them all.
"""
from .creation import *  # noqa: F401,F403
from .dtypes_api import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .contractions import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .shaping import *  # noqa: F401,F403
from .indexing_funcs import *  # noqa: F401,F403
from .array_funcs import *  # noqa: F401,F403
from .histograms import *  # noqa: F401,F403
from .setops import *  # noqa: F401,F403
from .numerical import *  # noqa: F401,F403
from .statistics import *  # noqa: F401,F403
from .functional import *  # noqa: F401,F403
from .type_aliases import *  # noqa: F401,F403
from .dtypes_api import __all__ as _dtype_names
from . import array_funcs as _array_funcs
from . import functional as _functional
from .. import eager as _eager

ndarray = _eager.ndarray

# Called outside jit, every array function computes eagerly through the compiler (frontend/eager.py).
# dtype queries and static shape queries answer on the host.
_eager.make_namespace_eager(globals(), [n for n in dir() if not n.startswith("_")],
                            host_only=set(_dtype_names) | {"shape", "ndim", "size", "broadcast_shapes", "ndarray"}
                            | _array_funcs.HOST_ONLY | _functional.HOST_ONLY)

# cnp.linalg and cnp.fft: namespaces of their own, eager outside jit as the rest (fft makes itself eager).
from . import fft  # noqa: F401,E402
from . import linalg  # noqa: E402
_eager.make_namespace_eager(vars(linalg), linalg.__all__, host_only=set())
