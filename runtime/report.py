"""Kernel reports: one `KernelReport` per kernel of a compiled program, on one AMDGPU target.

A report puts together what the backend says about the kernel's gfx9 code (registers, spills,
LDS, scratch: codegen/amdgpu_metadata.py), the occupancy those resources allow
(runtime/occupancy.py), the kernel's roofline (runtime/roofline.py) and its performance model
(runtime/perf_model.py: `modelled_us`, the `limiter` and `findings` in words, such as
"grid of 1 workgroup uses 1 of 304 CUs"). The host time is filled
in once the kernel has run under `Compiled.profile` (`host_time_us`, None until then).

    report = kernel_report(kernel, "gfx942", source_ops=("exp", "add"), kind="fused")
    report.occupancy, report.occupancy_limiter, report.bound, report.modelled_us, report.findings

`ProgramReport` does the same for a whole executable (runtime/executable.py) and is what
`Compiled.kernels`, `.report()`, `.as_text(stage)`, `.cost_analysis()`, `.code_object(name)` and
the dumps read. Everything on the AMDGPU side is computed on first use: compiling and running a
program never pays for it.
"""
from __future__ import annotations

import dataclasses
import os
import re
from collections import Counter
from dataclasses import asdict, dataclass
from functools import cached_property

from ..codegen import amdgpu
from ..codegen.host import optimized_llvm_ir
from ..ir.core import Op
from ..ir.kernel import Kernel
from ..ir.ops.library import LIBRARIES
from ..ir.targets import Target
from ..lowering.tiling import launch_config
from . import graphviz
from .executable import kernel_name
from .occupancy import occupancy
from .perf_model import model
from .roofline import count, roofline
from .schedule import launch_text, launches_per_call, schedule_text

KINDS = ("fused", "library", "generated")
STAGES = ("graph", "optimized", "schedule", "kernel", "llvm-host", "llvm-amdgpu", "asm")


@dataclass
class KernelReport:
    name: str
    source_ops: tuple[str, ...]      # the graph ops the kernel computes
    kind: str                        # one of KINDS
    target: str
    grid: tuple[int, int, int]
    workgroup_size: tuple[int, int, int]
    lds_bytes: int                   # group segment, as the backend allocated it
    vgpr_count: int                  # unified (arch + acc) VGPRs per work-item the code uses
    vgpr_allocated: int              # VGPRs the kernel descriptor allocates: what the occupancy depends on
    agpr_count: int
    sgpr_count: int
    vgpr_spills: int
    sgpr_spills: int
    scratch_bytes: int               # private segment per work-item
    occupancy: float                 # waves per SIMD
    occupancy_limiter: str           # runtime.occupancy.LIMITERS
    flops: float
    transcendentals: float
    bytes: float                     # DRAM bytes of the roofline model
    intensity: float                 # FLOPs per byte
    bound: str                       # "memory" or "compute"
    compute_unit: str                # e.g. "vector f32"
    roofline_us: float               # max(FLOPs / peak, bytes / HBM bandwidth): the least time possible
    modelled_us: float               # the performance model's time (runtime/perf_model.py)
    limiter: str                     # the model's largest term: runtime.perf_model.TERMS
    findings: tuple[str, ...]        # the model's reasons in words, the limiter first
    efficiency: float                # roofline_us / modelled_us: the fraction of the roofline reached
    counts_exact: bool               # False when data-dependent control flow made FLOPs/bytes bounds
    host_time_us: float | None = None   # mean host time of one launch, once profiled
    launches: int | None = None         # launches in the profiled call (several in a host loop)
    launches_per_call: str = "1"        # from the schedule: a count, "at most" one, or "per iteration"
    solution: str = ""                  # library kernels: the solution that ran (Tensile's name)
    selection: str = ""                 # and why it was picked (tuned, heuristic or named)

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def explanation(self) -> str:
        return "; ".join(self.findings)

    @property
    def attained_flops_per_second(self) -> float:
        """FLOP/s if the kernel ran in its modelled time: its height on the roofline chart."""
        return self.flops / (self.modelled_us * 1e-6) if self.modelled_us else 0.0


