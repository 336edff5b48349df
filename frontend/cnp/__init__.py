"""cdnajit.numpy: jax.numpy's names and semantics, traced into the graph IR.

Each family module defines `__all__`; this package re-exports them all.
"""
from .creation import *  # noqa: F401,F403
from .dtypes_api import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
