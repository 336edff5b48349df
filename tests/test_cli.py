"""The command line (`python -m cdnajit`): run as a user runs it (subprocesses) for the commands and
their exit statuses, and in-process (`main(argv)`) for the table of usage errors and the help."""
import os
import subprocess
import sys
import textwrap

import pytest

from cdnajit.__main__ import main, parse_types

PROGRAM = textwrap.dedent("""
    import cdnajit as cj
    import cdnajit.numpy as cnp

    def softmax(x):
        e = cnp.exp(x - cnp.max(x, axis=-1, keepdims=True))
        return e / cnp.sum(e, axis=-1, keepdims=True)

    @cj.jit
    def scaled_tanh(x, b):
        return cnp.tanh(x) * b

    def bad_shapes(x):
        return x + cnp.ones(3)

    LIMIT = 3
""")


@pytest.fixture(scope="module")
def program_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "prog.py"
    path.write_text(PROGRAM)
    return str(path)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "cdnajit", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CDNAJIT_DUMP_DIR": ""})


def test_targets():
    result = run_cli("targets")
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["target", "product", "arch"]
    assert [line.split()[0] for line in lines[1:]] == ["gfx942", "gfx90a", "gfx950"]
    assert lines[1].endswith("(default)") and "MI300X" in lines[1] and "160 KiB" in lines[3]


def test_report_with_html_and_profile(program_file, tmp_path):
    page = tmp_path / "report.html"
    result = run_cli("report", f"{program_file}:softmax", "--args", "f32[16,1024]", "--target", "gfx90a",
                     "--html", str(page), "--profile")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "softmax on gfx90a (MI250X, CDNA2): 1 kernel"
    assert lines[3].split()[:2] == ["softmax_0", "fused"] and lines[3].split()[-1] == "div"
    assert lines[5] == "limiters:" and lines[6].startswith("  softmax_0: ")
    assert ", host " in lines[8] and lines[-1] == f"wrote {page}"
    assert "<svg" in page.read_text()


def test_dump_to_a_folder(program_file, tmp_path):
    out = tmp_path / "dumps"
    result = run_cli("dump", f"{program_file}:scaled_tanh", "--args", "f32[8, 100] f32[100]", "--out", str(out))
    assert result.returncode == 0, result.stderr
    stages = {f"scaled_tanh.{stage}" for stage in ("graph.txt", "optimized.txt", "schedule.txt", "kernel.txt",
                                                   "llvm-host.ll", "llvm-amdgpu.ll", "asm.s")}
    per_kernel = {"scaled_tanh_0.gfx942.s", "scaled_tanh_0.gfx942.hsaco", "scaled_tanh_0.report.txt"}
    written = set(os.listdir(out))
    assert written == stages | per_kernel | {"scaled_tanh.report.txt", "scaled_tanh.fused.dot"}
    assert result.stdout == f"wrote {len(written)} files to {out}\n"
    assert "amdgpu_kernel" in (out / "scaled_tanh.llvm-amdgpu.ll").read_text()
    assert "v_" in (out / "scaled_tanh.asm.s").read_text()


@pytest.mark.parametrize("args, message", [
    (["report", "missing.py:f", "--args", "f32[4]"], "python -m cdnajit report: error: no such file: missing.py"),
    (["dump", "{file}:softmax", "--args", "f32[4]", "--target", "gfx1"],
     "python -m cdnajit dump: error: argument --target: invalid choice: 'gfx1' (choose from 'gfx942', 'gfx90a', "
     "'gfx950')"),
])
def test_usage_errors_in_a_subprocess(program_file, args, message):
    result = run_cli(*[a.format(file=program_file) for a in args])
    assert (result.returncode, result.stdout, result.stderr) == (2, "", message + "\n")


# argv (with {file} for the program) -> the start of the one line on stderr, after "python -m cdnajit"
USAGE_ERRORS = [
    (["report", "{file}:nope", "--args", "f32[4]"], " report: error: {file} has no function 'nope'"),
    (["report", "{file}:LIMIT"], " report: error: {file}:LIMIT is not a function (int)"),
    (["report", "{file}", "--args", "f32[4]"], " report: error: expected FILE.py:FUNC, got '{file}'"),
    (["report", "{file}:softmax", "--args", "f32[4,"], " report: error: bad type 'f32[4,' in --args: expected "
     "dtype[d0,d1,...] such as f32[4096,1024] or i32[], with dtype one of bool, i8, i16, i32, i64, u8, u16, u32, "
     "u64, f16, bf16, f32, f64, c64, c128"),
    (["report", "{file}:softmax", "--args", "float[4]"], " report: error: bad type 'float[4]' in --args"),
    (["report", "{file}:softmax", "--args", "f32[4,,2]"], " report: error: bad type 'f32[4,,2]' in --args: an empty "
     "dimension"),
    (["report", "{file}:softmax", "--args", "f32[4] f32[4]"],
     " report: error: --args gives 2 argument(s) for {file}:softmax: too many positional arguments"),
    (["dump", "{file}:softmax", "--args", "f32[4]", "--stage", "isa"], " dump: error: argument --stage: invalid "
     "choice: 'isa'"),
    (["compile"], ": error: argument {{dump,report,survey,targets,warm}}: invalid choice: 'compile'"),
]


@pytest.mark.parametrize("argv, message", USAGE_ERRORS)
def test_usage_errors(program_file, capsys, argv, message):
    with pytest.raises(SystemExit) as exit:
        main([a.format(file=program_file) for a in argv])
    captured = capsys.readouterr()
    assert exit.value.code == 2 and captured.out == ""
    assert captured.err.startswith("python -m cdnajit" + message.format(file=program_file))
    assert captured.err.count("\n") == 1


def test_a_tracing_error_is_one_line_with_status_1(program_file, capsys):
    assert main(["report", f"{program_file}:bad_shapes", "--args", "f32[4]"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("python -m cdnajit report: error: ") and error.count("\n") == 1
    assert "shape" in error


@pytest.mark.parametrize("argv", [[], ["dump"], ["report"], ["targets"]])
def test_help(capsys, argv):
    with pytest.raises(SystemExit) as exit:
        main([*argv, "--help"])
    assert exit.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m cdnajit {' '.join(argv)}".rstrip())
    if argv in (["dump"], ["report"]):
        assert "FILE.py:FUNC" in out and "--args TYPES" in out and "--target" in out


def test_dump_one_stage_to_stdout(program_file, capsys):
    assert main(["dump", f"{program_file}:scaled_tanh", "--args", "f32[3,70] f32[70]", "--stage", "kernel"]) == 0
    assert capsys.readouterr().out.startswith("kernel scaled_tanh_0(in0: global f32[210] readonly")


@pytest.mark.parametrize("text, types", [
    ("f32[4096,1024] f32[1024]", [("f32", (4096, 1024)), ("f32", (1024,))]),
    ("  i32[]  bool[0, 3]", [("i32", ()), ("bool", (0, 3))]),
    ("", []),
])
def test_parse_types(text, types):
    assert parse_types(text) == types
