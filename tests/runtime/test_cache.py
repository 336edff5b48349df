"""The persistent compile cache: keys, hit/miss counts, atomic writes, corrupt entries."""
import os

import numpy as np
import pytest

import cdnajit as cj
from cdnajit.environment import cache_directory
from cdnajit.runtime import cache as cache_module
from cdnajit.runtime import executable as ex
from cdnajit.runtime.cache import HEADER, MAGIC, CompileCache, default_cache

X = np.arange(10, dtype=np.float32)


def add_one(a):
    return a + 1.0


def compile_with(cache, fn=add_one, x=X):
    return ex.Executable.compile(cj.make_graph(fn)(x), cache)


def entry_files(directory):
    return sorted(p for p in directory.iterdir() if p.suffix == ".bin")


def test_store_and_load_round_trip(tmp_path):
    cache = CompileCache(tmp_path)
    key = cache.key("object", "some kernel text")
    assert cache.load(key) is None
    cache.store(key, {"kind": "object", "n": 3}, b"\x7fELF raw bytes")
    assert cache.load(key) == ({"kind": "object", "n": 3}, b"\x7fELF raw bytes")
    assert (cache.hits, cache.misses, cache.corrupt) == (1, 1, 0)
    data = cache.path(key).read_bytes()  # a fixed binary header, JSON metadata, raw payload
    assert data.startswith(MAGIC) and data.endswith(b"\x7fELF raw bytes")
    assert b'{"kind":"object","n":3}' in data[HEADER.size:]
    assert [p.name for p in tmp_path.iterdir()] == [cache.path(key).name]  # no temporary file left


def test_keys_depend_on_text_kind_target_and_version(tmp_path):
    base = CompileCache(tmp_path, target="x86_64; znver3; +avx2", version="cdnajit 1")
    key = base.key("kernel", "text")
    assert key == CompileCache(tmp_path, target="x86_64; znver3; +avx2", version="cdnajit 1").key("kernel", "text")
    assert len({key, base.key("kernel", "text2"), base.key("program", "text"),
                CompileCache(tmp_path, target="x86_64; znver4; +avx2", version="cdnajit 1").key("kernel", "text"),
                CompileCache(tmp_path, target="x86_64; znver3; +avx2", version="cdnajit 2").key("kernel", "text"),
                }) == 5


def test_the_default_version_and_target_name_the_host_and_the_compiler():
    version, target = cache_module.compiler_version(), cache_module.host_target()
    assert version.startswith(f"cdnajit {cj.__version__}; llvmlite ") and "sources " in version
    assert target.count(";") == 2


