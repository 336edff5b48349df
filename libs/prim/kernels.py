"""What the PRIM library tells the compiler about a `library_call prim.*`: the solution (one per
routine: the algorithm and its tile sizes, named), why, and the kernel of radix.py or scan.py."""
from __future__ import annotations

from ...ir.core import Op
from ...ir.kernel import Kernel
from ...ir.targets import Target
from . import histogram, lookback, radix, scan, search, segments, select, topk

# routine -> (the solution's name, or a function of the op giving it; its kernel emitter; its description)
SOLUTIONS = {
    "radix_histogram": (f"radix_histogram_8bit_lds_w{radix.BLOCK_ITEMS}", radix.histogram_kernel, radix.describe),
    "radix_scatter": (f"radix_scatter_8bit_match_w{radix.WAVE}", radix.scatter_kernel, radix.describe),
    "radix_sort_rows": (f"radix_sort_rows_8bit_match_w{radix.WAVE}", radix.rows_kernel, radix.describe_rows),
    "run_totals": (f"run_totals_w{scan.ITEMS}", scan.scan_kernel, scan.describe),
    "scan": (f"scan_rows_w{scan.ITEMS}", scan.scan_kernel, scan.describe),
    "scan_runs": (f"scan_runs_w{scan.ITEMS}", scan.scan_kernel, scan.describe),
    "lookback_init": (f"lookback_init_w{lookback.ZEROING_WORKGROUP}", lookback.init_kernel, lookback.describe),
    "lookback_scan": (lookback.solution, lookback.scan_kernel, lookback.describe),
    "segmented_lookback_scan": (lookback.solution, lookback.scan_kernel, lookback.describe),
    "segmented_run_totals": (f"segmented_run_totals_w{scan.ITEMS}", scan.segmented_scan_kernel,
                             scan.describe_segmented),
    "segmented_scan_runs": (f"segmented_scan_runs_w{scan.ITEMS}", scan.segmented_scan_kernel,
                            scan.describe_segmented),
    "bin_counts": (histogram.solution, histogram.bin_counts_kernel, histogram.describe),
    "merge_search": (f"merge_search_{search.DIAGONAL}_w{search.ITEMS}", search.merge_search_kernel, search.describe),
    "top_k_rows": (f"top_k_rows_w{topk.ITEMS}", topk.top_k_kernel, topk.describe),
    "select_runs": (f"select_runs_ballot_w{select.WAVE}", select.select_runs_kernel, select.describe),
    "segment_reduce": (f"segment_reduce_w{segments.ITEMS}", segments.segment_reduce_kernel, segments.describe),
    "segment_reduce_sorted": (f"segment_reduce_sorted_w{segments.ITEMS}", segments.segment_reduce_kernel,
                              segments.describe),
}


def select(op: Op, target: Target) -> str:
    name = SOLUTIONS[op.attrs["routine"]][0]
    return name(op) if callable(name) else name


def explain(op: Op, target: Target) -> tuple[str, str]:
    return select(op, target), SOLUTIONS[op.attrs["routine"]][2](op)


def emit(op: Op, name: str, target: Target) -> Kernel:
    return SOLUTIONS[op.attrs["routine"]][1](op, name)
