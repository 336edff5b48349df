"""What the DNN library tells the compiler about a `library_call dnn.conv_fwd`: the solver it runs on a
target (the call's `solution` attribute, set by the select_solutions pass or by hand, else the
heuristic's pick), why, and its kernel."""
from __future__ import annotations

from ...ir.core import Op
from ...ir.kernel import Kernel
from ...ir.targets import Target
from .im2col import im2col_kernel
from .problem import ConvProblem
from .solvers import pick, solver_named


def selection_for(op: Op, target: Target):
    problem = ConvProblem.from_op(op)
    named = op.attrs["solution"]
    picked, reason = pick(problem, target)
    if not named or named == picked.name:
        return picked, reason
    return solver_named(named, problem), "named by the library_call's solution attribute"


# im2col has one kernel: the first step of the im2col + GEMM solver (im2col.py).
IM2COL = ("im2col", "the patches of im2col + GEMM (the GEMM is libs/blas's): one workgroup per row and tap, "
                    "features consecutive")


def select(op: Op, target: Target) -> str:
    if op.attrs["routine"] == "im2col":
        return IM2COL[0]
    return pick(ConvProblem.from_op(op), target)[0].name


def explain(op: Op, target: Target) -> tuple[str, str]:
    if op.attrs["routine"] == "im2col":
        return IM2COL
    solver, reason = selection_for(op, target)
    return solver.name, f"{reason}; {solver.doc}"


def emit(op: Op, name: str, target: Target) -> Kernel:
    if op.attrs["routine"] == "im2col":
        return im2col_kernel(op, name)
    solver, _ = selection_for(op, target)
    return solver.emit(op, ConvProblem.from_op(op), name, target)
