"""The kernel IR's verifier: launch limits, types, scoping and the uniform-control-flow rule.

Errors are `VerifyError("kernel k: `if (i < n) {`: ...")`, naming the offending statement by its
printed first line. Rules:
- launch: grid dims >= 0 or extents (integer expressions of declared scalar parameters, as global
  buffer counts may be too; arguments bind declared scalars), workgroup dims >= 1 with a product that is a multiple of 64 (wave64)
  and at most 1024; LDS at most `max_lds_bytes`; unique parameter, LDS and private names;
- types: every expression is well typed (same dtypes on both sides of a binary op, bool
  conditions, integer indices, math functions on the dtypes they take, stores of the
  buffer's dtype, no stores to read-only buffers);
- scoping: a variable is defined (`Let`, a `For` variable, a wave op's result) before use, once
  in its scope, and used with its dtype; buffers are the kernel's own; a loop's expected trips
  are an extent;
- uniformity: a barrier or wave op lies only under `uniform` fors and ifs, and the bounds or
  condition of a uniform statement do not depend on the work-item (a conservative, flow-
  insensitive analysis: workitem_id, private memory, wave results in workgroups of more than
  one wave, and variables assigned from these or under such control flow are varying);
- prefetch: of a declared global buffer, at an integer start that every work-item sees alike,
  under uniform control only (a workgroup-level statement);
- alongside: an if marked alongside is uniform, holds no barrier, wave op or prefetch, stores only to LDS
  and assigns only variables of its own (the rest of its promise is its producer's).
"""
from __future__ import annotations

import math

from ..errors import VerifyError
from .kernel import (ARITHMETIC_OPS, ATOMIC_OPS, BITWISE_OPS, COMPARE_OPS, DTYPES, MATH_FUNCTIONS, SHIFT_OPS,
                     SPECIAL_KINDS, UNARY_OPS, Assign, AtomicRMW, Barrier, Binary, Bitcast, Cast, Compare, Const, Expr,
                     For, ForSpan, GlobalBuffer, If, Kernel, LdsBuffer, Let, Load, Math, Prefetch, PrivateArray,
                     ScalarParam, Select, SpanOffset, Special, Stmt, Store, Unary, Var, WaveCountBelow, WaveMatchRank,
                     WaveMove, WaveOp, WaveShuffle, While, contains_cut, is_extent, walk)
from .kernel_printer import print_expr, print_extent, statement_head
from .types import INTS, MAX_ARRAY_BYTES, NUMPY_DTYPES, format_bytes

MAX_WORKGROUP_ITEMS = 1024


def verify_kernel(kernel: Kernel, max_lds_bytes: int = 64 * 1024) -> None:
    KernelVerifier(kernel, max_lds_bytes).run()


def sub_expressions(expr: Expr):
    """The direct operands of an expression."""
    if isinstance(expr, (Unary, Cast, Bitcast)):
        return (expr.x,)
    if isinstance(expr, (Binary, Compare)):
        return (expr.a, expr.b)
    if isinstance(expr, Select):
        return (expr.cond, expr.on_true, expr.on_false)
    if isinstance(expr, Math):
        return expr.args
    if isinstance(expr, Load):
        return (expr.index,)
    return ()


def control_expressions(stmt: Stmt) -> tuple[Expr, ...]:
    if isinstance(stmt, For):
        return (stmt.start, stmt.stop, stmt.step)
    if isinstance(stmt, ForSpan):
        return (stmt.start,) if stmt.stop is None else (stmt.start, stmt.stop)
    if isinstance(stmt, (If, While)):
        return (stmt.cond,)
    return ()


