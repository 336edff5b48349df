"""Side-by-side benchmark of cdnajit against numpy and JAX: `python benchmarks/run.py [--quick] [--only W1,W4]`.

Every workload of workloads.py runs under the three peers in this one process. Each peer is called
once untimed (the warm-up: it traces and compiles, so compile time is excluded except in the
compile workloads, whose every timed call compiles), then timed in ROUNDS rounds that take turns
with the other peers', each until its share of the time budget or of the sample cap is reached;
the table shows the fastest round's median. cdnajit's result is checked against numpy's.
Results go to benchmarks/results.json. The exit status is 1 when a result mismatches or a peer fails.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import importlib.metadata
import inspect
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import llvmlite
import numpy as np

import cdnajit as cj
from cdnajit.codegen import amdgpu
from cdnajit.ir.targets import get_target
from cdnajit.libs.blas.generator import GemmProblem, gemm_call, gemm_kernel
from cdnajit.libs.blas import heuristic
from cdnajit.runtime.occupancy import occupancy
from ccl_workloads import CCL_WORKLOADS
from dnn_workloads import DNN_WORKLOADS
from fft_workloads import FFT_WORKLOADS
from loop_workloads import LOOP_WORKLOADS
from prim_workloads import PRIM_WORKLOADS
from rand_workloads import RAND_WORKLOADS
from solver_workloads import SOLVER_WORKLOADS
from sparse_workloads import SPARSE_WORKLOADS
from transform_workloads import TRANSFORM_WORKLOADS
from workloads import CACHE_DIR_VARIABLE, LIBRARY_DIR_VARIABLE, WORKLOADS, Context

PEERS = ("cdnajit", "numpy", "jax")
# Pause before each peer runs: OpenBLAS's and XLA's worker threads spin for a while after a call
# (OpenBLAS about 0.1 s), and on two cores a spinning peer would take a core from the next one.
QUIET_SECONDS = 0.3
# The machines this runs on are shared: another tenant's burst of load can slow whichever peer is
# being timed for a second or two (seen here: one peer's median doubled in one run, not the next).
# Timing each peer in rounds that alternate with the others', and keeping the best round, lets a
# burst spoil a round rather than a result, for every peer alike.
ROUNDS = 3
# Every workload, the groups in their numbers' order (W11's loop programs and the libraries' workloads
# live in modules of their own).
ALL_WORKLOADS = tuple(sorted((*WORKLOADS, *LOOP_WORKLOADS, *DNN_WORKLOADS, *FFT_WORKLOADS, *PRIM_WORKLOADS,
                              *RAND_WORKLOADS, *SOLVER_WORKLOADS, *SPARSE_WORKLOADS, *TRANSFORM_WORKLOADS,
                              *CCL_WORKLOADS),
                             key=lambda w: int(w.group[1:])))


@dataclass(frozen=True)
class Settings:
    budget: float      # seconds of timed calls per measurement, roughly
    max_samples: int
    min_samples: int


FULL = Settings(budget=0.5 / ROUNDS, max_samples=50 // ROUNDS, min_samples=3)   # per round
QUICK = Settings(budget=0.05 / ROUNDS, max_samples=2, min_samples=1)


def import_jax():
    try:
        import jax
        import jax.numpy  # noqa: F401
    except ImportError:
        return None
    return jax


def median_seconds_per_call(call, setup, settings: Settings) -> tuple[float, int]:
    """(median seconds per call, samples taken). Without `setup`, a sample is a batch of calls
    long enough to dwarf the timer's overhead; with it, `setup` runs untimed before each call."""
    batch = 1
    if setup is None:
        start = time.perf_counter()
        call()
        single = time.perf_counter() - start
        # Fast calls are timed in batches, so that the cap of samples fills the budget.
        batch = max(1, math.ceil(settings.budget / settings.max_samples / max(single, 1e-9)))
    samples = []
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as timeit does: a collection inside one sample would skew it
    try:
        spent = 0.0
        while len(samples) < settings.min_samples or (spent < settings.budget and len(samples) < settings.max_samples):
            if setup is not None:
                setup()
            start = time.perf_counter()
            for _ in range(batch):
                call()
            elapsed = time.perf_counter() - start
            spent += elapsed
            samples.append(elapsed / batch)
    finally:
        if gc_was_enabled:
            gc.enable()
    return statistics.median(samples), len(samples)


def peer_call(peer: str, fn, inputs, jax):
    """A zero-argument call of `fn` on the inputs. cdnajit and JAX get them on their devices
    beforehand (`cj.device_put`: 64-byte aligned copies, as cdnajit allocates its own buffers;
    `jax.device_put`), and JAX's call, as it dispatches asynchronously, waits for the result."""
    if peer == "numpy":
        return lambda: fn(*inputs)
    if peer == "cdnajit":
        placed = cj.device_put(tuple(inputs))
        return lambda: fn(*placed)
    device_inputs = tuple(jax.device_put(x) for x in inputs)
    return lambda: jax.block_until_ready(fn(*device_inputs))


