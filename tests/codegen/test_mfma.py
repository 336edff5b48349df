"""MFMA wave op: each instruction runs on the host with the lane layout AMD documents, and compiles to
the v_mfma instruction on gfx942/gfx90a.

The layout the kernels load and store by is this file's own transcription of AMD's matrix
instruction calculator ("register to matrix element mapping", gfx9, no CBSZ/ABID/BLGP), written
independently of ir/kernel_mfma.py: a host lowering that put any entry in another lane or register
would compute a permuted product and fail the comparison with numpy (the mutated-layout tests show
the comparison catches a swap of two lanes).
"""
import re
from fractions import Fraction

import numpy as np
import pytest

import cdnajit as cj
from cdnajit.codegen import amdgpu, host
from cdnajit.codegen.mfma_host import groups
from cdnajit.errors import VerifyError
from cdnajit.ir import kernel as K
from cdnajit.ir.kernel_mfma import INSTRUCTIONS, Mfma, PrivateSlice
from cdnajit.runtime.launch import compile_kernel

RNG = np.random.default_rng(5)
WORKGROUP, GROUPS = 128, 2
WAVES = WORKGROUP * GROUPS // 64  # every wave multiplies its own matrices


# ---- the documented layout, lane/element -> matrix entry ------------------------------------

def a_entry(inst, lane, element):
    """(block, i, k) of the A value in `element` of `lane`: i = lane % M, block = (lane / M) % B,
    k = E_A * floor(lane / (M*B)) + element, with E_A = K*M*B/64 values per lane."""
    per_lane = inst.k * inst.m * inst.blocks // 64
    return (lane // inst.m) % inst.blocks, lane % inst.m, per_lane * (lane // (inst.m * inst.blocks)) + element


def b_entry(inst, lane, element):
    """(block, k, j): as A with j = lane % N."""
    block, j, k = a_entry(inst, lane, element)  # M == N for every supported instruction
    return block, k, j


def d_entry(inst, lane, element):
    """(block, i, j) of the C/D value in register (f64: register pair) `element` of `lane`."""
    j = lane % inst.n
    if inst.out_dtype == "f64":  # 16x16x4f64: i = 4 * pair + floor(lane / 16)
        return 0, 4 * element + lane // 16, j
    if inst.m == 32:  # 16 registers a block: i = 8 * floor(GPR / 4) + 4 * floor(lane / 32) + GPR % 4
        register = element % 16
        return element // 16, 8 * (register // 4) + 4 * (lane // 32) + register % 4, j
    if inst.m == 16:  # 4 registers a block: i = 4 * floor(lane / 16) + GPR % 4
        return element // 4, 4 * (lane // 16) + element % 4, j
    return lane // 4, element, j  # 4x4x1, 16 blocks side by side: i = GPR, block = floor(lane / 4)


def source_table(inst, matrix):
    """[64, elements]: the flat row-major index, in A[B][M][K], B[B][K][N] or D[B][M][N], of each
    lane's element."""
    entry, count, shape = {
        "a": (a_entry, inst.a_elements, (inst.blocks, inst.m, inst.k)),
        "b": (b_entry, inst.b_elements, (inst.blocks, inst.k, inst.n)),
        "d": (d_entry, inst.d_elements, (inst.blocks, inst.m, inst.n))}[matrix]
    lane, element = np.meshgrid(np.arange(64), np.arange(count), indexing="ij")
    return np.ravel_multi_index(np.broadcast_arrays(*entry(inst, lane, element)), shape).astype(np.int32)


def test_documented_layout_matches_the_instruction_table():
    """The test's calculator formulas and ir/kernel_mfma.py's forward layout are the same bijection."""
    for inst in INSTRUCTIONS.values():
        for matrix in "abd":
            np.testing.assert_array_equal(source_table(inst, matrix), inst.lane_tables[matrix], err_msg=inst.name)


# Entries worked out by hand from the formulas AMD's matrix instruction calculator prints with
# --detail-instruction (the two 4x4x1f32 ones are its README's own example).
CALCULATOR_FACTS = [
    # instruction, matrix, (block, row, col), (lane, register or element)
    ("v_mfma_f32_4x4x1f32", "a", (5, 3, 0), (4 * 5 + 3, 0)),          # A lane: 4 * block + i
    ("v_mfma_f32_4x4x1f32", "d", (9, 2, 1), (4 * 9 + 1, 2)),          # D GPR: i, lane: 4 * block + j
    ("v_mfma_f32_32x32x1f32", "d", (1, 13, 7), (32 + 7, 16 + 4 + 1)),  # GPR 16*block + 4*(i/8) + i%4
    ("v_mfma_f32_16x16x1f32", "d", (3, 9, 2), (16 * 2 + 2, 12 + 1)),   # GPR 4*block + i%4, lane 16*(i/4) + j
    ("v_mfma_f32_32x32x2f32", "a", (0, 17, 1), (32 + 17, 0)),          # lane 32 * k + i
    ("v_mfma_f32_32x32x8f16", "b", (0, 6, 30), (32 + 30, 2)),          # lane 32 * (k/4) + j, bits 16*(k%2) of v[k%4/2]
    ("v_mfma_i32_32x32x16i8", "a", (0, 3, 13), (32 + 3, 5)),           # lane 32 * (k/8) + i, byte k%8
    ("v_mfma_f64_16x16x4f64", "d", (0, 6, 5), (16 * 2 + 5, 1)),        # lane 16 * (i%4) + j, pair i/4
]


@pytest.mark.parametrize("name, matrix, entry, expected", CALCULATOR_FACTS)
def test_calculator_facts(name, matrix, entry, expected):
    inst = INSTRUCTIONS[name]
    layout = {"a": inst.a_layout, "b": inst.b_layout, "d": inst.d_layout}[matrix]
    assert tuple(int(v) for v in layout(*entry)) == expected


# Blocks and per-lane register counts (A, B, C/D), as the calculator and the ISA guide list them.
SHAPES = {
    "v_mfma_f32_32x32x2f32": (1, 1, 1, 16), "v_mfma_f32_16x16x4f32": (1, 1, 1, 4),
    "v_mfma_f32_32x32x1f32": (2, 1, 1, 32), "v_mfma_f32_16x16x1f32": (4, 1, 1, 16),
    "v_mfma_f32_4x4x1f32": (16, 1, 1, 4),
    "v_mfma_f32_32x32x8f16": (1, 2, 2, 16), "v_mfma_f32_16x16x16f16": (1, 2, 2, 4),
    "v_mfma_f32_32x32x8bf16_1k": (1, 2, 2, 16), "v_mfma_f32_16x16x16bf16_1k": (1, 2, 2, 4),
    "v_mfma_i32_32x32x16i8": (1, 2, 2, 16), "v_mfma_i32_32x32x8i8": (1, 1, 1, 16),
    "v_mfma_f64_16x16x4f64": (1, 2, 2, 8),
    "v_mfma_f32_32x32x16_f16": (1, 4, 4, 16), "v_mfma_f32_16x16x32_f16": (1, 4, 4, 4),
    "v_mfma_f32_32x32x16_bf16": (1, 4, 4, 16), "v_mfma_f32_16x16x32_bf16": (1, 4, 4, 4),
}


def test_instruction_table_blocks_and_registers():
    assert set(SHAPES) == set(INSTRUCTIONS)
    for name, inst in INSTRUCTIONS.items():
        assert (inst.blocks, inst.a_registers, inst.b_registers, inst.d_registers) == SHAPES[name], name


# ---- host execution --------------------------------------------------------------------------

def mfma_kernel(inst, in_place=False):
    """Each lane loads its A, B and C values by the map buffers (the layout tables), runs the
    instruction and stores its D values by the D map; the four waves use separate matrices."""
    sizes = {"a": inst.blocks * inst.m * inst.k, "b": inst.blocks * inst.k * inst.n, "d": inst.blocks * inst.m * inst.n}
    counts = {"a": inst.a_elements, "b": inst.b_elements, "d": inst.d_elements}
    dtypes = {"a": inst.in_dtype, "b": inst.in_dtype, "d": inst.out_dtype}
    inputs = {m: K.GlobalBuffer(m.upper(), dtypes[m], WAVES * sizes[m], readonly=True) for m in "abd"}
    maps = {m: K.GlobalBuffer("map_" + m, "i32", 64 * counts[m], readonly=True) for m in "abd"}
    out = K.GlobalBuffer("out", inst.out_dtype, WAVES * sizes["d"])
    t, lane, wave = K.Var("t", "i32"), K.Var("lane", "i32"), K.Var("wave", "i32")
    body = [K.Let(t, K.workitem_id(0)), K.Let(lane, t % 64),
            K.Let(wave, K.workgroup_id(0) * (WORKGROUP // 64) + t / 64)]
    values = {m: [K.Var(f"{m}{e}", dtypes[m]) for e in range(counts[m])] for m in "abd"}

    def load(m, e):
        return inputs[m][wave * sizes[m] + maps[m][lane * counts[m] + e]]
    body += [K.Let(values[m][e], load(m, e)) for m in "ab" for e in range(counts[m])]
    private = []
    if in_place:
        acc = K.PrivateArray("acc", inst.out_dtype, counts["d"])
        private, accumulator = [acc], PrivateSlice(acc, 0, counts["d"])
        body += [K.Store(acc, e, load("d", e)) for e in range(counts["d"])]
        body.append(Mfma(inst.name, accumulator, values["a"], values["b"], accumulator))
        results = [acc[e] for e in range(counts["d"])]
    else:
        body += [K.Let(values["d"][e], load("d", e)) for e in range(counts["d"])]
        results = [K.Var(f"r{e}", inst.out_dtype) for e in range(counts["d"])]
        body.append(Mfma(inst.name, results, values["a"], values["b"], values["d"]))
    body += [K.Store(out, wave * sizes["d"] + maps["d"][lane * counts["d"] + e], results[e])
             for e in range(counts["d"])]
    params = [inputs["a"], inputs["b"], inputs["d"], out] + [maps[m] for m in "abd"]
    return K.Kernel(f"mfma_{inst.name}{'_in_place' if in_place else ''}", params=params, grid=(GROUPS,),
                    workgroup_size=(WORKGROUP,), body=body, private=private)


def random_operands(inst):
    in_type, out_type = cj.ir.numpy_dtype(inst.in_dtype), cj.ir.numpy_dtype(inst.out_dtype)
    shapes = [(WAVES, inst.blocks, inst.m, inst.k), (WAVES, inst.blocks, inst.k, inst.n),
              (WAVES, inst.blocks, inst.m, inst.n)]
    if inst.in_dtype == "i8":  # C over all of i32, so that sums wrap
        return (RNG.integers(-128, 128, shapes[0]).astype(in_type), RNG.integers(-128, 128, shapes[1]).astype(in_type),
                RNG.integers(-2**31, 2**31, shapes[2]).astype(out_type))
    return tuple(RNG.standard_normal(s).astype(t) for s, t in zip(shapes, (in_type, in_type, out_type)))


def run(inst, a, b, c, tables=None, in_place=False):
    tables = tables or {m: source_table(inst, m) for m in "abd"}
    out = np.zeros_like(c)
    compile_kernel(mfma_kernel(inst, in_place))(a.ravel(), b.ravel(), c.ravel(), out.reshape(-1),
                                                *(tables[m].ravel() for m in "abd"))
    return out


def rounded(exact: Fraction, dtype):
    """`exact` rounded to nearest, ties to even, in a float dtype: the f64 nearest, then whichever of
    its dtype neighbours is nearest (rounding the f64 again could round twice)."""
    guess = dtype.type(float(exact))
    candidates = [guess, np.nextafter(guess, dtype.type(np.inf)), np.nextafter(guess, dtype.type(-np.inf))]
    bits = {4: np.uint32, 8: np.uint64}[dtype.itemsize]
    return min(candidates, key=lambda v: (abs(Fraction(float(v)) - exact), int(np.array(v).view(bits)) & 1))


def fused_multiply_add(x, y, z):
    """x * y + z elementwise with one rounding, to z's dtype, exactly (through fractions)."""
    exact = np.frompyfunc(lambda u, v, w: rounded(Fraction(float(u)) * Fraction(float(v)) + Fraction(float(w)),
                                                  z.dtype), 3, 1)
    return exact(x, y, z).astype(z.dtype)


def sequential_reference(a, b, c):
    """C + sum over k in order of A[:, k] * B[k, :] in the accumulation dtype, each step a fused
    multiply-add (ir/kernel_mfma.py's arithmetic). f16 and bf16 products are exact in f32, and i8
    products and i32 sums wrap alike, so those take numpy's multiply and add."""
    acc_type = c.dtype
    d = c.copy()
    for k in range(a.shape[-1]):
        x, y = a[..., :, k:k + 1].astype(acc_type), b[..., k:k + 1, :].astype(acc_type)
        if a.dtype in (np.float32, np.float64):
            d = fused_multiply_add(x, y, d)
        else:
            with np.errstate(over="ignore"):
                d = d + x * y
    return d


# The in-place accumulator (a private array slice) on one instruction of each accumulation type.
IN_PLACE = ["v_mfma_f32_32x32x2f32", "v_mfma_f32_16x16x16bf16_1k", "v_mfma_i32_32x32x16i8", "v_mfma_f64_16x16x4f64"]


@pytest.mark.parametrize("name, in_place", [(name, False) for name in INSTRUCTIONS] + [(n, True) for n in IN_PLACE])
def test_instruction_on_the_host(name, in_place):
    inst = INSTRUCTIONS[name]
    a, b, c = random_operands(inst)
    d = run(inst, a, b, c, in_place=in_place)
    # Exact: the host sums in k order in the accumulation dtype, as the reference does; f16 and
    # bf16 products are exact in f32, and i8 products and i32 sums wrap identically.
    np.testing.assert_array_equal(d, sequential_reference(a, b, c))
    if inst.out_dtype == "i32":
        expected = (c.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)  # wraps mod 2**32
        np.testing.assert_array_equal(d, expected)
    else:
        # Against A@B+C in f64: k + 1 roundings of the accumulation dtype, each at most eps/2
        # relative to a partial sum bounded by |C| + |A| @ |B|.
        exact = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
        scale = np.abs(c.astype(np.float64)) + np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
        assert np.all(np.abs(d - exact) <= (inst.k + 1) * np.finfo(c.dtype).eps * scale)


def test_f16_accumulates_in_f32_not_f16():
    """300 * 300 overflows f16 and 1 + 16 * 90000 needs 21 bits: only f32 products and sums hold them."""
    inst = INSTRUCTIONS["v_mfma_f32_16x16x16f16"]
    a, b, c = random_operands(inst)
    a[...], b[...], c[...] = 300, 300, 1
    np.testing.assert_array_equal(run(inst, a, b, c), np.float32(1 + 16 * 90000))


MUTATIONS = [("a", 0, 1), ("a", 3, 35), ("b", 5, 37), ("b", 16, 17), ("d", 2, 34), ("d", 8, 9)]


@pytest.mark.parametrize("name", ["v_mfma_f32_32x32x8f16", "v_mfma_f32_16x16x4f32"])
@pytest.mark.parametrize("matrix, lane, other", MUTATIONS)
def test_a_wrong_lane_mapping_fails(name, matrix, lane, other):
    """Swap what two lanes load (or store) in a copy of the documented layout: the comparison fails."""
    inst = INSTRUCTIONS[name]
    a, b, c = random_operands(inst)
    tables = {m: source_table(inst, m) for m in "abd"}
    tables[matrix][[lane, other]] = tables[matrix][[other, lane]]
    d = run(inst, a, b, c, tables)
    assert not np.array_equal(d, sequential_reference(a, b, c))
    assert not np.allclose(d, sequential_reference(a, b, c), rtol=1e-3, atol=1e-3)


def test_gemm_loop_accumulates_in_place_over_k():
    """A wave computes a 32x32 tile of a K = 32 f16 GEMM: four 32x32x8f16 steps in a uniform loop,
    accumulating in a private array (the GEMM kernels' main loop)."""
    inst = INSTRUCTIONS["v_mfma_f32_32x32x8f16"]
    steps, depth = 4, 4 * inst.k
    a_buf = K.GlobalBuffer("a", "f16", 32 * depth, readonly=True)
    b_buf = K.GlobalBuffer("b", "f16", depth * 32, readonly=True)
    out = K.GlobalBuffer("out", "f32", 32 * 32)
    acc = K.PrivateArray("acc", "f32", inst.d_elements)
    lane, step = K.Var("lane", "i32"), K.Var("step", "i32")
    av = [K.Var(f"a{e}", "f16") for e in range(4)]
    bv = [K.Var(f"b{e}", "f16") for e in range(4)]
    accumulator = PrivateSlice(acc, 0, inst.d_elements)
    # Documented layout: A[i][k] in lane i + 32*(k/4), element k%4; B[k][j] in lane j + 32*(k/4).
    row, kk = lane % 32, step * inst.k + (lane / 32) * 4
    body = [K.Let(lane, K.workitem_id(0)), *[K.Store(acc, e, 0.0) for e in range(inst.d_elements)],
            K.For(step, 0, steps, 1, [
                *[K.Let(av[e], a_buf[row * depth + kk + e]) for e in range(4)],
                *[K.Let(bv[e], b_buf[(kk + e) * 32 + row]) for e in range(4)],
                Mfma(inst.name, accumulator, av, bv, accumulator)], uniform=True)]
    # D[i][j] in lane j + 32*((i/4) % 2), register 4*(i/8) + i%4.
    for r in range(inst.d_elements):
        i = (r // 4) * 8 + (lane / 32) * 4 + r % 4
        body.append(K.Store(out, i * 32 + lane % 32, acc[r]))
    kernel = K.Kernel("gemm_f16", params=[a_buf, b_buf, out], grid=(1,), workgroup_size=(64,), body=body,
                      private=[acc])
    a = RNG.standard_normal((32, depth)).astype(np.float16)
    b = RNG.standard_normal((depth, 32)).astype(np.float16)
    d = np.zeros((32, 32), np.float32)
    compile_kernel(kernel)(a.ravel(), b.ravel(), d.reshape(-1))
    np.testing.assert_array_equal(d, sequential_reference(a, b, np.zeros((32, 32), np.float32)))


# ---- the kernel IR rules -----------------------------------------------------------------------

def verify_single(op, private=(), wave_size=64):
    x = K.GlobalBuffer("x", "f32", 64, readonly=True)
    kernel = K.Kernel("k", params=[x], grid=(1,), workgroup_size=(64,), private=private, wave_size=wave_size,
                      body=[K.Let(K.Var("v", "f32"), x[K.workitem_id(0)]), K.Let(K.Var("h", "f16"), K.Const(1, "f16")),
                            op])
    K.verify(kernel)
    return kernel


V, H = K.Var("v", "f32"), K.Var("h", "f16")
D4 = [K.Var(f"d{r}", "f32") for r in range(4)]
ACC = K.PrivateArray("acc", "f32", 4)


@pytest.mark.parametrize("op, message", [
    (Mfma("v_mfma_nope", D4, V, V, [V] * 4), "unknown MFMA instruction 'v_mfma_nope'"),
    (Mfma("v_mfma_f32_16x16x4f32", D4, (V, V), V, [V] * 4), "takes 1 A value(s) per lane, got 2"),
    (Mfma("v_mfma_f32_16x16x16f16", D4, [V] * 4, [H] * 4, [V] * 4), "A values must be f16"),
    (Mfma("v_mfma_f32_16x16x4f32", D4, V, V, [V] * 3), "takes 4 C value(s) per lane, got 3"),
    (Mfma("v_mfma_f32_16x16x4f32", D4[:2], V, V, [V] * 4), "defines 4 result Vars per lane, got 2"),
    (Mfma("v_mfma_f32_16x16x4f32", PrivateSlice(ACC, 0, 4), V, V, [V] * 4), "must be the accumulator itself"),
    (Mfma("v_mfma_f32_16x16x4f32", D4, V, V, PrivateSlice(ACC, 2, 4)), "lies outside acc[4]"),
])
def test_verifier_rejects_bad_operands(op, message):
    with pytest.raises(VerifyError, match=re.escape(message)):
        verify_single(op, private=[ACC])


def test_mfma_in_a_kernel_of_another_wave_size_is_rejected():
    op = Mfma("v_mfma_f32_16x16x4f32", D4, V, V, [V] * 4)
    with pytest.raises(VerifyError, match="spans a wave of 64 lanes; the kernel's waves have 32"):
        verify_single(op, wave_size=32)


def test_mfma_under_divergent_control_flow_is_rejected():
    op = K.If(K.workitem_id(0) < 32, [Mfma("v_mfma_f32_16x16x4f32", D4, V, V, [V] * 4)])
    with pytest.raises(VerifyError, match="mfma under non-uniform control flow"):
        verify_single(op)


def test_printed_form_names_the_instruction_and_operands():
    kernel = verify_single(Mfma("v_mfma_f32_16x16x4f32", PrivateSlice(ACC, 0, 4), V * 2.0, V,
                                PrivateSlice(ACC, 0, 4)), private=[ACC])
    assert "acc[0:4] = mfma.v_mfma_f32_16x16x4f32(a=((v * 2.0)), b=(v), c=acc[0:4])" in str(kernel)


# ---- AMDGPU --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, target", [(name, target) for name, inst in INSTRUCTIONS.items()
                                          for target in ("gfx942", "gfx90a") if target in inst.targets]
                         + [(name, "gfx950") for name, inst in INSTRUCTIONS.items() if inst.targets == ("gfx950",)])
def test_amdgpu_assembly_uses_the_instruction(name, target):
    inst = INSTRUCTIONS[name]
    kernel = mfma_kernel(inst, in_place=True)
    assembly = amdgpu.assembly(kernel, target)
    mnemonic = inst.name if target == "gfx90a" else inst.gfx942_mnemonic
    assert re.search(rf"^\s+{mnemonic}\s", assembly, re.M), f"{mnemonic} not in the {target} assembly"
    resources = amdgpu.resources(kernel, target)
    assert resources.scratch_bytes == 0 and resources.vgpr_spill_count == 0  # the accumulator stays in registers


def test_amdgpu_refuses_an_instruction_the_target_lacks():
    """LLVM aborts on an MFMA intrinsic its target lacks; the lowering refuses first."""
    kernel = mfma_kernel(INSTRUCTIONS["v_mfma_i32_32x32x8i8"])
    with pytest.raises(NotImplementedError, match="v_mfma_i32_32x32x8i8 does not exist on gfx942"):
        amdgpu.assembly(kernel, "gfx942")
    with pytest.raises(NotImplementedError, match="v_mfma_f32_16x16x32_f16 does not exist on gfx942"):
        amdgpu.assembly(mfma_kernel(INSTRUCTIONS["v_mfma_f32_16x16x32_f16"]), "gfx942")


# ---- a run of MFMAs: the host's micro-kernel path ------------------------------------------------

def mfma_run_kernel(inst, steps, tables):
    """Per wave: `steps` instructions into each of two accumulators (slices of one private array),
    A_s * B_s into the first and A_s * B2_s into the second, as consecutive wave ops (a GEMM's
    unrolled k loop); the lanes load and store by the layout tables."""
    sizes = {"a": inst.m * inst.k, "b": inst.k * inst.n, "d": inst.m * inst.n}
    counts = {"a": inst.a_elements, "b": inst.b_elements, "d": inst.d_elements}
    dtypes = {"a": inst.in_dtype, "b": inst.in_dtype, "b2": inst.in_dtype, "d": inst.out_dtype}
    per_wave = {"a": steps * sizes["a"], "b": steps * sizes["b"], "b2": steps * sizes["b"], "d": 2 * sizes["d"]}
    inputs = {m: K.GlobalBuffer(m.upper(), dtypes[m], WAVES * per_wave[m], readonly=True) for m in ("a", "b", "b2", "d")}
    maps = {m: K.GlobalBuffer("map_" + m, "i32", 64 * counts[m], readonly=True) for m in "abd"}
    out = K.GlobalBuffer("out", inst.out_dtype, WAVES * per_wave["d"])
    t, lane, wave = K.Var("t", "i32"), K.Var("lane", "i32"), K.Var("wave", "i32")
    body = [K.Let(t, K.workitem_id(0)), K.Let(lane, t % 64),
            K.Let(wave, K.workgroup_id(0) * (WORKGROUP // 64) + t / 64)]
    acc = K.PrivateArray("acc", inst.out_dtype, 2 * counts["d"])
    slices = [PrivateSlice(acc, 0, counts["d"]), PrivateSlice(acc, counts["d"], counts["d"])]
    for half in range(2):
        body += [K.Store(acc, half * counts["d"] + e, inputs["d"][wave * per_wave["d"] + half * sizes["d"]
                                                                   + maps["d"][lane * counts["d"] + e]])
                 for e in range(counts["d"])]
    operands = []
    for s in range(steps):
        step = {}
        for m, table in (("a", "a"), ("b", "b"), ("b2", "b")):
            step[m] = [K.Var(f"{m}_{s}_{e}", dtypes[m]) for e in range(counts[table])]
            body += [K.Let(v, inputs[m][wave * per_wave[m] + s * sizes[table] + maps[table][lane * counts[table] + e]])
                     for e, v in enumerate(step[m])]
        operands.append(step)
    for step in operands:
        body += [Mfma(inst.name, slices[0], step["a"], step["b"], slices[0]),
                 Mfma(inst.name, slices[1], step["a"], step["b2"], slices[1])]
    body += [K.Store(out, wave * per_wave["d"] + half * sizes["d"] + maps["d"][lane * counts["d"] + e],
                     acc[half * counts["d"] + e]) for half in range(2) for e in range(counts["d"])]
    params = [inputs[m] for m in ("a", "b", "b2", "d")] + [out] + [maps[m] for m in "abd"]
    kernel = K.Kernel(f"mfma_run_{inst.name}", params=params, grid=(GROUPS,), workgroup_size=(WORKGROUP,),
                      body=body, private=[acc])
    return kernel, [tables[m].ravel() for m in "abd"]


def run_of_mfmas(name, steps=3, tables=None):
    inst = INSTRUCTIONS[name]
    tables = tables or {m: source_table(inst, m) for m in "abd"}
    kernel, maps = mfma_run_kernel(inst, steps, tables)
    a, b, _ = random_operands(inst)
    operands = [random_operands(inst) for _ in range(steps)]
    a = np.stack([o[0][:, 0] for o in operands], axis=1)           # [waves, steps, m, k]
    b = np.stack([o[1][:, 0] for o in operands], axis=1)
    b2 = np.stack([random_operands(inst)[1][:, 0] for _ in range(steps)], axis=1)
    c = np.stack([random_operands(inst)[2][:, 0] for _ in range(2)], axis=1)  # [waves, 2, m, n]
    out = np.zeros_like(c)
    compile_kernel(kernel)(a.ravel(), b.ravel(), b2.ravel(), c.ravel(), out.reshape(-1), *maps)
    expected = c.copy()
    for s in range(steps):
        expected[:, 0] = sequential_reference(a[:, s], b[:, s], expected[:, 0])
        expected[:, 1] = sequential_reference(a[:, s], b2[:, s], expected[:, 1])
    return kernel, out, expected


@pytest.mark.parametrize("name", ["v_mfma_f32_32x32x2f32", "v_mfma_f32_32x32x8f16", *(
    pytest.param(name, marks=pytest.mark.slow) for name in ("v_mfma_f32_16x16x4f32", "v_mfma_f32_16x16x16bf16_1k",
                                                            "v_mfma_i32_32x32x16i8", "v_mfma_f64_16x16x4f64"))])
def test_a_run_of_instructions_takes_the_micro_kernel_path_exactly(name):
    kernel, out, expected = run_of_mfmas(name)
    assert "mfma.segment" in str(host.llvm_module(kernel))  # the micro-kernel path, not one op at a time
    np.testing.assert_array_equal(out, expected)


def test_micro_kernel_groups_cover_the_segments_in_order_as_evenly_as_they_can():
    assert [len(group) for group in groups(list(range(32)), 6)] == [5, 5, 6, 5, 5, 6]
    assert [len(group) for group in groups(list(range(32)), 8)] == [8, 8, 8, 8]
    assert [len(group) for group in groups(list(range(3)), 6)] == [3]
    assert sum(groups(list(range(16)), 6), []) == list(range(16))


@pytest.mark.parametrize("matrix, lane, other", [("a", 3, 35), ("b", 16, 17), ("d", 8, 9)])
def test_the_micro_kernel_path_catches_a_wrong_lane_mapping(matrix, lane, other):
    inst = INSTRUCTIONS["v_mfma_f32_32x32x2f32"]
    tables = {m: source_table(inst, m) for m in "abd"}
    tables[matrix][[lane, other]] = tables[matrix][[other, lane]]
    _, out, expected = run_of_mfmas(inst.name, tables=tables)
    assert not np.allclose(out, expected, rtol=1e-3, atol=1e-3)


def lds_operand_kernel(name: str, stored_at, a_value, b_value, mfma_operands, barrier_between=False):
    """One wave of 32x32x2 MFMAs into one accumulator: work-item i stores x[i] at LDS element
    stored_at(i); then a = a_value(tile, x, lane, i) and b = b_value(tile, x, lane, i) (lane: a
    variable set to i, i: the id itself), optionally a barrier, and one MFMA per (A, B) pair of
    `mfma_operands(a, b)` (two or more take the micro-kernel path)."""
    inst = INSTRUCTIONS["v_mfma_f32_32x32x2f32"]
    x = K.GlobalBuffer("x", "f32", 64, readonly=True)
    out = K.GlobalBuffer("out", "f32", 64 * inst.d_elements)
    tile = K.LdsBuffer("tile", "f32", 64)
    acc = K.PrivateArray("acc", "f32", inst.d_elements)
    lane, a, b = K.Var("lane", "i32"), K.Var("a", "f32"), K.Var("b", "f32")
    item = K.workitem_id(0)
    accumulator = PrivateSlice(acc, 0, inst.d_elements)
    body = [K.Let(lane, item), K.Store(tile, stored_at(item), x[lane]), K.Barrier(),
            *[K.Store(acc, e, 0.0) for e in range(inst.d_elements)],
            K.Let(a, a_value(tile, x, lane, item)), K.Let(b, b_value(tile, x, lane, item)),
            *([K.Barrier()] if barrier_between else []),
            *[Mfma(inst.name, accumulator, [first], [second], accumulator) for first, second in mfma_operands(a, b)],
            *[K.Store(out, lane * inst.d_elements + e, acc[e]) for e in range(inst.d_elements)]]
    return K.Kernel(name, params=[x, out], grid=(1,), workgroup_size=(64,), body=body, lds=[tile], private=[acc])


def test_mfma_a_operands_are_read_from_lds_only_while_lds_holds_them():
    """An A value loaded from LDS is read there again by the MFMA's lowering, unless a barrier
    (after which LDS may hold something else) lies between: then it is kept per work-item. Both
    compute the same product."""
    x = RNG.standard_normal(64).astype(np.float32)
    results = []
    for barrier_between in (False, True):
        # A from LDS (lanes reversed), B from global memory, one MFMA.
        kernel = lds_operand_kernel(f"a_from_lds_{barrier_between}", lambda i: i, lambda tile, x, lane, i: tile[63 - i],
                                    lambda tile, x, lane, i: x[lane], lambda a, b: [(a, b)], barrier_between)
        reloaded = host.StoragePlan(kernel).reloaded
        assert (("a", "f32") in reloaded) != barrier_between and ("b", "f32") not in reloaded
        out = np.zeros(64 * 16, np.float32)
        compile_kernel(kernel)(x, out)
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])
    assert np.any(results[0])


def test_mfma_b_operands_are_read_from_lds_only_where_lanes_read_consecutive_elements():
    """The micro-kernel reads a run of 32 lanes' B values as one vector from LDS only when their LDS
    elements are consecutive; reversed ones are copied per work-item. Both hold every lane's x, so
    both compute the same products."""
    x = RNG.standard_normal(64).astype(np.float32)
    results = []
    for b_index in ("consecutive", "reversed"):
        # Work-item i stores x[i] at i or at 63 - i and reads it back as its B value; A from global
        # memory; two MFMAs, the second with the operands swapped.
        where = (lambda i: i) if b_index == "consecutive" else (lambda i: 63 - i)
        kernel = lds_operand_kernel(f"b_from_lds_{b_index}", where, lambda tile, x, lane, i: x[63 - lane] * 0.5,
                                    lambda tile, x, lane, i: tile[where(i)], lambda a, b: [(a, b), (b, a)])
        reloaded = host.StoragePlan(kernel).reloaded
        assert (("b", "f32") in reloaded) == (b_index == "consecutive")
        out = np.zeros(64 * 16, np.float32)
        compile_kernel(kernel)(x, out)
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])
    assert np.any(results[0])
