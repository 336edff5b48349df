"""Generate jax_dtypes.json: the result dtype and weak type JAX gives for each case of dtype_cases.py.

Run once with a JAX install (not by pytest; no test imports JAX):
    /path/to/jax/python tests/known_answers/generate_jax_dtypes.py
Each case is traced abstractly with jax.eval_shape under jax_enable_x64; its entry is the list of
[dtype, weak_type] of the result's leaves, or {"error": exception class name} when JAX rejects it.
"""
import json
import pathlib
import sys
import warnings

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from dtype_cases import SHAPE, all_cases  # noqa: E402

OUT = pathlib.Path(__file__).with_name("jax_dtypes.json")
NAMESPACES = {"numpy": jnp, "lax": jax.lax}


def numpy_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def jax_answer(case):
    arrays = [np.ones(SHAPE, numpy_dtype(d)) for d in case.arrays()]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = jax.eval_shape(lambda *a: case.bind(NAMESPACES[case.namespace], a), *arrays)
    except Exception as e:  # the kind of error JAX raises is the known answer
        return {"error": type(e).__name__}
    return [[np.dtype(leaf.dtype).name, bool(leaf.weak_type)] for leaf in jax.tree_util.tree_leaves(out)]


def main():
    answers = {}
    for case in all_cases():
        if case.id in answers:
            raise SystemExit(f"duplicate case id {case.id}")
        answers[case.id] = jax_answer(case)
    # One case a line, so that a regenerated table diffs readably.
    lines = [f"  {json.dumps(k)}: {json.dumps(answers[k])}" for k in sorted(answers)]
    OUT.write_text(f'{{"jax_version": {json.dumps(jax.__version__)}, "x64": true, "cases": {{\n'
                   + ",\n".join(lines) + "\n}}\n")
    errors = sum(isinstance(a, dict) for a in answers.values())
    print(f"{len(answers)} cases ({errors} rejected by JAX) -> {OUT}")


if __name__ == "__main__":
    main()
