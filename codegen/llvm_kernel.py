"""The target-neutral part of kernel IR -> LLVM IR (llvmlite.ir): `KernelBuilder`, which the
backends subclass as siblings (codegen/host.py's HostKernelBuilder for the CPU, codegen/amdgpu.py's
AmdgpuKernelBuilder for gfx9), so that every target computes the same operations the same way.

What the base lowers, for every backend: expressions (constants, variables, scalar parameters,
loads, unary, binary, compare, select, cast, bitcast and math calls through codegen/mathlib.py),
the work-item statements (Let, Assign, Store, For, If), f16/bf16 rounding (f16 and bf16 values
live in f32 registers, rounded after each operation; bool is i1 in registers and i8 in memory),
counted loops with their llvm.loop hints, and the registry of wave-op lowerings.

What a backend provides (a subclass of KernelBuilder; a new target, NVPTX say, is one more
sibling that provides the same):
- `target_label`: the backend's name in error messages ("host", "AMDGPU").
- `wave_op_lowerings`: its own dict, WaveOp subclass -> lowering, filled through the class method
  `register_wave_op` (each backend decides the lowering's signature: the host lowers a run of
  consecutive ops at its workgroup level, AMDGPU one op for the calling work-item).
- `build()`: the module: the kernel function(s) with their calling convention and attributes,
  calling `bind_parameters` on the arguments, setting `self.fn`, `self.b` (an IRBuilder) and
  `self.lds_pointers` (LDS buffer name -> pointer), then lowering `kernel.body`.
- `entry_alloca(type, count, name)`: a slot in the function's entry block (in the target's
  private address space).
- `variable_pointer(var)` and `element_pointer(buffer, index)`: where a variable lives and the
  address of a buffer element (global, LDS or private).
- `expr_special(e)`: the launch ids and extents.
- Barrier, Prefetch and WaveOp statements: in its `statement` override (AMDGPU, which runs the
  body per work-item), or at a workgroup level of its own (the host, which cuts the body there).
- Optional hooks, with target-neutral defaults: `low_bits(value, modulus)` (a power-of-two
  remainder as a mask), `math_lanes(fn, dtype)` (call a vector variant of a math function
  instead of inlining it), `read_var`/`write_var`, `statements`/`statement`.

The wave size a backend lowers wave ops for is the kernel's (`Kernel.wave_size`, set from the
target it was built for): `self.wave_size`.
"""
from __future__ import annotations

from typing import ClassVar

import llvmlite.ir as ir

from ..ir.kernel import (Assign, AtomicRMW, Binary, Cast, Compare, Const, Expr, For, GlobalBuffer, If, Kernel, Let,
                         Load, Math, ScalarParam, Select, Store, Unary, Var, While)
from ..ir.kernel_mfma import PrivateSlice
from ..ir.types import FLOATS, SIGNED_INTS, UNSIGNED_INTS
from . import mathlib, narrow_convert

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F32, F64, PTR = ir.FloatType(), ir.DoubleType(), ir.PointerType()
# How a dtype is held in registers and in memory.
REGISTER_TYPES = {"bool": I1, "i8": I8, "i16": I16, "i32": I32, "i64": I64, "u8": I8, "u16": I16, "u32": I32,
                  "u64": I64, "f16": F32, "bf16": F32, "f32": F32, "f64": F64}
MEMORY_TYPES = {**REGISTER_TYPES, "bool": I8, "f16": I16, "bf16": I16}
HALF_FLOATS = ("f16", "bf16")


def is_float(dtype): return dtype in FLOATS
def is_signed(dtype): return dtype in SIGNED_INTS


def is_power_of_two(n) -> bool:
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0


def add_attribute(attributes: ir.values.AttributeSet, text: str) -> None:
    """Add an attribute that llvmlite's lists (taken from LLVM 14) lack but LLVM accepts: string
    attributes ("key"="value") and `readonly` on parameters. They print as given."""
    set.add(attributes, text)


def loop_id(module: ir.Module, hints: dict) -> ir.MDValue:
    """A loop's `!llvm.loop` node: its first operand itself (as LLVM requires), then the hints."""
    properties = [module.add_metadata([ir.MetaDataString(module, f"llvm.loop.{name}"),
                                       value if isinstance(value, ir.MDValue) else ir.Constant(I32, value)])
                  for name, value in sorted(hints.items())]
    node = module.add_metadata([ir.MetaDataString(module, "cdnajit.loop")] + properties)
    node.operands = (node, *properties)  # llvmlite has no self-reference: set after creation
    return node