class KernelVerifier:
    def __init__(self, kernel: Kernel, max_lds_bytes: int):
        self.kernel = kernel
        self.max_lds_bytes = max_lds_bytes
        self.buffers = {}
        self.scalars = {}
        self.varying: set[str] = set()

    def fail(self, message: str, stmt: Stmt | None = None):
        where = f"`{statement_head(stmt)}`: " if stmt is not None else ""
        raise VerifyError(f"kernel {self.kernel.name}: {where}{message}")

    def run(self):
        self.check_declarations()
        self.varying = self.varying_variables()
        self.check_block(self.kernel.body, {}, None)

    # ---- declarations ------------------------------------------------------------------

    def check_declarations(self):
        k = self.kernel
        grid = [print_extent(d) for d in k.grid]
        if len(k.grid) != 3 or any(not (isinstance(d, int) and d >= 0) and not is_extent(d) for d in k.grid):
            self.fail(f"grid {grid} must be 1 to 3 counts >= 0 or extents (integer expressions of scalar "
                      "parameters)")
        if len(k.workgroup_size) != 3 or any(d < 1 for d in k.workgroup_size):
            self.fail(f"workgroup size {list(k.workgroup_size)} must be 1 to 3 sizes >= 1")
        if k.static_grid and math.prod(k.grid) * math.prod(k.workgroup_size) > MAX_ARRAY_BYTES:
            self.fail(f"grid {list(k.grid)} of workgroups {list(k.workgroup_size)} has more work-items than an "
                      f"int64 counts")
        if not isinstance(k.wave_size, int) or k.wave_size < 1 or k.wave_size & (k.wave_size - 1):
            self.fail(f"wave size {k.wave_size!r} must be a power of two")
        if k.workgroup_items % k.wave_size or k.workgroup_items > MAX_WORKGROUP_ITEMS:
            self.fail(f"workgroup size {list(k.workgroup_size)} has {k.workgroup_items} work-items; it must be "
                      f"a multiple of the wave size {k.wave_size} and at most {MAX_WORKGROUP_ITEMS}")
        if k.lds_bytes > self.max_lds_bytes:
            self.fail(f"LDS of {k.lds_bytes} bytes exceeds the limit of {self.max_lds_bytes} bytes")
        names = set()
        expected = [(p, (GlobalBuffer, ScalarParam)) for p in k.params] + \
            [(b, (LdsBuffer,)) for b in k.lds] + [(b, (PrivateArray,)) for b in k.private]
        for decl, kinds in expected:
            if not isinstance(decl, kinds):
                self.fail(f"{decl!r} is not a {' or '.join(kind.__name__ for kind in kinds)}")
            if decl.name in names:
                self.fail(f"name {decl.name!r} is declared twice")
            names.add(decl.name)
            if decl.dtype not in DTYPES:
                self.fail(f"{decl.name}: unsupported dtype {decl.dtype!r}; expected one of {', '.join(DTYPES)}")
            if isinstance(decl, ScalarParam):
                self.scalars[decl.name] = decl
            elif not isinstance(decl.count, int):
                if not isinstance(decl, GlobalBuffer) or not is_extent(decl.count):
                    self.fail(f"{decl.name}: count {print_extent(decl.count)} must be a number (or, for a global "
                              "buffer, an extent: an integer expression of scalar parameters)")
                self.buffers[decl.name] = decl
            else:
                if decl.count < 0:
                    self.fail(f"{decl.name}: negative element count {decl.count}")
                if decl.nbytes > MAX_ARRAY_BYTES:
                    self.fail(f"{decl.name}: {decl.count} elements of {decl.dtype}, {format_bytes(decl.nbytes)}: more "
                              f"than the {MAX_ARRAY_BYTES} bytes an int64 offset addresses")
                self.buffers[decl.name] = decl
        if sorted(k.grid_order) != [0, 1, 2]:
            self.fail(f"grid order {list(k.grid_order)} is not an order of the dimensions 0, 1 and 2")
        self.check_extents()
        self.check_alternate_grid_order()
        if k.streams and not k.static_grid:
            self.fail("streams need a grid known without the arguments")
        if k.streams and (k.grid_order != (0, 1, 2) or k.alternate_grid_order):
            # A stream's slices follow the linear workgroup id, which the host prefetches in order.
            self.fail(f"streams need the grid walked x first, not in order {list(k.grid_order)}")
        for name, elements in k.streams:
            buffer = self.buffers.get(name)
            if not isinstance(buffer, GlobalBuffer) or not buffer.readonly:
                self.fail(f"stream {name!r} is not a read-only global buffer of the kernel")
            if not isinstance(elements, int) or elements < 1:
                self.fail(f"stream {name}: {elements!r} elements per workgroup; expected a count >= 1")

    def check_extents(self):
        """Runtime extents read only declared integer scalar parameters; `arguments` bind declared
        scalar parameters, each once."""
        k = self.kernel
        extents = [d for d in k.grid if not isinstance(d, int)] + \
            [p.count for p in k.buffers if not isinstance(p.count, int)]
        for extent in extents:
            self.check_expr(extent, {}, None)
        bound = [name for name, _ in k.arguments]
        for name in bound:
            if name not in self.scalars or bound.count(name) > 1:
                self.fail(f"argument {name!r} is not a scalar parameter of the kernel, or is bound twice")

    def check_alternate_grid_order(self):
        """() or (condition, order): the condition compares two extents, the order is one of the
        dimensions 0, 1 and 2."""
        alternate = self.kernel.alternate_grid_order
        if not alternate:
            return
        condition, order = alternate if len(alternate) == 2 else (None, None)
        if not (isinstance(condition, Compare) and is_extent(condition.a) and is_extent(condition.b)):
            self.fail("the alternate grid order is not (condition, order) with a condition comparing two extents "
                      "(integer expressions of scalar parameters)")
        self.check_expr(condition, {}, None)
        if sorted(order) != [0, 1, 2]:
            self.fail(f"alternate grid order {list(order)} is not an order of the dimensions 0, 1 and 2")

    # ---- uniformity --------------------------------------------------------------------

    def is_varying(self, expr: Expr, varying: set[str]) -> bool:
        if isinstance(expr, (Special, SpanOffset)):
            return isinstance(expr, SpanOffset) or expr.kind == "workitem_id"
        if isinstance(expr, Var):
            return expr.name in varying
        if isinstance(expr, Load) and expr.buffer.space == "private":
            return True
        return any(self.is_varying(e, varying) for e in sub_expressions(expr))

    def varying_variables(self) -> set[str]:
        """Names of the variables that may differ between the work-items of a workgroup."""
        varying: set[str] = set()
        wave_results_vary = self.kernel.workgroup_items > self.kernel.wave_size

        def visit(stmts, under_varying_control):
            for stmt in stmts:
                if isinstance(stmt, (Let, Assign)):
                    if under_varying_control or self.is_varying(stmt.value, varying):
                        varying.add(stmt.var.name)
                elif isinstance(stmt, AtomicRMW):    # each work-item's atomic returns its own value
                    varying.add(stmt.var.name)
                elif isinstance(stmt, WaveOp):
                    if wave_results_vary or isinstance(stmt, (WaveShuffle, WaveMove, WaveCountBelow, WaveMatchRank)) \
                            or under_varying_control \
                            or any(self.is_varying(e, varying) for e in stmt.reads()):
                        varying.update(v.name for v in stmt.defines())
                elif isinstance(stmt, (For, If, While)):
                    inner = under_varying_control or any(self.is_varying(e, varying)
                                                         for e in control_expressions(stmt))
                    if isinstance(stmt, For) and inner:
                        varying.add(stmt.var.name)
                    for block in stmt.children():
                        visit(block, inner)
                elif isinstance(stmt, ForSpan):   # each work-item's elements are its own
                    varying.add(stmt.var.name)
                    visit(stmt.body, True)

        while True:  # a fixpoint: an assignment late in a loop can make an earlier use varying
            before = len(varying)
            visit(self.kernel.body, False)
            if len(varying) == before:
                return varying

    # ---- statements --------------------------------------------------------------------

    def define(self, var: Var, scope: dict, stmt: Stmt):
        if var.dtype not in DTYPES:
            self.fail(f"variable {var.name}: unsupported dtype {var.dtype!r}", stmt)
        if var.name in scope or var.name in self.buffers or var.name in self.scalars:
            self.fail(f"{var.name!r} is already defined", stmt)
        scope[var.name] = var.dtype

    def check_block(self, stmts, scope: dict, nonuniform: Stmt | None):
        scope = dict(scope)
        for stmt in stmts:
            self.check_statement(stmt, scope, nonuniform)

    def check_statement(self, stmt: Stmt, scope: dict, nonuniform: Stmt | None):
        if isinstance(stmt, Let):
            self.expect(stmt.value, stmt.var.dtype, scope, stmt, f"value of {stmt.var.name}")
            self.define(stmt.var, scope, stmt)
        elif isinstance(stmt, Assign):
            if stmt.var.name not in scope:
                self.fail(f"assignment to undefined variable {stmt.var.name!r}", stmt)
            self.expect(stmt.value, scope[stmt.var.name], scope, stmt, f"value of {stmt.var.name}")
        elif isinstance(stmt, Store):
            buffer = self.check_buffer(stmt.buffer, stmt)
            if getattr(buffer, "readonly", False):
                self.fail(f"store to read-only buffer {buffer.name}", stmt)
            self.expect_int(stmt.index, scope, stmt, "index")
            self.expect(stmt.value, buffer.dtype, scope, stmt, f"value stored to {buffer.name}")
        elif isinstance(stmt, For):
            if stmt.var.dtype not in INTS:
                self.fail(f"loop variable {stmt.var.name} must be an integer, got {stmt.var.dtype}", stmt)
            for name in ("start", "stop", "step"):
                self.expect(getattr(stmt, name), stmt.var.dtype, scope, stmt, f"loop {name}")
            if isinstance(stmt.step, Const) and stmt.step.value <= 0:
                self.fail(f"loop step must be positive, got {stmt.step.value}", stmt)
            if stmt.expected_trips is not None:
                if not is_extent(stmt.expected_trips):
                    self.fail(f"expected trips {print_expr(stmt.expected_trips)} must be an extent (an integer "
                              "expression of scalar parameters)", stmt)
                self.check_expr(stmt.expected_trips, {}, stmt)
            self.check_uniform_control(stmt)
            inner = dict(scope)
            self.define(stmt.var, inner, stmt)
            self.check_block(stmt.body, inner, nonuniform if stmt.uniform else nonuniform or stmt)
        elif isinstance(stmt, ForSpan):
            self.check_span(stmt, scope, nonuniform)
        elif isinstance(stmt, If):
            self.expect(stmt.cond, "bool", scope, stmt, "condition")
            self.check_uniform_control(stmt)
            if stmt.alongside:
                self.check_alongside(stmt, scope)
            inner_nonuniform = nonuniform if stmt.uniform else nonuniform or stmt
            self.check_block(stmt.then, scope, inner_nonuniform)
            self.check_block(stmt.orelse, scope, inner_nonuniform)
        elif isinstance(stmt, AtomicRMW):
            buffer = self.check_buffer(stmt.buffer, stmt)
            relaxed_float_add = stmt.relaxed and stmt.op == "add" and buffer.dtype in ("f32", "f64")
            if buffer.space not in ("global", "lds") or getattr(buffer, "readonly", False) or stmt.op not in ATOMIC_OPS \
                    or not (buffer.dtype in ("i32", "u32", "i64", "u64") or relaxed_float_add) \
                    or (stmt.relaxed and buffer.space != "global"):
                self.fail(f"atomic {stmt.op}{' relaxed' * stmt.relaxed} on {buffer.space} {buffer.dtype} buffer "
                          f"{buffer.name}: atomics are {', '.join(ATOMIC_OPS)} on written global or LDS buffers of "
                          f"32- or 64-bit integers, or relaxed adds on global f32 or f64 buffers", stmt)
            self.expect_int(stmt.index, scope, stmt, "index")
            self.expect(stmt.value, buffer.dtype, scope, stmt, f"atomic operand on {buffer.name}")
            if stmt.var.dtype != buffer.dtype:
                self.fail(f"atomic result {stmt.var.name} is {stmt.var.dtype}, its buffer {buffer.dtype}", stmt)
            self.define(stmt.var, scope, stmt)
        elif isinstance(stmt, While):
            self.expect(stmt.cond, "bool", scope, stmt, "condition")
            if contains_cut(stmt.body):
                self.fail("a while loop holds a barrier, wave op or prefetch", stmt)
            self.check_block(stmt.body, scope, nonuniform or stmt)
        elif isinstance(stmt, Prefetch):
            self.check_prefetch(stmt, scope, nonuniform)
        elif isinstance(stmt, (Barrier, WaveOp)):
            if nonuniform is not None:
                what = "barrier" if isinstance(stmt, Barrier) else stmt.kind
                self.fail(f"{what} under non-uniform control flow "
                          f"`{statement_head(nonuniform)}` (mark it uniform if every work-item of the "
                          "workgroup takes the same path)", stmt)
            if isinstance(stmt, WaveOp):
                for expr in stmt.reads():
                    self.check_expr(expr, scope, stmt)
                stmt.check(lambda message: self.fail(message, stmt), self.kernel.wave_size)
                for var in stmt.defines():
                    self.define(var, scope, stmt)
        else:
            self.fail(f"unknown statement {type(stmt).__name__}", stmt)

    def check_prefetch(self, stmt: Prefetch, scope: dict, nonuniform: Stmt | None):
        buffer = self.check_buffer(stmt.buffer, stmt)
        if buffer.space != "global":
            self.fail(f"prefetch of {buffer.space} buffer {buffer.name} (only global memory is prefetched)", stmt)
        self.expect_int(stmt.start, scope, stmt, "start")
        if nonuniform is not None or self.is_varying(stmt.start, self.varying):
            self.fail("prefetch is a workgroup-level statement: its control flow and start must be the same "
                      "for every work-item", stmt)
        self.expect_int(stmt.run_stride, scope, stmt, "run stride")
        if self.is_varying(stmt.run_stride, self.varying):
            self.fail("prefetch is a workgroup-level statement: its run stride must be the same for every "
                      "work-item", stmt)
        negative_stride = isinstance(stmt.run_stride, Const) and stmt.run_stride.value < 0
        if stmt.runs < 1 or stmt.run_elements < 1 or negative_stride:
            self.fail(f"prefetch of {stmt.runs} runs of {stmt.run_elements} elements, stride "
                      f"{print_expr(stmt.run_stride)}: runs and elements must be positive, the stride not negative",
                      stmt)

    def check_span(self, stmt: ForSpan, scope: dict, nonuniform: Stmt | None):
        if not any(stmt is top for top in self.kernel.body):
            self.fail("a span stands at the top level of the kernel's body", stmt)
        if stmt.var.dtype not in INTS:
            self.fail(f"span variable {stmt.var.name} must be an integer, got {stmt.var.dtype}", stmt)
        for expr in control_expressions(stmt):
            self.expect(expr, stmt.var.dtype, scope, stmt, "span start or stop")
            if self.is_varying(expr, self.varying):
                self.fail("a span's start and stop must be the same for every work-item of the workgroup", stmt)
        if stmt.per_item < 1:
            self.fail(f"a span of {stmt.per_item} elements per work-item (at least 1)", stmt)
        if self.kernel.workgroup_size[1:] != (1, 1):
            self.fail(f"a span needs a 1-D workgroup, not {list(self.kernel.workgroup_size)}", stmt)
        if contains_cut(stmt.body):
            self.fail("a span holds a barrier, wave op or prefetch", stmt)
        inner = dict(scope)
        self.define(stmt.var, inner, stmt)
        self.check_block(stmt.body, inner, nonuniform or stmt)

    def check_alongside(self, stmt: If, scope: dict):
        """The checkable part of an `alongside` if's promise (ir/kernel.py: If)."""
        if not stmt.uniform:
            self.fail("marked alongside, but not uniform", stmt)
        if contains_cut(stmt.then + stmt.orelse):
            self.fail("marked alongside, but holds a barrier, wave op or prefetch", stmt)
        for inner in walk(stmt.then + stmt.orelse):
            if isinstance(inner, Store) and inner.buffer.space != "lds":
                self.fail(f"marked alongside, but stores to {inner.buffer.space} buffer {inner.buffer.name} "
                          "(only LDS stores can run alongside what follows)", stmt)
            if isinstance(inner, Assign) and inner.var.name in scope:
                self.fail(f"marked alongside, but assigns {inner.var.name}, defined outside it", stmt)

    def check_uniform_control(self, stmt):
        if stmt.uniform and any(self.is_varying(e, self.varying) for e in control_expressions(stmt)):
            self.fail("marked uniform, but its bounds or condition depend on the work-item", stmt)

    def check_buffer(self, buffer, stmt):
        declared = self.buffers.get(buffer.name)
        if declared is None or (declared.space, declared.dtype, declared.count) != \
                (buffer.space, buffer.dtype, buffer.count):
            self.fail(f"buffer {buffer.name!r} is not declared by the kernel", stmt)
        return declared

    # ---- expressions -------------------------------------------------------------------

    def expect(self, expr, dtype, scope, stmt, what):
        got = self.check_expr(expr, scope, stmt)
        if got != dtype:
            self.fail(f"{what} is {got}, expected {dtype}", stmt)

    def expect_int(self, expr, scope, stmt, what):
        got = self.check_expr(expr, scope, stmt)
        if got not in INTS:
            self.fail(f"{what} must be an integer, got {got}", stmt)

    def check_expr(self, expr, scope: dict, stmt: Stmt) -> str:
        """The dtype of `expr`, after checking it and its operands."""
        bad = lambda message: self.fail(f"{message} in `{print_expr(expr)}`", stmt)
        if not isinstance(expr, Expr):
            bad(f"{expr!r} is not an expression")
        operands = [self.check_expr(e, scope, stmt) for e in sub_expressions(expr)]
        if isinstance(expr, Const):
            if expr.dtype not in DTYPES:
                bad(f"unsupported constant dtype {expr.dtype!r}")
        elif isinstance(expr, Var):
            if expr.name not in scope:
                bad(f"variable {expr.name!r} is used before it is defined")
            if scope[expr.name] != expr.dtype:
                bad(f"variable {expr.name} is {scope[expr.name]}, used as {expr.dtype}")
        elif isinstance(expr, ScalarParam):
            declared = self.scalars.get(expr.name)
            if declared is None or declared.dtype != expr.dtype:
                bad(f"scalar parameter {expr.name}: {expr.dtype} is not a parameter of the kernel")
        elif isinstance(expr, Unary):
            allowed = ("bool",) + INTS if expr.op == "not" else DTYPES[1:]
            if expr.op not in UNARY_OPS or operands[0] not in allowed:
                bad(f"{expr.op} does not apply to {operands[0]}")
        elif isinstance(expr, (Binary, Compare)):
            if operands[0] != operands[1]:
                bad(f"{expr.op} of different dtypes {operands[0]} and {operands[1]}")
            self.check_binary_op(expr, operands[0], bad)
        elif isinstance(expr, Select):
            if operands[0] != "bool":
                bad(f"select condition is {operands[0]}, expected bool")
            if operands[1] != operands[2]:
                bad(f"select of different dtypes {operands[1]} and {operands[2]}")
        elif isinstance(expr, Cast):
            if expr.dtype not in DTYPES:
                bad(f"cast to unsupported dtype {expr.dtype!r}")
        elif isinstance(expr, Bitcast):
            if (expr.dtype not in DTYPES[1:] or operands[0] == "bool"
                    or NUMPY_DTYPES[expr.dtype].itemsize != NUMPY_DTYPES[operands[0]].itemsize):
                bad(f"bitcast of {operands[0]} to {expr.dtype}: needs two non-bool dtypes of one width")
        elif isinstance(expr, Math):
            if expr.fn not in MATH_FUNCTIONS:
                bad(f"unknown math function {expr.fn!r}")
            arity, dtypes = MATH_FUNCTIONS[expr.fn]
            if len(operands) != arity or len(set(operands)) != 1 or operands[0] not in dtypes:
                bad(f"{expr.fn} takes {arity} operand(s) of one of {', '.join(dtypes)}, got {', '.join(operands)}")
        elif isinstance(expr, Load):
            self.check_buffer(expr.buffer, stmt)
            if operands[0] not in INTS:
                bad(f"index must be an integer, got {operands[0]}")
        elif isinstance(expr, Special):
            if expr.kind not in SPECIAL_KINDS or expr.dim not in (0, 1, 2):
                bad(f"unknown launch value {expr.kind}({expr.dim})")
        elif isinstance(expr, SpanOffset):
            if expr.dtype not in INTS or not 0 <= expr.k < expr.per_item:
                bad(f"a span offset is an integer k of 0 <= k < per_item, got {expr.dtype} k = {expr.k} of "
                    f"{expr.per_item}")
            if expr.part not in ("offset", "row", "column"):
                bad(f"a span offset's part is offset, row or column, not {expr.part!r}")
            if self.kernel.workgroup_size[1:] != (1, 1):
                bad(f"a span offset needs a 1-D workgroup, not {list(self.kernel.workgroup_size)}")
        else:
            bad(f"unknown expression {type(expr).__name__}")
        return expr.dtype

    @staticmethod
    def check_binary_op(expr, dtype, bad):
        if isinstance(expr, Compare):
            if expr.op not in COMPARE_OPS:
                bad(f"unknown comparison {expr.op!r}")
        elif expr.op in ARITHMETIC_OPS:
            if dtype == "bool":
                bad(f"{expr.op} does not apply to bool")
        elif expr.op in BITWISE_OPS:
            allowed = INTS if expr.op in SHIFT_OPS else ("bool",) + INTS
            if dtype not in allowed:
                bad(f"{expr.op} does not apply to {dtype}")
        else:
            bad(f"unknown binary op {expr.op!r}")

