"""Result dtypes and weak types of cdnajit.numpy / cdnajit.lax (functions, operators, methods) against
JAX's, stored in jax_dtypes.json by generate_jax_dtypes.py (jax_enable_x64=True).

Every case is traced (make_graph's trace: the dtype and weak type of each result); calls JAX
rejects must raise the same kind of error (TypeError, ValueError...). A subset also runs eagerly,
compiled, and checks the numpy result's dtype.
"""
import collections
import json
import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as clax
import cdnajit.numpy as cnp
from cdnajit.frontend.tracing import Tracer
from cdnajit.ir.types import NUMPY_DTYPES

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from dtype_cases import SHAPE, all_cases  # noqa: E402

KNOWN = json.loads(pathlib.Path(__file__).with_name("jax_dtypes.json").read_text())["cases"]
NAMESPACES = {"numpy": cnp, "lax": clax}
CASES = all_cases()
BY_FUNCTION = collections.defaultdict(list)
for _case in CASES:
    BY_FUNCTION[_case.id.split("(")[0].split("[")[0]].append(_case)


def numpy_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def inputs(case) -> list[np.ndarray]:
    return [np.ones(SHAPE, numpy_dtype(d)) for d in case.arrays()]


def traced_answer(case):
    """[[dtype, weak], ...] of the traced results, or {"error": ...} naming the builtin error class raised."""
    seen = []

    def wrapper(*arrays):
        out = case.bind(NAMESPACES[case.namespace], arrays)
        seen.extend(cj.tree_leaves(out))
        return out
    try:
        cj.jit(wrapper, backend="interpret").lower(*inputs(case))
    except NotImplementedError as e:
        return {"error": "NotImplementedError", "message": str(e)}
    except (TypeError, ValueError, AttributeError, IndexError) as e:
        kind = next(k for k in (TypeError, ValueError, AttributeError, IndexError) if isinstance(e, k))
        return {"error": kind.__name__, "message": str(e)}
    return [[NUMPY_DTYPES[leaf.type.dtype].name, leaf.weak_type] if isinstance(leaf, Tracer)
            else [np.asarray(leaf).dtype.name, False] for leaf in seen]


# Where cdnajit knowingly differs, each with the reason; every other difference fails the test.
# Complex operands of these functions are not implemented: cdnajit raises NotImplementedError.
COMPLEX_NOT_IMPLEMENTED = {
    "numpy.max", "numpy.min", "numpy.amax", "numpy.amin", "numpy.nanmax", "numpy.nanmin", "numpy.ptp",
    "numpy.max_initial", "numpy.argmax", "numpy.argmin", "numpy.argmax_keepdims", "numpy.arctan2", "numpy.atan2",
    "numpy.logaddexp", "numpy.logaddexp2", "numpy.method.max", "numpy.method.min", "numpy.method.ptp",
    "numpy.method.argmax", "numpy.method.argmin", "lax.max", "lax.min", "lax.reduce_max", "lax.reduce_min",
    "lax.cummax", "lax.cummin", "lax.argmax", "lax.argmin", "lax.atan2", "lax.exp2", "lax.clamp",
}
# Calls JAX rejects and cdnajit computes, giving the operands' dtype: jnp.dot of a narrow integer array and
# a Python int (JAX's lax.mul meets an int64; cdnajit gives jnp.multiply's dtype), lax.pow of integers
# (the IR's pow computes them exactly).
JAX_REJECTS_VALID_CALL = {"numpy.dot[scalar]", "lax.pow"}


def function_of(case) -> str:
    return case.id.split("(")[0].split("[")[0]


def lax_weak_scalar_superset(case, expected, got) -> bool:
    """jax.lax refuses a Python scalar whose default dtype (int64, float64) is not the arrays'; cdnajit.lax
    lets it take the arrays' dtype (frontend/lax_elementwise.py). Accepted when cdnajit gives what JAX
    gives for the same call with every operand an array of that dtype."""
    arrays = case.arrays()
    if case.namespace != "lax" or not isinstance(expected, dict) or isinstance(got, dict) or len(set(arrays)) != 1:
        return False
    same_dtype_id = f"{case.id[:case.id.index('(')]}({','.join(arrays[0] for _ in case.specs)})"
    return KNOWN.get(same_dtype_id) == [[dtype, False] for dtype, _ in got]