class KernelBuilder:
    """Lowers one kernel's expressions and work-item statements into `self.module`; a backend
    subclass builds the functions around them (see the module docstring for what it provides)."""

    target_label: ClassVar[str]
    wave_op_lowerings: ClassVar[dict]

    # The ordering of a relaxed atomic: indivisible only, among all the launch's work-items.
    relaxed_ordering = "monotonic"

    def __init__(self, kernel: Kernel, triple: str):
        self.kernel = kernel
        self.items = kernel.workgroup_items
        self.wave_size = kernel.wave_size
        self.module = ir.Module(name=kernel.name)
        self.module.triple = triple
        self.storage: dict = {}  # the backend's slots of variables and private arrays, by key

    # -- the backend's part --

    def build(self) -> ir.Module:
        raise NotImplementedError

    def entry_alloca(self, type_, count=None, name=""):
        raise NotImplementedError

    def variable_pointer(self, var: Var):
        raise NotImplementedError

    def element_pointer(self, buffer, index_expr):
        raise NotImplementedError

    def expr_special(self, e):
        raise NotImplementedError

    # -- wave ops --

    @classmethod
    def register_wave_op(cls, op_class, lower) -> None:
        """Add this backend's lowering of a WaveOp subclass (the extension point for MFMA)."""
        cls.wave_op_lowerings[op_class] = lower

    def wave_op_lowering(self, op_class):
        lower = self.wave_op_lowerings.get(op_class)
        if lower is None:
            raise NotImplementedError(f"{self.target_label} codegen: no lowering for wave op {op_class.__name__}")
        return lower

    # -- parameters --

    def bind_parameters(self, args) -> None:
        """Name the function's arguments after the kernel's parameters and record them: buffers in
        `buffer_args`, noalias (the runtime never passes a written buffer that overlaps another
        parameter), scalars in `scalar_args` as register values (converted from their memory form
        when the argument is passed so)."""
        self.buffer_args, self.scalar_args = {}, {}
        for param, arg in zip(self.kernel.params, args):
            arg.name = param.name
            if isinstance(param, GlobalBuffer):
                arg.add_attribute("noalias")
                self.buffer_args[param.name] = arg
            elif arg.type == REGISTER_TYPES[param.dtype]:
                self.scalar_args[param.name] = arg
            else:
                self.scalar_args[param.name] = self.from_memory(param.dtype, arg)

    # -- small helpers --

    def const(self, dtype, value):
        return ir.Constant(REGISTER_TYPES[dtype], value)

    def counted_loop(self, start, stop, step, body, signed=True, name="loop", hints=None):
        """for (i = start; i < stop; i += step) body(i), with a phi counter; `hints` are the loop's
        llvm.loop.* properties ({"interleave.count": 2})."""
        b = self.b
        before = b.block
        head = self.fn.append_basic_block(name + ".head")
        loop = self.fn.append_basic_block(name + ".body")
        done = self.fn.append_basic_block(name + ".done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(start.type, name=name + ".i")
        i.add_incoming(start, before)
        compare = b.icmp_signed if signed else b.icmp_unsigned
        b.cbranch(compare("<", i, stop), loop, done)
        b.position_at_end(loop)
        body(i)
        i.add_incoming(b.add(i, step), b.block)
        latch = b.branch(head)
        if hints:
            latch.set_metadata("llvm.loop", loop_id(self.module, hints))
        b.position_at_end(done)


    def low_bits(self, value, modulus: int):
        """value % modulus for an unsigned value and a power-of-two modulus: value & (modulus - 1)."""
        return self.b.and_(value, ir.Constant(value.type, modulus - 1))

    def math_lanes(self, fn: str, dtype: str) -> int | None:
        """The lanes of the vector variant of `fn` to call for operands of `dtype`, or None to
        inline the function (mathlib.call)."""
        return None

    # -- variables --

    def read_var(self, var: Var):
        return self.b.load(self.variable_pointer(var), typ=REGISTER_TYPES[var.dtype])

    def write_var(self, var: Var, value):
        self.b.store(value, self.variable_pointer(var))

    def write_result_element(self, dest, element: int, value, dtype: str):
        """Element `element` of a wave op's destination (an MFMA's D): a slice of a private array (an
        accumulator kept in per-lane memory), stored as `dtype`, or a tuple of variables."""
        if isinstance(dest, PrivateSlice):
            index = Const(dest.start + element, "i32")
            self.b.store(self.to_memory(dtype, value), self.element_pointer(dest.array, index))
        else:
            self.write_var(dest[element], value)

    def grid_extent(self, dim: int):
        """The grid's extent along `dim` as an i64: a constant, or its extent expression (ir/kernel.py:
        runtime sizes) computed from the scalar arguments, never from a launch's `arguments`."""
        extent = self.kernel.grid[dim]
        return ir.Constant(I64, extent) if isinstance(extent, int) else self.index64(extent)

    def index64(self, expr):
        value = self.expr(expr)
        if value.type.width == 64:
            return value
        return self.b.zext(value, I64) if expr.dtype in UNSIGNED_INTS else self.b.sext(value, I64)


    # -- conversions between memory and registers, and f16/bf16 rounding --

    def from_memory(self, dtype, value):
        b = self.b
        if dtype == "bool":
            return b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
        if dtype == "f16":
            return b.fpext(b.bitcast(value, ir.HalfType()), F32)
        if dtype == "bf16":
            return b.bitcast(b.shl(b.zext(value, I32), ir.Constant(I32, 16)), F32)
        return value

    def to_memory(self, dtype, value):
        """Register value -> memory value; f16/bf16 registers already hold rounded values."""
        b = self.b
        if dtype == "bool":
            return b.zext(value, I8)
        if dtype == "f16":
            return b.bitcast(b.fptrunc(value, ir.HalfType()), I16)
        if dtype == "bf16":
            return b.trunc(b.lshr(b.bitcast(value, I32), ir.Constant(I32, 16)), I16)
        return value

    def round_to(self, dtype, value):
        """Round an f32 register value to f16/bf16 precision (round to nearest even; NaN stays NaN)."""
        b = self.b
        if dtype == "f16":
            return b.fpext(b.fptrunc(value, ir.HalfType()), F32)
        if dtype != "bf16":
            return value
        bits = b.bitcast(value, I32)
        odd = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
        rounded = b.add(bits, b.add(ir.Constant(I32, 0x7FFF), odd))
        quiet_nan = b.or_(bits, ir.Constant(I32, 0x400000))
        is_nan = b.fcmp_unordered("uno", value, value)
        bits = b.and_(b.select(is_nan, quiet_nan, rounded), ir.Constant(I32, 0xFFFF0000))
        return b.bitcast(bits, F32)

    # -- expressions --

    def expr(self, e: Expr):
        method = getattr(self, "expr_" + type(e).__name__.lower(), None)
        if method is None:
            raise NotImplementedError(f"{self.target_label} codegen: expression {type(e).__name__}")
        return method(e)

    def expr_const(self, e: Const):
        value = e.value
        if e.dtype in UNSIGNED_INTS and value >= 2 ** (REGISTER_TYPES[e.dtype].width - 1):
            value -= 2 ** REGISTER_TYPES[e.dtype].width
        return self.const(e.dtype, value)

    def expr_var(self, e: Var):
        return self.read_var(e)

    def expr_scalarparam(self, e: ScalarParam):
        return self.scalar_args[e.name]


    def expr_load(self, e: Load):
        pointer = self.element_pointer(e.buffer, e.index)
        return self.from_memory(e.dtype, self.b.load(pointer, typ=MEMORY_TYPES[e.dtype]))

    def expr_unary(self, e: Unary):
        x = self.expr(e.x)
        if e.op == "not":
            return self.b.not_(x)
        return self.b.fneg(x) if is_float(e.dtype) else self.b.neg(x)

    def expr_select(self, e: Select):
        return self.b.select(self.expr(e.cond), self.expr(e.on_true), self.expr(e.on_false))

    def expr_compare(self, e: Compare):
        a, b = self.expr(e.a), self.expr(e.b)
        symbol = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[e.op]
        if is_float(e.a.dtype):  # ordered, but != is true when either side is NaN (as numpy)
            return (self.b.fcmp_unordered if e.op == "ne" else self.b.fcmp_ordered)(symbol, a, b)
        return (self.b.icmp_signed if is_signed(e.a.dtype) else self.b.icmp_unsigned)(symbol, a, b)

    def expr_binary(self, e: Binary):
        a, b = self.expr(e.a), self.expr(e.b)
        dtype = e.dtype
        if is_float(dtype):
            return self.round_to(dtype, self.float_binary(e.op, a, b))
        return self.int_binary(e.op, a, b, is_signed(dtype))

    def float_binary(self, op, a, b):
        bld = self.b
        if op in ("max", "min"):
            # NaN-propagating, as numpy.maximum / minimum; equal operands (so +0 and -0) combine
            # their bits, so max(+0, -0) = +0 and min(+0, -0) = -0 in either order, as JAX.
            wins = bld.fcmp_ordered(">" if op == "max" else "<", a, b)
            bits = mathlib.with_element(a.type, I64 if mathlib.element_type(a.type) == F64 else I32)
            tie = (bld.and_ if op == "max" else bld.or_)(bld.bitcast(a, bits), bld.bitcast(b, bits))
            b = bld.select(bld.fcmp_ordered("==", a, b), bld.bitcast(tie, a.type), b)
            return bld.select(bld.or_(wins, bld.fcmp_unordered("uno", a, a)), a, b)
        return {"add": bld.fadd, "sub": bld.fsub, "mul": bld.fmul, "div": bld.fdiv, "rem": bld.frem}[op](a, b)

    def int_binary(self, op, a, b, signed):
        bld = self.b
        zero, ones = ir.Constant(a.type, 0), ir.Constant(a.type, -1)
        simple = {"add": bld.add, "sub": bld.sub, "mul": bld.mul, "and": bld.and_, "or": bld.or_, "xor": bld.xor}
        if op in simple:
            return simple[op](a, b)
        if op in ("max", "min"):
            compare = bld.icmp_signed if signed else bld.icmp_unsigned
            return bld.select(compare(">" if op == "max" else "<", a, b), a, b)
        if op in ("div", "rem"):
            # The graph IR's values where C is undefined: x/0 = -1 (all ones), x%0 = x, MIN/-1 = MIN.
            if op == "rem" and isinstance(b, ir.Constant) and is_power_of_two(b.constant):
                return self.power_of_two_rem(a, b.constant, signed)
            if isinstance(b, ir.Constant) and b.constant != 0 and not (signed and b.constant == -1):
                # A constant divisor where C's division is defined (index arithmetic): no guards.
                return {("div", True): bld.sdiv, ("div", False): bld.udiv, ("rem", True): bld.srem,
                        ("rem", False): bld.urem}[op, signed](a, b)
            by_zero = bld.icmp_unsigned("==", b, zero)
            undefined = bld.or_(by_zero, bld.icmp_unsigned("==", b, ones)) if signed else by_zero
            safe = bld.select(undefined, ir.Constant(a.type, 1), b)
            if op == "rem":
                return bld.select(by_zero, a, (bld.srem if signed else bld.urem)(a, safe))
            quotient = (bld.sdiv if signed else bld.udiv)(a, safe)
            if signed:
                quotient = bld.select(bld.icmp_unsigned("==", b, ones), bld.neg(a), quotient)
            return bld.select(by_zero, ones, quotient)
        in_range = bld.icmp_unsigned("<", b, ir.Constant(a.type, a.type.width))
        amount = bld.select(in_range, b, zero)
        if op == "shift_left":
            return bld.select(in_range, bld.shl(a, amount), zero)
        if op == "shift_right_logical":
            return bld.select(in_range, bld.lshr(a, amount), zero)
        return bld.ashr(a, bld.select(in_range, b, ir.Constant(a.type, a.type.width - 1)))

    def power_of_two_rem(self, a, modulus: int, signed: bool):
        """a % modulus (C's truncated remainder) for a constant power of two, through low_bits."""
        low = self.low_bits(a, modulus)
        if not signed:
            return low
        b, zero = self.b, ir.Constant(a.type, 0)
        wraps = b.and_(b.icmp_signed("<", a, zero), b.icmp_unsigned("!=", low, zero))
        return b.select(wraps, b.sub(low, ir.Constant(a.type, modulus)), low)

    def expr_cast(self, e: Cast):
        return self.convert(self.expr(e.x), e.x.dtype, e.dtype)

    def expr_bitcast(self, e: Expr):
        """x's bits as another dtype of its width, through the memory forms (f16/bf16 registers are f32)."""
        bits = self.to_memory(e.x.dtype, self.expr(e.x))
        target = MEMORY_TYPES[e.dtype]
        return self.from_memory(e.dtype, bits if bits.type == target else self.b.bitcast(bits, target))

    def convert(self, x, source, target):
        """The graph IR's `convert`: float -> int saturates with NaN -> 0; to bool is x != 0."""
        b = self.b
        to_type = REGISTER_TYPES[target]
        if source == target:
            return x
        if target == "bool":
            if is_float(source):
                return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
            return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
        if is_float(target):
            # f64 -> f16/bf16 and wide integers -> bf16 would round twice through f32 (narrow_convert).
            if source == "f64" and target in HALF_FLOATS:
                return self.from_memory(target, narrow_convert.f64_to_narrow_bits(b, x, target))
            if is_float(source):
                if x.type != to_type:
                    x = b.fpext(x, to_type) if x.type == F32 else b.fptrunc(x, to_type)
            elif target == "bf16" and x.type.width > narrow_convert.F32_KEPT_BITS:
                x = narrow_convert.int_to_sticky_f32(b, x, is_signed(source))
            else:
                x = (b.sitofp if is_signed(source) else b.uitofp)(x, to_type)
            return self.round_to(target, x)
        if is_float(source):
            return mathlib.float_to_int(b, x, to_type, is_signed(target))
        if to_type.width == x.type.width:
            return x
        if to_type.width < x.type.width:
            return b.trunc(x, to_type)
        return (b.sext if is_signed(source) else b.zext)(x, to_type)

    def expr_math(self, e: Math):
        args = [self.expr(a) for a in e.args]
        dtype = e.args[0].dtype
        if e.fn in ("abs", "sign") and not is_float(dtype):
            return self.int_abs_sign(e.fn, args[0], is_signed(dtype))
        lanes = self.math_lanes(e.fn, dtype)
        result = mathlib.call(self.b, e.fn, args, lanes)
        return result if e.fn == "is_finite" else self.round_to(dtype, result)

    def int_abs_sign(self, fn, x, signed):
        b = self.b
        zero = ir.Constant(x.type, 0)
        if fn == "abs":
            return b.select(b.icmp_signed("<", x, zero), b.neg(x), x) if signed else x
        positive = b.zext(b.icmp_signed(">", x, zero) if signed else b.icmp_unsigned(">", x, zero), x.type)
        negative = b.zext(b.icmp_signed("<", x, zero), x.type) if signed else zero
        return b.sub(positive, negative)

    # -- statements of a work-item --

    def statements(self, stmts):
        for stmt in stmts:
            self.statement(stmt)

    def statement(self, s):
        b = self.b
        if isinstance(s, (Let, Assign)):
            self.write_var(s.var, self.expr(s.value))
        elif isinstance(s, Store):
            value = self.to_memory(s.buffer.dtype, self.expr(s.value))
            b.store(value, self.element_pointer(s.buffer, s.index))
        elif isinstance(s, For):
            stop, step = self.expr(s.stop), self.expr(s.step)
            self.counted_loop(self.expr(s.start), stop, step,
                              lambda i: (self.write_var(s.var, i), self.statements(s.body)),
                              signed=is_signed(s.var.dtype), name="for." + s.var.name)
        elif isinstance(s, If):
            with b.if_else(self.expr(s.cond)) as (then, orelse):
                with then:
                    self.statements(s.then)
                with orelse:
                    self.statements(s.orelse)
        elif isinstance(s, AtomicRMW):
            pointer = self.element_pointer(s.buffer, s.index)
            op = "fadd" if is_float(s.buffer.dtype) else {"add": "add", "exchange": "xchg"}[s.op]
            # LDS atomics order nothing beyond their element (a barrier does): monotonic, no fences;
            # nor do relaxed ones, over the whole launch.
            ordering = "monotonic" if s.buffer.space == "lds" else self.relaxed_ordering if s.relaxed else "seq_cst"
            self.write_var(s.var, b.atomic_rmw(op, pointer, self.expr(s.value), ordering))
        elif isinstance(s, While):
            head = self.fn.append_basic_block("while.head")
            body = self.fn.append_basic_block("while.body")
            done = self.fn.append_basic_block("while.done")
            b.branch(head)
            b.position_at_end(head)
            b.cbranch(self.expr(s.cond), body, done)
            b.position_at_end(body)
            self.statements(s.body)
            b.branch(head)
            b.position_at_end(done)
        else:
            raise NotImplementedError(f"{self.target_label} codegen: statement {type(s).__name__} inside a "
                                      "work-item's code")
