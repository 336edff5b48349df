"""The kernel survey (survey.py, `python -m cdnajit survey`): its readings of gfx9 assembly on
hand-written code, its flags on hand-made rows, and the command on a small part of the corpus
(an f16 elementwise kernel: memory-bound, with 16-byte loads)."""
import dataclasses
import math
import os
import subprocess
import sys

import pytest

from cdnajit.__main__ import main
from cdnajit.survey import (CORPUS, FLAGS, LARGE_INPUT_BYTES, SurveyRow, format_survey, load_waits, load_widths,
                            survey)

NO_PREFETCH = """
    global_load_ushort v1, v[2:3], off
    global_load_ushort v4, v[5:6], off
    s_waitcnt vmcnt(0)
    ds_write_b16 v0, v1
    s_barrier
    v_mfma_f32_32x32x8_f16 a[0:15], v[8:9], v[10:11], a[0:15]
"""
PREFETCH = """
    global_load_dwordx4 v[20:23], v[2:3], off
    v_mfma_f32_32x32x8_f16 a[0:15], v[8:9], v[10:11], a[0:15]
    v_mfma_f32_32x32x8_f16 a[0:15], v[12:13], v[14:15], a[0:15]
    s_waitcnt vmcnt(0)
    ds_write_b128 v0, v[20:23]
"""


def test_load_widths_and_waits_read_from_assembly():
    assert load_widths(NO_PREFETCH) == (2, 2) and load_widths(PREFETCH) == (16, 16) and load_widths("s_endpgm") == ()
    assert load_waits(NO_PREFETCH) == (1, 1, 0)     # one MFMA, one wait with no MFMA behind the loads
    assert load_waits(PREFETCH) == (2, 0, 1)        # the wait comes after this tile's MFMAs


ROW = SurveyRow(program="p", kernel="k", grid=(1024, 1, 1), input_bytes=64 * 2**20, vgprs=32, vgprs_allocated=32, agprs=0, spills=0,
                occupancy=8, occupancy_limiter="waves", load_bytes=(16, 16), mfmas=0, waits_before_mfma=0,
                waits_overlapped=0, efficiency=0.8, limiter="hbm", finding="")


@pytest.mark.parametrize("change, flag", [
    ({"spills": 3}, "spills"),
    ({"occupancy": 1}, "occupancy 1"),
    ({"load_bytes": (2, 2)}, "narrow loads"),
    ({"grid": (1, 1, 1)}, "small grid"),
    ({"mfmas": 64, "waits_before_mfma": 8}, "no MFMA overlap"),
])
def test_each_flag_and_only_it(change, flag):
    assert ROW.flags == ()
    assert dataclasses.replace(ROW, **change).flags == (flag,)


def test_flags_that_need_their_context():
    # Narrow loads matter in a memory-bound kernel only; a small grid on a small input is fine.
    assert dataclasses.replace(ROW, load_bytes=(2, 2), limiter="matrix").flags == ()
    assert dataclasses.replace(ROW, grid=(1, 1, 1), input_bytes=4096).flags == ()
    assert dataclasses.replace(ROW, mfmas=64, waits_overlapped=8).flags == ()
    assert set(FLAGS) == {"spills", "occupancy 1", "narrow loads", "small grid", "no MFMA overlap"}


def test_survey_of_an_f16_elementwise_kernel_reads_sixteen_bytes_per_lane():
    # A span of 8 f16 per work-item: global_load_dwordx4 / global_store_dwordx4, so no flag.
    row, = survey("gfx942", ["elementwise_f16"])
    assert row.load_bytes == (16, 16) and row.limiter == "hbm" and row.flags == ()
    assert 0 < row.efficiency and "loads are" not in row.finding
    text = format_survey([row])
    assert text.splitlines()[0].split()[:3] == ["program", "kernel", "grid"]
    assert "flagged: spills 0, occupancy 1 0, narrow loads 0, small grid 0, no MFMA overlap 0 of 1 kernels" in text


@pytest.mark.parametrize("program", ["softmax_f32", "layernorm_f32", "sum_rows_f32"])
def test_survey_of_row_kernels_reads_sixteen_bytes_per_lane(program):
    # A row per workgroup at span offsets: 4 consecutive f32 per work-item, one global_load_dwordx4,
    # which the performance model reads as such (a lane's runs of 4 elements: runtime/roofline.py).
    row, = survey("gfx942", [program])
    assert row.load_bytes == (16, 16) and row.limiter == "hbm" and row.flags == ()
    assert "loads are" not in row.finding


