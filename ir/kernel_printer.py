"""The kernel IR's text form: readable, one statement a line, and complete (the runtime keys its
compile cache on it, so two kernels that print alike compile alike).

    kernel exp(x: global f32[1000] readonly, y: global f32[1000])
        grid [16, 1, 1] workgroup [64, 1, 1] wave 64 lds 0 bytes
    {
      let i: i32 = ((workgroup_id(0) * 64) + workitem_id(0))
      if (i < 1000) {
        y[i] = exp(x[i])
      }
    }

Binary expressions print fully parenthesised; constants print bare when they are i32 integers or
f32 floats and as `1.5:f64`, `True:bool`, `7:u8` otherwise; casts print as `f32(x)`.
"""
from __future__ import annotations

from .kernel import (Assign, AtomicRMW, Barrier, Binary, Bitcast, Cast, Compare, Const, Expr, For, ForSpan,
                     GlobalBuffer, If, Kernel, Let, Load, Math, Prefetch, ScalarParam, Select, SpanOffset, Special,
                     Stmt, Store, Unary, Var, WaveBallot, WaveCountBelow, WaveMatchRank, WaveMove, WaveReduce,
                     WaveShuffle, While)

BINARY_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%", "and": "&", "or": "|", "xor": "^",
                  "shift_left": "<<", "shift_right_arithmetic": ">>", "shift_right_logical": ">>>",
                  "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def print_expr(expr: Expr) -> str:
    if isinstance(expr, Const):
        bare = (expr.dtype == "i32" and isinstance(expr.value, int)) or \
            (expr.dtype == "f32" and isinstance(expr.value, float))
        return repr(expr.value) if bare else f"{expr.value!r}:{expr.dtype}"
    if isinstance(expr, (Var, ScalarParam)):
        return expr.name
    if isinstance(expr, Unary):
        return f"{'-' if expr.op == 'neg' else '~'}{print_expr(expr.x)}"
    if isinstance(expr, (Binary, Compare)):
        if expr.op in BINARY_SYMBOLS:
            return f"({print_expr(expr.a)} {BINARY_SYMBOLS[expr.op]} {print_expr(expr.b)})"
        return f"{expr.op}({print_expr(expr.a)}, {print_expr(expr.b)})"
    if isinstance(expr, Select):
        return f"select({print_expr(expr.cond)}, {print_expr(expr.on_true)}, {print_expr(expr.on_false)})"
    if isinstance(expr, Cast):
        return f"{expr.dtype}({print_expr(expr.x)})"
    if isinstance(expr, Bitcast):
        return f"bitcast_{expr.dtype}({print_expr(expr.x)})"
    if isinstance(expr, Math):
        return f"{expr.fn}({', '.join(print_expr(a) for a in expr.args)})"
    if isinstance(expr, Load):
        return f"{expr.buffer.name}[{print_expr(expr.index)}]"
    if isinstance(expr, Special):
        return f"{expr.kind}({expr.dim})"
    if isinstance(expr, SpanOffset):
        part = "" if expr.part == "offset" else f", {expr.part}"
        return f"span_offset_{expr.dtype}({expr.per_item}, {expr.k}{part})"
    return f"<unprintable {type(expr).__name__}>"


