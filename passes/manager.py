"""The pass manager: runs a named pipeline of Module -> Module passes, timing each one.

    result = run_pipeline(module)                # DEFAULT_PIPELINE
    result.module, result.timings                # [("canonicalize", 0.0012), ("fusion", 0.0008)]

After every pass the verifier (`ir.verify`, when the IR has one) checks the module, and when
the environment variable CDNAJIT_DUMP_DIR names a folder, the module's text is written there as
`{module}.{index:02d}.{pass}.txt` (index 00 is the input, then 01, 02, ... one per pass).
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable

from .. import ir
from ..ir.core import Module
from .canonicalize import canonicalize
from .expand_complex import expand_complex
from .fusion import fuse
from .in_place import in_place
from .licm import licm
from .match_libraries import match_libraries, select_solutions
from .remove_barriers import remove_barriers
from .split_reductions import split_reductions

Pass = Callable[[Module], Module]

DEFAULT_PIPELINE: list[tuple[str, Pass]] = [
    ("expand_complex", expand_complex),   # first: canonicalize then folds and cleans up its real ops
    ("canonicalize", canonicalize),
    ("licm", licm),   # loop-invariant ops before their loops, where they become library calls and fuse too
    ("match_libraries", match_libraries),   # contractions and their epilogues -> library calls
    ("select_solutions", select_solutions),  # each call's kernel for the target
    ("split_reductions", split_reductions),   # before fusion: each half fuses with its producers or consumers
    ("fusion", fuse),
    ("remove_barriers", remove_barriers),   # after fusion: nothing that follows merges across them
    ("in_place", in_place),   # last: decides on the ops that run
]


@dataclass
class PipelineResult:
    module: Module
    timings: list[tuple[str, float]] = field(default_factory=list)   # (pass name, seconds), in order
    dumps: list[str] = field(default_factory=list)                   # paths written

    @property
    def total_seconds(self) -> float:
        return sum(seconds for _, seconds in self.timings)

    def report(self) -> str:
        return "\n".join(f"{name:<24} {seconds * 1e3:9.3f} ms" for name, seconds in self.timings)


def dump(module: Module, folder: str, index: int, name: str) -> str:
    os.makedirs(folder, exist_ok=True)
    safe_name = re.sub(r"[^\w.-]", "_", module.name)   # `<lambda>` and friends
    path = os.path.join(folder, f"{safe_name}.{index:02d}.{name}.txt")
    with open(path, "w") as file:
        file.write(str(module))
    return path


def run_pipeline(module: Module, pipeline=None, *, verify: bool = True, dump_dir: str | None = None,
                 target=None) -> PipelineResult:
    """Run each (name, pass) of `pipeline` (DEFAULT_PIPELINE if None) in turn on `module`.

    A pass that depends on the target (solution selection) takes it as a `target` keyword: such
    passes are marked with `takes_target = True`; `target` None means the default target.

    `verify` runs the IR verifier after each pass, if the IR has one. `dump_dir` defaults to the
    CDNAJIT_DUMP_DIR environment variable. An exception from a pass carries a note naming it.
    """
    pipeline = DEFAULT_PIPELINE if pipeline is None else pipeline
    dump_dir = dump_dir if dump_dir is not None else os.environ.get("CDNAJIT_DUMP_DIR") or None
    verifier = getattr(ir, "verify", None) if verify else None
    result = PipelineResult(module)
    if dump_dir:
        result.dumps.append(dump(module, dump_dir, 0, "input"))
    for index, (name, run_pass) in enumerate(pipeline, start=1):
        start = time.perf_counter()
        try:
            module = run_pass(module, target=target) if getattr(run_pass, "takes_target", False) else run_pass(module)
        except Exception as error:
            error.add_note(f"in pass {index} ({name}) of the pipeline")
            raise
        result.timings.append((name, time.perf_counter() - start))
        if not isinstance(module, Module):
            raise TypeError(f"pass {name} returned {type(module).__name__}, not a Module")
        if verifier is not None:
            try:
                verifier(module)
            except Exception as error:
                error.add_note(f"the module after pass {index} ({name}) does not verify")
                raise
        if dump_dir:
            result.dumps.append(dump(module, dump_dir, index, name))
    result.module = module
    return result
