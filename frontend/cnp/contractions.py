"""cdnajit.numpy linear algebra: dot, matmul, vdot, inner, outer, tensordot, einsum, trace.

Every contraction is one `dot_general` (result dimensions: batch, lhs free, rhs free) on
operands promoted to one dtype, as jnp does. `preferred_element_type` names the result dtype.
"""
from __future__ import annotations

import string

from ...errors import TracingTypeError, TracingValueError
from ..dtypes import is_complex, is_integer
from ..tracing import Tracer, as_tracer, bind1, located
from .base import DEFAULT_INT, canonical_axis, convert, result_type, to_dtype_name
from . import reductions
from .reductions import full, nonzero, reduce_array, reshape

__all__ = ["dot", "matmul", "vdot", "inner", "outer", "tensordot", "einsum", "trace"]


def contract(lhs, rhs, lhs_contracting=(), rhs_contracting=(), lhs_batch=(), rhs_batch=(),
             preferred_element_type=None) -> Tracer:
    """dot_general of two operands after jnp's promotion.

    Bools contract as integers and compare with zero (an or of ands), as jnp's bool matmul
    gives. Integer operands with a float or complex preferred type are converted to it, the
    mixed contraction XLA performs. As jnp, the result is weakly typed when the promotion is
    (u64 with i64 joins at the weak float).
    """
    dtype, weak = result_type(lhs, rhs)
    preferred = to_dtype_name(preferred_element_type) if preferred_element_type is not None else None
    logical = dtype == "bool" and preferred in (None, "bool")
    if logical:
        operand_dtype, preferred = DEFAULT_INT, None
    elif preferred is not None and (dtype == "bool" or (is_integer(dtype) and not is_integer(preferred))):
        operand_dtype, preferred = preferred, None
    else:
        operand_dtype = dtype
        preferred = None if preferred == dtype else preferred
    result = bind1("dot_general", [convert(as_tracer(lhs), operand_dtype), convert(as_tracer(rhs), operand_dtype)],
                   {"lhs_contracting": tuple(lhs_contracting), "rhs_contracting": tuple(rhs_contracting),
                    "lhs_batch": tuple(lhs_batch), "rhs_batch": tuple(rhs_batch),
                    "preferred_element_type": preferred}, weak_type=weak and preferred is None)
    return nonzero(result) if logical else result


def check_contracting(name: str, a: Tracer, b: Tracer, a_axes, b_axes):
    """A clear error when contracted dimensions differ in size, naming both shapes and the dimensions."""
    for i, j in zip(a_axes, b_axes):
        if a.shape[i] != b.shape[j]:
            raise TracingValueError(located(
                f"{name}: contracting dimension {i} of a (shape {a.shape}, size {a.shape[i]}) does not match "
                f"dimension {j} of b (shape {b.shape}, size {b.shape[j]})"))


def dot(a, b, *, precision=None, preferred_element_type=None):
    """jnp.dot: a product with a 0-d operand, else a's last axis against b's second-to-last (or only) axis."""
    a, b = as_tracer(a), as_tracer(b)
    if a.ndim == 0 or b.ndim == 0:
        return contract(a, b, preferred_element_type=preferred_element_type)
    a_axis, b_axis = a.ndim - 1, (0 if b.ndim == 1 else b.ndim - 2)
    check_contracting("dot", a, b, (a_axis,), (b_axis,))
    return contract(a, b, (a_axis,), (b_axis,), preferred_element_type=preferred_element_type)