def statement_head(stmt: Stmt) -> str:
    """The first line of a statement, without indentation (also used in verifier messages)."""
    if isinstance(stmt, Let):
        return f"let {stmt.var.name}: {stmt.var.dtype} = {print_expr(stmt.value)}"
    if isinstance(stmt, Assign):
        return f"{stmt.var.name} = {print_expr(stmt.value)}"
    if isinstance(stmt, Store):
        return f"{stmt.buffer.name}[{print_expr(stmt.index)}] = {print_expr(stmt.value)}"
    if isinstance(stmt, For):
        uniform = "uniform " if stmt.uniform else ""
        expected = f" expecting {print_expr(stmt.expected_trips)} trips" if stmt.expected_trips is not None else ""
        return (f"for {uniform}{stmt.var.name}: {stmt.var.dtype} in range({print_expr(stmt.start)}, "
                f"{print_expr(stmt.stop)}, {print_expr(stmt.step)}){expected} {{")
    if isinstance(stmt, ForSpan):
        stop = f" until {print_expr(stmt.stop)}" if stmt.stop is not None else ""
        return (f"for span {stmt.var.name}: {stmt.var.dtype} in {stmt.per_item} per work-item from "
                f"{print_expr(stmt.start)}{stop} {{")
    if isinstance(stmt, If):
        marks = ("uniform " if stmt.uniform else "") + ("alongside " if stmt.alongside else "")
        return f"if {marks}{print_expr(stmt.cond)} {{"
    if isinstance(stmt, AtomicRMW):
        return (f"let {stmt.var.name}: {stmt.var.dtype} = atomic_{stmt.op}{'_relaxed' * stmt.relaxed}("
                f"{stmt.buffer.name}[{print_expr(stmt.index)}], {print_expr(stmt.value)})")
    if isinstance(stmt, While):
        return f"while {print_expr(stmt.cond)} {{"
    if isinstance(stmt, Barrier):
        return "barrier"
    if isinstance(stmt, Prefetch):
        return (f"prefetch {stmt.buffer.name}[{print_expr(stmt.start)}]: {stmt.runs} runs of "
                f"{stmt.run_elements}, stride {print_expr(stmt.run_stride)}")
    if isinstance(stmt, WaveReduce):
        return f"let {stmt.dest.name}: {stmt.dest.dtype} = wave_reduce.{stmt.op}({print_expr(stmt.value)})"
    if isinstance(stmt, WaveShuffle):
        return (f"let {stmt.dest.name}: {stmt.dest.dtype} = "
                f"wave_shuffle({print_expr(stmt.value)}, {print_expr(stmt.src_lane)})")
    if isinstance(stmt, WaveMove):
        return f"let {stmt.dest.name}: {stmt.dest.dtype} = wave_move.{stmt.pattern}({print_expr(stmt.value)})"
    if isinstance(stmt, WaveBallot):
        return f"let {stmt.dest.name}: {stmt.dest.dtype} = wave_ballot({print_expr(stmt.predicate)})"
    if isinstance(stmt, WaveCountBelow):
        return f"let {stmt.dest.name}: {stmt.dest.dtype} = wave_count_below({print_expr(stmt.mask)})"
    if isinstance(stmt, WaveMatchRank):
        return (f"let {stmt.rank.name}: {stmt.rank.dtype}, {stmt.last.name}: {stmt.last.dtype} = "
                f"wave_match_rank({print_expr(stmt.value)}, bits={stmt.bits})")
    return f"<{type(stmt).__name__}: {stmt!r}>"


def print_block(stmts, indent: int, lines: list[str]) -> None:
    pad = "  " * indent
    for stmt in stmts:
        lines.append(pad + statement_head(stmt))
        if isinstance(stmt, (For, ForSpan, While)):
            print_block(stmt.body, indent + 1, lines)
            lines.append(pad + "}")
        elif isinstance(stmt, If):
            print_block(stmt.then, indent + 1, lines)
            if stmt.orelse:
                lines.append(pad + "} else {")
                print_block(stmt.orelse, indent + 1, lines)
            lines.append(pad + "}")


def print_extent(extent) -> str:
    """A count or grid dimension: a number, or an expression of scalar parameters."""
    return print_expr(extent) if isinstance(extent, Expr) else str(extent)


def print_param(param) -> str:
    if isinstance(param, GlobalBuffer):
        return f"{param.name}: global {param.dtype}[{print_extent(param.count)}]{' readonly' if param.readonly else ''}"
    return f"{param.name}: {param.dtype}"


def print_kernel(kernel: Kernel) -> str:
    lines = [f"kernel {kernel.name}({', '.join(print_param(p) for p in kernel.params)})",
             f"    grid [{', '.join(map(print_extent, kernel.grid))}] workgroup {list(kernel.workgroup_size)} "
             f"wave {kernel.wave_size} lds {kernel.lds_bytes} bytes"]
    if kernel.arguments:
        lines.append(f"    arguments {', '.join(f'{name} = {value!r}' for name, value in kernel.arguments)}")
    lines += [f"  lds {b.name}: {b.dtype}[{b.count}]" for b in kernel.lds]
    lines += [f"  private {b.name}: {b.dtype}[{b.count}]" for b in kernel.private]
    lines += [f"  stream {name}: {elements} elements per workgroup" for name, elements in kernel.streams]
    if kernel.grid_order != (0, 1, 2) or kernel.alternate_grid_order:
        lines.append(f"  grid order: {' then '.join('xyz'[d] for d in kernel.grid_order)}")
    if kernel.alternate_grid_order:
        condition, order = kernel.alternate_grid_order
        lines.append(f"  grid order: {' then '.join('xyz'[d] for d in order)} when {print_expr(condition)}")
    lines.append("{")
    print_block(kernel.body, 1, lines)
    lines.append("}")
    return "\n".join(lines)
