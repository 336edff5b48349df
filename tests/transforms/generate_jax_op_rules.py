"""Generate jax_op_rules.json: JAX's JVP and VJP of every case of op_cases.py (the per-op table).

Run once with a JAX install (not by pytest; no test imports JAX):
    .venv/bin/python tests/transforms/generate_jax_op_rules.py
under jax_enable_x64. The cases are written with cdnajit's `lax` and `cnp`; here they run with
JAX's: op_cases' module names are pointed at jax.lax and jax.numpy, and a case that is one
cdnajit function (lax.add, cnp.log2) runs JAX's function of the same name. A case that reaches
cdnajit's internals (clamp's bind1: an op only the passes make) is left out, and so is one whose
derivative JAX does not implement (its NotImplementedError's message is kept in `left_out`).
Each entry: the JVP of the flattened output along the drawn tangent, and the VJP of the drawn
cotangent (one list per argument), float64 as JSON numbers (they round-trip exactly).
"""
import json
import pathlib
import sys

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import cdnajit.lax  # noqa: E402
import cdnajit.numpy  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import op_cases  # noqa: E402

OUT = pathlib.Path(__file__).with_name("jax_op_rules.json")
CDNAJIT_INTERNALS = {"clamp"}


def for_jax(fn):
    """JAX's function for one of cdnajit's lax / numpy functions; a lambda as it is (its body reads
    op_cases' module names, which main points at JAX's)."""
    for ours, theirs in ((cdnajit.lax, jax.lax), (cdnajit.numpy, jnp)):
        if getattr(ours, getattr(fn, "__name__", ""), None) is fn:
            return getattr(theirs, fn.__name__)
    return fn


def flat(fn):
    return lambda *args: jnp.concatenate([jnp.ravel(leaf) for leaf in jax.tree_util.tree_leaves(fn(*args))])


def main():
    op_cases.lax, op_cases.cnp = jax.lax, jnp
    results, left_out = {}, {name: "cdnajit internals" for name in CDNAJIT_INTERNALS}
    for forward_only, cases in ((False, op_cases.CASES), (True, op_cases.FORWARD_ONLY)):
        for name, case in cases.items():
            if name in left_out:
                continue
            args, direction, cotangent = op_cases.known_answer_draws(name, case)
            g = flat(for_jax(case.fn))
            try:
                out, tangent = jax.jvp(g, args, direction)
                entry = {"jvp": [float(v) for v in np.ravel(tangent)]}
                if not forward_only:
                    cts = jax.vjp(g, *args)[1](cotangent(out.size))
                    entry["vjp"] = [[float(v) for v in np.ravel(ct)] for ct in cts]
            except NotImplementedError as error:
                left_out[name] = f"JAX: {str(error).splitlines()[0]}"
                continue
            results[name] = entry
    meta = {"jax_version": jax.__version__, "x64": True, "left_out": left_out}
    OUT.write_text(json.dumps({**meta, "cases": results}, indent=0, sort_keys=True) + "\n")
    print(f"wrote {len(results)} cases to {OUT}")


if __name__ == "__main__":
    main()