def kernel_report(kernel: Kernel, target: Target | str | None = None, *, source_ops=(), kind: str = "generated"
                  ) -> KernelReport:
    """Compile `kernel` for `target` (default gfx942) and report its resources, occupancy and roofline."""
    if kind not in KINDS:
        raise ValueError(f"kernel kind {kind!r}; expected one of {', '.join(KINDS)}")
    target = amdgpu.resolve_target(target)
    resources = amdgpu.resources(kernel, target)
    occupied = kernel_occupancy(target, resources, kernel.workgroup_items)
    counts = count(kernel)
    roof = roofline(kernel, target, counts)
    perf = model(kernel, target, counts, occupied)
    return KernelReport(
        name=kernel.name, source_ops=tuple(source_ops), kind=kind, target=target.name, grid=kernel.launch_grid(),
        workgroup_size=kernel.workgroup_size, lds_bytes=resources.lds_bytes, vgpr_count=resources.vgpr_count,
        vgpr_allocated=resources.allocated_vgprs,
        agpr_count=resources.agpr_count, sgpr_count=resources.sgpr_count, vgpr_spills=resources.vgpr_spill_count,
        sgpr_spills=resources.sgpr_spill_count, scratch_bytes=resources.scratch_bytes,
        occupancy=occupied.waves_per_simd, occupancy_limiter=occupied.limiter, flops=roof.flops,
        transcendentals=roof.transcendentals, bytes=roof.bytes, intensity=roof.intensity, bound=roof.bound,
        compute_unit=roof.compute_unit, roofline_us=roof.modelled_us, modelled_us=perf.modelled_us,
        limiter=perf.limiter, findings=perf.findings,
        efficiency=roof.modelled_us / perf.modelled_us if perf.modelled_us else 0.0, counts_exact=roof.exact)


def kernel_occupancy(target: Target, resources, workgroup_items: int):
    """The occupancy of the registers the kernel descriptor allocates. When the backend allocated
    more than the code uses without costing waves (it raises the allocation up to what another
    limit, the LDS, leaves), the limiter is that of the registers used: the cause, not the echo."""
    def of(vgprs):
        return occupancy(target, vgprs=vgprs, sgprs=resources.sgpr_count, lds_bytes=resources.lds_bytes,
                         workgroup_items=workgroup_items)
    allocated, used = of(resources.allocated_vgprs), of(resources.vgpr_count)
    return used if used.waves_per_simd == allocated.waves_per_simd else allocated


def total_modelled_us(reports) -> float:
    """The whole program's modelled time: its kernels run one after another, each once."""
    return sum(r.modelled_us for r in reports)


# ---- where a kernel came from ---------------------------------------------------------------

def kernel_kind(op: Op) -> str:
    if op.name == "fusion":
        return "fused"
    return "library" if op.name == "library_call" else "generated"


def source_ops(op: Op) -> tuple[str, ...]:
    """The graph ops a kernel op computes: a fusion's region ops, a library call's routine, else the op."""
    if op.name == "fusion":
        return tuple(inner.name for inner in op.regions[0].ops)
    if op.name == "library_call" and "library" in op.attrs and "routine" in op.attrs:
        return (f"{op.attrs['library']}.{op.attrs['routine']}",)
    return (op.name,)


def summarize_ops(names) -> str:
    """`reduce x2, sub, exp`: each op once, in first-use order, with its count when repeated."""
    counts = Counter(names)
    return ", ".join(name if counts[name] == 1 else f"{name} x{counts[name]}" for name in dict.fromkeys(names))


# ---- the kernel table -----------------------------------------------------------------------

