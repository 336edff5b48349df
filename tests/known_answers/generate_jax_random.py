"""Generate jax_random.json: JAX's results for every case of random_cases.py, for each seed.

Run once with a JAX install (not by pytest; no test imports JAX):
    /path/to/jax/python tests/known_answers/generate_jax_random.py
Under jax_enable_x64 (cdnajit's dtypes) and JAX's defaults otherwise: threefry2x32 keys with
jax_threefry_partitionable on. Each entry is {"dtype", "shape", "hex"} (the result's bytes,
little-endian), or {"error": exception class name}.
"""
import json
import pathlib
import sys
import warnings

import jax

jax.config.update("jax_enable_x64", True)
import jax.random as jr  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from random_cases import SEEDS, cases  # noqa: E402

OUT = pathlib.Path(__file__).with_name("jax_random.json")


def encode(value) -> dict:
    a = np.asarray(value)
    return {"dtype": a.dtype.name, "shape": list(a.shape), "hex": np.ascontiguousarray(a).tobytes().hex()}


def answer(fn, key) -> dict:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return encode(fn(jr, key))
    except Exception as e:  # the kind of error JAX raises is the known answer
        return {"error": type(e).__name__}


def main():
    table = cases()
    results = {name: [answer(fn, jr.PRNGKey(seed)) for seed in SEEDS] for name, (_, fn) in table.items()}
    meta = {"jax_version": jax.__version__, "x64": True,
            "jax_threefry_partitionable": bool(jax.config.jax_threefry_partitionable),
            "platform": jax.default_backend(), "seeds": list(SEEDS)}
    OUT.write_text(json.dumps({**meta, "cases": results}, indent=0, sort_keys=True) + "\n")
    print(f"wrote {len(results)} cases to {OUT}")


if __name__ == "__main__":
    main()
