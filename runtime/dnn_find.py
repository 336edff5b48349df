"""The DNN library's find mode (`cj.libs.dnn.find(fn, *args)`), as MIOpen's Find: every convolution call
of the program (library_call dnn.conv_fwd, conv_bwd_data or conv_bwd_weights, after the passes) runs
once per applicable solver on the host, on random operands of its shapes; a result outside the error
model of the routine's reference is reported and its solver left out; the fastest of `repeats` rounds (each round runs every solver once)
wins and is recorded in the find-db (libs/dnn/find_db.py), which later compiles of the same problem
read (their report says "find-db"). It runs kernels, so it lives here rather than in libs/.

    results = cj.libs.dnn.find(block, x, w1, b1, w2, b2)      # progress bar on stderr
    for r in results: print(r.key, r.winner, r.times_us)
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..ir.core import Module, walk
from ..ir.targets import get_target
from ..ir.types import NUMPY_DTYPES
from ..libs.dnn import find_db
from ..libs.dnn.problem import DIRECTIONS, ConvProblem
from ..libs.dnn.routines import ROUTINES
from ..libs.dnn.solvers import applicable
from ..passes.manager import run_pipeline
from .launch import compile_kernel

BAR_WIDTH = 30


@dataclass
class FindResult:
    key: str
    winner: str
    times_us: dict          # solver -> fastest time in microseconds
    rejected: dict          # solver -> why it was left out


def conv_calls(module: Module, target) -> list:
    """The distinct convolution calls of the optimized module (one per find-db key)."""
    optimized = run_pipeline(module, target=target).module
    calls = {}
    for op in walk(optimized.body):
        if op.name == "library_call" and op.attrs["library"] == "dnn" and op.attrs["routine"] in DIRECTIONS:
            calls.setdefault(find_db.entry_key(ConvProblem.from_op(op), target), op)
    return list(calls.items())


def error_bound(op, arrays, want) -> np.ndarray:
    """The routine's error model (tests/libs/test_dnn_conv.py): sums of C*R*S products in another order."""
    problem = ConvProblem.from_op(op)
    terms = problem.c * math.prod(problem.window)
    acc_eps = float(ml_dtypes.finfo(NUMPY_DTYPES[problem.acc_dtype]).eps)
    eps = float(ml_dtypes.finfo(NUMPY_DTYPES[problem.result_dtype]).eps)
    scale = np.abs(arrays[0]).max(initial=0) * np.abs(arrays[1]).max(initial=0) * terms
    return 4 * terms * acc_eps * scale + 8 * eps * np.abs(want.astype(np.float64)) + 8 * eps


def find_module(module: Module, target=None, repeats: int = 3, progress: bool = True) -> list[FindResult]:
    target = get_target(target) if not hasattr(target, "name") else target
    rng = np.random.default_rng(0)
    results = []
    calls = conv_calls(module, target)
    for index, (key, op) in enumerate(calls):
        problem = ConvProblem.from_op(op)
        if problem.result_dtype not in ("f64", "f32", "f16", "bf16"):
            continue
        arrays = [rng.standard_normal(v.type.shape).astype(NUMPY_DTYPES[v.type.dtype]) for v in op.operands]
        attrs = {k: v for k, v in op.attrs.items() if k not in ("library", "routine", "solution")}
        want = ROUTINES[op.attrs["routine"]].reference(*arrays, **attrs)
        runs, rejected = {}, {}
        for solver in applicable(problem):
            kernel = compile_kernel(solver.emit(op, problem, f"find_{solver.name}", target))
            y = np.empty(op.result.type.shape, NUMPY_DTYPES[problem.result_dtype])
            kernel(*arrays, y)
            error = np.abs(y.astype(np.float64) - want.astype(np.float64))
            if not (error <= error_bound(op, arrays, want)).all():
                rejected[solver.name] = f"outside the error model (worst difference {np.nanmax(error):.3g})"
                continue
            runs[solver.name] = (kernel, y)
        times = {name: math.inf for name in runs}
        for _ in range(repeats):
            for name, (kernel, y) in runs.items():
                start = time.perf_counter()
                kernel(*arrays, y)
                times[name] = min(times[name], time.perf_counter() - start)
        if not times:
            continue
        winner = min(times, key=times.get)
        times_us = {name: round(t * 1e6, 1) for name, t in times.items()}
        find_db.record(problem, target, winner, times_us)
        results.append(FindResult(key, winner, times_us, rejected))
        if progress:
            done = (index + 1) * BAR_WIDTH // len(calls)
            print(f"\rdnn find [{'#' * done}{' ' * (BAR_WIDTH - done)}] {index + 1}/{len(calls)} {winner}",
                  end="" if index + 1 < len(calls) else "\n", file=sys.stderr)
    return results