def transposed(x: Tracer, leading) -> Tracer:
    """x with the dimensions `leading` first, in that order, and the others (of size 1) after them;
    no transpose when `leading` is in increasing order (moving size-1 dimensions is a reshape)."""
    if list(leading) == sorted(leading):
        return x
    permutation = tuple(leading) + tuple(i for i in range(x.ndim) if i not in leading)
    return bind1("transpose", [x], {"permutation": permutation})


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """jnp.matmul: stacks of matrices with broadcast batch dimensions; 1-d operands as vectors.

    A batch dimension of size 1 on one side is not materialised: it is squeezed and the other
    side's dimension contracts as a free one, so (B, M, K) @ (K, N) is one plain GEMM.
    """
    a, b = as_tracer(a), as_tracer(b)
    if a.ndim == 0 or b.ndim == 0:
        raise TracingValueError(located(f"matmul: operands must be at least 1-d, got shapes {a.shape} and {b.shape}"))
    a_matrix = reshape(a, (1,) + a.shape) if a.ndim == 1 else a          # (..., M, K)
    b_matrix = reshape(b, b.shape + (1,)) if b.ndim == 1 else b          # (..., K, N)
    if a_matrix.shape[-1] != b_matrix.shape[-2]:
        raise TracingValueError(located(
            f"matmul: contracting dimension {a.ndim - 1} of a (shape {a.shape}, size {a_matrix.shape[-1]}) does not "
            f"match dimension {max(b.ndim - 2, 0)} of b (shape {b.shape}, size {b_matrix.shape[-2]})"))
    nb = max(a_matrix.ndim, b_matrix.ndim) - 2
    a_matrix = reshape(a_matrix, (1,) * (nb + 2 - a_matrix.ndim) + a_matrix.shape)
    b_matrix = reshape(b_matrix, (1,) * (nb + 2 - b_matrix.ndim) + b_matrix.shape)
    shared, a_only, b_only = [], [], []        # batch positions by who holds them
    for i, (sa, sb) in enumerate(zip(a_matrix.shape[:nb], b_matrix.shape[:nb])):
        if sa == sb:
            shared.append(i)
        elif sb == 1:
            a_only.append(i)
        elif sa == 1:
            b_only.append(i)
        else:
            raise TracingValueError(located(
                f"matmul: batch dimensions of a (shape {a.shape}) and b (shape {b.shape}) cannot be broadcast "
                f"together"))
    # Squeezing drops dimensions only (a reshape keeps the order); the shared batch dimensions are
    # named in place, so neither operand is transposed.
    a_kept = sorted(shared + a_only) + [nb, nb + 1]
    b_kept = sorted(shared + b_only) + [nb, nb + 1]
    a_squeezed = reshape(a_matrix, tuple(a_matrix.shape[i] for i in a_kept))
    b_squeezed = reshape(b_matrix, tuple(b_matrix.shape[i] for i in b_kept))
    result = contract(a_squeezed, b_squeezed, (a_squeezed.ndim - 1,), (b_squeezed.ndim - 2,),
                      tuple(a_kept.index(i) for i in shared), tuple(b_kept.index(i) for i in shared),
                      preferred_element_type)
    # dot_general gives (shared, a_only, M, b_only, N); put the batch positions back in order.
    produced = shared + a_only + ["M"] + b_only + ["N"]
    permutation = tuple(produced.index(d) for d in list(range(nb)) + ["M", "N"])
    if permutation != tuple(range(len(permutation))):
        result = bind1("transpose", [result], {"permutation": permutation})
    rows = () if a.ndim == 1 else result.shape[nb:nb + 1]
    columns = () if b.ndim == 1 else result.shape[-1:]
    return reshape(result, result.shape[:nb] + rows + columns)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """jnp.vdot: the dot product of the flattened operands, conjugating the first."""
    a, b = as_tracer(a), as_tracer(b)
    if a.size != b.size:
        raise TracingValueError(located(f"vdot: operands have different sizes: a of shape {a.shape} ({a.size} "
                                        f"elements), b of shape {b.shape} ({b.size} elements)"))
    if is_complex(a.type.dtype):
        a = bind1("conj", [a])
    return contract(reshape(a, (a.size,)), reshape(b, (b.size,)), (0,), (0,),
                    preferred_element_type=preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """jnp.inner: contract the last axes (a product with a 0-d operand)."""
    a, b = as_tracer(a), as_tracer(b)
    if a.ndim == 0 or b.ndim == 0:
        return contract(a, b, preferred_element_type=preferred_element_type)
    check_contracting("inner", a, b, (a.ndim - 1,), (b.ndim - 1,))
    return contract(a, b, (a.ndim - 1,), (b.ndim - 1,), preferred_element_type=preferred_element_type)


def outer(a, b, out=None):
    """jnp.outer: every element of the flattened a times every element of the flattened b."""
    if out is not None:
        raise NotImplementedError(located("outer: the 'out' argument is not supported (arrays are immutable)"))
    a, b = as_tracer(a), as_tracer(b)
    return contract(reshape(a, (a.size,)), reshape(b, (b.size,)))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """jnp.tensordot: `axes` is N (a's last N against b's first N) or a pair of axis sequences."""
    a, b = as_tracer(a), as_tracer(b)
    if isinstance(axes, int):
        if not 0 <= axes <= min(a.ndim, b.ndim):
            raise TracingValueError(located(f"tensordot: axes={axes} must be between 0 and the operands' ranks "
                                            f"(shapes {a.shape} and {b.shape})"))
        a_axes, b_axes = tuple(range(a.ndim - axes, a.ndim)), tuple(range(axes))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        as_seq = lambda v: (v,) if isinstance(v, int) else tuple(v)
        a_axes = tuple(canonical_axis(i, a.ndim, "tensordot axis") for i in as_seq(axes[0]))
        b_axes = tuple(canonical_axis(i, b.ndim, "tensordot axis") for i in as_seq(axes[1]))
        if len(a_axes) != len(b_axes) or len(set(a_axes)) != len(a_axes) or len(set(b_axes)) != len(b_axes):
            raise TracingValueError(located(f"tensordot: axes {axes} must be two sequences of distinct axes of one "
                                            f"length"))
    else:
        raise TracingTypeError(located(f"tensordot: axes must be an int or a pair of axis sequences, got {axes!r}"))
    check_contracting("tensordot", a, b, a_axes, b_axes)
    return contract(a, b, a_axes, b_axes, preferred_element_type=preferred_element_type)


def diagonal_mask(shape, axis1: int, axis2: int, offset: int = 0) -> Tracer:
    """True where index along axis2 == index along axis1 + offset."""
    rows = bind1("iota", [], {"dtype": DEFAULT_INT, "shape": tuple(shape), "dimension": axis1})
    columns = bind1("iota", [], {"dtype": DEFAULT_INT, "shape": tuple(shape), "dimension": axis2})
    return bind1("eq", [bind1("add", [rows, full(offset, DEFAULT_INT, shape)]), columns])


def masked_to_diagonal(x: Tracer, axis1: int, axis2: int, offset: int = 0) -> Tracer:
    return bind1("select", [diagonal_mask(x.shape, axis1, axis2, offset), x, full(0, x.type.dtype, x.shape)])


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """jnp.trace: the sum along a diagonal, with sum's dtype rules."""
    if out is not None:
        raise NotImplementedError(located("trace: the 'out' argument is not supported (arrays are immutable)"))
    x = as_tracer(a)
    if x.ndim < 2:
        raise TracingValueError(located(f"trace: the array must be at least 2-d, got shape {x.shape}"))
    axis1, axis2 = canonical_axis(axis1, x.ndim, "axis1"), canonical_axis(axis2, x.ndim, "axis2")
    if axis1 == axis2:
        raise TracingValueError(located(f"trace: axis1 and axis2 are the same axis {axis1}"))
    return reductions.sum(masked_to_diagonal(x, axis1, axis2, offset), (axis1, axis2), dtype=dtype)


# ---- einsum ------------------------------------------------------------------------------------
# Labels are letters; the dimensions an ellipsis stands for get the labels -k..-1, aligned
# from the right across operands, so they broadcast as numpy's do.

def parse_term(term: str, ndim: int, which: str) -> list:
    letters = term.replace("...", "")
    if not all(c in string.ascii_letters for c in letters) or term.count("...") > 1:
        raise TracingValueError(located(f"einsum: invalid subscripts {term!r} for {which}"))
    if "..." not in term:
        if len(letters) != ndim:
            raise TracingValueError(located(f"einsum: subscripts {term!r} name {len(letters)} dimensions but "
                                            f"{which} has {ndim}"))
        return list(term)
    covered = ndim - len(letters)
    if covered < 0:
        raise TracingValueError(located(f"einsum: subscripts {term!r} name more dimensions than {which} has ({ndim})"))
    head, tail = term.split("...")
    return list(head) + list(range(-covered, 0)) + list(tail)


def parse_subscripts(subscripts: str, operands) -> tuple[list[list], list]:
    """Each operand's labels and the output's labels (implicit: ellipsis, then letters used once, sorted)."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise TracingValueError(located(f"einsum: subscripts {subscripts!r} name {len(terms)} operands but "
                                        f"{len(operands)} were given"))
    labels = [parse_term(t, x.ndim, f"operand {i} (shape {x.shape})") for i, (t, x) in enumerate(zip(terms, operands))]
    widest = max(sum(isinstance(l, int) for l in ls) for ls in labels)
    ellipsis = list(range(-widest, 0))
    used = [l for ls in labels for l in ls]
    if not arrow:
        letters = sorted(l for l in set(used) if isinstance(l, str) and used.count(l) == 1)
        return labels, ellipsis + letters
    if output.count("...") > 1 or not all(c in string.ascii_letters for c in output.replace("...", "")):
        raise TracingValueError(located(f"einsum: invalid output subscripts {output!r}"))
    head, _, tail = output.partition("...")
    out = list(head) + (ellipsis if "..." in output else []) + list(tail)
    if ellipsis and "..." not in output:
        raise TracingValueError(located(f"einsum: the operands have '...' dimensions but the output {output!r} has no "
                                        f"'...' to receive them"))
    for label in out:
        if out.count(label) > 1 or label not in used:
            raise TracingValueError(located(f"einsum: output subscript {label!r} is repeated or never appears in "
                                            f"the inputs of {subscripts!r}"))
    return labels, out


def label_sizes(labels, operands) -> dict:
    """The size of each label: equal sizes, or 1 broadcast against one other size."""
    sizes: dict = {}
    for ls, x in zip(labels, operands):
        for label, size in zip(ls, x.shape):
            sizes.setdefault(label, set()).add(size)
    result = {}
    for label, seen in sizes.items():
        if len(seen - {1}) > 1:
            name = "'...' dimension" if isinstance(label, int) else f"subscript {label!r}"
            raise TracingValueError(located(f"einsum: {name} has sizes {sorted(seen)} in operands of shapes "
                                            f"{', '.join(str(x.shape) for x in operands)}"))
        result[label] = max(seen - {1}, default=1)
    return result


def sum_axes(x: Tracer, axes) -> Tracer:
    """einsum's sum keeps the dtype (bools: logical or)."""
    return reduce_array("einsum", x, tuple(axes), "or" if x.type.dtype == "bool" else "sum") if axes else x


def diagonals_and_squeezed(x: Tracer, labels: list, sizes: dict) -> tuple[Tracer, list]:
    """Take the diagonals of repeated labels and drop size-1 dimensions that broadcast against others."""
    labels = list(labels)
    for label in dict.fromkeys(labels):
        while labels.count(label) > 1:
            first = labels.index(label)
            second = labels.index(label, first + 1)
            if x.shape[first] != x.shape[second]:
                raise TracingValueError(located(f"einsum: repeated subscript {label!r} of an operand of shape "
                                                f"{x.shape} has sizes {x.shape[first]} and {x.shape[second]}"))
            # Off-diagonal elements are zeroed, so summing out the second axis leaves the diagonal.
            x = sum_axes(masked_to_diagonal(x, first, second), (second,))
            del labels[second]
    kept = [i for i, l in enumerate(labels) if not (x.shape[i] == 1 and sizes[l] != 1)]
    return reshape(x, tuple(x.shape[i] for i in kept)), [labels[i] for i in kept]


def subscripts_from_sublists(args) -> tuple[str, list]:
    """numpy's interleaved form einsum(x, [0, 1], y, [1, 2], [0, 2]) as (subscripts, operands)."""
    output = None
    if len(args) % 2:
        *args, output = args
    operands, sublists = list(args[0::2]), list(args[1::2])

    def term(sublist) -> str:
        labels = []
        for label in sublist:
            if label is Ellipsis:
                labels.append("...")
            elif isinstance(label, int) and 0 <= label < len(string.ascii_letters):
                labels.append(string.ascii_letters[label])
            else:
                raise TracingValueError(located(f"einsum: sublist label {label!r} is not Ellipsis or an int in "
                                                f"[0, {len(string.ascii_letters)})"))
        return "".join(labels)
    subscripts = ",".join(term(s) for s in sublists) + ("" if output is None else "->" + term(output))
    return subscripts, operands


def einsum(subscripts, *operands, out=None, optimize="auto", precision=None, preferred_element_type=None):
    """jnp.einsum: string subscripts (or numpy's interleaved sublists), '...' broadcasting,
    implicit output, traces and diagonals.

    Operands are contracted pairwise from left to right with dot_general; a label shared by
    the pair is a batch dimension when the output or a later operand still needs it.
    """
    if out is not None:
        raise NotImplementedError(located("einsum: the 'out' argument is not supported (arrays are immutable)"))
    if not isinstance(subscripts, str):
        subscripts, operands = subscripts_from_sublists((subscripts,) + operands)
    if not operands:
        raise TracingValueError(located("einsum: at least one operand is needed"))
    dtype, weak = result_type(*operands)   # int64 with uint64 is a weak f64, as in JAX
    operands = [convert(as_tracer(x), dtype, weak) for x in operands]
    labels, output = parse_subscripts(subscripts, operands)
    sizes = label_sizes(labels, operands)
    simplified = [diagonals_and_squeezed(x, ls, sizes) for x, ls in zip(operands, labels)]
    # Sum out first the labels that only one operand has and the output does not.
    for i, (x, ls) in enumerate(simplified):
        needed = {l for j, (_, other) in enumerate(simplified) if j != i for l in other} | set(output)
        simplified[i] = sum_axes(x, [k for k, l in enumerate(ls) if l not in needed]), [l for l in ls if l in needed]
    result, result_labels = simplified[0]
    for k, (x, ls) in enumerate(simplified[1:], start=1):
        needed_later = {l for _, other in simplified[k + 1:] for l in other} | set(output)
        shared = [l for l in result_labels if l in ls]
        batch = [l for l in shared if l in needed_later]
        contracting = [l for l in shared if l not in needed_later]
        result = contract(result, x, [result_labels.index(l) for l in contracting], [ls.index(l) for l in contracting],
                          [result_labels.index(l) for l in batch], [ls.index(l) for l in batch],
                          preferred_element_type)
        result_labels = (batch + [l for l in result_labels if l not in shared] + [l for l in ls if l not in shared])
    permutation = tuple(result_labels.index(l) for l in output)
    if permutation != tuple(range(len(permutation))):
        result = bind1("transpose", [result], {"permutation": permutation})
    if preferred_element_type is not None:
        result = convert(result, to_dtype_name(preferred_element_type))
    return result
