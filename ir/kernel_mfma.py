"""MFMA: the CDNA matrix instructions as a kernel IR wave op, with each instruction's exact lanes.

`Mfma(instruction, dest, a, b, c)` is one `v_mfma_*` instruction executed by a wave: every lane
gives its A and B fragment (`a`, `b`: a tuple of per-lane expressions, one per element the lane
holds) and its accumulator `c` (a tuple of expressions, or a `PrivateSlice` of a private array),
and receives its part of D = A * B + C in `dest` (a tuple of new Vars, or the same `PrivateSlice`
as `c`, accumulating in place as srcC = vdst does on the GPU):

    from cdnajit.ir import kernel as K, kernel_mfma as KM
    inst = KM.INSTRUCTIONS["v_mfma_f32_32x32x2f32"]
    d = tuple(K.Var(f"d{r}", "f32") for r in range(inst.d_elements))
    KM.Mfma("v_mfma_f32_32x32x2f32", dest=d, a=(a0,), b=(b0,), c=c_vars)

Each instruction computes `blocks` independent products D[b] = A[b] (M x K) * B[b] (K x N) + C[b]
(M x N). Codegen: codegen/mfma_host.py (the CPU executes the lane layout below exactly) and
codegen/mfma_amdgpu.py (the LLVM intrinsic).

Lane layout (gfx9 MFMA without the CBSZ/ABID/BLGP modifiers, as AMD's matrix instruction calculator
and the CDNA3 ISA guide define it; gfx90a, gfx942 and gfx950 agree). A lane holds E_A = K*M*B/64
elements of A, E_B = K*N*B/64 of B and E_D = M*N*B/64 of C and D; "element e" of a fragment is its
e-th value in register order (sub-dword values pack from the low bits: f16/bf16 element e is in
register e // 2, bits 16*(e % 2); i8 element e in register e // 4, bits 8*(e % 4); an f64 element
is a register pair).
- A[b][i][k]: lane = i + M * (b + B * (k // E_A)), element = k % E_A.
- B[b][k][j]: lane = j + N * (b + B * (k // E_B)), element = k % E_B.
- C/D[b][i][j], with H = 4 rows per register group (1 for f64), R = 64 // N groups of N lanes and
  S = max(1, 64 * H // (M * N)) blocks side by side in a register:
  lane = j + N * (b % S) + N * S * ((i // H) % R), element = (M*N//64) * b + H * (i // (H*R)) + i % H.

Instantiated for the supported instructions (the table `INSTRUCTIONS`):
- v_mfma_f32_32x32x2f32 (E_A = E_B = 1, E_D = 16): A[i][k] in lane i + 32*k; B[k][j] in lane j + 32*k;
  D[i][j] in lane j + 32*((i//4) % 2), register 4*(i//8) + i%4.
- v_mfma_f32_16x16x4f32 (1, 1, 4): A[i][k] in lane i + 16*k; D[i][j] in lane j + 16*(i//4), register i%4.
- v_mfma_f32_32x32x8f16, v_mfma_f32_32x32x8bf16_1k (4, 4, 16): A[i][k] in lane i + 32*(k//4),
  element k%4; D as 32x32x2f32.
- v_mfma_f32_16x16x16f16, v_mfma_f32_16x16x16bf16_1k (4, 4, 4): A[i][k] in lane i + 16*(k//4),
  element k%4; D as 16x16x4f32.
- v_mfma_i32_32x32x16i8 (8, 8, 16; gfx942/gfx950): A[i][k] in lane i + 32*(k//8), element k%8.
- v_mfma_i32_32x32x8i8 (4, 4, 16; gfx90a only): A[i][k] in lane i + 32*(k//4), element k%4.
- v_mfma_f64_16x16x4f64 (1, 1, 4): A[i][k] in lane i + 16*k; D[i][j] in lane j + 16*(i%4),
  element (register pair) i//4.
- gfx950's double-K v_mfma_f32_32x32x16_f16/_bf16 (8, 8, 16): A[i][k] in lane i + 32*(k//8), element
  k%8; D as 32x32x2f32. v_mfma_f32_16x16x32_f16/_bf16 (8, 8, 4): A[i][k] in lane i + 16*(k//8),
  element k%8; D as 16x16x4f32 (the general rule above; the CDNA4 ISA guide's operand layout, a
  lane's 8 K values in 4 registers).
- multi-block f32: v_mfma_f32_32x32x1f32 (2 blocks; 1, 1, 32): A[b][i][0] in lane i + 32*b,
  D[b][i][j] in lane j + 32*((i//4) % 2), register 16*b + 4*(i//8) + i%4;
  v_mfma_f32_16x16x1f32 (4 blocks; 1, 1, 16): A[b][i][0] in lane i + 16*b, D[b][i][j] in lane
  j + 16*(i//4), register 4*b + i%4; v_mfma_f32_4x4x1f32 (16 blocks; 1, 1, 4): A[b][i][0] in lane
  i + 4*b, D[b][i][j] in lane j + 4*b, register i.

Arithmetic (what the host computes; the GPU's internal summation order is not specified by the ISA):
D[b][i][j] = C[b][i][j] + sum over k = 0, 1, ... in order of A[b][i][k] * B[b][k][j], each step a
fused multiply-add (the product exact, one rounding per step) in the accumulator type: f32 for
f32, f16 and bf16 inputs (f16 and bf16 products are exact in f32 anyway), f64 for f64, and i32
for i8 (products and sums wrap). A CPU then runs a k step as one vector fma per row segment.

AMDGPU lowering: one call of the LLVM intrinsic `INSTRUCTIONS[name].intrinsic`, with the operands
(A, B, C, cbsz, abid, blgp), the three immediates 0:
  llvm.amdgcn.mfma.f32.32x32x2f32(float, float, <16 x float>, i32 0, i32 0, i32 0) -> <16 x float>
  llvm.amdgcn.mfma.f32.16x16x4f32(float, float, <4 x float>, ...) -> <4 x float>
  llvm.amdgcn.mfma.f32.32x32x1f32(float, float, <32 x float>, ...) -> <32 x float>
  llvm.amdgcn.mfma.f32.16x16x1f32(float, float, <16 x float>, ...) -> <16 x float>
  llvm.amdgcn.mfma.f32.4x4x1f32(float, float, <4 x float>, ...) -> <4 x float>
  llvm.amdgcn.mfma.f32.32x32x8f16(<4 x half>, <4 x half>, <16 x float>, ...) -> <16 x float>
  llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half>, <4 x half>, <4 x float>, ...) -> <4 x float>
  llvm.amdgcn.mfma.f32.32x32x8bf16.1k(<4 x i16>, <4 x i16>, <16 x float>, ...) -> <16 x float>
  llvm.amdgcn.mfma.f32.16x16x16bf16.1k(<4 x i16>, <4 x i16>, <4 x float>, ...) -> <4 x float>
  llvm.amdgcn.mfma.i32.32x32x16.i8(i64, i64, <16 x i32>, ...) -> <16 x i32>     (8 x i8 packed)
  llvm.amdgcn.mfma.i32.32x32x8i8(i32, i32, <16 x i32>, ...) -> <16 x i32>       (4 x i8 packed)
  llvm.amdgcn.mfma.f64.16x16x4f64(double, double, <4 x double>, ...) -> <4 x double>
  llvm.amdgcn.mfma.f32.32x32x16.f16(<8 x half>, <8 x half>, <16 x float>, ...) -> <16 x float>  (gfx950)
  llvm.amdgcn.mfma.f32.16x16x32.f16(<8 x half>, <8 x half>, <4 x float>, ...) -> <4 x float>    (gfx950)
  llvm.amdgcn.mfma.f32.32x32x16.bf16(<8 x bfloat>, <8 x bfloat>, <16 x float>, ...) -> <16 x float>  (gfx950)
  llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat>, <8 x bfloat>, <4 x float>, ...) -> <4 x float>    (gfx950)
bf16 values travel as their 16 bits; packed operands hold element e in vector lane e (the low bits
first, as the registers do). LLVM aborts the process on an intrinsic its target lacks, so the
lowering checks `MfmaInstruction.targets` first.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .kernel import Expr, PrivateArray, Var, WaveOp, as_expr
from .kernel_printer import print_expr

BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "i8": 8, "i32": 32}
ALL_TARGETS = ("gfx90a", "gfx942", "gfx950")


@dataclass(frozen=True)
class MfmaInstruction:
    """One MFMA instruction: D[b] (m x n) = A[b] (m x k) * B[b] (k x n) + C[b] for b < blocks."""
    name: str               # the key: gfx90a's mnemonic (gfx942-only instructions in the same style)
    m: int
    n: int
    k: int
    blocks: int
    in_dtype: str           # A and B
    out_dtype: str          # C and D (the accumulation type)
    intrinsic: str          # the LLVM intrinsic
    targets: tuple[str, ...]
    gfx942_mnemonic: str    # how gfx942 and gfx950 assembly spell it
    wave_size: int = 64     # the lanes it spans: a whole wave of every CDNA target

    @property
    def a_elements(self) -> int:
        return self.k * self.m * self.blocks // self.wave_size

    @property
    def b_elements(self) -> int:
        return self.k * self.n * self.blocks // self.wave_size

    @property
    def d_elements(self) -> int:
        return self.m * self.n * self.blocks // self.wave_size

    @property
    def a_registers(self) -> int:
        return -(-self.a_elements * BITS[self.in_dtype] // 32)

    @property
    def b_registers(self) -> int:
        return -(-self.b_elements * BITS[self.in_dtype] // 32)

    @property
    def d_registers(self) -> int:
        return self.d_elements * BITS[self.out_dtype] // 32

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k * self.blocks

    # -- the lane layout: matrix entry -> (lane, element); numpy arrays or ints --

    def a_layout(self, block, i, k):
        """(lane, element) holding A[block][i][k]."""
        return self._input_layout(self.m, self.a_elements, block, i, k)

    def b_layout(self, block, k, j):
        """(lane, element) holding B[block][k][j]."""
        return self._input_layout(self.n, self.b_elements, block, j, k)

    def _input_layout(self, rows, per_lane, block, row, k):
        return row + rows * (block + self.blocks * (k // per_lane)), k % per_lane

    def d_layout(self, block, i, j):
        """(lane, element) holding C[block][i][j] and D[block][i][j]."""
        height = 1 if BITS[self.out_dtype] == 64 else 4
        groups = self.wave_size // self.n
        side_by_side = max(1, self.wave_size * height // (self.m * self.n))
        lane = j + self.n * (block % side_by_side) + self.n * side_by_side * ((i // height) % groups)
        element = (self.m * self.n // self.wave_size) * block + height * (i // (height * groups)) + i % height
        return lane, element

    @cached_property
    def lane_tables(self) -> dict[str, np.ndarray]:
        """For "a", "b" and "d": an int32 array [wave_size, elements] giving the row-major flat index, in
        A[blocks][m][k], B[blocks][k][n] or D[blocks][m][n], of each lane's element."""
        shapes = {"a": (self.blocks, self.m, self.k), "b": (self.blocks, self.k, self.n),
                  "d": (self.blocks, self.m, self.n)}
        layouts = {"a": self.a_layout, "b": self.b_layout, "d": self.d_layout}
        counts = {"a": self.a_elements, "b": self.b_elements, "d": self.d_elements}
        tables = {}
        for name, shape in shapes.items():
            lane, element = layouts[name](*np.indices(shape))
            table = np.full((self.wave_size, counts[name]), -1, dtype=np.int32)
            table[lane.ravel(), element.ravel()] = np.arange(int(np.prod(shape)), dtype=np.int32)
            assert (table >= 0).all() and np.unique(table).size == table.size, f"{self.name}: {name} is not a bijection"
            tables[name] = table
        return tables


