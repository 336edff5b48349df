"""Array building and comparing functions, as jax.numpy: resize, trim_zeros, block, diagflat,
unstack, rollaxis, matrix_transpose, fromfunction, array_equal/array_equiv, the type predicates
(isreal, iscomplexobj, isscalar...), the array API products (vecdot, matvec, vecmat), and the
host-side helpers (printing, files and buffers) that JAX also runs through numpy.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import ConcretizationError, TracingTypeError, TracingValueError
from .. import lax_shape
from ..dtypes import is_complex
from ..lax_elementwise import static_int
from ..tracing import Tracer, located
from . import contractions as con
from . import elementwise as el
from . import reductions as red
from . import shaping as sh
from .base import canonical_axis, shape_of, to_dtype_name
from .creation import asarray, static_shape
from .dtypes_api import issubdtype

__all__ = ["resize", "trim_zeros", "block", "diagflat", "unstack", "rollaxis", "matrix_transpose",
           "fromfunction", "array_equal", "array_equiv", "iscomplex", "isreal", "iscomplexobj", "isrealobj",
           "isscalar", "iterable", "isdtype", "vecdot", "matvec", "vecmat", "array_repr", "array_str",
           "get_printoptions", "set_printoptions", "printoptions", "frombuffer", "fromstring", "fromfile",
           "fromiter", "load", "save", "savez", "from_dlpack", "frompyfunc", "einsum_path"]

# Functions that answer on the host (type questions, printing, files); the others trace.
HOST_ONLY = {"iscomplexobj", "isrealobj", "isscalar", "iterable", "isdtype", "array_repr", "array_str",
             "get_printoptions", "set_printoptions", "printoptions", "frombuffer", "fromstring", "fromfile",
             "fromiter", "load", "save", "savez", "from_dlpack", "frompyfunc", "einsum_path"}


# ---- building --------------------------------------------------------------------------------

def resize(a, new_shape):
    """jnp.resize: a's flattened elements repeated (cyclically) to fill new_shape."""
    shape = static_shape(new_shape, "resize new_shape")
    x = sh.ravel(a)
    size = math.prod(shape)
    if size and not x.size:
        raise TracingValueError(located(f"resize: cannot fill shape {shape} from an empty array"))
    if x.size and size > x.size:
        x = sh.tile(x, -(-size // x.size))
    return sh.reshape(x[:size] if x.size else x, shape)


def trim_zeros(filt, trim="fb"):
    """jnp.trim_zeros: the 1-d filt without its leading ('f') and trailing ('b') zeros; the result's
    length depends on the values, so filt must be concrete (as in JAX)."""
    if isinstance(filt, Tracer):
        raise ConcretizationError(located("trim_zeros: the length of the result depends on the values of the "
                                          "traced input; it needs a concrete array (as in JAX)"))
    values = np.asarray(filt)
    if values.ndim != 1:
        raise TracingValueError(located(f"trim_zeros: filt must be 1-d, got shape {values.shape}"))
    nonzero = np.flatnonzero(values)
    trim = trim.lower()
    start = (nonzero[0] if nonzero.size else values.size) if "f" in trim else 0
    stop = (nonzero[-1] + 1 if nonzero.size else 0) if "b" in trim else values.size
    return asarray(filt)[start:max(start, stop)]


def block(arrays):
    """jnp.block: nested lists of arrays joined, the innermost lists along the last axis."""
    def depth(item) -> int:
        return 1 + depth(item[0]) if isinstance(item, list) and item else (1 if isinstance(item, list) else 0)

    if isinstance(arrays, tuple):
        raise TracingTypeError(located("block: arrays must be nested lists, not tuples"))
    list_depth = depth(arrays)

    def assemble(item, level: int):
        if isinstance(item, tuple):
            raise TracingTypeError(located("block: arrays must be nested lists, not tuples"))
        if not isinstance(item, list):
            return asarray(item)
        if not item:
            raise TracingValueError(located("block: lists must not be empty"))
        parts = [assemble(i, level + 1) for i in item]
        ndim = max(list_depth, *(p.ndim for p in parts))
        parts = [sh.reshape(p, (1,) * (ndim - p.ndim) + p.shape) for p in parts]
        return sh.concatenate(parts, axis=level - list_depth)

    if not isinstance(arrays, list):
        return asarray(arrays)
    return assemble(arrays, 0)


def diagflat(v, k=0):
    """jnp.diagflat: a 2-d array with the flattened v on the k-th diagonal."""
    return sh.diag(sh.ravel(v), k)


def unstack(x, /, *, axis=0):
    """jnp.unstack: the slices of x along axis, as a tuple."""
    x = asarray(x)
    if x.ndim == 0:
        raise TracingValueError(located("unstack: the input must be at least 1-d"))
    axis = canonical_axis(axis, x.ndim)
    return tuple(lax_shape.index_in_dim(x, i, axis, keepdims=False) for i in range(x.shape[axis]))


def rollaxis(a, axis, start=0):
    """jnp.rollaxis: axis moved to before position start."""
    x = asarray(a)
    axis = canonical_axis(axis, x.ndim)
    start = static_int(start, "rollaxis start")
    if not -x.ndim <= start <= x.ndim:
        raise TracingValueError(located(f"rollaxis: start {start} is out of range for {x.ndim} dimensions"))
    start = start + x.ndim if start < 0 else start  # numpy's rule for a negative start
    if axis < start:
        start -= 1
    return sh.moveaxis(x, axis, start)


def matrix_transpose(x, /):
    """jnp.matrix_transpose: the last two axes swapped."""
    x = asarray(x)
    if x.ndim < 2:
        raise TracingValueError(located(f"matrix_transpose: x must be at least 2-d, got shape {x.shape}"))
    return sh.swapaxes(x, -1, -2)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """jnp.fromfunction: function applied to the index grids of shape (of dtype)."""
    from .creation import indices
    grids = indices(static_shape(shape, "fromfunction shape"), dtype=dtype)
    return function(*(grids[i] for i in range(grids.shape[0])), **kwargs)


# ---- comparing -----------------------------------------------------------------------------------

def array_equal(a1, a2, equal_nan=False):
    """jnp.array_equal: same shape and all elements equal (NaNs equal each other if equal_nan)."""
    x, y = asarray(a1), asarray(a2)
    if x.shape != y.shape:
        return asarray(False)
    same = el.equal(x, y)
    if equal_nan:
        same = el.logical_or(same, el.logical_and(el.isnan(x), el.isnan(y)))
    return red.all(same)


def array_equiv(a1, a2):
    """jnp.array_equiv: equal after broadcasting (False if the shapes do not broadcast)."""
    x, y = asarray(a1), asarray(a2)
    try:
        sh.broadcast_shapes(x.shape, y.shape)
    except TracingValueError:
        return asarray(False)
    return red.all(el.equal(x, y))


def iscomplex(x):
    """jnp.iscomplex: elementwise, whether the imaginary part is nonzero."""
    return el.not_equal(el.imag(x), 0)


def isreal(x):
    """jnp.isreal: elementwise, whether the imaginary part is zero."""
    return el.equal(el.imag(x), 0)


def dtype_of(x):
    if isinstance(x, Tracer):
        return x.dtype
    return np.asarray(x).dtype


def iscomplexobj(x) -> bool:
    """jnp.iscomplexobj: whether x's dtype is complex."""
    return issubdtype(dtype_of(x), np.complexfloating)


def isrealobj(x) -> bool:
    return not iscomplexobj(x)


def isscalar(element) -> bool:
    """jnp.isscalar: Python and numpy scalars and 0-d arrays (traced too) are scalars, as in JAX."""
    if isinstance(element, Tracer):
        return element.ndim == 0
    if isinstance(element, (np.ndarray, np.generic)):
        return element.ndim == 0
    return isinstance(element, (bool, int, float, complex))


def iterable(y) -> bool:
    try:
        iter(y)
    except TypeError:
        return False
    return True


DTYPE_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
               "real floating": "f", "complex floating": "c", "numeric": "iufc"}


def isdtype(dtype, kind) -> bool:
    """jnp.isdtype (array API): whether dtype is of kind (a name of DTYPE_KINDS, a dtype or a tuple)."""
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    name = to_dtype_name(dtype)
    np_dtype = np.dtype(dtype) if name != "bf16" else None
    if isinstance(kind, str):
        if kind not in DTYPE_KINDS:
            raise TracingValueError(located(f"isdtype: unknown kind {kind!r}; expected one of "
                                            f"{', '.join(DTYPE_KINDS)}"))
        if name == "bf16":  # bfloat16 is a real floating type
            return "f" in DTYPE_KINDS[kind]
        return np_dtype.kind in DTYPE_KINDS[kind]
    return name == to_dtype_name(kind)


# ---- array API products -----------------------------------------------------------------------------

def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """jnp.vecdot: sum(conj(x1) * x2) over axis, broadcasting the others."""
    x, y = asarray(x1), asarray(x2)
    if x.shape[axis] != y.shape[axis]:
        raise TracingValueError(located(f"vecdot: the sizes of axis {axis} differ: shapes {x.shape} and {y.shape}"))
    x, y = sh.moveaxis(x, axis, -1), sh.moveaxis(y, axis, -1)
    if is_complex(x.type.dtype):
        x = el.conj(x)
    return con.matmul(x[..., None, :], y[..., :, None])[..., 0, 0]


def matvec(x1, x2, /):
    """jnp.matvec: matrix (..., m, n) times vector (..., n), batch dimensions broadcast."""
    return con.matmul(x1, asarray(x2)[..., None])[..., 0]


def vecmat(x1, x2, /):
    """jnp.vecmat: conj(vector (..., m)) times matrix (..., m, n)."""
    v = asarray(x1)
    if is_complex(v.type.dtype):
        v = el.conj(v)
    return con.matmul(v[..., None, :], x2)[..., 0, :]


# ---- host side: printing, files, buffers ------------------------------------------------------------

def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    return np.array_repr(np.asarray(arr), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """jnp.frombuffer: the buffer's bytes read as an array (on the host, as in JAX)."""
    return np.frombuffer(buffer, dtype=np.dtype(dtype), count=count, offset=offset).copy()


def fromstring(string, dtype=float, count=-1, *, sep):
    """jnp.fromstring: numbers parsed from text separated by sep (on the host, as in JAX)."""
    return np.fromstring(string, dtype=np.dtype(dtype), count=count, sep=sep)


def fromfile(*args, **kwargs):
    raise NotImplementedError("fromfile is not supported, as in JAX (it may be impure); use "
                              "cnp.asarray(np.fromfile(...))")


def fromiter(*args, **kwargs):
    raise NotImplementedError("fromiter is not supported, as in JAX (it may be impure); use "
                              "cnp.asarray(np.fromiter(...))")


def load(file, *args, **kwargs):
    """jnp.load: numpy's load (on the host)."""
    return np.load(file, *args, **kwargs)


save = np.save
savez = np.savez


def from_dlpack(x, /, *, device=None, copy=None):
    raise NotImplementedError("from_dlpack: cdnajit arrays are numpy arrays; use np.from_dlpack(x)")


def frompyfunc(func, /, nin, nout, *, identity=None):
    raise NotImplementedError("frompyfunc: user ufuncs need vmap, which cdnajit does not have yet; use "
                              "cnp.vectorize(func)")


def einsum_path(subscripts, *operands, optimize="auto"):
    """jnp.einsum_path: numpy's contraction order (shapes only, on the host)."""
    shapes = [np.empty(shape_of(o), dtype=np.float32) for o in operands]
    return np.einsum_path(subscripts, *shapes, optimize="greedy" if optimize == "auto" else optimize)