def accepted_difference(case, expected, got) -> bool:
    if isinstance(expected, dict) and expected["error"] == "AttributeError":
        return True  # the function is not in this JAX's namespace (jnp.fix was removed); cdnajit keeps it
    if isinstance(got, dict) and got["error"] == "NotImplementedError":
        return function_of(case) in COMPLEX_NOT_IMPLEMENTED and "complex" in got["message"]
    if case.id.split("(")[0] in JAX_REJECTS_VALID_CALL and not isinstance(got, dict):
        operand_dtypes = {s if isinstance(s, str) else "int64" if type(s) is int else None for s in case.specs}
        return all(dtype in operand_dtypes for dtype, _ in got)
    return lax_weak_scalar_superset(case, expected, got)


def mismatch(case) -> str | None:
    expected, got = KNOWN[case.id], traced_answer(case)
    if isinstance(expected, dict) and isinstance(got, dict) and got["error"] == expected["error"]:
        return None
    if expected == got or accepted_difference(case, expected, got):
        return None
    return f"{case.id}: JAX {expected}, cdnajit {got}"


def test_every_case_has_a_known_answer():
    assert {c.id for c in CASES} == set(KNOWN)


@pytest.mark.parametrize("function", sorted(BY_FUNCTION))
def test_traced_dtypes_match_jax(function):
    problems = [p for p in map(mismatch, BY_FUNCTION[function]) if p]
    assert not problems, f"{len(problems)} of {len(BY_FUNCTION[function])} cases differ:\n" + "\n".join(problems)


# Run compiled, eagerly: the common surprises (float functions of integers and bools, mean, cumsum) and one
# case per family of dtype rules.
# (Operators and methods are not here: outside jit the inputs are numpy arrays, which use numpy's.)
EAGER_IDS = [
    "numpy.cos(int32)", "numpy.sqrt(uint8)", "numpy.exp(bool)", "numpy.tanh(int64)", "numpy.divide(int32,int32)",
    "numpy.divide(int8,3)", "numpy.mean(int32)", "numpy.mean(bool)", "numpy.cumsum(int32)", "numpy.cumprod(int16)",
    "numpy.cumsum[dtype=int8](int8)", "numpy.sum(int32)", "numpy.prod(uint8)", "numpy.var(int16)",
    "numpy.median(int8)", "numpy.arctan2(int16,uint8)", "numpy.power(int8,2.5)", "numpy.add(bfloat16,float16)",
    "numpy.matmul(int8,uint8)", "numpy.reciprocal(int32)", "numpy.cumulative_prod(int8)", "numpy.tri()",
    "lax.cumsum(int8)", "lax.dot_general[preferred=float32](int8,int8)", "lax.dot_general(int8,int16)",
]


@pytest.mark.parametrize("case_id", EAGER_IDS)
def test_eager_dtypes_match_jax(case_id):
    case = next(c for c in CASES if c.id == case_id)
    (expected,) = KNOWN[case_id]
    result = case.bind(NAMESPACES[case.namespace], inputs(case))
    assert np.asarray(result).dtype == numpy_dtype(expected[0])


def test_cumsum_dtype_wraps_as_jax():
    """cumsum(dtype=int8) scans in int8: 127 + 1 wraps to -128, as JAX computes it."""
    x = np.int8([127, 1, 5])
    for result in (cnp.cumsum(x, dtype=np.int8), cj.jit(lambda v: cnp.cumsum(v, dtype=np.int8))(x)):
        assert result.dtype == np.int8
        np.testing.assert_array_equal(result, np.int8([127, -128, -123]))


def test_rejected_dtype_names_function_and_dtype():
    """As JAX: bitwise functions of floats are a TypeError naming the function and the dtype."""
    with pytest.raises(TypeError, match=r"bitwise_and does not accept dtype float32"):
        cj.make_graph(cnp.bitwise_and)(np.ones(2, np.float32), np.ones(2, np.float32))
    with pytest.raises(TypeError, match=r"invert does not accept dtype complex64"):
        cj.make_graph(lambda x: ~x)(np.ones(2, np.complex64))
    with pytest.raises(TypeError, match=r"lax\.bitwise_or does not accept dtype float64"):
        cj.make_graph(clax.bitwise_or)(np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match=r"sin.*i32"):
        cj.make_graph(clax.sin)(np.ones(2, np.int32))


if __name__ == "__main__":  # a summary: python tests/known_answers/test_jax_dtypes.py
    found = [p for p in map(mismatch, CASES) if p]
    accepted = sum(KNOWN[c.id] != traced_answer(c) and not (isinstance(KNOWN[c.id], dict) and "error" in
                                                           traced_answer(c)) for c in CASES) - len(found)
    print("\n".join(found))
    print(f"{len(CASES)} cases over {len(BY_FUNCTION)} functions; {len(found)} differ from JAX, "
          f"{accepted} accepted differences")
