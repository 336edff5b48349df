"""The HTML report of a compiled program: one self-contained page (inline CSS and SVG, no scripts,
no external resources) with the kernel table, the fused graph and a roofline chart.

    save(program_report, "report.html")      # what `Compiled.save_report(path)` does

The roofline chart is log-log: arithmetic intensity (FLOP per DRAM byte) across, FLOP/s up. The
target's memory roof is the line FLOP/s = HBM bandwidth x intensity; each distinct peak of
ir/targets.py (one line for the dtypes and units that share it) is a compute roof from its ridge
point on. Each kernel is a point at its intensity and its attained FLOP/s in the time of the
performance model (runtime/perf_model.py): on the roof that bounds it when the model finds
nothing else limiting it, below it by its efficiency (roofline time / modelled time) otherwise. A kernel without FLOPs or without
DRAM bytes has no place on log axes and is listed under the chart instead.
"""
from __future__ import annotations

import math
import os
from html import escape

from ..ir.targets import Target
from . import graphviz
from .report import COLUMNS, LEFT_ALIGNED, KernelReport, ProgramReport, si

KIND_POINT_COLORS = {"fused": "#0d6efd", "library": "#198754", "generated": "#fd7e14"}

STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; } h3 { font-size: 13px; }
table.kernels { border-collapse: collapse; font-size: 12px; font-family: monospace; }
table.kernels th, table.kernels td { border: 1px solid #ccc; padding: 3px 6px; white-space: nowrap; }
table.kernels th { background: #f0f0f0; } td.num { text-align: right; }
.summary td { padding: 2px 12px 2px 0; }
.figure { overflow-x: auto; border: 1px solid #ddd; padding: 8px; display: inline-block; max-width: 100%; }
pre { background: #f7f7f7; padding: 8px; font-size: 12px; }
.scroll { overflow-x: auto; }
"""

# The chart's plot area, in pixels.
PLOT_LEFT, PLOT_TOP, PLOT_WIDTH, PLOT_HEIGHT, LABEL_ROOM, AXIS_ROOM = 80, 20, 560, 380, 230, 50


def decades(low: float, high: float) -> tuple[int, int]:
    """The powers of ten that bracket [low, high]."""
    return math.floor(math.log10(low)), math.ceil(math.log10(high))


def compute_roofs(target: Target) -> list[tuple[float, str]]:
    """(peak FLOP/s, the dtypes and units that have it), one per distinct peak, lowest first."""
    names: dict[float, list[str]] = {}
    for (dtype, unit), peak in target.peak_flops.items():
        names.setdefault(peak, []).append(f"{dtype} {unit}")
    return [(peak, ", ".join(names[peak])) for peak in sorted(names)]


def plotted(report: KernelReport) -> bool:
    return report.flops > 0 and report.bytes > 0 and report.modelled_us > 0


def roofline_svg(target: Target, reports: list[KernelReport]) -> str:
    """The log-log roofline chart of `reports` on `target`, as an <svg> element."""
    roofs = compute_roofs(target)
    bandwidth = target.hbm_bandwidth
    points = [r for r in reports if plotted(r)]
    intensities = [r.intensity for r in points] + [roofs[0][0] / bandwidth, roofs[-1][0] / bandwidth]
    x_low, x_high = decades(min(intensities) / 4, max(intensities) * 8)
    flops = [r.attained_flops_per_second for r in points] + [bandwidth * 10.0 ** x_low, roofs[-1][0]]
    y_low, y_high = decades(min(flops) / 2, max(flops) * 2)

    def x(intensity):
        return PLOT_LEFT + (math.log10(intensity) - x_low) / (x_high - x_low) * PLOT_WIDTH

    def y(flop_rate):
        return PLOT_TOP + (y_high - math.log10(flop_rate)) / (y_high - y_low) * PLOT_HEIGHT

    width, height = PLOT_LEFT + PLOT_WIDTH + LABEL_ROOM, PLOT_TOP + PLOT_HEIGHT + AXIS_ROOM
    right, bottom = PLOT_LEFT + PLOT_WIDTH, PLOT_TOP + PLOT_HEIGHT
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="roofline" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
             f'<rect x="{PLOT_LEFT}" y="{PLOT_TOP}" width="{PLOT_WIDTH}" height="{PLOT_HEIGHT}" fill="#fff" '
             f'stroke="#999"/>']
    for k in range(x_low, x_high + 1):   # decade grid lines and tick labels
        parts.append(f'<line x1="{x(10.0 ** k):.1f}" y1="{PLOT_TOP}" x2="{x(10.0 ** k):.1f}" y2="{bottom}" '
                     f'stroke="#eee"/><text x="{x(10.0 ** k):.1f}" y="{bottom + 15}" text-anchor="middle">'
                     f'{10.0 ** k:g}</text>')
    for k in range(y_low, y_high + 1):
        parts.append(f'<line x1="{PLOT_LEFT}" y1="{y(10.0 ** k):.1f}" x2="{right}" y2="{y(10.0 ** k):.1f}" '
                     f'stroke="#eee"/><text x="{PLOT_LEFT - 6}" y="{y(10.0 ** k) + 4:.1f}" text-anchor="end">'
                     f'{si(10.0 ** k)}</text>')
    parts.append(f'<text x="{PLOT_LEFT + PLOT_WIDTH / 2}" y="{height - 8}" text-anchor="middle">'
                 f'arithmetic intensity (FLOP / DRAM byte)</text>')
    parts.append(f'<text transform="translate(14 {PLOT_TOP + PLOT_HEIGHT / 2}) rotate(-90)" '
                 f'text-anchor="middle">FLOP/s</text>')
    top_peak = roofs[-1][0]
    x_min = 10.0 ** x_low
    parts.append(f'<line class="memory-roof" x1="{x(x_min):.1f}" y1="{y(bandwidth * x_min):.1f}" '
                 f'x2="{x(top_peak / bandwidth):.1f}" y2="{y(top_peak):.1f}" stroke="#c00" stroke-width="2"/>')
    label_at = 2 * x_min   # the memory roof's label, near its low end
    parts.append(f'<text x="{x(label_at):.1f}" y="{y(bandwidth * label_at) - 8:.1f}" fill="#c00">'
                 f'HBM {si(bandwidth, "B/s")}</text>')
    for peak, names in roofs:
        parts.append(f'<line class="compute-roof" x1="{x(peak / bandwidth):.1f}" y1="{y(peak):.1f}" '
                     f'x2="{right}" y2="{y(peak):.1f}" stroke="#333" stroke-width="2"/>'
                     f'<text x="{right + 6}" y="{y(peak) + 4:.1f}">{escape(si(peak, "FLOP/s"))} '
                     f'<tspan font-size="9">{escape(names)}</tspan></text>')
    for r in points:
        cx, cy = x(r.intensity), y(r.attained_flops_per_second)
        parts.append(f'<g class="kernel-point"><title>{escape(r.name)}: {r.intensity:.3g} FLOP/B, '
                     f'{escape(si(r.attained_flops_per_second, "FLOP/s"))}, {r.bound}-bound</title>'
                     f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="{KIND_POINT_COLORS[r.kind]}" '
                     f'stroke="#000"/><text x="{cx + 8:.1f}" y="{cy + 14:.1f}">{escape(r.name)}</text></g>')
    parts.append("</svg>")
    return "\n".join(parts)


def kernel_table(reports: list[KernelReport]) -> str:
    head = "".join(f"<th>{escape(header)}</th>" for header, _ in COLUMNS)
    rows = []
    for r in reports:
        cells = "".join(f'<td{"" if header in LEFT_ALIGNED else " class=num"}>{escape(cell(r))}</td>'
                        for header, cell in COLUMNS)
        rows.append(f'<tr title="{escape(" ".join(r.source_ops))}">{cells}</tr>')
    return f'<table class="kernels"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def summary(program: ProgramReport) -> str:
    t, cost = program.target, program.cost_analysis()
    rows = [("target", f"{t.name}: {t.product} ({t.architecture}), {t.compute_units} CUs, "
                       f"{si(t.hbm_bandwidth, 'B/s')} HBM, {t.lds_bytes_per_cu // 1024} KiB LDS per CU"),
            ("work", f"{si(cost['flops'])}FLOP ({si(cost['transcendentals'])} transcendental), "
                     f"{si(cost['bytes accessed'], 'B')} of DRAM traffic"),
            ("modelled time", f"{cost['modelled_us']:.3g} us (kernels one after another, each once)")]
    if "host_seconds" in cost:
        rows.append(("host time", f"{cost['host_seconds'] * 1e6:.1f} us in the profiled call"))
    body = "".join(f"<tr><td><b>{escape(k)}</b></td><td>{escape(v)}</td></tr>" for k, v in rows)
    return f'<table class="summary">{body}</table>'


def tiling_section(program: ProgramReport) -> str:
    texts = [(kernel.name, program.tiling(op)) for kernel, op in zip(program.executable.kernels, program.ops)]
    items = "".join(f"<h3>{escape(name)}</h3><pre>{escape(text)}</pre>" for name, text in texts if text)
    return f"<h2>Tiling</h2>{items}" if items else ""


def render(program: ProgramReport) -> str:
    """The whole page, as text."""
    reports = program.kernels
    off_chart = [r.name for r in reports if not plotted(r)]
    note = (f"<p>Not on the chart (no FLOPs or no DRAM bytes): {escape(', '.join(off_chart))}</p>"
            if off_chart else "")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(program.title())}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(program.title())}</h1>", summary(program),
        "<h2>Kernels</h2>", f'<div class="scroll">{kernel_table(reports)}</div>',
        "<h2>Fused graph</h2>", f'<div class="figure">{graphviz.to_svg(program.fused_graph())}</div>',
        "<h2>Roofline</h2>", f'<div class="figure">{roofline_svg(program.target, reports)}</div>', note,
        tiling_section(program), "</body></html>"]) + "\n"


def save(program: ProgramReport, path: str | os.PathLike) -> None:
    with open(path, "w", encoding="utf-8") as file:
        file.write(render(program))
