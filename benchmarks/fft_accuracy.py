"""The FFT library's accuracy table (README): relative L2 error of `cnp.fft.fft` against numpy's
pocketfft in float64, by length class and precision, and that error in units of eps x log2(N) (N the
plan's longest transform: Bluestein's M), the unit of the error model that tests/libs/test_fft.py
asserts (at most 2 of them for every length there). `python benchmarks/fft_accuracy.py`."""
import math

import numpy as np

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.libs.fft import plan as fft_plan

EPS = {np.complex64: float(np.finfo(np.float32).eps), np.complex128: float(np.finfo(np.float64).eps)}
PART = {np.complex64: "f32", np.complex128: "f64"}
CLASSES = [
    ("every length 1-256", list(range(1, 257))),
    ("every 61st length to 4096, and 4096", list(range(257, 4097, 61)) + [4096]),
    ("powers of two 2^13-2^22", [2 ** e for e in range(13, 23)]),
    ("primes 4099, 7919, 10007", [4099, 7919, 10007]),
    ("mixed radices 30030, 323, 12288", [2 * 3 * 5 * 7 * 11 * 13, 17 * 19, 2 ** 12 * 3]),
]


def error_of(length: int, dtype) -> tuple[float, float]:
    rng = np.random.default_rng(length)
    x = (rng.standard_normal(length) + 1j * rng.standard_normal(length)).astype(dtype)
    got = np.asarray(cj.jit(cnp.fft.fft)(x)).astype(np.complex128)
    want = np.fft.fft(x.astype(np.complex128))
    error = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))
    plan = fft_plan.plan_for(length, PART[dtype])
    longest = plan.inner.length if plan.kind == "bluestein" else length
    return error, error / (EPS[dtype] * math.log2(max(longest, 2)))


def main():
    print("| lengths | c64: max relative L2 error (in eps log2 N) | c128: max relative L2 error (in eps log2 N) |")
    print("| --- | --- | --- |")
    for name, lengths in CLASSES:
        cells = []
        for dtype in (np.complex64, np.complex128):
            worst = max(error_of(n, dtype) for n in lengths)
            cells.append(f"{worst[0]:.2e} ({worst[1]:.2f})")
        print(f"| {name} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
