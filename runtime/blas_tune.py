"""The GEMM library's "find" mode (`cj.libs.blas.tune`): time candidate solutions on the host and
record the fastest in the tuning database (libs/blas/tuning.py), as Tensile's benchmarking and
MIOpen's find-db do. It runs kernels, so it lives here rather than in libs/.

    result = cj.libs.blas.tune(1024, 1024, 1024, "float32")    # progress bar on stderr
    result.winner.name, result.table()

Later compiles of a library_call with the same target, sizes, batch, layouts and dtypes use the
recorded winner (its selection reason says "tuned"); `epilogue="bias_relu"` (any of
libs/blas/routines.py's EPILOGUES) times the product with that epilogue fused, as the matcher builds it
for `relu(x @ w + b)`, and records the winner for that epilogue only. The candidates are the
heuristic's `top` best-modelled solutions (all of them with top=None); each is generated, compiled
(or loaded from the compile cache: a solution's kernel serves every size), run once to warm up and
checked against numpy. Then two stages time them, every round running each
candidate once, in a shuffled order:

- screening: `repeats` rounds; each candidate's fastest run counts.
- head-to-head: the FINALISTS fastest in screening and the heuristic's own pick (the incumbent,
  which compiles use untuned) run FINAL_ROUNDS_PER_REPEAT * `repeats` more rounds. A finalist's
  score is the median over rounds of its time divided by the incumbent's in the same round, so
  load from other processes that slows a whole round cancels. The incumbent is replaced only by
  a finalist whose score is below 1 - MARGIN.

Why head to head: on a shared machine a minimum over a few runs can crown a kernel that was lucky
once, and a slower kernel recorded as the winner then serves every later compile of the problem.
"""
from __future__ import annotations

import math
import random
import sys
import time
from dataclasses import dataclass

import numpy as np

from ..errors import CdnajitError
from ..libs.blas.routines import EPILOGUES, activated, activation_dtypes, split_epilogue
from ..ir.targets import Target, get_target
from ..ir.types import NUMPY_DTYPES, dtype_name
from ..libs.blas.generator import GemmProblem, gemm_call, gemm_kernel
from ..libs.blas.heuristic import ranked
from ..libs.blas.matcher import SUPPORTED
from ..libs.blas.solutions import Solution
from ..libs.blas.tuning import database_path, load_database, problem_key, save_database
from .cache import default_cache
from .launch import CompiledKernel, aligned_copy, aligned_empty, object_code

BAR_WIDTH = 30
# The steepest slope of a transcendental epilogue activation (gelu's, about 1.13; tanh, sigmoid,
# silu: at most 1.1) and an allowance for its evaluation error, above the README's measured maxima
# of a few ulp. relu is exact with slope 1.
ACTIVATION_SLOPE = 1.2
MATH_ULPS = 8
# The head-to-head stage (see the module's docstring): how many of screening's fastest meet the
# incumbent, for how many rounds per screening round, and by how much a challenger's median time
# ratio must beat it (a few per cent: a difference the machine's noise does not make).
FINALISTS = 3
FINAL_ROUNDS_PER_REPEAT = 3
MARGIN = 0.03


@dataclass(frozen=True)
class Timing:
    solution: Solution
    seconds: float             # fastest host time of one launch
    modelled_seconds: float    # the heuristic's time on the target
    flops: int                 # the problem's
    versus_incumbent: float | None = None  # head-to-head median time ratio to the heuristic's pick

    @property
    def gflops(self) -> float:
        return self.flops / self.seconds / 1e9 if self.seconds else 0.0


@dataclass(frozen=True)
class TuningResult:
    key: str                   # the database key (tuning.problem_key)
    problem: GemmProblem
    timings: list[Timing]      # the winner, the other finalists by head-to-head score, the rest by time
    database: str              # where the winner was recorded

    @property
    def winner(self) -> Solution:
        return self.timings[0].solution

    def table(self) -> str:
        lines = [f"{self.problem.describe()}: {len(self.timings)} solutions timed on the host "
                 f"(x incumbent: median time ratio to the heuristic's pick, head to head)"]
        for rank, t in enumerate(self.timings, 1):
            score = f"x incumbent {t.versus_incumbent:5.3f}" if t.versus_incumbent is not None else " " * 17
            lines.append(f"{rank:3d}  {t.solution.name:<44s} {t.seconds * 1e3:9.3f} ms  {t.gflops:8.1f} GFLOP/s  "
                         f"{score}  (model on the target {t.modelled_seconds * 1e6:.1f} us)")
        return "\n".join(lines)