def _instruction(name, m, n, k, blocks, in_dtype, out_dtype, intrinsic, gfx942_mnemonic, targets=ALL_TARGETS):
    return name, MfmaInstruction(name, m, n, k, blocks, in_dtype, out_dtype, "llvm.amdgcn.mfma." + intrinsic,
                                 targets, gfx942_mnemonic)


INSTRUCTIONS: dict[str, MfmaInstruction] = dict([
    _instruction("v_mfma_f32_32x32x2f32", 32, 32, 2, 1, "f32", "f32", "f32.32x32x2f32", "v_mfma_f32_32x32x2_f32"),
    _instruction("v_mfma_f32_16x16x4f32", 16, 16, 4, 1, "f32", "f32", "f32.16x16x4f32", "v_mfma_f32_16x16x4_f32"),
    _instruction("v_mfma_f32_32x32x1f32", 32, 32, 1, 2, "f32", "f32", "f32.32x32x1f32", "v_mfma_f32_32x32x1_2b_f32"),
    _instruction("v_mfma_f32_16x16x1f32", 16, 16, 1, 4, "f32", "f32", "f32.16x16x1f32", "v_mfma_f32_16x16x1_4b_f32"),
    _instruction("v_mfma_f32_4x4x1f32", 4, 4, 1, 16, "f32", "f32", "f32.4x4x1f32", "v_mfma_f32_4x4x1_16b_f32"),
    _instruction("v_mfma_f32_32x32x8f16", 32, 32, 8, 1, "f16", "f32", "f32.32x32x8f16", "v_mfma_f32_32x32x8_f16"),
    _instruction("v_mfma_f32_16x16x16f16", 16, 16, 16, 1, "f16", "f32", "f32.16x16x16f16", "v_mfma_f32_16x16x16_f16"),
    _instruction("v_mfma_f32_32x32x8bf16_1k", 32, 32, 8, 1, "bf16", "f32", "f32.32x32x8bf16.1k",
                 "v_mfma_f32_32x32x8_bf16"),
    _instruction("v_mfma_f32_16x16x16bf16_1k", 16, 16, 16, 1, "bf16", "f32", "f32.16x16x16bf16.1k",
                 "v_mfma_f32_16x16x16_bf16"),
    _instruction("v_mfma_i32_32x32x16i8", 32, 32, 16, 1, "i8", "i32", "i32.32x32x16.i8", "v_mfma_i32_32x32x16_i8",
                 targets=("gfx942", "gfx950")),
    _instruction("v_mfma_i32_32x32x8i8", 32, 32, 8, 1, "i8", "i32", "i32.32x32x8i8", "v_mfma_i32_32x32x8i8",
                 targets=("gfx90a",)),
    _instruction("v_mfma_f64_16x16x4f64", 16, 16, 4, 1, "f64", "f64", "f64.16x16x4f64", "v_mfma_f64_16x16x4_f64"),
    # gfx950's double-K f16/bf16 instructions: twice the K of 32x32x8 / 16x16x16 per issue.
    _instruction("v_mfma_f32_32x32x16_f16", 32, 32, 16, 1, "f16", "f32", "f32.32x32x16.f16", "v_mfma_f32_32x32x16_f16",
                 targets=("gfx950",)),
    _instruction("v_mfma_f32_16x16x32_f16", 16, 16, 32, 1, "f16", "f32", "f32.16x16x32.f16", "v_mfma_f32_16x16x32_f16",
                 targets=("gfx950",)),
    _instruction("v_mfma_f32_32x32x16_bf16", 32, 32, 16, 1, "bf16", "f32", "f32.32x32x16.bf16",
                 "v_mfma_f32_32x32x16_bf16", targets=("gfx950",)),
    _instruction("v_mfma_f32_16x16x32_bf16", 16, 16, 32, 1, "bf16", "f32", "f32.16x16x32.bf16",
                 "v_mfma_f32_16x16x32_bf16", targets=("gfx950",)),
])


