"""Generate jax_initializers.json: JAX's results for every case of initializer_cases.py, for each seed.

Run once with a JAX install (not by pytest; no test imports JAX):
    /path/to/jax/python tests/known_answers/generate_jax_initializers.py
Under jax_enable_x64 (cdnajit's dtypes) with JAX's default threefry2x32 keys, as
generate_jax_random.py; entries are encoded as there ({"dtype", "shape", "hex"} or {"error"}).
"""
import json
import pathlib
import sys

import jax

jax.config.update("jax_enable_x64", True)
import jax.nn.initializers as initializers  # noqa: E402
import jax.random as jr  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from generate_jax_random import answer  # noqa: E402
from initializer_cases import SEEDS, cases  # noqa: E402

OUT = pathlib.Path(__file__).with_name("jax_initializers.json")


def main():
    results = {name: [answer(lambda _, key, f=fn: f(initializers, key), jr.PRNGKey(seed)) for seed in SEEDS]
               for name, (_, fn) in cases().items()}
    meta = {"jax_version": jax.__version__, "x64": True,
            "jax_threefry_partitionable": bool(jax.config.jax_threefry_partitionable),
            "platform": jax.default_backend(), "seeds": list(SEEDS)}
    OUT.write_text(json.dumps({**meta, "cases": results}, indent=0, sort_keys=True) + "\n")
    print(f"wrote {len(results)} cases to {OUT}")


if __name__ == "__main__":
    main()
