"""`library_call`: work the library matcher (passes/match_libraries.py) handed to a library, and the
contract every library under libs/ registers by.

    %d = library_call(%a, %b) {library = "blas", routine = "gemm", solution = "", trans_a = false, ...}

Every call has three attributes: `library` and `routine` name what it computes, and `solution`
names the kernel the library's solution selection picked for it ("" until the select_solutions
pass runs). The routine adds its own attributes (a GEMM's transposes, alpha, beta, epilogue...),
its shape rule and its numpy reference, so the parser, printer, verifier and interpreter handle a
call of any registered routine as they handle any op.

A library registers one `Library` (its package's `__init__.py` calls `register_library`), which
holds everything the compiler asks of it:
  - `routines`: name -> `Routine` (attributes, shape rule, reference);
  - `rules`: (pattern, rewrite) pairs the library matcher applies (passes/match_libraries.py);
  - `select(op, target) -> str`: the solution a call runs on a target;
  - `emit(op, kernel_name, target) -> Kernel`: the kernel of a call (lowering/emit_library.py);
  - `explain(op, target) -> (solution, reason)`: what the reports say it runs, and why;
  - `cache_stamp() -> str`: state outside the IR that changes its kernels (a tuning database),
    part of every compiled program's cache key.
The pipeline, the executable and the reports read only this registry: none of them names a library.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..opdef import define, require

# The attributes every library_call has; a routine's own follow them.
COMMON_ATTRS = {"library": "str", "routine": "str", "solution": "str"}


@dataclass(frozen=True)
class Routine:
    """One routine of a library, as the op table describes an op: `attrs` are its attributes beyond
    COMMON_ATTRS (name -> kind, ir/opdef.py's ATTR_KINDS), `infer(types, attrs)` its shape/dtype rule
    (raising TypeCheckError) and `reference(*arrays, **attrs)` its numpy reference."""
    attrs: dict
    infer: Callable
    reference: Callable
    doc: str = ""


@dataclass(frozen=True)
class Library:
    name: str
    routines: dict[str, Routine]
    rules: tuple = ()
    select: Callable | None = None
    emit: Callable | None = None
    explain: Callable | None = None
    cache_stamp: Callable[[], str] = field(default=lambda: "")


LIBRARIES: dict[str, Library] = {}


def register_library(library: Library) -> Library:
    if library.name in LIBRARIES:
        raise ValueError(f"library {library.name!r} is registered twice")
    LIBRARIES[library.name] = library
    return library


def unregister_library(name: str) -> None:
    """Drop a library from the registry (a test's toy library, after the test)."""
    del LIBRARIES[name]


def cache_stamps() -> str:
    """Every registered library's `cache_stamp`, for a compiled program's cache key."""
    return "; ".join(f"{name} {library.cache_stamp()}" for name, library in LIBRARIES.items())


def routine_of(attrs: dict) -> Routine:
    """The Routine a library_call's `library` and `routine` attributes name; TypeCheckError if none."""
    library = LIBRARIES.get(attrs.get("library"))
    require(library is not None, f"library_call: unknown library {attrs.get('library')!r} "
                                 f"(registered: {', '.join(LIBRARIES) or 'none'})")
    routine = library.routines.get(attrs.get("routine"))
    require(routine is not None, f"library_call: {library.name}'s routine {attrs.get('routine')!r} is not one of "
                                 f"{', '.join(library.routines)}")
    return routine


def routine_attrs(attrs: dict) -> dict:
    return routine_of(attrs).attrs


def library_call_infer(types, attrs, regions):
    return routine_of(attrs).infer(types, attrs)


def library_call(*arrays, library, routine, solution, **attrs):
    return routine_of({"library": library, "routine": routine}).reference(*arrays, **attrs)


define("library_call", infer=library_call_infer, reference=library_call, attrs=COMMON_ATTRS, more_attrs=routine_attrs,
       doc="a routine of a library under libs/ (see the module docstring)")