# The share of a target's matrix peak (ir/targets.py) an instruction reaches, where it is not the
# whole: gfx950's f16/bf16 peak (2516 TFLOP/s) is its double-K instructions' rate; the gfx942
# instructions it keeps take as many cycles for half the K (CDNA4 ISA guide), so half the peak.
PEAK_SHARE = {
    ("v_mfma_f32_32x32x8f16", "gfx950"): 0.5,
    ("v_mfma_f32_16x16x16f16", "gfx950"): 0.5,
    ("v_mfma_f32_32x32x8bf16_1k", "gfx950"): 0.5,
    ("v_mfma_f32_16x16x16bf16_1k", "gfx950"): 0.5,
}


def peak_share(name: str, target_name: str) -> float:
    """The fraction of `target_name`'s matrix peak for the instruction's dtype that `name` reaches."""
    return PEAK_SHARE.get((name, target_name), 1.0)


# ---- the wave op ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class PrivateSlice:
    """Elements start .. start+count-1 of a private array: an accumulator kept in (per-lane) memory."""
    array: PrivateArray
    start: int
    count: int

    def loads(self) -> tuple[Expr, ...]:
        return tuple(self.array[self.start + r] for r in range(self.count))

    def __str__(self):
        return f"{self.array.name}[{self.start}:{self.start + self.count}]"


