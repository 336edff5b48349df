"""The kernel survey: compile a fixed corpus of programs for a target and tabulate, per kernel,
what an AMD performance engineer reads first, with the flags that say a kernel is slow for a
reason the compiler could remove.

    python -m cdnajit survey [--target gfx942] [--only softmax,gemm_f16_large] [--flagged]

Per kernel: its program (the kernel class), grid, VGPRs/AGPRs, spills, waves per SIMD and what
limits them, the widest and narrowest global load per lane in its gfx9 code, the waits for global
loads that no MFMA overlaps, and the performance model's efficiency (roofline time / modelled
time) and limiter (runtime/perf_model.py). FLAGS, each a predicate on a `SurveyRow`:
- spills: the backend spilled VGPRs or SGPRs;
- occupancy 1: one wave per SIMD or fewer, nothing to hide latency with;
- narrow loads: a memory-bound kernel (limited by HBM, cache or CU memory traffic) whose global
  loads move less than 16 bytes per lane;
- small grid: fewer workgroups than CUs on kernel inputs over LARGE_INPUT_BYTES (the read-only
  buffers its code loads from: a parameter may be declared and never read, as the single-pass
  scan's state-zeroing kernel declares the scan's input to keep it apart from another scan's);
- no MFMA overlap: a kernel with MFMAs where every wait for global loads comes before any MFMA
  issued after those loads (no prefetch of the next tile behind this tile's math).
The corpus's shapes are large enough to fill an MI300X (a few to tens of MB per input).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.numpy as cnp
from cdnajit.codegen import amdgpu
from cdnajit.ir import kernel as K
from cdnajit.ir.kernel_verifier import sub_expressions
from cdnajit.ir.targets import get_target
from cdnajit.ir.types import NUMPY_DTYPES

LARGE_INPUT_BYTES = 4 * 2**20
WIDEST_LOAD_BYTES = 16
# The bytes per lane of a gfx9 global/buffer load or store, by the instruction's suffix.
ACCESS_BYTES = {"dwordx4": 16, "dwordx3": 12, "dwordx2": 8, "dword": 4, "short_d16": 2, "short_d16_hi": 2,
                "ushort": 2, "sshort": 2, "short": 2, "ubyte": 1, "sbyte": 1, "byte": 1, "ubyte_d16": 1,
                "sbyte_d16": 1, "ubyte_d16_hi": 1, "sbyte_d16_hi": 1, "byte_d16_hi": 1}
GLOBAL_LOAD = re.compile(r"^\s*(?:global|buffer)_load_(\w+)", re.M)
MEMORY_BOUND = frozenset({"hbm", "cache", "cu memory"})


def layernorm(x):
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    return centred / cnp.sqrt((centred * centred).mean(axis=-1, keepdims=True) + 1e-5)


def scatter_add(indices, values):
    return cnp.zeros(values.shape[0], values.dtype).at[indices].add(values)


def conv3x3(images, kernels):
    return lax.conv_general_dilated(images, kernels, (1, 1), "SAME")


def attention(q, k, v):
    scores = cnp.einsum("hqd,hkd->hqk", q, k) / np.float32(np.sqrt(q.shape[-1])).astype(q.dtype)
    return cnp.einsum("hqk,hkd->hqd", cj.nn.softmax(scores, axis=-1), v)


# name -> (function, argument types): the survey's fixed corpus.
CORPUS = {
    "elementwise_f32": (lambda x: x * 2.0 + 1.0, [("f32", (2048, 2048))]),
    "elementwise_f16": (lambda x: cnp.tanh(x) * x, [("f16", (2048, 2048))]),
    "softmax_f32": (lambda x: cj.nn.softmax(x, axis=-1), [("f32", (4096, 1024))]),
    "softmax_f16": (lambda x: cj.nn.softmax(x, axis=-1), [("f16", (4096, 1024))]),
    "layernorm_f32": (layernorm, [("f32", (4096, 1024))]),
    "sum_all_f32": (lambda x: x.sum(), [("f32", (2**24,))]),
    "sum_rows_f32": (lambda x: x.sum(axis=1), [("f32", (4096, 1024))]),
    "sum_columns_f32": (lambda x: x.sum(axis=0), [("f32", (4096, 1024))]),
    "cumsum_row_f32": (lambda x: cnp.cumsum(x), [("f32", (2**22,))]),
    "transpose_f32": (lambda x: x.T + 1.0, [("f32", (2048, 2048))]),
    "scatter_add_f32": (scatter_add, [("i32", (2**20,)), ("f32", (2**20,))]),
    **{f"gemm_{dtype}_{size_class}": (lambda a, b: a @ b, [(dtype, (n, n)), (dtype, (n, n))])
       for dtype in ("f32", "f16", "bf16", "f64") for size_class, n in (("small", 256), ("large", 4096))},
    "conv3x3_f32": (conv3x3, [("f32", (8, 64, 56, 56)), ("f32", (64, 64, 3, 3))]),
    "attention_f16": (attention, [("f16", (8, 1024, 64))] * 3),
}


@dataclass(frozen=True)
class SurveyRow:
    program: str
    kernel: str
    grid: tuple
    input_bytes: int             # the read-only buffers the kernel loads from
    vgprs: int
    vgprs_allocated: int         # by the kernel descriptor
    agprs: int
    spills: int
    occupancy: float
    occupancy_limiter: str
    load_bytes: tuple            # (narrowest, widest) global load per lane in bytes; () without loads
    mfmas: int
    waits_before_mfma: int       # waits for global loads with no MFMA between the loads and the wait
    waits_overlapped: int        # waits with an MFMA between
    efficiency: float
    limiter: str
    finding: str

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(name for name, predicate in FLAGS.items() if predicate(self))


FLAGS = {
    "spills": lambda r: r.spills > 0,
    "occupancy 1": lambda r: r.occupancy <= 1,
    "narrow loads": lambda r: r.limiter in MEMORY_BOUND and bool(r.load_bytes) and r.load_bytes[0] < WIDEST_LOAD_BYTES,
    "small grid": lambda r: r.input_bytes > LARGE_INPUT_BYTES and int(np.prod(r.grid)) < get_target().compute_units,
    "no MFMA overlap": lambda r: r.mfmas > 0 and r.waits_overlapped == 0,
}


def load_widths(assembly: str) -> tuple:
    widths = [ACCESS_BYTES[suffix] for suffix in GLOBAL_LOAD.findall(assembly) if suffix in ACCESS_BYTES]
    return (min(widths), max(widths)) if widths else ()


def load_waits(assembly: str) -> tuple[int, int, int]:
    """(MFMAs, waits for global loads with no MFMA since the loads, waits with one), reading the
    code in order: a wait on vmcnt after global loads either found an MFMA issued after the
    loads (their latency overlapped the math) or did not."""
    mfmas = before = overlapped = 0
    pending, math_since = False, False
    for line in assembly.splitlines():
        instruction = line.strip()
        if instruction.startswith(("global_load", "buffer_load")):
            pending, math_since = True, False
        elif instruction.startswith("v_mfma"):
            mfmas += 1
            math_since = True
        elif instruction.startswith("s_waitcnt") and "vmcnt" in instruction and pending:
            overlapped += math_since
            before += not math_since
            pending = False
    return mfmas, before, overlapped


def survey_program(name: str, target: str) -> list[SurveyRow]:
    fn, types = CORPUS[name]
    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, shape[0], shape).astype(np.int32) if dtype == "i32"
              else rng.standard_normal(shape).astype(NUMPY_DTYPES[dtype]) for dtype, shape in types]
    compiled = cj.jit(fn, target=target).lower(*arrays).compile()
    rows = []
    for report, kernel in zip(compiled.kernels, compiled.executable.kernels):
        read = loaded_buffers(kernel)
        input_bytes = sum(kernel.launch_count(b) * NUMPY_DTYPES[b.dtype].itemsize for b in kernel.buffers
                          if b.readonly and b.name in read)
        assembly = amdgpu.assembly(kernel, target)
        mfmas, before, overlapped = load_waits(assembly)
        rows.append(SurveyRow(
            program=name, kernel=report.name, grid=report.grid, input_bytes=input_bytes, vgprs=report.vgpr_count, vgprs_allocated=report.vgpr_allocated,
            agprs=report.agpr_count, spills=report.vgpr_spills + report.sgpr_spills, occupancy=report.occupancy,
            occupancy_limiter=report.occupancy_limiter, load_bytes=load_widths(assembly), mfmas=mfmas,
            waits_before_mfma=before, waits_overlapped=overlapped, efficiency=report.efficiency,
            limiter=report.limiter, finding="; ".join(report.findings[1:])))
    return rows


def loaded_buffers(kernel: K.Kernel) -> set[str]:
    """The names of the buffers that the kernel's statements load from."""
    def loads(expr):
        if isinstance(expr, K.Load):
            yield expr.buffer.name
        for sub in sub_expressions(expr):
            yield from loads(sub)

    def operands(value):
        if isinstance(value, K.Expr):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                yield from operands(item)

    return {name for stmt in K.walk(kernel.body) for field in dataclasses.fields(stmt)
            for expr in operands(getattr(stmt, field.name)) for name in loads(expr)}


