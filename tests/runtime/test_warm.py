"""`python -m cdnajit warm` (runtime/warm.py): the common problems' GEMM kernels go into the library
store once each, and a program whose GEMM picks one of them, at another size and with an empty
compile cache, compiles no kernel."""
import io

import numpy as np
import pytest

import cdnajit as cj
from cdnajit.__main__ import main
from cdnajit.ir.targets import get_target
from cdnajit.libs.blas.generator import GemmProblem, gemm_call
from cdnajit.libs.blas.heuristic import pick
from cdnajit.libs.blas.prebuilt import common_calls, prebuilt_dtypes
from cdnajit.runtime import launch, warm
from cdnajit.runtime.cache import library_cache


@pytest.fixture
def private_folders(tmp_path, monkeypatch):
    """(compile cache, library store), both empty."""
    monkeypatch.setenv("CDNAJIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CDNAJIT_LIBRARY_DIR", str(tmp_path / "library"))
    return tmp_path / "cache", tmp_path / "library"


@pytest.mark.slow
def test_warm_compiles_each_kernel_once_and_programs_then_load_them(private_folders, monkeypatch):
    # Two problems of one kernel (M < N, N and K past the tiles in both), one with an epilogue of its own.
    calls = [gemm_call(70, 90, 33, "f32", "f32"), gemm_call(75, 95, 37, "f32", "f32"),
             gemm_call(70, 90, 33, "f32", "f32", epilogue="bias_relu")]
    monkeypatch.setattr(warm, "common_calls", lambda in_dtype: calls if in_dtype == "f32" else [])
    out = io.StringIO()
    first = warm.warm(dtypes=["f32"], file=out, jobs=2)   # two processes
    assert (first.kernels, first.compiled) == (2, 2) and first.store_bytes > 0
    assert "warm [" in out.getvalue() and "2/2 done" in out.getvalue()
    cache, library = private_folders
    assert len(list(library.glob("*.bin"))) == 2 and not cache.exists()
    again = warm.warm(dtypes=["f32"], show_progress=False)
    assert (again.kernels, again.compiled) == (2, 0)

    compiles = []
    compile_for_real = launch.compile_objects
    monkeypatch.setattr(launch, "compile_objects", lambda kernels: compiles.extend(kernels) or compile_for_real(kernels))
    rng = np.random.default_rng(0)
    # Another size that the heuristic gives the warmed problems' solution (K = 39: from K = 40 on it
    # picks a deeper, wider-read tile).
    a, b = rng.standard_normal((80, 39)).astype(np.float32), rng.standard_normal((39, 100)).astype(np.float32)
    solutions = [pick(problem(*shape), get_target()).solution.name for shape in ((70, 90, 33), (80, 100, 39))]
    assert solutions[0] == solutions[1]
    got = cj.jit(lambda a, b: a @ b)(a, b)
    assert compiles == []
    want = a.astype(np.float64) @ b
    # K + 3 roundings of the sum of |a||b| (tests/libs/test_blas_gemm.py's error model), then D's own.
    eps = np.finfo(np.float32).eps
    assert np.all(np.abs(got - want) <= (39 + 3) * eps * (np.abs(a) @ np.abs(b)) + eps * np.abs(want))


def problem(m, n, k):
    """An f32 GEMM problem without epilogue."""
    return GemmProblem(m, n, k, 1, False, False, "f32", "f32", "f32", 1.0, 0.0, "none")


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


def test_warm_removes_the_entries_of_another_compiler_version_and_no_others(private_folders, monkeypatch):
    calls = [gemm_call(70, 90, 33, "f32", "f32")]
    monkeypatch.setattr(warm, "common_calls", lambda in_dtype: calls if in_dtype == "f32" else [])
    _, library = private_folders
    store = library_cache()
    old_key = store.key("kernel", "the code of an older compiler")
    store.store(old_key, {"kind": "object", "compiler": "cdnajit 0.0; an older checkout"}, b"old object code")
    cached_key = store.key("kernel", "a compile cache's entry, which names no compiler")
    store.store(cached_key, {"kind": "object"}, b"object code")
    (library / "not-an-entry.bin").write_bytes(b"junk")
    result = warm.warm(dtypes=["f32"], show_progress=False)
    assert result.compiled == 1
    new_key = store.key("kernel", warm.prebuilt_kernels(get_target("gfx942"), ["f32"])[0].code_text())
    assert {path.stem for path in library.glob("*.bin")} == {new_key, cached_key, "not-an-entry"}


def test_warm_into_a_folder_it_cannot_write_says_which_and_how_to_move_it(tmp_path, monkeypatch, capsys):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("CDNAJIT_LIBRARY_DIR", str(tmp_path / "a-file" / "kernels"))
    monkeypatch.setattr(warm, "common_calls", lambda in_dtype: [])
    assert main(["warm", "--dtypes", "f32"]) == 1
    error = capsys.readouterr().err
    assert f"cannot write the library's kernels to {tmp_path / 'a-file' / 'kernels'} (Not a directory)" in error
    assert "set CDNAJIT_LIBRARY_DIR to a folder you can write" in error