def check(result, reference, tolerance) -> dict:
    rtol, atol = tolerance
    result, reference = np.asarray(result), np.asarray(reference)
    if result.shape != reference.shape or result.dtype != reference.dtype:
        return {"ok": False, "reason": f"got {result.dtype}{list(result.shape)}, "
                                       f"expected {reference.dtype}{list(reference.shape)}"}
    wide = np.complex128 if result.dtype.kind == "c" else np.float64   # complex results: both parts
    error = np.abs(result.astype(wide) - reference.astype(wide))
    return {"ok": bool(np.allclose(result, reference, rtol=rtol, atol=atol, equal_nan=True)),
            "rtol": rtol, "atol": atol, "max_abs_error": float(np.max(error, initial=0.0))}


def run_workload(workload, ctx: Context, settings: Settings) -> dict:
    case = workload.build(ctx)
    record = {"description": workload.description,
              "inputs": [f"{x.dtype}{list(x.shape)}" for x in case.inputs],
              "seconds": {}, "round_seconds": {}, "samples": {}, "errors": {}, "checks": {}}
    outputs, calls = {}, {}
    for peer in PEERS:
        fn = getattr(case, peer)
        if fn is None:
            continue
        call = peer_call(peer, fn, case.inputs, ctx.jax)
        time.sleep(QUIET_SECONDS)
        try:
            if case.setup is not None:
                case.setup()
            outputs[peer] = call()  # warm-up: traces and compiles
        except Exception as error:  # a failing peer is reported, the other peers and workloads still run
            record["errors"][peer] = f"{type(error).__name__}: {error}"
            continue
        calls[peer] = call
    rounds = {peer: [] for peer in calls}
    for _ in range(ROUNDS):
        for peer, call in calls.items():
            if peer in record["errors"]:
                continue
            time.sleep(QUIET_SECONDS)
            try:
                rounds[peer].append(median_seconds_per_call(call, case.setup, settings))
            except Exception as error:
                record["errors"][peer] = f"{type(error).__name__}: {error}"
    for peer, measured in rounds.items():
        if peer not in record["errors"]:
            # Every round's median, in the order they ran (how far the host's load moved them); the
            # table's time is the fastest.
            record["round_seconds"][peer] = [seconds for seconds, _ in measured]
            record["seconds"][peer] = min(record["round_seconds"][peer])
            record["samples"][peer] = sum(samples for _, samples in measured)
    reference_fn = case.reference or case.numpy
    if case.tolerance is not None and reference_fn is not None:
        reference = reference_fn(*case.inputs)
        for peer in ("cdnajit", "jax"):
            if peer in outputs:
                record["checks"][peer] = check(outputs[peer], reference, case.tolerance)
    seconds = record["seconds"]
    record["ratios"] = {f"cdnajit_over_{peer}": seconds["cdnajit"] / seconds[peer]
                        for peer in ("numpy", "jax") if "cdnajit" in seconds and peer in seconds}
    if case.flops:
        record["gflops_per_second"] = {peer: case.flops / s / 1e9 for peer, s in seconds.items()}
    if case.note:
        record["note"] = case.note()
    return record


# ---- report

def format_time(seconds) -> str:
    if seconds is None:
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_ratio(ratio) -> str:
    """cdnajit's time over the peer's, and what it means in words."""
    if ratio is None:
        return "n/a"
    words = f"{1 / ratio:.2f}x faster" if ratio <= 1 else f"{ratio:.2f}x slower"
    return f"{ratio:.3g} ({words})"


def check_mark(record) -> str:
    if record["errors"]:
        return "ERROR"
    checks = record["checks"]
    if "cdnajit" not in checks:
        return "-"
    return "ok" if checks["cdnajit"]["ok"] else "MISMATCH"


def notes(record) -> str:
    gflops = record.get("gflops_per_second")
    if gflops:
        return "GFLOP/s " + " / ".join(f"{peer} {gflops[peer]:.1f}" for peer in PEERS if peer in gflops)
    return record.get("note", "")


def print_table(results: dict, jax_available: bool, quick: bool) -> None:
    header = ("workload", "cdnajit", "numpy", "jax", "cdnajit/numpy", "cdnajit/jax", "check", "notes")
    rows = [header]
    for name, record in results.items():
        seconds, ratios = record["seconds"], record["ratios"]
        rows.append((name, *(format_time(seconds.get(peer)) for peer in PEERS),
                     format_ratio(ratios.get("cdnajit_over_numpy")), format_ratio(ratios.get("cdnajit_over_jax")),
                     check_mark(record), notes(record)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * width for width in widths))
    print("\nTimes are medians per call. cdnajit/peer is cdnajit's time divided by the peer's: below 1 "
          "cdnajit is faster;\n'4.00x faster' means cdnajit takes a quarter of the peer's time."
          + ("\n--quick: smaller sizes than the descriptions say (the JSON lists the inputs)." if quick else "")
          + ("" if jax_available else "\nJAX is not importable: its columns say n/a (`make bench` installs it)."))
    for name, record in results.items():
        for peer, message in record["errors"].items():
            print(f"!!! {name}: {peer} FAILED: {message}")
        for peer, result in record["checks"].items():
            if not result["ok"]:
                print(f"!!! {name}: {peer} MISMATCHES numpy: {result}")