def test_directory_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CDNAJIT_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_directory() == str(tmp_path / "mine")
    assert default_cache().directory == tmp_path / "mine"
    monkeypatch.delenv("CDNAJIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() == str(tmp_path / "xdg" / "cdnajit")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_directory() == str(tmp_path / "home" / ".cache" / "cdnajit")


def test_a_program_hit_skips_passes_emission_and_llvm(tmp_path, monkeypatch):
    first = compile_with(CompileCache(tmp_path))
    assert len(entry_files(tmp_path)) == 2  # the program and its one kernel

    def fail(*args):
        raise AssertionError("a cache hit must not run this")

    for name in ("compile_object", "run_pipeline", "emit_kernel"):
        monkeypatch.setattr(ex, name, fail)
    fresh = CompileCache(tmp_path)  # as a new process sees the folder
    again = compile_with(fresh)
    assert (fresh.hits, fresh.misses) == (2, 0)
    np.testing.assert_array_equal(again(X)[0], first(X)[0])


def test_a_program_from_the_cache_launches_as_the_compiled_one(tmp_path):
    """Whether a launch uses the thread pool depends on the kernel's body, which a cached plan
    does not keep: a GEMM of two workgroups with a long K loop runs in parallel either way."""
    a, b = np.ones((128, 8192), np.float32), np.ones((8192, 64), np.float32)
    fresh = ex.Executable.compile(cj.make_graph(lambda x, y: x @ y)(a, b), CompileCache(tmp_path))
    cached = ex.Executable.compile(cj.make_graph(lambda x, y: x @ y)(a, b), CompileCache(tmp_path))
    assert cached.compiled_kernels[0].kernel.body == ()   # loaded, not compiled
    assert [k.parallel for k in fresh.compiled_kernels] == [k.parallel for k in cached.compiled_kernels] == [True]


def test_kernels_are_shared_between_programs(tmp_path, monkeypatch):
    compile_with(CompileCache(tmp_path), lambda a: a * 3.0)
    # Another program (another name, same kernel) compiles nothing new: the key ignores names.
    monkeypatch.setattr(ex, "compile_object", lambda kernel: pytest.fail("compiled a cached kernel"))
    cache = CompileCache(tmp_path)

    def times_three(v):
        return v * 3.0

    np.testing.assert_array_equal(compile_with(cache, times_three)(X)[0], X * 3)
    assert (cache.hits, cache.misses) == (1, 1)  # the kernel hits, the new program misses


@pytest.mark.parametrize("damage", ["flip a payload byte", "truncate", "bad magic", "empty file"])
def test_a_corrupt_entry_warns_and_is_recompiled(tmp_path, damage):
    compile_with(CompileCache(tmp_path))
    for path in entry_files(tmp_path):
        data = bytearray(path.read_bytes())
        if damage == "flip a payload byte":
            data[-1] ^= 0xFF
        elif damage == "truncate":
            data = data[: len(data) // 2]
        elif damage == "bad magic":
            data[:8] = b"notcdnaj"
        else:
            data = b""
        path.write_bytes(bytes(data))
    cache = CompileCache(tmp_path)
    with pytest.warns(RuntimeWarning, match="corrupt entry .*\\.bin") as warned:
        executable = compile_with(cache)
    np.testing.assert_array_equal(executable(X)[0], X + 1)
    named = {str(path) for path in entry_files(tmp_path)}
    assert {w.message.args[0].split("corrupt entry ")[1].split(";")[0] for w in warned} <= named
    assert cache.corrupt >= 1
    fresh = CompileCache(tmp_path)  # the entries were replaced by good ones
    compile_with(fresh)
    assert (fresh.hits, fresh.misses, fresh.corrupt) == (2, 0, 0)


def test_a_corrupt_kernel_of_a_stored_program_is_recompiled(tmp_path):
    first = CompileCache(tmp_path)
    executable = compile_with(first)
    kernel_path = first.path(executable.plan["kernels"][0]["key"])
    kernel_path.write_bytes(kernel_path.read_bytes()[:-1])
    with pytest.warns(RuntimeWarning, match=f"corrupt entry {kernel_path}"):
        again = compile_with(CompileCache(tmp_path))
    assert [stage for stage, _ in again.timings][1:] == ["passes", "emission", "llvm", "load"]
    np.testing.assert_array_equal(again(X)[0], X + 1)
    assert CompileCache.decode(kernel_path.read_bytes()) is not None


def test_writes_are_atomic(tmp_path, monkeypatch):
    cache = CompileCache(tmp_path)
    key = cache.key("object", "k")
    cache.store(key, {"kind": "object"}, b"old")

    def crash(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.warns(RuntimeWarning, match="cannot write"):
        cache.store(key, {"kind": "object"}, b"new")
    assert cache.load(key) == ({"kind": "object"}, b"old")  # the old entry, whole
    assert entry_files(tmp_path) == [cache.path(key)] and len(list(tmp_path.iterdir())) == 1


def test_an_unwritable_folder_warns_once_and_still_compiles(tmp_path):
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    cache = CompileCache(blocker / "cache")
    with pytest.warns(RuntimeWarning, match="cannot write") as warned:
        executable = compile_with(cache)
    assert len(warned) == 1
    np.testing.assert_array_equal(executable(X)[0], X + 1)
