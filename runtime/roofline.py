"""The roofline model of a kernel on a target: FLOPs and bytes counted from the kernel IR and its
launch, arithmetic intensity, what bounds it, and its modelled time.

Counting (`count`) follows what the work-items execute:
- every work-item of the grid runs the body; an `if` whose condition depends only on the launch
  indices and on variables computed from them (`i < n`) counts the work-items that take each
  branch exactly; loop trip counts multiply (per work-item, so grid-stride loops are exact), and
  uniform loops of at most UNROLL_LIMIT trips are walked iteration by iteration so that their
  variable is known inside (tree reductions). A condition or bound that depends on data or on a
  scalar argument cannot be known: both branches are counted, a loop is counted once, and the
  result says `exact=False`.
- FLOPs: one per floating-point add, sub, mul, div, rem, max, min, negation and comparison; a
  math function counts the floating-point instructions of its implementation in
  codegen/mathlib.py (an fma counts 2), and also one transcendental; a wave reduction is one
  operation per butterfly step per lane. f16/bf16 are computed in f32 (ir/kernel.py), so their
  FLOPs run at the f32 vector peak. Integer (index) arithmetic is not counted.
- Bytes: global loads and stores executed, times the element size (`load_bytes`, `store_bytes`);
  the memory model (`dram_bytes`) caps each buffer's traffic at its size in each direction, as
  the caches (256 MB of Infinity Cache on MI300X) serve repeated reads of the same data. LDS
  traffic is reported apart and is not part of the DRAM roof.
- Matrix FLOPs: an MFMA is 2*m*n*k*blocks FLOPs per wave on the matrix unit, counted at the
  matrix peak for its input dtype (`Counts.matrix_flops`).

- Accesses, for the performance model (runtime/perf_model.py): the global loads and stores of a
  buffer in one straight-line body (`Access`) with the 64-byte segments a sample wave's addresses
  touch; the LDS loads and stores likewise (`LdsAccess`) with their bank conflicts; the most global
  loads of one straight-line body (what a wave has in flight); and the load phases (a body that
  loads global memory and passes a barrier, unless all it loads is prefetched: `prefetched`). The sample wave is the first of workgroup 0
  (for a body it does not run, the first wave that does: `sample_wave`); a loop
  whose trip is unknown is sampled at its first trip (`samples`: values known only there).

Roofline time = max(FLOPs / peak of the unit for their dtype, DRAM bytes / HBM bandwidth), with
the peaks of ir/targets.py; the kernel is compute-bound when the first term is the larger. It is
the least time the kernel can take; runtime/perf_model.py models the time it does take.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import llvmlite.ir as ir
import numpy as np

from ..codegen import mathlib
from ..codegen.mfma_host import terms
from ..ir.kernel import (Assign, AtomicRMW, Barrier, Binary, Cast, Compare, Const, Expr, For, ForSpan, If, Kernel, Let,
                         Load, Math, Prefetch, ScalarParam, Select, SpanOffset, Special, Store, Unary, Var, WaveOp,
                         WaveReduce, While, walk)
from ..ir.kernel_mfma import Mfma
from ..ir.kernel_verifier import control_expressions, sub_expressions
from ..ir.targets import Target
from ..ir.types import FLOATS, NUMPY_DTYPES

UNROLL_LIMIT = 64
# Math functions that XLA's cost analysis calls transcendental (the rest are simple float ops).
NOT_TRANSCENDENTAL = frozenset({"abs", "sign", "floor", "ceil", "trunc", "round", "is_finite", "fma"})
FLOAT_INSTRUCTIONS = frozenset({"fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "fcmp"})


@lru_cache(maxsize=None)
def math_flops(fn: str, dtype: str) -> int:
    """Floating-point instructions in the math library's implementation of `fn` for `dtype`."""
    float_type = ir.DoubleType() if dtype == "f64" else ir.FloatType()
    function = mathlib.function(ir.Module(name="count"), fn, float_type)
    flops = 0
    for block in function.blocks:
        for instruction in block.instructions:
            if instruction.opname in FLOAT_INSTRUCTIONS:
                flops += 1
            elif instruction.opname == "call" and instruction.callee.name.startswith("llvm."):
                flops += 2 if instruction.callee.name.startswith("llvm.fma.") else 1
    return flops