def gfx942_gemm_summary(size: int = 4096) -> dict:
    """The gfx942 kernel the heuristic picks for an f16 size^3 GEMM (f32 accumulate): its modelled
    efficiency against the MFMA f16 peak, and its resources from the AMDGPU backend (printed)."""
    target = get_target("gfx942")
    call = gemm_call(size, size, size, "f16", "f32")
    chosen = heuristic.select(GemmProblem.from_op(call), target)
    kernel = gemm_kernel(call, chosen.solution, f"gemm_f16_{size}")
    resources = amdgpu.resources(kernel, target)
    waves = occupancy(target, vgprs=resources.allocated_vgprs, sgprs=resources.sgpr_count, lds_bytes=resources.lds_bytes,
                      workgroup_items=kernel.workgroup_items).waves_per_simd
    uses_mfma = "v_mfma" in amdgpu.assembly(kernel, target)
    peak = target.peak("f16", "matrix")
    summary = {"solution": chosen.solution.name, "modelled_efficiency": chosen.estimate.efficiency,
               "modelled_us": chosen.estimate.seconds * 1e6, "peak_tflops": peak / 1e12,
               "vgprs": resources.vgpr_count, "agprs": resources.agpr_count, "spills": resources.vgpr_spill_count,
               "lds_bytes": resources.lds_bytes, "waves_per_simd": waves, "uses_mfma": uses_mfma}
    print(f"\ngfx942 f16 {size}^3 GEMM (f32 accumulate): {chosen.solution.name}, modelled "
          f"{chosen.estimate.efficiency:.0%} of {peak / 1e12:.0f} TFLOP/s ({chosen.estimate.seconds * 1e6:.0f} us); "
          f"{resources.vgpr_count} VGPRs + {resources.agpr_count} AGPRs, {resources.vgpr_spill_count} spills, "
          f"{resources.lds_bytes} B LDS, {waves:g} waves/SIMD, v_mfma {'present' if uses_mfma else 'MISSING'}")
    return summary


def jit_default_backend():
    """What `cj.jit` runs on by default (the numbers of the interpreter and of compiled code differ)."""
    parameter = inspect.signature(cj.jit).parameters.get("backend")
    return None if parameter is None else parameter.default


def machine_info(jax) -> dict:
    cpu_model = platform.processor()
    if Path("/proc/cpuinfo").exists():
        models = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")]
        cpu_model = models[0] if models else cpu_model
    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "cpu": cpu_model,
        "cpu_count": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "versions": {"cdnajit": cj.__version__, "numpy": np.__version__, "llvmlite": llvmlite.__version__,
                     "jax": jax.__version__ if jax else None, "jaxlib": importlib.metadata.version("jaxlib") if jax else None},
        "cdnajit_jit_backend": jit_default_backend(),
        "numpy_blas": f"{blas.get('name', '?')} {blas.get('version', '')}".strip(),
    }


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated workloads or groups, e.g. W1,W4 or W4.2048")
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repetitions (smoke test)")
    parser.add_argument("--json", type=Path, default=Path(__file__).with_name("results.json"),
                        help="where to write the results (default: %(default)s)")
    return parser.parse_args()


def select(only: str | None):
    if only is None:
        return ALL_WORKLOADS
    wanted = {name.strip() for name in only.split(",") if name.strip()}
    known = {w.name for w in ALL_WORKLOADS} | {w.group for w in ALL_WORKLOADS}
    if unknown := wanted - known:
        sys.exit(f"unknown workload(s) {', '.join(sorted(unknown))}; known: {', '.join(w.name for w in ALL_WORKLOADS)}")
    return tuple(w for w in ALL_WORKLOADS if w.name in wanted or w.group in wanted)


def main() -> int:
    arguments = parse_arguments()
    workloads = select(arguments.only)
    settings = QUICK if arguments.quick else FULL
    jax = import_jax()
    saved = {name: os.environ.get(name) for name in (CACHE_DIR_VARIABLE, LIBRARY_DIR_VARIABLE)}
    results = {}
    try:
        with tempfile.TemporaryDirectory(prefix="cdnajit-bench-") as scratch:
            ctx = Context(quick=arguments.quick, jax=jax, scratch=Path(scratch))
            for workload in workloads:
                print(f"{workload.name}: {workload.description} ...", file=sys.stderr, flush=True)
                results[workload.name] = run_workload(workload, ctx, settings)
    finally:  # the compile workloads point the cache and the library's kernels elsewhere
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    print_table(results, jax is not None, arguments.quick)
    report = {"machine": machine_info(jax), "settings": {"quick": arguments.quick, **vars(settings)},
              "workloads": results}
    if any(w.group == "W4" for w in workloads):
        report["gfx942_f16_gemm"] = gfx942_gemm_summary()
    arguments.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {arguments.json}")
    failed = any(check_mark(record) in ("ERROR", "MISMATCH") for record in results.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
