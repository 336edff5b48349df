"""What the sparse library tells the compiler about a `library_call sparse.*`: the solution (one
per routine, named by its schedule), why, and its kernel."""
from __future__ import annotations

from ...ir.core import Op
from ...ir.kernel import Kernel
from ...ir.targets import Target
from . import bsr, convert, csrsv, spgemm, spmv
from .common import ITEMS
from .routines import SPGEMM_LDS_SLOTS

SPGEMM_REASON = (f"a work-item per row of A ({spgemm.LDS_ITEMS} per workgroup), its hash table in LDS (rows of at "
                 f"most {SPGEMM_LDS_SLOTS // 2} products) or else in global memory")

# routine -> (solution, kernel emitter, the reports' reason)
SOLUTIONS = {
    "csrmv": ("nnz_split", spmv.csrmv_kernel,
              "nonzeros split evenly into chunks, a work-item each, rows crossing chunks finished by a scatter-add "
              "of the chunks' partial sums (load-balanced for any row lengths)"),
    "ellmv": ("row_per_item", spmv.ellmv_kernel, f"a work-item per row, {ITEMS} rows per workgroup"),
    "csrmv_ell": ("row_per_item", spmv.csrmv_ell_kernel, f"a work-item per row, {ITEMS} rows per workgroup"),
    "bsrmv": ("row_per_item", spmv.bsrmv_kernel, f"a work-item per row of y, {ITEMS} rows per workgroup"),
    "bsrmm": ("row_columns", bsr.bsrmm_kernel, f"a workgroup per row of Y and {ITEMS} columns of B"),
    "csr2bsr_count": ("block_row_per_item", bsr.csr2bsr_count_kernel,
                      "a work-item per block row, its block columns found by repeated minimum searches"),
    "csr2bsr": ("block_row_per_item", bsr.csr2bsr_kernel,
                "a work-item per block row, each block zeroed then filled from its block column's entries"),
    "csrmm": ("row_columns", spmv.csrmm_kernel, f"a workgroup per row of A and {ITEMS} columns of B"),
    "sddmm": ("nonzero_per_item", spmv.sddmm_kernel, "a work-item per nonzero, its row by binary search"),
    "csr2coo": ("row_per_item", convert.csr2coo_kernel, "a work-item per row"),
    "coo2csr": ("entry_per_item", convert.coo2csr_kernel,
                "a work-item per sorted id, writing the starts of the rows its entry begins"),
    "csr2ell": ("row_per_item", convert.csr2ell_kernel, "a work-item per row"),
    "dense2csr_count": ("row_per_item", convert.dense2csr_count_kernel, "a work-item per row"),
    "dense2csr": ("row_per_item", convert.dense2csr_kernel, "a work-item per row"),
    "spgemm_bound": ("row_per_item", spgemm.bound_kernel, "a work-item per row of A"),
    "spgemm_symbolic": ("row_hash", spgemm.symbolic_kernel, SPGEMM_REASON),
    "spgemm_numeric": ("row_hash", spgemm.numeric_kernel, SPGEMM_REASON + ", the row written in slot order"),
    "csrsv_levels": ("sequential", csrsv.levels_kernel, "one work-item (the analysis)"),
    "csrsv": ("level_scheduled", csrsv.solve_kernel,
              f"one workgroup of {csrsv.SOLVE_ITEMS} work-items, a level at a time, a barrier between levels"),
}


def select(op: Op, target: Target) -> str:
    return SOLUTIONS[op.attrs["routine"]][0]


def explain(op: Op, target: Target) -> tuple[str, str]:
    name, _, reason = SOLUTIONS[op.attrs["routine"]]
    return name, reason


def emit(op: Op, name: str, target: Target) -> Kernel:
    return SOLUTIONS[op.attrs["routine"]][1](op, name)
