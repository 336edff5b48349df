"""Kernel reports of compiled programs (`Compiled.kernels`, `.report()`, `.as_text(stage)`,
`.cost_analysis()`, `.code_object()`, `.profile()`, dumps): each figure checked against the module
that computes it (tiling, occupancy, roofline) or against a hand count."""
import math
import os
import struct

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.codegen import amdgpu
from cdnajit.ir.targets import get_target
from cdnajit.lowering.tiling import launch_config
from cdnajit.runtime.occupancy import occupancy
from cdnajit.runtime.roofline import math_flops, roofline

EM_AMDGPU, ET_DYN = 224, 3


def softmax(x):
    e = cnp.exp(x - cnp.max(x, axis=-1, keepdims=True))
    return e / cnp.sum(e, axis=-1, keepdims=True)


def elementwise(x, b):
    return cnp.tanh(x) * b + 1.0


def with_scan(x):
    return cnp.cumsum(x) * 2.0


def arrays(*shapes):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


# name -> (function, argument shapes, kinds of its kernels, ops each kernel's source ops include)
PROGRAMS = {
    "softmax": (softmax, [(32, 1024)], ["fused"], [{"reduce", "exp", "sub", "div"}]),
    # 4096-element rows: 4 waves per row, their partial maxima and sums combined in LDS.
    "softmax_wide": (softmax, [(8, 4096)], ["fused"], [{"reduce", "exp", "div"}]),
    "elementwise": (elementwise, [(300, 257), (257,)], ["fused"], [{"tanh", "mul", "add"}]),
    "scan": (with_scan, [(1000,)], ["library", "fused"], [{"prim.scan"}, {"mul"}]),
}


@pytest.fixture(scope="module")
def compiled():
    """Each program compiled once, on demand."""
    made = {}

    def get(name, target=None):
        if (name, target) not in made:
            fn, shapes, _, _ = PROGRAMS[name]
            made[name, target] = cj.jit(fn, target=target).lower(*arrays(*shapes)).compile()
        return made[name, target]
    return get


@pytest.mark.parametrize("name", PROGRAMS)
def test_kinds_and_source_ops(compiled, name):
    _, _, kinds, ops = PROGRAMS[name]
    reports = compiled(name).kernels
    assert [r.kind for r in reports] == kinds
    for report, expected in zip(reports, ops):
        assert expected <= set(report.source_ops), report.source_ops
    assert [r.name for r in reports] == [k.name for k in compiled(name).executable.kernels]


@pytest.mark.parametrize("name", PROGRAMS)
def test_resources_occupancy_and_roofline_agree_with_their_modules(compiled, name):
    program = compiled(name)
    target = get_target("gfx942")
    for report, kernel, op in zip(program.kernels, program.executable.kernels, program.executable.kernel_ops):
        assert report.target == "gfx942"
        assert (report.vgpr_spills, report.sgpr_spills) == (0, 0)
        assert report.lds_bytes == kernel.lds_bytes
        if op.name == "fusion":  # the LDS the backend allocated is what tiling allotted, as is the launch
            config = launch_config(op, target)
            assert report.lds_bytes == config.lds_bytes
            assert (tuple(report.grid[:2]), report.workgroup_size[0]) == ((config.grid, config.grid_rows), config.workgroup_size)
        expected = occupancy(target, vgprs=report.vgpr_allocated, sgprs=report.sgpr_count, lds_bytes=report.lds_bytes,
                             workgroup_items=math.prod(report.workgroup_size))
        assert (report.occupancy, report.occupancy_limiter) == (expected.waves_per_simd, expected.limiter)
        roof = roofline(kernel, target)
        assert (report.flops, report.bytes, report.roofline_us, report.bound) == (
            roof.flops, roof.bytes, roof.modelled_us, roof.bound)
        # The performance model is never faster than the roofline, and names its limiter.
        assert report.modelled_us >= report.roofline_us and report.findings[0].startswith(report.limiter)
        assert report.host_time_us is None and report.launches is None


def test_the_wide_softmax_uses_lds_and_barriers(compiled):
    report, = compiled("softmax_wide").kernels
    assert report.lds_bytes > 0 and report.workgroup_size == (256, 1, 1)
    asm = compiled("softmax_wide").as_text("asm")
    assert "ds_write" in asm and "ds_read" in asm and "s_barrier" in asm


