"""A first cdnajit program: a dense layer with a tanh-approximated GELU.

Run it with `make demo`. It prints the graph IR that `cj.jit` traced, runs the compiled
function, checks the result against plain numpy, and prints the optimized graph and the report
of each kernel on the MI300X (gfx942).
"""
import numpy as np

import cdnajit as cj
import cdnajit.numpy as cnp


@cj.jit
def gelu_layer(x, w, b):
    h = x @ w + b
    return 0.5 * h * (1 + cnp.tanh(0.7978845608 * (h + 0.044715 * h**3)))


def gelu_layer_numpy(x, w, b):
    h = x @ w + b
    return 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16), dtype=np.float32)
    w = rng.standard_normal((16, 32), dtype=np.float32) / 4
    b = rng.standard_normal(32, dtype=np.float32)

    print("graph IR:")
    print(gelu_layer.lower(x, w, b).as_text())

    y = gelu_layer(x, w, b)
    expected = gelu_layer_numpy(x, w, b)
    print(f"result: {y.dtype}{list(y.shape)}, first row {np.array2string(y[0, :6], precision=4)} ...")
    # f32 accumulation over 16 terms and tanh: agreement to a few ulp of f32.
    print("matches numpy:", np.allclose(y, expected, rtol=1e-5, atol=1e-5))

    compiled = gelu_layer.lower(x, w, b).compile()
    print("\noptimized graph IR (after canonicalization and fusion):")
    print(compiled.as_text("optimized"))
    compiled.profile(x, w, b)
    print(compiled.report())


if __name__ == "__main__":
    main()
