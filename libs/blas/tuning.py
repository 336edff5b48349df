"""Tuning ("find" mode, as Tensile's benchmarking and MIOpen's find-db): time the candidate
solutions of a problem on the host and record the fastest in an on-disk database.

    cj.libs.blas.tune(1024, 1024, 1024, "float32")          # prints a progress bar, returns the results

The database is a JSON file, `blas_tuning.json` in the compile cache's folder (CDNAJIT_CACHE_DIR,
default the user's cache directory), keyed by target, sizes, batch, layouts, dtypes and, for a
product tuned with one, its fused epilogue (as hipBLASLt's solutions are per epilogue: a kernel that
wins the plain product can lose once every output also takes a bias and an activation). Later
compiles of a matching library_call use the recorded solution (heuristic.select): the one tuned with
its epilogue, else the one tuned for the plain product. The file holds only names and times, is
written atomically, and an unreadable file counts as empty (with a warning).
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings

from ...environment import cache_directory
from ...ir.targets import Target
from .solutions import solution_by_name

DATABASE_NAME = "blas_tuning.json"


def database_path() -> str:
    return os.path.join(cache_directory(), DATABASE_NAME)


def problem_key(problem, target: Target, with_epilogue: bool = True) -> str:
    layout = ("T" if problem.trans_a else "N") + ("T" if problem.trans_b else "N")
    key = (f"{target.name}:{problem.m}x{problem.n}x{problem.k}:b{problem.batch}:{layout}:"
           f"{problem.in_dtype}>{problem.compute_dtype}>{problem.result_dtype}")
    return key + f":{problem.epilogue}" if with_epilogue and problem.epilogue != "none" else key


def load_database() -> dict:
    path = database_path()
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as file:
            data = json.load(file)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data
    except (OSError, ValueError) as error:
        warnings.warn(f"cdnajit: ignoring the unreadable GEMM tuning database {path}: {error}", stacklevel=2)
        return {}


def save_database(data: dict) -> None:
    folder = cache_directory()
    os.makedirs(folder, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".blas_tuning.")
    with os.fdopen(descriptor, "w") as file:
        json.dump(data, file, indent=1, sort_keys=True)
    os.replace(temporary, database_path())


def database_stamp() -> str:
    """A digest of the database's bytes ("" when there is none): part of the program cache key."""
    try:
        with open(database_path(), "rb") as file:
            return hashlib.sha256(file.read()).hexdigest()[:16]
    except OSError:
        return ""


def tuned_solution(problem, target: Target):
    """The recorded winner for `problem` on `target` (tuned with its epilogue, else for the plain
    product), or None."""
    database = load_database()
    entry = database.get(problem_key(problem, target)) or database.get(problem_key(problem, target, False))
    if entry is None:
        return None
    try:
        return solution_by_name(entry["solution"], problem.in_dtype, problem.compute_dtype, target)
    except (KeyError, ValueError):
        return None