def result_dtype_for(in_dtype: str, preferred_element_type) -> str:
    allowed = SUPPORTED.get(in_dtype)
    if allowed is None:
        raise CdnajitError(f"blas.tune: no GEMM kernels for {in_dtype} inputs; the library takes "
                           f"{', '.join(d for d in SUPPORTED if d != 'c64')}")
    if preferred_element_type is None:
        return allowed[0]
    result = dtype_name(preferred_element_type)
    if result not in allowed:
        raise CdnajitError(f"blas.tune: {in_dtype} inputs give {' or '.join(allowed)} results, not {result}")
    return result


def random_operand(shape, dtype: str, rng) -> np.ndarray:
    if dtype == "i8":
        return rng.integers(-8, 8, shape, dtype=np.int8)
    return rng.standard_normal(shape).astype(NUMPY_DTYPES[dtype])


def progress(done: int, total: int, label: str, file, task: str = "blas.tune") -> None:
    """One line of a progress bar on `file`, rewritten in place: `task [###...] done/total label`."""
    filled = BAR_WIDTH * done // max(total, 1)
    file.write(f"\r{task} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total} {label:<48.48s}")
    file.flush()


def tune(m: int, n: int, k: int, dtype="float32", *, batch: int = 1, trans_a: bool = False, trans_b: bool = False,
         preferred_element_type=None, epilogue: str = "none", target: str | Target | None = None,
         top: int | None = 8, repeats: int = 5, show_progress: bool = True, file=None) -> TuningResult:
    """Time the `top` best-modelled solutions of an (M, N, K) GEMM of `dtype` inputs, with `epilogue`
    fused, on the host and record the winner (the heuristic's pick unless a finalist beats it head to
    head, see the module docstring) for `target` (default gfx942) in the tuning database."""
    for what, size in (("M", m), ("N", n), ("K", k), ("batch", batch)):
        if not isinstance(size, (int, np.integer)) or size < 1:
            raise CdnajitError(f"blas.tune: {what} must be a positive integer, got {size!r}")
    if top is not None and (not isinstance(top, int) or top < 1):
        raise CdnajitError(f"blas.tune: top must be a positive integer or None (every candidate), got {top!r}")
    target = target if isinstance(target, Target) else get_target(target)
    try:
        in_dtype = dtype_name(dtype)
    except (KeyError, TypeError):
        raise CdnajitError(f"blas.tune: unsupported dtype {dtype!r}") from None
    if epilogue not in EPILOGUES:
        raise CdnajitError(f"blas.tune: epilogue {epilogue!r} is not one of {', '.join(EPILOGUES)}")
    result_dtype = result_dtype_for(in_dtype, preferred_element_type)
    activation = split_epilogue(epilogue)[1]
    if activation is not None and result_dtype not in activation_dtypes(activation):
        raise CdnajitError(f"blas.tune: the {activation} epilogue takes floating-point results, not {result_dtype}")
    call = gemm_call(int(m), int(n), int(k), in_dtype, result_dtype, batch=int(batch), trans_a=trans_a,
                     trans_b=trans_b, epilogue=epilogue)
    problem = GemmProblem.from_op(call)
    estimates = ranked(problem, target)[:top]
    file = file or sys.stderr
    rng = np.random.default_rng(0)
    # Aligned, as the executable allocates the intermediates a GEMM reads and cj.device_put places inputs.
    operands = [aligned_copy(random_operand(v.type.shape, v.type.dtype, rng)) for v in call.operands]
    expected, scale = reference_result(operands, problem)
    d = aligned_empty(call.result.type.shape, NUMPY_DTYPES[problem.result_dtype])  # as the executable allocates it
    kernels = []
    for index, est in enumerate(estimates):
        if show_progress:
            progress(index, len(estimates), est.solution.name, file)
        # A solution's kernel serves every size: one compiled for another problem, by a program or
        # an earlier tune, is loaded from the compile cache.
        kernel = gemm_kernel(call, est.solution, "blas_tune")
        compiled = CompiledKernel(kernel, object_code(kernel, default_cache())[1])
        compiled(*operands, d)
        check(d, expected, scale, est.solution, problem)
        kernels.append(compiled)
    if show_progress:
        progress(len(estimates), len(estimates), "done", file)
        file.write("\n")
    order = random.Random(0)
    screening = time_rounds(kernels, range(len(kernels)), repeats, operands, d, order)
    seconds = [min(runs) for runs in screening]
    # estimates[0] is the heuristic's pick: the incumbent, which heuristic.select compiles untuned.
    finalists = sorted(set(sorted(range(len(kernels)), key=seconds.__getitem__)[:FINALISTS]) | {0})
    final = time_rounds(kernels, finalists, FINAL_ROUNDS_PER_REPEAT * repeats, operands, d, order)
    winner, scores = head_to_head_winner(dict(zip(finalists, final)), incumbent=0)
    for index, runs in zip(finalists, final):
        seconds[index] = min(seconds[index], *runs)
    timings = [Timing(est.solution, best, est.seconds, problem.flops, scores.get(index))
               for index, (est, best) in enumerate(zip(estimates, seconds))]
    rest = sorted((i for i in range(len(timings)) if i != winner),
                  key=lambda i: (scores.get(i, math.inf), timings[i].seconds))
    timings = [timings[winner]] + [timings[i] for i in rest]
    key = problem_key(problem, target)
    database = load_database()
    database[key] = {"solution": timings[0].solution.name, "seconds": timings[0].seconds,
                     "candidates": len(timings)}
    save_database(database)
    return TuningResult(key, problem, timings, database_path())


