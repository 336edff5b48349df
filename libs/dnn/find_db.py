"""The DNN find-db, as MIOpen's: the solver the find mode (runtime/dnn_find.py, `cj.libs.dnn.find`)
measured fastest for each convolution problem, which later compiles use before the heuristic.

A user-editable JSON file, `dnn_find_db.json` in the compile cache's folder:

    {"format": "cdnajit dnn find-db", "version": 1,
     "entries": {"gfx942:8-64-56x56-64-3x3-1_1x1_1-1x1-1x1-l1x1-g1-bg1-NCHW-OIHW-NCHW-f32-F:none":
                 {"solver": "implicit_gemm", "times_us": {"implicit_gemm": 812.5, "direct": 2410.0}}}}

keyed by target, MIOpen's problem key (problem.py) and the epilogue. A file that is unreadable, of
another format or version, or an entry that names no solver, a solver that no longer exists or one
that does not apply to its problem, is ignored (the file with a warning): it can never break a compile.
Writes are atomic (a temporary file renamed over the old one).
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings

from ...environment import cache_directory

FILE_NAME = "dnn_find_db.json"
FORMAT = "cdnajit dnn find-db"
VERSION = 1


def path() -> str:
    return os.path.join(cache_directory(), FILE_NAME)


def entry_key(problem, target) -> str:
    return f"{target.name}:{problem.key()}:{problem.epilogue}"


def load() -> dict:
    """The entries (key -> record), {} when there is no usable file."""
    try:
        with open(path()) as file:
            data = json.load(file)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        warnings.warn(f"cdnajit: ignoring the unreadable DNN find-db {path()}: {error}", stacklevel=2)
        return {}
    if not (isinstance(data, dict) and data.get("format") == FORMAT and data.get("version") == VERSION
            and isinstance(data.get("entries"), dict)):
        warnings.warn(f"cdnajit: ignoring {path()}: not a version-{VERSION} DNN find-db", stacklevel=2)
        return {}
    return data["entries"]


def record(problem, target, solver: str, times_us: dict) -> None:
    """Record the find mode's winner for a problem, keeping the other entries."""
    entries = load()
    entries[entry_key(problem, target)] = {"solver": solver, "times_us": times_us}
    folder = os.path.dirname(path())
    os.makedirs(folder, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".dnn_find_db.")
    with os.fdopen(descriptor, "w") as file:
        json.dump({"format": FORMAT, "version": VERSION, "entries": entries}, file, indent=1, sort_keys=True)
    os.replace(temporary, path())


def recorded_solver(problem, target) -> str | None:
    """The solver name recorded for the problem, or None."""
    entry = load().get(entry_key(problem, target))
    return entry.get("solver") if isinstance(entry, dict) and isinstance(entry.get("solver"), str) else None


def stamp() -> str:
    """A digest of the file's bytes ("" without one): part of every compiled program's cache key."""
    try:
        with open(path(), "rb") as file:
            return hashlib.sha256(file.read()).hexdigest()[:16]
    except OSError:
        return ""
