"""The GEMM solution space: the parameters of one kernel, as Tensile names them, and the pool.

A `Solution` fixes everything the kernel generator (generator.py) needs besides the problem:
  - `kind`: "mfma" (the waves multiply with one matrix instruction) or "valu" (every work-item
    keeps a thread tile of D in registers and multiplies with vector FMAs);
  - the macro tile MT0 x MT1 (rows of D x columns) a workgroup computes, and DepthU, the K
    elements staged in LDS per step of the main loop;
  - mfma: the instruction and the wave grid (waves along M x along N); each wave computes an
    (MT0 / waves_m) x (MT1 / waves_n) wave tile as blocks of the instruction's m x n;
  - valu: the thread tile (rows x columns per work-item) of a 16 x 16 workgroup;
  - `global_read_vector_width`: consecutive elements one work-item reads from global memory along
    the operand's contiguous dimension per load (the width of one buffer_load);
  - `lds_pad`: entries added to each K group of a K-major LDS tile against bank conflicts (a packed
    tile whose rows are contiguous in memory pads within its K groups instead: `lds_row_block`).
LDS holds two copies of each tile (double buffering: the next DepthU block is read from global
memory while the waves multiply the current one, one barrier per step).

`solution_pool(in_dtype, target)` is every valid solution for an input dtype on a target: the
instructions the target has for the dtype, and the VALU kernels. The name spells the parameters in
Tensile's style, e.g. `Cijk_MT128x128x16_MI32x32x2_W2x2_GRVW1_PAD4` (MI = matrix instruction) or
`Cijk_MT64x64x16_TT4x4_VALU_GRVW1_PAD4`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from ...ir.kernel_mfma import INSTRUCTIONS, MfmaInstruction
from ...ir.targets import Target

VALU_WORKGROUP = (16, 16)     # the VALU kernels' workgroup: x along N, y along M
MFMA_LANES_X = 16             # the MFMA kernels' workgroup x: 16 lanes, so staging can also run along K
ELEMENT_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i8": 1, "i32": 4}
LDS_PASS_BYTES = 128          # the LDS serves 32 banks of 4 bytes per clock: a wide access goes in passes of this


class StagingSlot(NamedTuple):
    """One vector of GRVW elements each work-item copies from global memory to LDS per K block:
    at x + workgroup_x * u along the contiguous dimension and y + Y*z + Y*Z * v across it, or, for
    a block narrower than the workgroup's x or shorter than its y z, the vector numbered
    (x + X * (y + Y*z)) + flat of the block's vectors taken row by row (`flat` not None)."""
    u: int
    v: int
    flat: int | None