def test_survey_of_a_column_sum_reads_sixteen_bytes_per_lane_over_the_cus():
    # The partial column sums: 4 consecutive columns per work-item at its span offsets (one
    # global_load_dwordx4 per row), enough partials for a grid that fills the CUs.
    partials, total = survey("gfx942", ["sum_columns_f32"])
    assert partials.load_bytes == (16, 16) and partials.grid[0] >= 304 and partials.flags == ()
    assert "loads are" not in partials.finding and total.flags == ()


def test_survey_of_a_gemm_and_a_full_sum_flags_neither():
    # The GEMM's next-tile loads are waited for after this tile's MFMAs (only the first tile's,
    # before the loop, are not); the sum's partials, a workgroup per 16384 elements, load 16
    # bytes per lane over a grid that fills the CUs.
    gemm, partials, _ = survey("gfx942", ["gemm_f16_small", "sum_all_f32"])
    assert gemm.mfmas and gemm.waits_overlapped >= 1 and gemm.flags == ()
    assert partials.load_bytes == (16, 16) and partials.grid[0] >= 304 and partials.flags == ()


def test_survey_of_the_single_pass_scan_flags_nothing():
    # A cumsum of 2^22 f32: tiles of 128 work-items (512 workgroups, where 256 of 256 would leave
    # CUs idle), each work-item's run of 64 read and written 4 f32 at a time (dwordx4).
    init, scan = survey("gfx942", ["cumsum_row_f32"])
    assert scan.load_bytes == (16, 16) and scan.grid[0] == 512 >= 304 and scan.flags == ()
    assert init.flags == ()


@pytest.mark.slow
def test_survey_of_attention_flags_nothing():
    # The value product (1024x64x1024 f16 over 8 heads, 17 MiB of inputs) takes tiles that fill the
    # CUs (libs/blas/heuristic.py's small-grid model): 128 workgroups of 64x64 would leave 176 idle.
    rows = survey("gfx942", ["attention_f16"])
    assert [row.flags for row in rows] == [()] * 3
    values = rows[-1]
    assert values.input_bytes > LARGE_INPUT_BYTES and math.prod(values.grid) >= 304


@pytest.mark.slow
def test_survey_of_an_nchw_winograd_conv_flags_nothing():
    # The input transform reads NCHW x a tile row at a time, 8 consecutive f32 from a start inside x's row
    # (two dwordx4), where one element per load at clamped columns read 4 bytes per lane.
    rows = survey("gfx942", ["conv3x3_f32"])
    assert [row.flags for row in rows] == [()] * 4
    assert rows[0].load_bytes == (16, 16) and "loads are" not in rows[0].finding


@pytest.mark.slow
def test_the_whole_corpus_flags_nothing():
    rows = survey("gfx942")
    assert {row.program for row in rows} == set(CORPUS)
    assert [(row.kernel, row.flags) for row in rows if row.flags] == []


def test_survey_usage_errors(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["survey", "--only", "softmax_f32,nope"])
    assert exit_info.value.code == 2
    assert "unknown survey program(s) nope; the corpus is: elementwise_f32" in capsys.readouterr().err


def test_survey_command_exits_with_status_1_on_a_flagged_kernel(monkeypatch, capsys):
    # A row with narrow loads, made by hand, stands in for a flagged kernel of the corpus.
    monkeypatch.setattr("cdnajit.survey.survey", lambda target, only: [dataclasses.replace(ROW, load_bytes=(4, 4))])
    assert main(["survey", "--only", "softmax_f32", "--flagged"]) == 1
    assert "narrow loads 1" in capsys.readouterr().out
    assert main(["survey", "--only", "softmax_f32"]) == 0


@pytest.mark.slow
def test_survey_command_exit_status_says_whether_a_kernel_is_flagged():
    def run(*args):
        return subprocess.run([sys.executable, "-m", "cdnajit", "survey", *args], capture_output=True, text=True,
                              timeout=600, env={**os.environ, "CDNAJIT_DUMP_DIR": ""})
    # softmax's rows and the column sum's columns at their span offsets, the single-pass scan's runs
    # by groups: 16 bytes per lane; the scan's tiles fill the CUs.
    clean = run("--only", "transpose_f32,softmax_f16,sum_columns_f32,cumsum_row_f32", "--flagged")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert [line.split()[0] for line in clean.stdout.splitlines()[1:7]].count("cumsum_row_f32") == 2
    assert len(CORPUS) >= 20
