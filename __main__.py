"""The command line: compile a function of a Python file on arrays of given types, without a driver.

    python -m cdnajit dump FILE.py:FUNC --args 'f32[4096,1024] f32[1024]' [--target gfx942]
                                        [--stage all] [--out DIR]
    python -m cdnajit report FILE.py:FUNC --args '...' [--target gfx942] [--html report.html] [--profile]
    python -m cdnajit survey [--target gfx942] [--only NAME,...] [--flagged]
    python -m cdnajit targets
    python -m cdnajit warm [--target gfx942] [--dtypes f32,f16] [--jobs N]

`--args` lists one graph-IR type per positional parameter of FUNC (`f32[4096,1024]`, `i32[]` for
a scalar); FUNC is traced on arrays of those types. FUNC may be a plain function or a `cj.jit` one
(its function is used, compiled for `--target`). Usage errors (a missing file or function, a bad
type string, an unknown target or stage) print one line on stderr and exit with status 2; errors
that cdnajit raises while tracing FUNC print one line and exit with status 1.
`survey` compiles the fixed corpus of survey.py and prints its kernel table with the flags that say
a kernel is slow (spills, occupancy 1, narrow loads, small grid, no MFMA overlap); with
`--flagged` it exits with status 1 when any kernel is flagged.
`warm` compiles the GEMM kernels of common problems into the library's kernel folder (runtime/warm.py).
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import re
import sys

import numpy as np

import cdnajit as cj
from cdnajit.errors import CdnajitError
from cdnajit.frontend.jit import Jitted
from cdnajit.ir.targets import DEFAULT_TARGET, TARGETS
from cdnajit.ir.types import NUMPY_DTYPES
from cdnajit.libs.blas.prebuilt import prebuilt_dtypes
from cdnajit.runtime.report import STAGES
from cdnajit.runtime.warm import warm as warm_cache

TYPE = re.compile(r"\s*(?P<dtype>[A-Za-z0-9]+)\[(?P<dims>[0-9,\s]*)\]\s*")
STAGE_EXTENSIONS = {"llvm-host": ".ll", "llvm-amdgpu": ".ll", "asm": ".s"}


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with each usage error on one line of stderr (status 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def parse_types(text: str) -> list[tuple[str, tuple[int, ...]]]:
    """'f32[4096,1024] i32[]' -> [("f32", (4096, 1024)), ("i32", ())]; ValueError names the bad part."""
    types, position = [], 0
    while text[position:].strip():
        match = TYPE.match(text, position)
        if match is None or match["dtype"] not in NUMPY_DTYPES:
            bad = text[position:].split()[0]
            raise ValueError(f"bad type {bad!r} in --args: expected dtype[d0,d1,...] such as f32[4096,1024] "
                             f"or i32[], with dtype one of {', '.join(NUMPY_DTYPES)}")
        dims = [d.strip() for d in match["dims"].split(",")] if match["dims"].strip() else []
        if any(not d for d in dims):
            raise ValueError(f"bad type {match.group().strip()!r} in --args: an empty dimension")
        types.append((match["dtype"], tuple(int(d) for d in dims)))
        position = match.end()
    return types


def example_array(dtype: str, shape, rng: np.random.Generator) -> np.ndarray:
    """Random values of a type: what --profile runs on (tracing needs only the types)."""
    numpy_dtype = NUMPY_DTYPES[dtype]
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.issubdtype(numpy_dtype, np.integer):
        return rng.integers(0, 10, shape).astype(numpy_dtype)
    return rng.standard_normal(shape).astype(numpy_dtype)


def load_function(parser: ArgumentParser, spec: str):
    """The function FUNC of FILE.py:FUNC (a jitted one's underlying function)."""
    path, colon, name = spec.rpartition(":")
    if not colon or not path or not name:
        parser.error(f"expected FILE.py:FUNC, got {spec!r}")
    if not os.path.isfile(path):
        parser.error(f"no such file: {path}")
    module_name = "cdnajit_cli_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None:
        parser.error(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))   # so the file imports its neighbours
    try:
        module_spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    fn = getattr(module, name, None)
    if fn is None:
        parser.error(f"{path} has no function {name!r}")
    fn = fn.fn if isinstance(fn, Jitted) else fn
    if not callable(fn):
        parser.error(f"{path}:{name} is not a function ({type(fn).__name__})")
    return fn


def compile_program(parser: ArgumentParser, args) -> tuple[cj.Compiled, list[np.ndarray]]:
    fn = load_function(parser, args.function)
    try:
        types = parse_types(args.args)
    except ValueError as error:
        parser.error(str(error))
    rng = np.random.default_rng(0)
    arrays = [example_array(dtype, shape, rng) for dtype, shape in types]
    try:
        inspect.signature(fn).bind(*arrays)
    except TypeError as error:
        parser.error(f"--args gives {len(arrays)} argument(s) for {args.function}: {error}")
    except ValueError:  # no signature to check (a builtin): let the call tell
        pass
    return cj.jit(fn, target=args.target).lower(*arrays).compile(), arrays