def wave_reduce_steps(kernel: Kernel) -> int:
    """The combining steps of a wave reduction: the xor butterfly's log2 of the wave size."""
    return kernel.wave_size.bit_length() - 1


def compute_dtype(dtype: str) -> str:
    return "f32" if dtype in ("f16", "bf16") else dtype


@dataclass
class Counts:
    """What one launch of a kernel executes, summed over all its work-items."""
    flops: dict = field(default_factory=dict)            # compute dtype -> FLOPs on the vector unit
    matrix_flops: dict = field(default_factory=dict)     # input dtype -> FLOPs on the matrix unit
    instruction_flops: dict = field(default_factory=dict)  # MFMA instruction name -> its share of them
    transcendentals: float = 0.0
    loads: dict = field(default_factory=dict)            # global buffer name -> bytes loaded
    stores: dict = field(default_factory=dict)           # global buffer name -> bytes stored
    lds_bytes: float = 0.0                               # LDS bytes read and written
    lds_accesses: dict = field(default_factory=dict)     # (kind, buffer, index) -> LdsAccess
    exact: bool = True
    accesses: dict = field(default_factory=dict)         # (kind, buffer, position) -> Access
    loads_in_flight: int = 0                             # most global loads of one straight-line body
    load_phases: float = 0.0                             # per work-item: bodies run that load, then pass a barrier

    @property
    def issued_bytes(self) -> float:
        """Global bytes the memory system moves for the accesses: whole 64-byte segments."""
        return sum(a.issued_bytes for a in self.accesses.values())

    @property
    def total_flops(self) -> float:
        return sum(self.flops.values()) + sum(self.matrix_flops.values())

    @property
    def lds_clock_bytes(self) -> float:
        """LDS bytes weighted by their bank conflicts: what the LDS's clocks are spent on."""
        return sum(a.bytes * a.conflict for a in self.lds_accesses.values())

    @property
    def load_bytes(self) -> float:
        return sum(self.loads.values())

    @property
    def store_bytes(self) -> float:
        return sum(self.stores.values())


SEGMENT_BYTES = 64   # the unit in which a wave's global access moves data between the caches and the CU
LDS_BANKS = 32       # of 4 bytes each: the LDS serves 128 bytes per clock when no two lanes' dwords share a bank


