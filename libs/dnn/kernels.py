"""What the DNN library tells the compiler about a `library_call dnn.conv_fwd` (dnn.im2col, dnn.pool
and dnn.mha_fwd have one kernel each): the solver it runs on a
target (the call's `solution` attribute, set by the select_solutions pass or by hand, else the
heuristic's pick), why, and its kernel."""
from __future__ import annotations

from ...ir.core import Op
from ...ir.kernel import Kernel
from ...ir.targets import Target
from .im2col import im2col_kernel
from .mha import mha_kernel
from .pool import pool_kernel
from .problem import ConvProblem
from .solvers import pick, solver_named
from . import winograd


def selection_for(op: Op, target: Target):
    problem = ConvProblem.from_op(op)
    named = op.attrs["solution"]
    picked, reason = pick(problem, target)
    if not named or named == picked.name:
        return picked, reason
    return solver_named(named, problem), "named by the library_call's solution attribute"


# The routines of one kernel each: (its name, what it does, its emitter).
ONE_KERNEL = {
    "im2col": ("im2col", "the patches of im2col + GEMM (the GEMM is libs/blas's): a work-item per row and run of features, "
                         "looping over the taps", im2col_kernel),
    "pool": ("pool", "a work-item per output, a workgroup's lanes on consecutive features (or rows, where the last "
                     "dimension is pooled), the window's taps in order as loops every lane takes alike", pool_kernel),
    "winograd_input": ("winograd_input", "Winograd's input transform B^T d B: a work-item per tile and input feature",
                       winograd.input_kernel),
    "winograd_filter": ("winograd_filter", "Winograd's filter transform G g G^T: a work-item per input and output "
                                           "feature", winograd.filter_kernel),
    "winograd_output": ("winograd_output", "Winograd's output transform A^T M A with the bias and activation: a "
                                           "work-item per tile and output feature", winograd.output_kernel),
    "mha_fwd": ("flash_attention", "4 waves of 32 queries sharing tiles of 32 keys and values in LDS, "
                                   "both products by MFMA, an online softmax (running maximum and sum)", mha_kernel),
}


def select(op: Op, target: Target) -> str:
    if op.attrs["routine"] in ONE_KERNEL:
        return ONE_KERNEL[op.attrs["routine"]][0]
    return pick(ConvProblem.from_op(op), target)[0].name


def explain(op: Op, target: Target) -> tuple[str, str]:
    if op.attrs["routine"] in ONE_KERNEL:
        return ONE_KERNEL[op.attrs["routine"]][:2]
    solver, reason = selection_for(op, target)
    details = f" ({solver.details(ConvProblem.from_op(op), target)})" if solver.details else ""
    return solver.name, f"{reason}; {solver.doc}{details}"


def emit(op: Op, name: str, target: Target) -> Kernel:
    if op.attrs["routine"] in ONE_KERNEL:
        return ONE_KERNEL[op.attrs["routine"]][2](op, name)
    solver, _ = selection_for(op, target)
    return solver.emit(op, ConvProblem.from_op(op), name, target)
