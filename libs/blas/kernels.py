"""What the BLAS library tells the compiler about a `library_call blas.*`: the solution it runs on a
target (named by the call's `solution` attribute, set by the select_solutions pass, or the tuned or
heuristic pick when it names none), why, and the kernel generator.py makes of it."""
from __future__ import annotations

from ...ir.core import Op
from ...ir.kernel import Kernel
from ...ir.targets import Target
from .generator import Edges, GemmProblem, gemm_kernel
from .gemv import GEMV, gemv_kernel, gemv_solution_by_name, takes_gemv
from .heuristic import Selection, estimate, pick
from .solutions import Solution, solution_by_name


def selection_for(op: Op, target: Target) -> Selection:
    """The solution a library_call runs on `target`, and why: the one its `solution` attribute names
    (set by the select_solutions pass, or by hand), else the tuned or heuristic pick."""
    problem = GemmProblem.from_op(op)
    picked = pick(problem, target)
    named = op.attrs["solution"]
    if not named or named == picked.solution.name:
        return picked
    solution = solution_by_name(named, problem.in_dtype, problem.compute_dtype, target)
    return Selection(solution, estimate(problem, solution, target), "named by the library_call's solution attribute")


def solution_for(op: Op, target: Target) -> Solution:
    """The solution a library_call runs on `target` (selection_for's, without the reason)."""
    problem = GemmProblem.from_op(op)
    if op.attrs["solution"]:
        return solution_by_name(op.attrs["solution"], problem.in_dtype, problem.compute_dtype, target)
    return pick(problem, target).solution


def select(op: Op, target: Target) -> str:
    """The select_solutions pass's choice for a call: the matrix-vector kernel when M or N is 1 and
    the matrix is contiguous along K (gemv.py), else the tuned or heuristic pick."""
    problem = GemmProblem.from_op(op)
    return GEMV.name if takes_gemv(problem) else pick(problem, target).solution.name


def explain(op: Op, target: Target) -> tuple[str, str]:
    """The solution and why, with the kernel variant the problem's sizes select (generator.Edges)."""
    problem = GemmProblem.from_op(op)
    gemv = gemv_solution_by_name(op.attrs["solution"] or select(op, target))
    if gemv is not None:
        return gemv.name, f"matrix-vector kernel (the matrix contiguous along K) for {problem.describe()}"
    chosen = selection_for(op, target)
    edges = Edges.of(GemmProblem.from_op(op), chosen.solution)
    return chosen.solution.name, f"{chosen.reason}; variant: bounds checks on {edges.name}"


def emit(op: Op, name: str, target: Target) -> Kernel:
    gemv = gemv_solution_by_name(op.attrs["solution"] or select(op, target))
    if gemv is not None:
        return gemv_kernel(op, gemv, name)
    return gemm_kernel(op, solution_for(op, target), name)