def survey(target: str = "gfx942", only=None) -> list[SurveyRow]:
    names = list(CORPUS) if not only else list(only)
    unknown = [n for n in names if n not in CORPUS]
    if unknown:
        raise ValueError(f"unknown survey program(s) {', '.join(unknown)}; the corpus is: {', '.join(CORPUS)}")
    return [row for name in names for row in survey_program(name, target)]


COLUMNS = (
    ("program", lambda r: r.program),
    ("kernel", lambda r: r.kernel),
    ("grid", lambda r: "x".join(str(d) for d in r.grid if d != 1) or "1"),
    ("VGPR/AGPR (alloc)", lambda r: f"{r.vgprs}/{r.agprs} ({r.vgprs_allocated})"),
    ("spills", lambda r: str(r.spills)),
    ("waves/SIMD", lambda r: f"{r.occupancy:g} ({r.occupancy_limiter})"),
    ("load B/lane", lambda r: "-" if not r.load_bytes else "{}-{}".format(*r.load_bytes)),
    ("waits before MFMA", lambda r: f"{r.waits_before_mfma}/{r.waits_before_mfma + r.waits_overlapped}" if r.mfmas
     else "-"),
    ("efficiency", lambda r: f"{r.efficiency:.0%}"),
    ("limiter", lambda r: r.limiter),
    ("flags", lambda r: ", ".join(r.flags) or "-"),
)


def format_survey(rows: list[SurveyRow], findings: bool = True) -> str:
    table = [[header for header, _ in COLUMNS]] + [[cell(r) for _, cell in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    lines = ["  ".join(text.ljust(width) for text, width in zip(line, widths)).rstrip() for line in table]
    counts = {flag: sum(flag in r.flags for r in rows) for flag in FLAGS}
    lines += ["", "flagged: " + ", ".join(f"{flag} {n}" for flag, n in counts.items()) + f" of {len(rows)} kernels"]
    if findings:
        lines += ["", "findings:", *(f"  {r.kernel} ({r.program}): {r.finding}" for r in rows if r.finding)]
    return "\n".join(lines) + "\n"