def time_rounds(kernels, chosen, rounds: int, operands, d, order: random.Random) -> list[list[float]]:
    """Each chosen kernel's host time in each of `rounds` rounds, every round running the chosen
    once each in a fresh shuffled order (a kernel always timed right after another could inherit
    its cache state or its slow spell)."""
    chosen = list(chosen)
    times = {index: [] for index in chosen}
    for _ in range(rounds):
        for index in order.sample(chosen, len(chosen)):
            start = time.perf_counter()
            kernels[index](*operands, d)
            times[index].append(time.perf_counter() - start)
    return [times[index] for index in chosen]


def head_to_head_winner(round_times: dict[int, list[float]], incumbent: int,
                        margin: float = MARGIN) -> tuple[int, dict[int, float]]:
    """The winner of rounds in which every candidate ran once, and each candidate's score: the median
    over rounds of its time over the incumbent's. A challenger wins with the least score, and only
    if that score is below 1 - margin; otherwise the incumbent stays."""
    reference = round_times[incumbent]
    scores = {index: float(np.median([t / r for t, r in zip(times, reference)]))
              for index, times in round_times.items()}
    best = min(scores, key=scores.get)
    return (best if scores[best] < 1 - margin else incumbent), scores


def reference_result(operands, problem: GemmProblem) -> tuple[np.ndarray, np.ndarray]:
    """epilogue(op(A) @ op(B) + bias), exactly (i8) or in f64, and |op(A)| @ |op(B)|, the scale of
    the product's rounding error."""
    a, b = operands[:2]
    wide = np.int64 if problem.in_dtype == "i8" else np.float64
    op_a = (np.swapaxes(a, -1, -2) if problem.trans_a else a).astype(wide)
    op_b = (np.swapaxes(b, -1, -2) if problem.trans_b else b).astype(wide)
    result = np.matmul(op_a, op_b)
    has_bias, activation = split_epilogue(problem.epilogue)
    if has_bias:
        result = result + operands[-1].astype(wide)
    return activated(result, activation, *problem.clamp), np.matmul(np.abs(op_a), np.abs(op_b))


def check(d, expected, scale, solution: Solution, problem: GemmProblem) -> None:
    """A timed kernel must compute the product: an error here is a generator bug, never a winner."""
    if problem.in_dtype == "i8":
        ok = np.array_equal(d.astype(np.int64), expected)
    else:
        # The classic bound of a K-term dot product summed in compute_dtype, |error| <= K eps |A| |B|,
        # carried through the activation (every one has slope at most ACTIVATION_SLOPE), plus the
        # final rounding and the activation's own error (MATH_ULPS of the result dtype).
        compute_eps = float(np.finfo(NUMPY_DTYPES[problem.compute_dtype]).eps)
        result_eps = float(np.finfo(NUMPY_DTYPES[problem.result_dtype]).eps)
        activation = split_epilogue(problem.epilogue)[1]
        slope, ulps = {None: (1, 0), "relu": (1, 0)}.get(activation, (ACTIVATION_SLOPE, MATH_ULPS))
        bound = (slope * (problem.k * compute_eps * scale + result_eps * np.abs(expected))
                 + ulps * result_eps * np.maximum(np.abs(expected), 1))
        ok = bool(np.all(np.abs(d.astype(np.float64) - expected) <= bound))
    if not ok:
        raise CdnajitError(f"blas.tune: solution {solution.name} computed a wrong {problem.describe()} product")