def staging_slots(x_extent: int, yz_extent: int, workgroup: tuple[int, int, int], grvw: int) -> list[StagingSlot]:
    """The slots that stage an x_extent (contiguous) by yz_extent block with `workgroup` work-items,
    or [] when they cannot split it evenly."""
    wx, wy, wz = workgroup
    if x_extent % (wx * grvw) == 0 and yz_extent % (wy * wz) == 0:
        return [StagingSlot(u, v, None) for u in range(x_extent // (wx * grvw)) for v in range(yz_extent // (wy * wz))]
    items, vectors = wx * wy * wz, x_extent * yz_extent // grvw
    if x_extent % grvw or vectors % items:
        return []
    return [StagingSlot(0, 0, flat) for flat in range(0, vectors, items)]


@dataclass(frozen=True)
class Solution:
    kind: str                       # "mfma" or "valu"
    mt0: int                        # macro tile rows (M)
    mt1: int                        # macro tile columns (N)
    depth_u: int                    # K per main-loop step
    instruction: str = ""           # mfma: INSTRUCTIONS key
    waves: tuple[int, int] = (1, 1)  # mfma: waves along M, along N
    thread_tile: tuple[int, int] = (1, 1)  # valu: rows, columns per work-item
    global_read_vector_width: int = 1
    lds_pad: int = 4

    @property
    def name(self) -> str:
        core = f"Cijk_MT{self.mt0}x{self.mt1}x{self.depth_u}"
        if self.kind == "mfma":
            inst = self.spec
            core += f"_MI{inst.m}x{inst.n}x{inst.k}_W{self.waves[0]}x{self.waves[1]}"
        else:
            core += f"_TT{self.thread_tile[0]}x{self.thread_tile[1]}_VALU"
        return f"{core}_GRVW{self.global_read_vector_width}_PAD{self.lds_pad}"

    @property
    def spec(self) -> MfmaInstruction:
        return INSTRUCTIONS[self.instruction]

    @property
    def workgroup_size(self) -> tuple[int, int, int]:
        """mfma: (16, 4, waves), a wave's lane being x + 16 y; valu: 16 x 16."""
        if self.kind == "mfma":
            return MFMA_LANES_X, self.spec.wave_size // MFMA_LANES_X, self.waves[0] * self.waves[1]
        return VALU_WORKGROUP[0], VALU_WORKGROUP[1], 1

    @property
    def workgroup_items(self) -> int:
        x, y, z = self.workgroup_size
        return x * y * z

    @property
    def wave_tile(self) -> tuple[int, int]:
        return self.mt0 // self.waves[0], self.mt1 // self.waves[1]

    @property
    def blocks(self) -> tuple[int, int]:
        """mfma: instruction blocks per wave along M and N."""
        inst = self.spec
        return self.wave_tile[0] // inst.m, self.wave_tile[1] // inst.n

    @property
    def k_pack(self) -> int:
        """K elements stored together per LDS row entry: what one lane reads at once."""
        return self.spec.a_elements if self.kind == "mfma" else 1

    def row_major_lds(self, k_contiguous: bool) -> bool:
        """Whether an operand tile is kept row-major in LDS (Tensile's TransposeLDS): when its K is
        contiguous in memory and a lane reads one K value at a time (k_pack 1: f32, f64), so that
        staging copies rows instead of transposing them. Packed K values (f16, bf16, i8) stay
        K-major, where staging writes each run of k_pack values together anyway."""
        return k_contiguous and self.k_pack == 1

    @property
    def local_read_vector_width(self) -> int:
        """K values a lane reads from a row-major LDS tile at once (Tensile's LocalReadVectorWidth):
        16 bytes where DepthU holds whole runs of them for every lane of an instruction K step (f32:
        4, f64: 2), else 1. The MFMAs then consume K in a permuted order, the same for A and B
        (generator.py: mfma_step), and the rows of a row-major tile lie 16 bytes further apart."""
        if self.kind != "mfma" or self.k_pack != 1:
            return 1
        width = 16 // ELEMENT_BYTES[self.spec.in_dtype]
        return width if self.depth_u % (width * self.spec.k) == 0 and self.depth_u // width % 2 == 0 else 1

    def staging_k_run(self, rows: int, k_contiguous: bool) -> int:
        """K values a work-item stages from each row of its vector of a tile of `rows` rows: k_pack
        for a packed tile whose rows are contiguous in memory when the tile has a vector of k_pack
        runs for every work-item (its GRVW rows' entries of k_pack K values are then each written
        whole, one ds_write of k_pack elements), else 1."""
        if k_contiguous or self.k_pack == 1 or not staging_slots(
                rows, self.depth_u // self.k_pack, self.workgroup_size, self.global_read_vector_width):
            return 1
        return self.k_pack

    def lds_row_block(self, k_contiguous: bool) -> int | None:
        """For a packed tile whose rows are contiguous in memory: the rows after which one entry of
        padding follows in each K group, max(GRVW, the entries of one LDS pass). A work-item writes
        in each of GRVW consecutive rows, and the lanes of a pass write rows GRVW apart: the pad
        after every block puts them in different banks, while the fragment reads of a pass (a
        pass's worth of consecutive rows in one block) stay contiguous. None for other tiles."""
        if k_contiguous or self.k_pack == 1:
            return None
        entries_per_pass = LDS_PASS_BYTES // (self.k_pack * ELEMENT_BYTES[self.spec.in_dtype])
        return max(self.global_read_vector_width, entries_per_pass)

    def lds_stride(self, rows: int, k_contiguous: bool) -> int:
        """Elements between consecutive rows of a row-major LDS tile, or between consecutive K groups
        of a K-major one ((rows + pad) entries of k_pack values, the pad being lds_pad, or one entry
        per lds_row_block rows): generator.py's layouts of an operand tile of `rows` rows (M for A,
        N for B) by DepthU. A row-major row is DepthU + 1 elements (an odd number of words: lanes
        reading one K value of consecutive rows hit different banks), or DepthU + W for a
        local_read_vector_width W > 1 (an odd number of 16-byte units, DepthU being a multiple of 2W:
        the 8 lanes of a ds_read_b128 pass read 8 rows over all 32 banks)."""
        if self.row_major_lds(k_contiguous):
            return self.depth_u + self.local_read_vector_width
        block = self.lds_row_block(k_contiguous)
        return (rows + (self.lds_pad if block is None else rows // block)) * self.k_pack

    def lds_tile(self, rows: int, k_contiguous: bool) -> int:
        """Elements of one LDS buffer of such a tile: its rows, or its DepthU / k_pack K groups."""
        lines = rows if self.row_major_lds(k_contiguous) else self.depth_u // self.k_pack
        return lines * self.lds_stride(rows, k_contiguous)

    def lds_elements(self, a_k_contiguous: bool, b_k_contiguous: bool) -> tuple[int, int]:
        """One buffer of the A tile and of the B tile, in elements."""
        return self.lds_tile(self.mt0, a_k_contiguous), self.lds_tile(self.mt1, b_k_contiguous)

    def lds_bytes(self, in_dtype: str, a_k_contiguous: bool, b_k_contiguous: bool) -> int:
        """Both tiles, double-buffered, in the input dtype."""
        return 2 * sum(self.lds_elements(a_k_contiguous, b_k_contiguous)) * ELEMENT_BYTES[in_dtype]

    def most_lds_bytes(self, in_dtype: str) -> int:
        """lds_bytes in the larger layout of each operand: what the solution needs for any problem."""
        return max(self.lds_bytes(in_dtype, a, b) for a in (False, True) for b in (False, True))

    def accumulators(self) -> int:
        """Accumulator values per work-item."""
        if self.kind == "mfma":
            return self.blocks[0] * self.blocks[1] * self.spec.d_elements
        return self.thread_tile[0] * self.thread_tile[1]

    def check(self) -> str | None:
        """Why the parameters do not make a kernel, or None."""
        x, y, z = self.workgroup_size
        if self.kind == "mfma":
            inst = self.spec
            if inst.blocks != 1 or inst.m != inst.n:
                return f"{inst.name}: only single-block square instructions make GEMM wave tiles"
            if self.wave_tile[0] % inst.m or self.wave_tile[1] % inst.n or min(self.blocks) < 1:
                return f"wave tile {self.wave_tile} is not a multiple of the instruction's {inst.m}x{inst.n}"
            if self.depth_u % inst.k:
                return f"DepthU {self.depth_u} is not a multiple of the instruction's K {inst.k}"
        elif self.mt0 != VALU_WORKGROUP[1] * self.thread_tile[0] or self.mt1 != VALU_WORKGROUP[0] * self.thread_tile[1]:
            return f"macro tile {self.mt0}x{self.mt1} is not the workgroup times the thread tile {self.thread_tile}"
        if self.depth_u % self.k_pack:
            return f"DepthU {self.depth_u} is not a multiple of the {self.k_pack} K values a lane reads"
        # Staging (generator.py) runs x along an operand's contiguous dimension, in vectors of GRVW, and
        # y + Y*z along the other (in runs of staging_k_run K values, where that is K and they split):
        # each operand's block of tile rows by DepthU must split evenly.
        for rows in (self.mt0, self.mt1):
            for extents in ((rows, self.depth_u), (self.depth_u, rows)):
                if not staging_slots(*extents, (x, y, z), self.global_read_vector_width):
                    return (f"a {extents[0]}x{extents[1]} block of the macro tile {self.mt0}x{self.mt1} by DepthU "
                            f"{self.depth_u} does not split into vectors of {self.global_read_vector_width} over the "
                            f"workgroup {x}x{y}x{z}")
        return None


# The instructions a GEMM of each input dtype uses, preferred first (single-block, square).
MFMA_BY_DTYPE = {
    "f32": ("v_mfma_f32_32x32x2f32", "v_mfma_f32_16x16x4f32"),
    "f16": ("v_mfma_f32_32x32x16_f16", "v_mfma_f32_16x16x32_f16", "v_mfma_f32_32x32x8f16", "v_mfma_f32_16x16x16f16"),
    "bf16": ("v_mfma_f32_32x32x16_bf16", "v_mfma_f32_16x16x32_bf16", "v_mfma_f32_32x32x8bf16_1k",
             "v_mfma_f32_16x16x16bf16_1k"),
    "i8": ("v_mfma_i32_32x32x16i8", "v_mfma_i32_32x32x8i8"),
    "f64": ("v_mfma_f64_16x16x4f64",),
}


def solution_pool(in_dtype: str, compute_dtype: str, target: Target) -> list[Solution]:
    """Every valid solution for inputs of `in_dtype` accumulated in `compute_dtype` on `target`,
    MFMA ones first (an instruction counts when the target has it and it accumulates in that dtype)."""
    return list(pool_of(in_dtype, compute_dtype, target.name, target.max_lds_bytes_per_workgroup))


@lru_cache(maxsize=None)
def pool_of(in_dtype: str, compute_dtype: str, target_name: str, max_lds_bytes: int) -> tuple[Solution, ...]:
    """solution_pool, built once per dtypes and target (what of the target it depends on): every
    compile selects from it."""
    pool = []
    for name in MFMA_BY_DTYPE.get(in_dtype, ()):
        inst = INSTRUCTIONS[name]
        if target_name not in inst.targets or inst.out_dtype != compute_dtype:
            continue
        for waves in ((2, 2), (1, 1), (2, 1), (1, 2)):
            for blocks in ((2, 2), (1, 1), (2, 1), (1, 2), (4, 2), (2, 4), (4, 4)):
                for depth_factor in (1, 2, 4):
                    depth_u = max(inst.k * depth_factor * (4 if inst.k <= 2 else 1), 8)
                    for grvw in (1, 16 // ELEMENT_BYTES[in_dtype]):
                        pool.append(Solution("mfma", waves[0] * blocks[0] * inst.m, waves[1] * blocks[1] * inst.n,
                                             depth_u, instruction=name, waves=waves,
                                             global_read_vector_width=grvw))
    for tile in ((4, 4), (8, 8), (2, 2), (1, 1)):
        for depth_u in (16, 32):
            pool.append(Solution("valu", VALU_WORKGROUP[1] * tile[0], VALU_WORKGROUP[0] * tile[1], depth_u,
                                 thread_tile=tile))
    unique = dict.fromkeys(pool)
    return tuple(s for s in unique if s.check() is None and s.most_lds_bytes(in_dtype) <= max_lds_bytes)


def solution_by_name(name: str, in_dtype: str, compute_dtype: str, target: Target) -> Solution:
    for solution in solution_pool(in_dtype, compute_dtype, target):
        if solution.name == name:
            return solution
    raise ValueError(f"no GEMM solution named {name!r} for {in_dtype} inputs accumulated in {compute_dtype} "
                     f"on {target.name}")
