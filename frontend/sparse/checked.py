"""`cdnajit.sparse.checked(f)`: a jit of f that validates the index arrays of every sparse matrix
f builds from traced arrays, and raises a TracingValueError naming the array (and the line that
built the matrix) when one is invalid. Without it, traced index arrays are not checked: the kernels
read them safely (libs/sparse/routines.py: indptr clamped, out-of-range columns dropped as JAX's
BCOO treats padding), which hides a bad index; tests use this mode to see it.

A check is a traced int32 code computed with the program (0: valid, else 1 + the position of its
message in MESSAGES, recorded at trace time so that a cached compile raises the same message);
the codes are extra results of the compiled function, read after the run. Matrices built in f's
own body are checked, not those built inside a nested jit."""
from __future__ import annotations

import functools

from ...errors import TracingValueError
from .. import cnp
from ..jit import jit
from ..tracing import Tracer

PENDING: list[list] = []   # the codes of the functions being traced by `checked`, innermost last
MESSAGES: list[str] = []   # a failing check's message, at its code - 1


def record(failed, message: str):
    """While `checked` traces: `failed` (a traced bool) true at run time means `message`."""
    if PENDING and isinstance(failed, Tracer):
        MESSAGES.append(message)
        PENDING[-1].append(cnp.where(failed, len(MESSAGES), 0).astype("int32"))


def checked(fn=None, **jit_options):
    """jit(fn, **jit_options), raising after each call if a sparse matrix fn built had bad indices."""
    if fn is None:
        return lambda f: checked(f, **jit_options)

    def traced(*args, **kwargs):
        PENDING.append([])
        try:
            result = fn(*args, **kwargs)
        finally:
            codes = PENDING.pop()
        return result, codes

    compiled = jit(traced, **jit_options)

    @functools.wraps(fn)
    def run(*args, **kwargs):
        result, codes = compiled(*args, **kwargs)
        for code in codes:
            if int(code):
                raise TracingValueError(MESSAGES[int(code) - 1])
        return result
    return run
