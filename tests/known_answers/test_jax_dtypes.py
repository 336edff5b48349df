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


def mismatch(case) -> str | None:
    expected, got = KNOWN[case.id], traced_answer(case)
    if isinstance(expected, dict) and isinstance(got, dict):
        return None if got["error"] == expected["error"] else f"{case.id}: JAX {expected}, cdnajit {got}"
    if expected != got:
        return f"{case.id}: JAX {expected}, cdnajit {got}"
    return None


def test_every_case_has_a_known_answer():
    assert {c.id for c in CASES} == set(KNOWN)


@pytest.mark.parametrize("function", sorted(BY_FUNCTION))
def test_traced_dtypes_match_jax(function):
    problems = [p for p in map(mismatch, BY_FUNCTION[function]) if p]
    assert not problems, f"{len(problems)} of {len(BY_FUNCTION[function])} cases differ:\n" + "\n".join(problems)


# Run compiled, eagerly: the examples and one case per family of dtype rules.
EAGER_IDS = [
    "numpy.cos(int32)", "numpy.sqrt(uint8)", "numpy.exp(bool)", "numpy.tanh(int64)", "numpy.divide(int32,int32)",
    "numpy.divide(int8,3)", "numpy.mean(int32)", "numpy.mean(bool)", "numpy.cumsum(int32)", "numpy.cumprod(int16)",
    "numpy.cumsum[dtype=int8](int8)", "numpy.sum(int32)", "numpy.prod(uint8)", "numpy.var(int16)",
    "numpy.median(int8)", "numpy.arctan2(int16,uint8)", "numpy.power(int8,2.5)", "numpy.add(bfloat16,float16)",
    "numpy.matmul(int8,uint8)", "numpy.reciprocal(int32)", "numpy.operator/(int32,int32)", "numpy.method.mean(int8)",
    "numpy.method.cumsum(int32)", "lax.cumsum(int8)", "lax.dot_general[preferred=float32](int8,int8)",
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
    with pytest.raises(TypeError, match=r"bitwise_and.*float32"):
        cj.make_graph(cnp.bitwise_and)(np.ones(2, np.float32), np.ones(2, np.float32))
    with pytest.raises(TypeError, match=r"lax\.sin.*int32"):
        cj.make_graph(clax.sin)(np.ones(2, np.int32))


if __name__ == "__main__":  # a summary of every mismatch: python tests/known_answers/test_jax_dtypes.py
    found = [p for p in map(mismatch, CASES) if p]
    print("\n".join(found))
    print(f"{len(CASES)} cases over {len(BY_FUNCTION)} functions; {len(found)} differ from JAX")