def test_elementwise_roofline_by_hand(compiled):
    report, = compiled("elementwise").kernels
    n, cols = 300 * 257, 257
    # Per work-item one element: tanh (its math-library instructions), a multiply and an add. The
    # broadcast row makes the layout loop_by_rows: each row of 257 is 5 chunks of 64 work-items (the
    # last one overlaps its neighbour rather than guarding a tail), so that many elements are
    # computed. Bytes: x and the result once each, the broadcast row b once (the model caps a
    # buffer's traffic at its size).
    assert (report.grid, report.workgroup_size) == ((5, 300, 1), (64, 1, 1))
    work_items = 5 * 300 * 64
    assert report.flops == work_items * (math_flops("tanh", "f32") + 2)
    assert report.bytes == 4 * (2 * n + cols)
    assert report.bound == "memory"
    assert report.roofline_us == pytest.approx(report.bytes / 5.3e12 * 1e6)


def test_target_choice_reaches_tiling_backend_and_reports(compiled):
    program = compiled("softmax_wide", "gfx90a")
    assert program.target.name == "gfx90a"
    assert {r.target for r in program.kernels} == {"gfx90a"}
    assert 'amdgcn-amd-amdhsa--gfx90a"' in program.as_text("asm")
    assert "gfx942" not in program.as_text("asm")
    x, = arrays((8, 4096))
    np.testing.assert_allclose(program(x), compiled("softmax_wide")(x), rtol=0)  # same kernels, same bits


def test_targets_and_an_unknown_one():
    assert cj.targets() == ["gfx942", "gfx90a", "gfx950"]
    with pytest.raises(ValueError, match="unknown target 'gfx1'; known targets: gfx942, gfx90a, gfx950"):
        cj.jit(softmax, target="gfx1")


# stage -> text each stage must hold
STAGE_MARKERS = {"graph": "func @", "optimized": "fusion(", "kernel": "kernel ", "llvm-host": "define",
                 "llvm-amdgpu": "amdgpu_kernel", "asm": "global_load"}


@pytest.mark.parametrize("stage", STAGE_MARKERS)
def test_stages(compiled, stage):
    program = compiled("scan")
    text = program.as_text(stage)
    assert STAGE_MARKERS[stage] in text
    if stage in ("llvm-host", "llvm-amdgpu", "asm"):  # all kernels, each headed by its name
        headings = [line for line in text.splitlines() if line.startswith("; ==== ")]
        assert headings == [f"; ==== {k.name} ====" for k in program.executable.kernels]
    if stage == "asm":
        assert "v_" in text and "global_store" in text and ".amdgpu_metadata" in text


def test_unknown_stage_and_the_interpreter():
    x, = arrays((4, 64))
    with pytest.raises(ValueError, match="unknown stage 'isa'; expected one of graph, optimized, schedule, kernel, "
                                         "llvm-host, llvm-amdgpu, asm"):
        cj.jit(softmax).lower(x).compile().as_text("isa")
    interpreted = cj.jit(softmax, backend="interpret").lower(x).compile()
    with pytest.raises(ValueError, match="the interpret backend has no kernels"):
        interpreted.report()
    with pytest.raises(ValueError, match="no 'asm' stage"):
        interpreted.as_text("asm")


def test_cost_analysis_sums_the_kernels(compiled):
    program = compiled("scan")
    reports, cost = program.kernels, program.cost_analysis()
    assert set(cost) >= {"flops", "transcendentals", "bytes accessed", "optimal_seconds", "modelled_us"}
    assert cost["flops"] == sum(r.flops for r in reports)
    assert cost["bytes accessed"] == sum(r.bytes for r in reports)
    assert cost["optimal_seconds"] == pytest.approx(sum(r.modelled_us for r in reports) * 1e-6)
    assert (cost["kernels"], cost["target"]) == (2, "gfx942")
    assert "host_seconds" not in cost


def test_code_object_is_a_linked_amdgpu_elf(compiled):
    program = compiled("elementwise")
    name = program.kernels[0].name
    code = program.code_object(name)
    assert code[:4] == b"\x7fELF" and code[4] == 2  # ELF64
    e_type, e_machine = struct.unpack_from("<HH", code, 16)
    assert (e_type, e_machine) == (ET_DYN, EM_AMDGPU)
    assert name.encode() in code
    with pytest.raises(KeyError, match="no kernel named 'nope'; the kernels are: elementwise_0"):
        program.code_object("nope")