def dump(parser, args) -> None:
    compiled, _ = compile_program(parser, args)
    stages = STAGES if args.stage == "all" else (args.stage,)
    name = compiled.executable.plan["name"]
    if args.out is None:
        for stage in stages:
            heading = f"==== {stage} ====\n" if len(stages) > 1 else ""
            print(heading + compiled.as_text(stage).rstrip("\n"))
        return
    os.makedirs(args.out, exist_ok=True)
    written = []
    for stage in stages:
        path = os.path.join(args.out, f"{name}.{stage}{STAGE_EXTENSIONS.get(stage, '.txt')}")
        with open(path, "w") as file:
            file.write(compiled.as_text(stage))
        written.append(path)
    written += compiled.program_report("dumps").write_dumps(args.out)
    print(f"wrote {len(written)} files to {args.out}")


def report(parser, args) -> None:
    compiled, arrays = compile_program(parser, args)
    if args.profile:
        compiled.profile(*arrays)
    print(compiled.report(), end="")
    if args.html:
        compiled.save_report(args.html)
        print(f"wrote {args.html}")


def survey(parser, args) -> int:
    from cdnajit import survey as kernel_survey   # compiles the corpus: loaded only for this command
    only = [n.strip() for n in args.only.split(",")] if args.only else None
    try:
        rows = kernel_survey.survey(args.target, only)
    except ValueError as error:
        parser.error(str(error))
    print(kernel_survey.format_survey(rows), end="")
    return 1 if args.flagged and any(row.flags for row in rows) else 0


def targets(parser, args) -> None:
    print(f"{'target':<8} {'product':<8} {'arch':<6} {'CUs':>4} {'HBM':>9} {'LDS/CU':>7}")
    for target in TARGETS.values():
        default = "  (default)" if target.name == DEFAULT_TARGET else ""
        print(f"{target.name:<8} {target.product:<8} {target.architecture:<6} {target.compute_units:>4} "
              f"{target.hbm_bandwidth / 1e12:>4.1f} TB/s {target.lds_bytes_per_cu // 1024:>3} KiB{default}")


def warm(parser, args) -> None:
    dtypes = [d.strip() for d in args.dtypes.split(",")] if args.dtypes else None
    unknown = [d for d in dtypes or () if d not in prebuilt_dtypes()]
    if unknown:
        parser.error(f"--dtypes: {', '.join(unknown)} not among the GEMM input dtypes {', '.join(prebuilt_dtypes())}")
    print(warm_cache(args.target, dtypes, jobs=args.jobs).describe())


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m cdnajit", description="cdnajit: compile array programs for AMD Instinct "
                            "GPUs and inspect their kernels.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{dump,report,survey,targets,warm}")

    def program_command(name, help_text):
        command = commands.add_parser(name, help=help_text, description=help_text)
        command.add_argument("function", metavar="FILE.py:FUNC", help="the function to compile")
        command.add_argument("--args", default="", metavar="TYPES",
                             help="one type per positional parameter, e.g. 'f32[4096,1024] f32[1024]'")
        command.add_argument("--target", default=DEFAULT_TARGET, choices=list(TARGETS),
                             help=f"the AMDGPU target (default {DEFAULT_TARGET})")
        return command

    command = program_command("dump", "print or write the program at each compilation stage")
    command.add_argument("--stage", default="all", choices=["all", *STAGES], help="the stage to dump (default all)")
    command.add_argument("--out", metavar="DIR", help="write the stages, each kernel's .s, .hsaco and report, "
                         "the kernel table and the fused graph (DOT) into DIR instead of printing")
    command.set_defaults(run=dump, parser=command)
    command = program_command("report", "print the kernel table: resources, occupancy and roofline")
    command.add_argument("--html", metavar="PATH", help="also write the HTML report to PATH")
    command.add_argument("--profile", action="store_true",
                         help="run the program once on random inputs to measure each kernel's host time")
    command.set_defaults(run=report, parser=command)
    help_text = "compile the survey corpus and print each kernel's resources, load width, efficiency and flags"
    command = commands.add_parser("survey", help=help_text, description=help_text)
    command.add_argument("--target", default=DEFAULT_TARGET, choices=list(TARGETS),
                         help=f"the AMDGPU target (default {DEFAULT_TARGET})")
    command.add_argument("--only", metavar="NAMES", help="comma-separated corpus programs (default all)")
    command.add_argument("--flagged", action="store_true", help="exit with status 1 when a kernel is flagged")
    command.set_defaults(run=survey, parser=command)
    command = commands.add_parser("targets", help="list the AMDGPU targets", description="list the AMDGPU targets")
    command.set_defaults(run=targets, parser=command)
    help_text = ("compile the GEMM kernels of common problems into the library's kernel folder "
                 "($CDNAJIT_LIBRARY_DIR, else share/cdnajit/kernels of this Python environment), as a library ships them")
    command = commands.add_parser("warm", help=help_text, description=help_text)
    command.add_argument("--target", default=DEFAULT_TARGET, choices=list(TARGETS),
                         help=f"the AMDGPU target whose solutions are picked (default {DEFAULT_TARGET})")
    command.add_argument("--dtypes", metavar="LIST", help=f"comma-separated input dtypes (default all: "
                         f"{','.join(prebuilt_dtypes())})")
    command.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1, metavar="N",
                         help="compile in N processes at once (default: one per CPU)")
    command.set_defaults(run=warm, parser=command)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = args.run(args.parser, args)
    except CdnajitError as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"{args.parser.prog}: error: {first_line}", file=sys.stderr)
        return 1
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
