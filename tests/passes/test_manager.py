"""The pass manager: timings, dumps to CDNAJIT_DUMP_DIR, verification after each pass, errors."""
import os

import pytest

import cdnajit as cj
from cdnajit.ir.core import make_op
from cdnajit.ir.types import TensorType
from cdnajit.passes import DEFAULT_PIPELINE, canonicalize, copy_module, run_pipeline

TEXT = """
func @layer(%0: f32[4,8], %1: f32[8]) -> (f32[4]) {
  %2 = broadcast_in_dim(%1) {shape = [4, 8], broadcast_dimensions = [1]} : f32[4,8]
  %3 = add(%0, %2) : f32[4,8]
  %4 = neg(%3) : f32[4,8]
  %5 = neg(%4) : f32[4,8]
  %6 = exp(%5) : f32[4,8]
  %7 = reduce(%6) {reducer = "sum", axes = [1]} : f32[4]
  return %7
}"""

FUSED = """
func @layer(%0: f32[4,8], %1: f32[8]) -> (f32[4]) {
  %2 = fusion(%1, %0) {kind = "reduction"} : f32[4] {
    ^(%3: f32[8], %4: f32[4,8]):
      %5 = broadcast_in_dim(%3) {shape = [4, 8], broadcast_dimensions = [1]} : f32[4,8]
      %6 = add(%4, %5) : f32[4,8]
      %7 = exp(%6) : f32[4,8]
      %8 = reduce(%7) {reducer = "sum", axes = [1]} : f32[4]
      yield %8
  }
  return %2
}"""


def test_default_pipeline(check_equivalent, monkeypatch):
    monkeypatch.delenv("CDNAJIT_DUMP_DIR", raising=False)
    module = cj.ir.parse(TEXT)
    result = run_pipeline(module)
    assert str(result.module) == str(cj.ir.parse(FUSED))
    assert [name for name, _ in result.timings] == [name for name, _ in DEFAULT_PIPELINE]
    assert all(seconds >= 0 for _, seconds in result.timings)
    assert result.total_seconds == pytest.approx(sum(seconds for _, seconds in result.timings))
    assert "canonicalize" in result.report() and "fusion" in result.report()
    assert result.dumps == []
    assert str(module) == str(cj.ir.parse(TEXT))
    check_equivalent(module, result.module)


def test_dumps_after_every_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("CDNAJIT_DUMP_DIR", str(tmp_path / "dumps"))
    result = run_pipeline(cj.ir.parse(TEXT), [("copy", copy_module), ("canonicalize", canonicalize)])
    names = sorted(os.listdir(tmp_path / "dumps"))
    assert names == ["layer.00.input.txt", "layer.01.copy.txt", "layer.02.canonicalize.txt"]
    assert (tmp_path / "dumps" / "layer.00.input.txt").read_text() == str(cj.ir.parse(TEXT))
    assert (tmp_path / "dumps" / "layer.02.canonicalize.txt").read_text() == str(result.module)
    assert [os.path.basename(p) for p in result.dumps] == names


def test_an_explicit_dump_dir_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("CDNAJIT_DUMP_DIR", str(tmp_path / "from_env"))
    run_pipeline(cj.ir.parse(TEXT), [("copy", copy_module)], dump_dir=str(tmp_path / "explicit"))
    assert os.listdir(tmp_path / "explicit") and not os.path.exists(tmp_path / "from_env")


def break_types(module):
    """A faulty pass: appends an add whose declared result type is wrong."""
    module = copy_module(module)
    x = module.params[0]
    bad = make_op("add", [x, x], {}, [TensorType("f64", x.type.shape)])
    module.body.ops.append(bad)
    module.body.outputs = [bad.result]
    return module


def test_the_verifier_runs_after_each_pass(monkeypatch):
    monkeypatch.delenv("CDNAJIT_DUMP_DIR", raising=False)
    with pytest.raises(cj.VerifyError) as error:
        run_pipeline(cj.ir.parse(TEXT), [("copy", copy_module), ("break", break_types)])
    assert any("pass 2 (break)" in note for note in error.value.__notes__)
    result = run_pipeline(cj.ir.parse(TEXT), [("break", break_types)], verify=False)
    assert result.module.outputs[0].type.dtype == "f64"


def test_errors_name_the_pass(monkeypatch):
    monkeypatch.delenv("CDNAJIT_DUMP_DIR", raising=False)

    def fails(module):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom") as error:
        run_pipeline(cj.ir.parse(TEXT), [("copy", copy_module), ("fails", fails)])
    assert any("pass 2 (fails)" in note for note in error.value.__notes__)
    with pytest.raises(TypeError, match="pass text returned str"):
        run_pipeline(cj.ir.parse(TEXT), [("text", str)])