def bank_conflict(byte_addresses: np.ndarray, element_bytes: int) -> float:
    """The LDS clocks a wave's access takes over the conflict-free count: the lanes go through in
    passes of 128 bytes (32 lanes of 4 bytes, 16 of 8, 8 of 16), and a pass takes as many clocks
    as the most distinct dwords any one bank holds (lanes reading the same dword share it)."""
    dwords_per_lane = max(element_bytes // 4, 1)
    lanes_per_pass = LDS_BANKS * 4 // max(element_bytes, 4)
    degrees = []
    for start in range(0, len(byte_addresses), lanes_per_pass):
        first = byte_addresses[start:start + lanes_per_pass] // 4
        dwords = np.unique((first[:, None] + np.arange(dwords_per_lane)).reshape(-1))
        degrees.append(np.bincount(dwords % LDS_BANKS).max() / dwords_per_lane if len(dwords) else 1.0)
    return max(float(np.mean(degrees)), 1.0) if degrees else 1.0


def merged_conflict(addresses: np.ndarray, element_bytes: int) -> float:
    """The bank conflict degree of one body's LDS accesses to a buffer, `addresses` being (access,
    lane) byte addresses of a sample wave. The backend merges accesses into one wide ds_read/ds_write
    (b64, b128) as LLVM's load-store vectorizer does: accesses whose addresses differ by the same
    constant in every lane, taken in the order of that constant, when each lane's elements are
    consecutive and start at a multiple of the width (the MFMA kernels' fragments; a lane's values
    at addresses that differ from lane to lane, as in a rotated layout, stay apart). Each group of
    such accesses takes its widest width, and each merged access's degree is averaged."""
    groups = {}
    for lane_addresses in addresses:
        groups.setdefault(tuple(lane_addresses - lane_addresses[0]), []).append(lane_addresses)
    degrees = []
    for rows in groups.values():
        ordered = np.array(sorted(rows, key=lambda row: row[0]))
        count = len(ordered)
        for width in (16, 8, 4, element_bytes):
            per = width // element_bytes
            if per < 1 or count % per:
                continue
            starts = ordered[::per]
            expected = np.repeat(starts, per, axis=0) + (np.arange(count) % per * element_bytes)[:, None]
            if per == 1 or (np.array_equal(ordered, expected) and not (starts % width).any()):
                degrees += [bank_conflict(lane_starts, max(width, element_bytes)) for lane_starts in starts]
                break
    return float(np.mean(degrees))


@dataclass
class LdsAccess:
    """The LDS loads (or stores) of one buffer in one straight-line body: their bytes over the launch
    and the sample wave's byte addresses of each, whose bank conflicts `conflict` gives (1: none,
    and where the addresses cannot be known)."""
    kind: str
    buffer: str
    element_bytes: int
    bytes: float = 0.0
    addresses: list = field(default_factory=list)
    sampled: set = field(default_factory=set)

    @property
    def conflict(self) -> float:
        if not self.addresses or len({len(a) for a in self.addresses}) != 1 or not len(self.addresses[0]):
            return 1.0
        return max(merged_conflict(np.array(self.addresses), self.element_bytes), 1.0)


@dataclass
class Access:
    """The global loads (or stores) of one buffer in one straight-line body of the kernel, summed
    over their executions. `segments` and `lanes` come from a sample wave (the first wave of
    workgroup 0, at the first trip of enclosing loops whose trip is unknown): the 64-byte segments
    the body's accesses touch together (two loads that each use half of the same segments touch
    them once) and the lanes they serve. `known` is False while no address could be known
    (data-dependent indices): such accesses count as contiguous."""
    kind: str            # "load" or "store"
    buffer: str
    element_bytes: int
    bytes: float = 0.0   # bytes the work-items ask for
    lanes: int = 0
    touched: set = field(default_factory=set)
    sampled: set = field(default_factory=set)   # the index expressions whose first wave is counted
    starts: list = field(default_factory=list)  # per sampled index: each lane's first byte
    offsets: dict = field(default_factory=dict)  # indices of unknown address: their terms -> constant terms

    @property
    def known(self) -> bool:
        return bool(self.lanes)

    @property
    def lane_bytes(self) -> int:
        """Bytes per lane of one access as the GPU backend issues it: where the body's accesses give
        every lane runs of consecutive elements (a tile row's 4 f32, say, or a row kernel's groups of
        4 at its span offsets), LLVM merges each run, up to 16 bytes; the shortest run counts. Where
        no address is known (an index from data: a tile a work-item took from a counter), the runs
        are those of indices that differ only in a constant term (a work-item's x + 0, x + 1, ...).
        An access that repeats another's address on every lane (an edge tile's row clamped onto the one
        next to it) is a merged load of its own, and is counted once."""
        run = 1
        if not self.starts and self.offsets:
            run = min(shortest_run(sorted(constants)) for constants in self.offsets.values())
        elif len(self.starts) > 1 and len({len(s) for s in self.starts}) == 1 and len(self.starts[0]):
            ordered = np.sort(np.array(self.starts), axis=0)
            ordered = ordered[np.concatenate([[True], (np.diff(ordered, axis=0) != 0).any(axis=1)])]
            steps = np.diff(ordered, axis=0) == self.element_bytes
            if (steps == steps[:, :1]).all():   # every lane's accesses in runs of the same lengths
                breaks = np.flatnonzero(~steps[:, 0])
                run = int(np.diff(np.concatenate([[-1], breaks, [len(self.starts) - 1]])).min())
        return max(self.element_bytes, min(self.element_bytes * run, 16))

    @property
    def segments(self) -> int:
        return len(self.touched)

    @property
    def segment_ratio(self) -> float:
        """Bytes moved per byte asked for: 1 for contiguous accesses, up to 64 / element bytes."""
        if not self.lanes:
            return 1.0
        return max(1.0, self.segments * SEGMENT_BYTES / (self.lanes * self.element_bytes))

    @property
    def issued_bytes(self) -> float:
        return self.bytes * self.segment_ratio


def index_terms(index: Expr) -> tuple[tuple[str, ...], int]:
    """An index as a sum: the texts of its terms that are not constants (sorted), and the sum of those that are."""
    parts = terms(index)
    return (tuple(sorted(repr(t) for t in parts if not isinstance(t, Const))),
            sum(int(t.value) for t in parts if isinstance(t, Const)))


def shortest_run(values: list[int]) -> int:
    """The length of the shortest run of consecutive integers in sorted, distinct `values`."""
    breaks = [position for position in range(1, len(values)) if values[position] != values[position - 1] + 1]
    edges = [0, *breaks, len(values)]
    return min(b - a for a, b in zip(edges, edges[1:]))


class LaunchCounter:
    """Walks a kernel's body once for all work-items of its launch. Values known from the launch
    indices are numpy arrays over the axes (workgroup id x, y, z, work-item id x, y, z), or
    scalars; None is a value that depends on data. `weight` is how many times each work-item
    executes the statement being walked."""

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.grid = kernel.launch_grid()
        self.arguments = dict(kernel.arguments)
        self.shape = tuple(self.grid) + tuple(kernel.workgroup_size)
        self.size = int(np.prod(self.shape))
        self.counts = Counts()
        self.samples: dict = {}   # a variable unknown in general -> its value at the first trip of its loop
        self.body = kernel.body     # the statements being walked: accesses are grouped by body
        self.span = None            # the span being walked: its accesses at its variable are vectors

    # -- values --

    def axis(self, position, extent):
        shape = [1] * 6
        shape[position] = extent
        return np.arange(extent, dtype=np.int64).reshape(shape)

    def value(self, e, env):
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Var):
            return env.get((e.name, e.dtype))
        if isinstance(e, ScalarParam) and e.dtype not in FLOATS:  # known for the launch its arguments bind
            return self.arguments.get(e.name)
        if isinstance(e, SpanOffset):  # as the GPU runs it
            return self.value(e.offset(self.kernel.workgroup_items, item_major=True), env)
        if isinstance(e, Special):
            if e.kind == "workgroup_id":
                return self.axis(e.dim, self.grid[e.dim])
            if e.kind == "workitem_id":
                return self.axis(3 + e.dim, self.kernel.workgroup_size[e.dim])
            return (self.kernel.workgroup_size if e.kind == "workgroup_size" else self.grid)[e.dim]
        if e.dtype in FLOATS or isinstance(e, (Load, Math)) or any(s.dtype in FLOATS for s in sub_expressions(e)):
            return None  # floats and data never steer control flow we can count
        operands = [self.value(s, env) for s in sub_expressions(e)]
        if any(v is None for v in operands):
            return None
        if isinstance(e, Unary):
            return np.logical_not(operands[0]) if e.dtype == "bool" else (
                -operands[0] if e.op == "neg" else np.invert(operands[0]))
        if isinstance(e, Compare):
            return INDEX_COMPARES[e.op](*operands)
        if isinstance(e, Select):
            return np.where(*operands)
        if isinstance(e, Cast):
            return np.not_equal(operands[0], 0) if e.dtype == "bool" else operands[0]
        if isinstance(e, Binary) and e.op in INDEX_BINARIES:
            return INDEX_BINARIES[e.op](*operands)
        return None

    # -- weights --

    def total(self, weight) -> float:
        """Sum of `weight` over every work-item of the launch."""
        weight = np.asarray(weight, dtype=np.float64)
        return float(weight.sum()) * (self.size // max(weight.size, 1)) if weight.size else 0.0

    # -- costs --

    def add(self, table, key, amount):
        table[key] = table.get(key, 0.0) + amount

    def sample_env(self, env):
        return {**env, **{key: value for key, value in self.samples.items() if env.get(key) is None}}

    def record_access(self, kind, buffer, index, env, weight, nbytes):
        """Add one execution of a global access to its body's `Access`, sampling its first wave's segments."""
        key = (kind, buffer.name, id(self.body))
        access = self.counts.accesses.get(key)
        itemsize = NUMPY_DTYPES[buffer.dtype].itemsize
        vector = self.span.per_item if self.span is not None and self.span.indexes_by_var(index) else 1
        if access is None:
            access = self.counts.accesses[key] = Access(kind, buffer.name, itemsize * vector)
        access.bytes += nbytes
        if id(index) in access.sampled or env is None:
            return
        access.sampled.add(id(index))
        addresses = self.value(index, self.sample_env(env))
        if addresses is None:
            terms, constant = index_terms(index)
            access.offsets.setdefault(terms, set()).add(constant)
            return
        wave = self.sample_wave(np.asarray(weight) > 0)
        lanes, active = self.first_wave(addresses, wave), self.first_wave(np.asarray(weight) > 0, wave)
        first = lanes[active] * itemsize   # each lane's access: element_bytes from there
        access.starts.append(first)
        for offset in [*range(0, access.element_bytes, SEGMENT_BYTES), access.element_bytes - 1]:
            access.touched.update(((first + offset) // SEGMENT_BYTES).tolist())
        access.lanes += int(active.sum())

    def record_lds_access(self, kind, buffer, index, env, weight, nbytes):
        self.counts.lds_bytes += nbytes
        key = (kind, buffer.name, id(self.body))
        element_bytes = NUMPY_DTYPES[buffer.dtype].itemsize
        access = self.counts.lds_accesses.setdefault(key, LdsAccess(kind, buffer.name, element_bytes))
        access.bytes += nbytes
        if id(index) in access.sampled or env is None:
            return
        access.sampled.add(id(index))
        elements = self.value(index, self.sample_env(env))
        if elements is not None:
            active = self.first_wave(np.asarray(weight) > 0)
            access.addresses.append(self.first_wave(elements)[active] * element_bytes
                                    + self.kernel.lds_offsets()[buffer.name])

    def first_wave(self, values, wave: tuple = ((0, 0, 0), 0)) -> np.ndarray:
        """`values` (over the launch axes) at the lanes of a wave (a workgroup's index and the wave's
        number in it: workgroup 0's first by default), in lane order."""
        (x, y, z), number = wave
        group = np.broadcast_to(np.asarray(values), self.shape)[x, y, z]
        lanes = np.ascontiguousarray(group.transpose(2, 1, 0)).reshape(-1)
        return lanes[number * self.kernel.wave_size:(number + 1) * self.kernel.wave_size]

    def sample_wave(self, active) -> tuple:
        """The wave that samples an access that the work-items where `active` holds execute: workgroup 0's
        first, or where none of its lanes does (an edge workgroup's branch), the first that has one that
        does, in the order of the launch's workgroups (x fastest) and their waves."""
        if self.first_wave(active).any() or not np.any(active):
            return (0, 0, 0), 0
        items = np.broadcast_to(active, self.shape).transpose(2, 1, 0, 5, 4, 3).reshape(-1)
        first = int(np.argmax(items))
        group, item = divmod(first, self.kernel.workgroup_items)
        x, rest = group % self.grid[0], group // self.grid[0]
        return (x, rest % self.grid[1], rest // self.grid[1]), item // self.kernel.wave_size

    def expression_cost(self, e, times, env=None, weight=1.0):
        c = self.counts
        if isinstance(e, Load):
            nbytes = NUMPY_DTYPES[e.dtype].itemsize * times
            if e.buffer.space == "global":
                self.add(c.loads, e.buffer.name, nbytes)
                self.record_access("load", e.buffer, e.index, env, weight, nbytes)
            elif e.buffer.space == "lds":
                self.record_lds_access("load", e.buffer, e.index, env, weight, nbytes)
        elif isinstance(e, Math) and e.args[0].dtype in FLOATS:
            self.add(c.flops, compute_dtype(e.args[0].dtype), math_flops(e.fn, compute_dtype(e.args[0].dtype)) * times)
            c.transcendentals += 0 if e.fn in NOT_TRANSCENDENTAL else times
        elif isinstance(e, (Binary, Unary, Compare)) and sub_expressions(e)[0].dtype in FLOATS:
            self.add(c.flops, compute_dtype(sub_expressions(e)[0].dtype), times)
        for sub in sub_expressions(e):
            self.expression_cost(sub, times, env, weight)

    def store_cost(self, s: Store | AtomicRMW, times, env, weight):
        nbytes = NUMPY_DTYPES[s.buffer.dtype].itemsize * times
        if s.buffer.space == "global":
            self.add(self.counts.stores, s.buffer.name, nbytes)
            self.record_access("store", s.buffer, s.index, env, weight, nbytes)
        elif s.buffer.space == "lds":
            self.record_lds_access("store", s.buffer, s.index, env, weight, nbytes)

    # -- statements --

    def walk(self, stmts, env: dict, weight) -> None:
        loads = straight_line_loads(stmts)
        self.counts.loads_in_flight = max(self.counts.loads_in_flight, loads)
        if any(isinstance(s, Barrier) for s in stmts) and straight_line_loads(
                [s for position, s in enumerate(stmts) if not prefetched(stmts, position)]):
            self.counts.load_phases += self.total(weight) / self.size   # waits for its loads before the barrier
        for s in stmts:
            self.body = stmts
            times = self.total(weight)
            if isinstance(s, (Let, Assign)):
                self.expression_cost(s.value, times, env, weight)
                key = (s.var.name, s.var.dtype)
                env[key] = self.value(s.value, env)
                if env[key] is None:
                    self.samples[key] = self.value(s.value, self.sample_env(env))
            elif isinstance(s, (Store, AtomicRMW)):
                self.expression_cost(s.index, times, env, weight)
                self.expression_cost(s.value, times, env, weight)
                self.store_cost(s, times, env, weight)
                if isinstance(s, AtomicRMW) and s.buffer.space == "global":   # reads the element too
                    self.add(self.counts.loads, s.buffer.name, NUMPY_DTYPES[s.buffer.dtype].itemsize * times)
                if isinstance(s, AtomicRMW):   # defines its old value
                    env[(s.var.name, s.var.dtype)] = None
            elif isinstance(s, While):  # a wait for another workgroup: its body once, trips unknown
                self.expression_cost(s.cond, times, env, weight)
                self.counts.exact = False
                forget(env, s.body)
                self.walk(s.body, env, weight)
                forget(env, s.body)
            elif isinstance(s, If):
                self.walk_if(s, env, weight, times)
            elif isinstance(s, For):
                self.walk_for(s, env, weight, times)
            elif isinstance(s, ForSpan):
                self.walk_span(s, env, weight, times)
            elif isinstance(s, WaveOp):
                if isinstance(s, Mfma):  # `times` counts lanes; a wave's lanes issue one instruction
                    spec = s.spec
                    flops = 2 * spec.m * spec.n * spec.k * spec.blocks * times / spec.wave_size
                    self.add(self.counts.matrix_flops, spec.in_dtype, flops)
                    self.add(self.counts.instruction_flops, spec.name, flops)
                for expr in s.reads():
                    self.expression_cost(expr, times, env, weight)
                if isinstance(s, WaveReduce) and s.value.dtype in FLOATS:
                    self.add(self.counts.flops, compute_dtype(s.value.dtype), wave_reduce_steps(self.kernel) * times)
                for var in s.defines():
                    env[(var.name, var.dtype)] = None
            elif not isinstance(s, (Barrier, Prefetch)):  # a prefetch is a hint: no traffic of its own
                raise NotImplementedError(f"roofline: statement {type(s).__name__}")

    def walk_if(self, s: If, env, weight, times):
        self.expression_cost(s.cond, times, env, weight)
        cond = self.value(s.cond, env)
        if cond is None:
            self.counts.exact = False
            then_weight = else_weight = weight
        else:
            then_weight, else_weight = weight * np.asarray(cond), weight * np.logical_not(cond)
        for body, branch_weight in ((s.then, then_weight), (s.orelse, else_weight)):
            self.walk(body, dict(env), branch_weight)
        forget(env, s.then + s.orelse)  # the branches may have changed them

    def walk_span(self, s: ForSpan, env, weight, times):
        """A span as the GPU runs it (ir/kernel.py: ForSpan): the body walked once, at the work-item's
        first element, `per_item` times over; its accesses at the span's variable are vectors of
        `per_item` elements per lane."""
        self.expression_cost(s.start, times, env, weight)
        key = (s.var.name, s.var.dtype)
        env[key] = self.value(s.element(0, self.kernel.workgroup_items, item_major=True), env)
        self.span = s
        self.walk(s.body, env, weight * s.per_item)
        self.span = None
        forget(env, s.body)
        env.pop(key, None)

    def walk_for(self, s: For, env, weight, times):
        for expr in (s.start, s.stop, s.step):
            self.expression_cost(expr, times, env, weight)
        start, stop, step = (self.value(e, env) for e in (s.start, s.stop, s.step))
        key = (s.var.name, s.var.dtype)
        trips = None
        if start is None or stop is None or step is None:
            self.counts.exact = False  # counted as one trip
        else:
            trips = np.maximum(0, -(-(np.asarray(stop) - np.asarray(start)) // np.asarray(step)))
        if trips is not None and np.ndim(trips) == 0 and trips <= UNROLL_LIMIT:
            for i in range(int(trips)):  # a known, short loop: walk each iteration with its index
                env[key] = start + i * step
                self.walk(s.body, env, weight)
        else:  # once, with the loop variable and what the body changes unknown, times the trips
            forget(env, s.body)
            env[key] = None
            sample_start = self.value(s.start, self.sample_env(env))
            if sample_start is not None:
                self.samples[key] = sample_start
            self.walk(s.body, env, weight if trips is None else weight * trips)
        forget(env, s.body)
        env.pop(key, None)
        self.samples.pop(key, None)


def forget(env: dict, stmts) -> None:
    """Make unknown every variable the statements (at any depth) assign or define."""
    for s in stmts:
        if isinstance(s, (Let, Assign, AtomicRMW)):
            env[(s.var.name, s.var.dtype)] = None
        elif isinstance(s, WaveOp):
            for var in s.defines():
                env[(var.name, var.dtype)] = None
        elif isinstance(s, (For, ForSpan)):
            env[(s.var.name, s.var.dtype)] = None
        for body in s.children():
            forget(env, body)


def straight_line_loads(stmts) -> int:
    """Global loads in the statements outside nested loops: what a wave can have in flight at once
    before it needs the first of them (the loads of one loop trip, of one elementwise body)."""
    loads = 0
    for s in stmts:
        if isinstance(s, For):
            continue
        expressions = s.reads() if isinstance(s, WaveOp) else [e for e in vars(s).values() if isinstance(e, Expr)]
        for e in expressions:
            loads += sum(1 for sub in walk_expression(e) if isinstance(sub, Load) and sub.buffer.space == "global")
        for body in s.children():
            loads += straight_line_loads(body)
    return loads


def prefetched(stmts, position: int) -> bool:
    """Whether statement `position` is an alongside if of ifs and LDS stores followed by MFMAs
    before the next barrier: the GPU backends issue its loads before that math and wait for them
    after it (codegen/gpu_kernel.py), so their latency is hidden by it, not paid as a phase."""
    stmt = stmts[position]
    if not (isinstance(stmt, If) and stmt.alongside and all(isinstance(s, (If, Store)) for s in walk([stmt]))):
        return False
    for later in stmts[position + 1:]:
        if any(isinstance(s, Barrier) for s in walk([later])):
            return False
        if any(isinstance(s, Mfma) for s in walk([later])):
            return True
    return False


def walk_expression(e):
    yield e
    for sub in sub_expressions(e):
        yield from walk_expression(sub)


def truncating_division(a, b):
    """The kernel IR's integer division (C's, truncating) for index values; x/0 as the graph IR: -1."""
    a, b = np.asarray(a), np.asarray(b)
    safe = np.where(b == 0, 1, b)
    quotient = np.sign(a) * np.sign(safe) * (np.abs(a) // np.abs(safe))
    return np.where(b == 0, -1, quotient)


def truncating_remainder(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.where(b == 0, a, a - np.where(b == 0, 1, b) * truncating_division(a, b))


INDEX_BINARIES = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": truncating_division, "rem": truncating_remainder,
    "max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "shift_left": np.left_shift, "shift_right_arithmetic": np.right_shift, "shift_right_logical": np.right_shift,
}
INDEX_COMPARES = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
                  "ne": np.not_equal}


def count(kernel: Kernel) -> Counts:
    """FLOPs, transcendentals and bytes that one launch of the kernel executes."""
    counter = LaunchCounter(kernel)
    counter.walk(kernel.body, {}, np.float64(1.0))
    return counter.counts


@dataclass(frozen=True)
class Roofline:
    flops: float
    transcendentals: float
    bytes: float                 # DRAM bytes of the model
    load_bytes: float            # global bytes the work-items load and store
    store_bytes: float
    lds_bytes: float
    intensity: float             # FLOPs per DRAM byte
    bound: str                   # "memory" or "compute"
    compute_unit: str            # e.g. "vector f32": the unit and dtype of the FLOPs' peak
    compute_us: float
    memory_us: float
    modelled_us: float
    exact: bool


def roofline(kernel: Kernel, target: Target, counts: Counts | None = None) -> Roofline:
    """The kernel's place against the target's roofs: vector FLOPs at the vector peak, MFMA FLOPs at the matrix peak."""
    counts = counts or count(kernel)
    sizes = {b.name: kernel.launch_count(b) * NUMPY_DTYPES[b.dtype].itemsize for b in kernel.buffers}
    dram = sum(min(n, sizes[name]) for table in (counts.loads, counts.stores) for name, n in table.items())
    by_unit = {(dtype, "vector"): flops for dtype, flops in counts.flops.items()}
    by_unit.update({(dtype, "matrix"): flops for dtype, flops in counts.matrix_flops.items()})
    compute_s = sum(flops / target.peak(dtype, unit) for (dtype, unit), flops in by_unit.items())
    memory_s = dram / target.hbm_bandwidth
    dtype, unit = max(by_unit, key=by_unit.get) if by_unit else ("f32", "vector")
    flops = counts.total_flops
    return Roofline(
        flops=flops, transcendentals=counts.transcendentals, bytes=dram, load_bytes=counts.load_bytes,
        store_bytes=counts.store_bytes, lds_bytes=counts.lds_bytes,
        intensity=flops / dram if dram else float("inf") if flops else 0.0,
        bound="compute" if compute_s > memory_s else "memory", compute_unit=f"{unit} {dtype}",
        compute_us=compute_s * 1e6, memory_us=memory_s * 1e6, modelled_us=max(compute_s, memory_s) * 1e6,
        exact=counts.exact)