def si(value: float, unit: str = "") -> str:
    """A count with an SI prefix: 8.85 M, 2.10 MB."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}".rstrip()


def host_text(report: KernelReport) -> str:
    """The mean host time of a launch, and the launches when the kernel ran more than once."""
    if report.host_time_us is None:
        return "-"
    return f"{report.host_time_us:.1f}" + (f" (x{report.launches})" if report.launches != 1 else "")


# (header, text of a report's cell): the kernel table of `report()` and of the HTML page.
COLUMNS = (
    ("kernel", lambda r: r.name),
    ("kind", lambda r: r.kind),
    ("grid", lambda r: launch_text(r.grid)),
    ("workgroup", lambda r: launch_text(r.workgroup_size)),
    ("LDS B", lambda r: str(r.lds_bytes)),
    ("VGPR", lambda r: str(r.vgpr_count) + ("" if r.vgpr_allocated == r.vgpr_count else f" ({r.vgpr_allocated})")),
    ("AGPR", lambda r: str(r.agpr_count)),
    ("SGPR", lambda r: str(r.sgpr_count)),
    ("spills", lambda r: f"{r.vgpr_spills}/{r.sgpr_spills}"),
    ("scratch B", lambda r: str(r.scratch_bytes)),
    ("waves/SIMD", lambda r: f"{r.occupancy:g} ({r.occupancy_limiter})"),
    ("FLOPs", lambda r: ("" if r.counts_exact else "<= ") + si(r.flops)),
    ("bytes", lambda r: si(r.bytes, "B")),
    ("FLOP/B", lambda r: f"{r.intensity:.3g}"),
    ("bound", lambda r: r.bound if r.bound == "memory" else f"compute ({r.compute_unit})"),
    ("roof us", lambda r: f"{r.roofline_us:.3g}"),
    ("model us", lambda r: f"{r.modelled_us:.3g}"),
    ("limiter", lambda r: f"{r.limiter} ({r.efficiency:.0%})"),
    ("launches", lambda r: r.launches_per_call),
    ("host us", lambda r: host_text(r)),
    ("source ops", lambda r: summarize_ops(r.source_ops)),
)
LEFT_ALIGNED = frozenset({"kernel", "kind", "bound", "limiter", "source ops"})


def format_table(reports) -> str:
    """The reports as an aligned text table, one kernel a line."""
    rows = [[header for header, _ in COLUMNS]] + [[cell(r) for _, cell in COLUMNS] for r in reports]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = []
    for row in rows:
        cells = [text.ljust(width) if header in LEFT_ALIGNED else text.rjust(width)
                 for (header, _), text, width in zip(COLUMNS, row, widths)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def kernel_text(report: KernelReport, tiling: str | None = None) -> str:
    """One kernel's report as `field: value` lines (what the dumps write), and its tiling."""
    lines = [f"{key}: {value}" for key, value in report.as_dict().items()]
    if tiling:
        lines += ["tiling:", *("  " + line for line in tiling.splitlines())]
    return "\n".join(lines) + "\n"


# ---- a whole program --------------------------------------------------------------------------

