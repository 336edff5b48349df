"""The kernel of a `library_call`: its library's own emitter (ir/ops/library.py's registry)."""
from __future__ import annotations

from ..ir.core import Op
from ..ir.kernel import Kernel
from ..ir.ops.library import LIBRARIES
from ..ir.targets import Target
from .emitters import emitter


@emitter("library_call", takes_target=True)
def emit_library_call(op: Op, name: str, target: Target) -> Kernel:
    library = LIBRARIES[op.attrs["library"]]
    if library.emit is None:
        raise NotImplementedError(f"library {library.name!r} has no kernels yet ({op.attrs['routine']})")
    return library.emit(op, name, target)