def _operands(values, dtype):
    """A tuple of expressions: one expression alone is a 1-tuple; numbers become constants."""
    if isinstance(values, (Expr, int, float)):
        values = (values,)
    return tuple(as_expr(v, dtype) for v in values)


@dataclass(frozen=True, eq=False, repr=False)
class Mfma(WaveOp):
    """dest = this lane's part of D = A * B + C, for the wave's 64 lanes (see the module docstring)."""
    instruction: str
    dest: tuple[Var, ...] | PrivateSlice
    a: tuple[Expr, ...]
    b: tuple[Expr, ...]
    c: tuple[Expr, ...] | PrivateSlice
    kind = "mfma"

    def __post_init__(self):
        inst = INSTRUCTIONS.get(self.instruction)
        in_dtype, out_dtype = (inst.in_dtype, inst.out_dtype) if inst else ("f32", "f32")
        object.__setattr__(self, "a", _operands(self.a, in_dtype))
        object.__setattr__(self, "b", _operands(self.b, in_dtype))
        if not isinstance(self.c, PrivateSlice):
            object.__setattr__(self, "c", _operands(self.c, out_dtype))
        if not isinstance(self.dest, PrivateSlice):
            object.__setattr__(self, "dest", tuple(self.dest))

    @property
    def spec(self) -> MfmaInstruction:
        return INSTRUCTIONS[self.instruction]

    @property
    def accumulator(self) -> tuple[Expr, ...]:
        """This lane's C values, in register order."""
        return self.c.loads() if isinstance(self.c, PrivateSlice) else self.c

    def defines(self):
        return () if isinstance(self.dest, PrivateSlice) else self.dest

    def reads(self):
        return self.a + self.b + self.accumulator

    def check(self, error, wave_size):
        inst = INSTRUCTIONS.get(self.instruction)
        if inst is None:
            error(f"unknown MFMA instruction {self.instruction!r}; supported: {', '.join(INSTRUCTIONS)}")
        if inst.wave_size != wave_size:
            error(f"{inst.name} spans a wave of {inst.wave_size} lanes; the kernel's waves have {wave_size}")
        for name, values, count, dtype in (("A", self.a, inst.a_elements, inst.in_dtype),
                                           ("B", self.b, inst.b_elements, inst.in_dtype),
                                           ("C", self.accumulator, inst.d_elements, inst.out_dtype)):
            if len(values) != count:
                error(f"{inst.name} takes {count} {name} value(s) per lane, got {len(values)}")
            wrong = [print_expr(v) for v in values if v.dtype != dtype]
            if wrong:
                error(f"{inst.name}: {name} values must be {dtype}, got {', '.join(wrong)}")
        if isinstance(self.c, PrivateSlice) and self.c.start + self.c.count > self.c.array.count:
            error(f"accumulator {self.c} lies outside {self.c.array.name}[{self.c.array.count}]")
        if isinstance(self.dest, PrivateSlice):
            if not isinstance(self.c, PrivateSlice) or str(self.dest) != str(self.c):
                error("a private-array result must be the accumulator itself (D overwrites C in place)")
            return
        if len(self.dest) != inst.d_elements or not all(isinstance(v, Var) for v in self.dest):
            error(f"{inst.name} defines {inst.d_elements} result Vars per lane, got {len(self.dest)}")
        wrong = [v.name for v in self.dest if v.dtype != inst.out_dtype]
        if wrong:
            error(f"{inst.name}: results must be {inst.out_dtype}, got {', '.join(wrong)}")

    def __repr__(self):
        """The printed statement (kernel_printer shows it; the compile cache keys on it)."""
        values = lambda exprs: ", ".join(print_expr(e) for e in exprs)
        operands = f"a=({values(self.a)}), b=({values(self.b)})"
        c = str(self.c) if isinstance(self.c, PrivateSlice) else f"({values(self.c)})"
        if isinstance(self.dest, PrivateSlice):
            return f"{self.dest} = mfma.{self.instruction}({operands}, c={c})"
        dtype = self.dest[0].dtype if self.dest else "?"
        return f"let ({', '.join(v.name for v in self.dest)}): {dtype} = mfma.{self.instruction}({operands}, c={c})"