class ProgramReport:
    """The reports, texts and code objects of one executable on its target, computed on first use."""

    def __init__(self, executable):
        self.executable = executable
        self.target: Target = executable.target
        self.name: str = executable.plan["name"]
        self.profile: list[tuple[int, float]] | None = None   # (launches, seconds) per kernel, once profiled

    @cached_property
    def ops(self) -> list[Op]:
        return self.executable.kernel_ops

    @cached_property
    def kernel_reports(self) -> list[KernelReport]:
        reports = []
        launches = launches_per_call(self.executable.optimized)
        for kernel, op, count in zip(self.executable.kernels, self.ops, launches):
            report = kernel_report(kernel, self.target, source_ops=source_ops(op), kind=kernel_kind(op))
            report = dataclasses.replace(report, launches_per_call=count)
            explain = LIBRARIES[op.attrs["library"]].explain if op.name == "library_call" else None
            if explain is not None:
                solution, reason = explain(op, self.target)
                report = dataclasses.replace(report, solution=solution, selection=reason)
            reports.append(report)
        return reports

    @property
    def kernels(self) -> list[KernelReport]:
        """One report per kernel, in schedule order, with host times once a call was profiled."""
        if self.profile is None:
            return list(self.kernel_reports)
        return [dataclasses.replace(r, launches=launches, host_time_us=seconds / launches * 1e6 if launches else None)
                for r, (launches, seconds) in zip(self.kernel_reports, self.profile)]

    def amdgpu(self, kernel: Kernel) -> amdgpu.AmdgpuKernel:
        return amdgpu.compile_kernel(kernel, self.target)

    def title(self) -> str:
        t = self.target
        count = len(self.executable.kernels)
        return f"{self.name} on {t.name} ({t.product}, {t.architecture}): {count} kernel{'s' * (count != 1)}"

    def table(self) -> str:
        """The title, the kernel table and the totals."""
        reports = self.kernels
        cost = self.cost_analysis()
        total = (f"total: {si(cost['flops'])}FLOP, {si(cost['bytes accessed'], 'B')} moved, "
                 f"modelled {cost['modelled_us']:.3g} us")
        if self.profile is not None:
            total += f", host {cost['host_seconds'] * 1e6:.1f} us"
        solutions = [f"{r.name}: {r.solution} ({r.selection})" for r in reports if r.solution]
        lines = [self.title(), "", format_table(reports), "", "limiters:",
                 *(f"  {r.name}: {r.explanation}" for r in reports), "", total]
        if solutions:
            lines += ["", "library solutions:", *("  " + line for line in solutions)]
        return "\n".join(lines) + "\n"

    def cost_analysis(self) -> dict:
        """Totals in the manner of JAX's `Compiled.cost_analysis()`, over kernels run once each."""
        reports = self.kernels
        modelled_us = total_modelled_us(reports)
        cost = {"flops": sum(r.flops for r in reports), "transcendentals": sum(r.transcendentals for r in reports),
                "bytes accessed": sum(r.bytes for r in reports), "optimal_seconds": modelled_us * 1e-6,
                "modelled_us": modelled_us, "kernels": len(reports), "target": self.target.name,
                "counts_exact": all(r.counts_exact for r in reports)}
        if self.profile is not None:
            cost["host_seconds"] = sum(seconds for _, seconds in self.profile)
        return cost

    def kernel_named(self, name: str) -> Kernel:
        for kernel in self.executable.kernels:
            if kernel.name == name:
                return kernel
        names = ", ".join(k.name for k in self.executable.kernels) or "none"
        raise KeyError(f"no kernel named {name!r}; the kernels are: {names}")

    def code_object(self, name: str) -> bytes:
        """The linked HSA code object of kernel `name` (what hipModuleLoadData loads)."""
        return self.amdgpu(self.kernel_named(name)).code_object

    def stage_text(self, stage: str) -> str:
        """The program at one of STAGES; the per-kernel stages head each kernel with its name."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")
        if stage == "graph":
            return str(self.executable.graph)
        if stage == "optimized":
            return str(self.executable.optimized)
        if stage == "schedule":
            return schedule_text(self.executable)
        kernels = self.executable.kernels
        if stage == "kernel":
            return "\n\n".join(map(str, kernels))
        texts = {"llvm-host": optimized_llvm_ir,
                 "llvm-amdgpu": lambda kernel: self.amdgpu(kernel).llvm_ir,
                 "asm": lambda kernel: self.amdgpu(kernel).assembly}[stage]
        return "\n".join(f"; ==== {kernel.name} ====\n{texts(kernel)}" for kernel in kernels)

    def tiling(self, op: Op) -> str | None:
        return launch_config(op, self.target).describe() if op.name == "fusion" else None

    def fused_graph(self):
        """The optimized module as a networkx graph, kernels labelled (runtime/graphviz.py)."""
        module = self.executable.optimized
        labels = {id(op): graphviz.KernelLabel(kernel_name(module, i), kernel_kind(op), summarize_ops(source_ops(op)))
                  for i, op in enumerate(self.ops)}
        return graphviz.module_graph(module, labels)

    def write_dumps(self, folder: str) -> list[str]:
        """Write each kernel's `.s`, `.hsaco` and report, the kernel table and the fused graph as
        Graphviz DOT into `folder`; the paths written."""
        os.makedirs(folder, exist_ok=True)
        written = []

        def write(filename: str, data: str | bytes) -> None:
            path = os.path.join(folder, re.sub(r"[^\w.-]", "_", filename))
            with open(path, "wb" if isinstance(data, bytes) else "w") as file:
                file.write(data)
            written.append(path)

        for kernel, op, report in zip(self.executable.kernels, self.ops, self.kernels):
            compiled = self.amdgpu(kernel)
            write(f"{kernel.name}.{self.target.name}.s", compiled.assembly)
            write(f"{kernel.name}.{self.target.name}.hsaco", compiled.code_object)
            write(f"{kernel.name}.report.txt", kernel_text(report, self.tiling(op)))
        write(f"{self.name}.report.txt", self.table())
        write(f"{self.name}.fused.dot", graphviz.to_dot(self.fused_graph(), self.name))
        return written
