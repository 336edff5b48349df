"""Generate jax_transforms.json: JAX's results for every case of transform_cases.py.

Run once with a JAX install (not by pytest; no test imports JAX):
    .venv/bin/python tests/transforms/generate_jax_transforms.py
under jax_enable_x64 (cdnajit's dtypes). Each entry is the case's pytree flattened to a list of
{"shape", "values"} (float64 values as JSON numbers, which round-trip exactly).
"""
import json
import pathlib
import sys
import types

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from transform_cases import CASES  # noqa: E402

OUT = pathlib.Path(__file__).with_name("jax_transforms.json")


def main():
    ns = types.SimpleNamespace(np=jnp, lax=jax.lax, api=jax)
    results = {}
    for name, case in CASES.items():
        leaves = jax.tree_util.tree_leaves(case(ns))
        results[name] = [{"shape": list(leaf.shape), "values": [float(v) for v in jnp.ravel(leaf)]} for leaf in leaves]
    meta = {"jax_version": jax.__version__, "x64": True, "platform": jax.default_backend()}
    OUT.write_text(json.dumps({**meta, "cases": results}, indent=0, sort_keys=True) + "\n")
    print(f"wrote {len(results)} cases to {OUT}")


if __name__ == "__main__":
    main()