def test_report_table(compiled):
    program = compiled("scan")
    text = program.report()
    lines = text.splitlines()
    assert lines[0] == "with_scan on gfx942 (MI300X, CDNA3): 2 kernels"
    header = lines[2].split()
    assert header[:4] == ["kernel", "kind", "grid", "workgroup"] and "waves/SIMD" in header
    for report, line in zip(program.kernels, lines[3:5]):
        assert line.split()[:2] == [report.name, report.kind]
        assert f"{report.modelled_us:.3g}" in line
    assert any(line.startswith("total: ") for line in lines)
    assert lines[-1] == "  with_scan_0: scan_rows_w64 (inclusive sum scan, one row per work-item, 64 rows per workgroup)"


def test_profile_measures_each_launch():
    f = cj.jit(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * 0.5 + 1.0, cnp.exp(x)))
    x = np.linspace(-1, 1, 300, dtype=np.float32)
    program = f.lower(x, 7).compile()
    assert all(r.host_time_us is None for r in program.kernels)
    outputs = program.profile(x, 7)
    np.testing.assert_array_equal(outputs, program(x, 7))
    reports = program.kernels
    # exp before the loop once, the loop condition 8 times, the body's two kernels 7 times.
    assert [(r.source_ops[-1], r.launches) for r in reports] == [("exp", 1), ("lt", 8), ("add", 7), ("add", 7)]
    assert all(r.host_time_us > 0 for r in reports)
    host_seconds = sum(r.host_time_us * r.launches for r in reports) * 1e-6
    assert program.cost_analysis()["host_seconds"] == pytest.approx(host_seconds)
    table = program.report().splitlines()
    assert "(x8)" in table[4] and ", host " in table[-1]


def test_amdgpu_compilation_is_lazy(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("compiling or calling a program must not run the AMDGPU backend")

    monkeypatch.setattr(amdgpu, "compile_kernel", fail)
    monkeypatch.delenv("CDNAJIT_DUMP_DIR", raising=False)
    x, = arrays((3, 70))
    f = cj.jit(lambda v: cnp.sin(v) - v)
    np.testing.assert_allclose(f(x), np.sin(x) - x, atol=1e-6)  # sin: a few ulp of values below 4
    program = f.lower(x).compile()
    program.profile(x)
    assert program.as_text("kernel").startswith("kernel ")
    with pytest.raises(AssertionError, match="must not run the AMDGPU backend"):
        program.report()


def test_reports_after_a_cache_hit(compiled):
    first = compiled("softmax_wide")
    x, = arrays((8, 4096))
    again = cj.jit(softmax).lower(x).compile()   # the program comes from the persistent cache now
    assert [t for t, _ in again.executable.timings] == ["cache lookup", "load"]
    assert again.kernels == first.kernels


def test_dump_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CDNAJIT_DUMP_DIR", str(tmp_path))
    x, = arrays((1000,))
    cj.jit(with_scan).lower(x).compile()
    names = set(os.listdir(tmp_path))
    for kernel in ("with_scan_0", "with_scan_1"):
        assert {f"{kernel}.gfx942.s", f"{kernel}.gfx942.hsaco", f"{kernel}.report.txt"} <= names
        assert (tmp_path / f"{kernel}.gfx942.hsaco").read_bytes()[:4] == b"\x7fELF"
        assert ".amdgpu_metadata" in (tmp_path / f"{kernel}.gfx942.s").read_text()
    report = (tmp_path / "with_scan_1.report.txt").read_text()
    assert "kind: fused" in report and "occupancy_limiter: " in report and "tiling:\n  loop: grid " in report
    dot = (tmp_path / "with_scan.fused.dot").read_text()
    assert dot.startswith('digraph "with_scan" {') and "arg0 -> op0" in dot and "with_scan_1" in dot
    assert "with_scan.00.input.txt" in names  # the pass manager's dumps, beside ours
    assert (tmp_path / "with_scan.report.txt").read_text().startswith("with_scan on gfx942")
