"""`python -m cdnajit warm` (runtime/warm.py): the common problems' GEMM kernels go into the compile
cache once each, and a program whose GEMM picks one of them, at another size, compiles no kernel."""
import io

import numpy as np
import pytest

import cdnajit as cj
from cdnajit.__main__ import main
from cdnajit.ir.targets import get_target
from cdnajit.libs.blas.generator import gemm_call
from cdnajit.libs.blas.prebuilt import common_calls, prebuilt_dtypes
from cdnajit.runtime import executable, warm


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CDNAJIT_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_warm_compiles_each_kernel_once_and_programs_then_load_them(private_cache, monkeypatch):
    # Two problems of one kernel (M < N, N and K past the tiles in both), one with an epilogue of its own.
    calls = [gemm_call(70, 90, 33, "f32", "f32"), gemm_call(75, 95, 37, "f32", "f32"),
             gemm_call(70, 90, 33, "f32", "f32", epilogue="bias_relu")]
    monkeypatch.setattr(warm, "common_calls", lambda in_dtype: calls if in_dtype == "f32" else [])
    out = io.StringIO()
    first = warm.warm(dtypes=["f32"], file=out)
    assert (first.kernels, first.compiled) == (2, 2) and first.cache_bytes > 0
    assert "warm [" in out.getvalue() and "2/2 done" in out.getvalue()
    again = warm.warm(dtypes=["f32"], show_progress=False)
    assert (again.kernels, again.compiled) == (2, 0)

    compiles = []
    compile_for_real = executable.compile_object
    monkeypatch.setattr(executable, "compile_object", lambda kernel: compiles.append(kernel) or compile_for_real(kernel))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((80, 41)).astype(np.float32), rng.standard_normal((41, 100)).astype(np.float32)
    got = cj.jit(lambda a, b: a @ b)(a, b)
    assert compiles == []
    want = a.astype(np.float64) @ b
    # K + 3 roundings of the sum of |a||b| (tests/libs/test_blas_gemm.py's error model), then D's own.
    eps = np.finfo(np.float32).eps
    assert np.all(np.abs(got - want) <= (41 + 3) * eps * (np.abs(a) @ np.abs(b)) + eps * np.abs(want))


def test_the_common_problems_cover_every_dtype_and_an_mlp():
    assert set(prebuilt_dtypes()) == {"f64", "f32", "f16", "bf16", "i8"}
    f32 = common_calls("f32")
    epilogues = {call.attrs["epilogue"] for call in f32}
    assert {"none", "bias", "bias_relu"} <= epilogues
    assert all(call.attrs["epilogue"] in ("none", "bias", "bias_relu") for call in common_calls("i8"))
    # f16 inputs give f16 and f32 results, each its own kernels.
    assert {call.attrs["result_dtype"] for call in common_calls("f16")} == {"f16", "f32"}
    assert len(warm.prebuilt_kernels(get_target("gfx942"), ["f32"])) < len(f32)


def test_warm_refuses_an_unknown_dtype(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["warm", "--dtypes", "f32,f99"])
    assert exit_info.value.code == 2
    assert "--dtypes: f99 not among the GEMM input dtypes" in capsys.readouterr().err
