"""The persistent compile cache: keys, hit/miss counts, atomic writes, corrupt entries."""
import os
import resource
import socket
import subprocess
import sys

import numpy as np
import pytest

import cdnajit as cj
from cdnajit.environment import cache_directory
from cdnajit.runtime import cache as cache_module
from cdnajit.runtime import executable as ex
from cdnajit.runtime import launch
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

    for name in ("run_pipeline", "emit_kernel"):
        monkeypatch.setattr(ex, name, fail)
    monkeypatch.setattr(launch, "compile_objects", fail)
    fresh = CompileCache(tmp_path)  # as a new process sees the folder
    again = compile_with(fresh)
    assert (fresh.hits, fresh.misses) == (2, 0)
    np.testing.assert_array_equal(again(X)[0], first(X)[0])


def test_a_program_from_the_cache_launches_as_the_compiled_one(tmp_path):
    """Whether a launch uses the thread pool depends on the kernel's body, which a cached plan
    does not keep: a GEMM of two workgroups with a long K loop runs in parallel either way (3 MiB of
    inputs: from 4 MiB the BLAS heuristic would give this memory-bound product smaller tiles)."""
    a, b = np.ones((128, 4096), np.float32), np.ones((4096, 64), np.float32)
    fresh = ex.Executable.compile(cj.make_graph(lambda x, y: x @ y)(a, b), CompileCache(tmp_path))
    cached = ex.Executable.compile(cj.make_graph(lambda x, y: x @ y)(a, b), CompileCache(tmp_path))
    assert cached.compiled_kernels[0].kernel.body == ()   # loaded, not compiled
    assert [k.parallel for k in fresh.compiled_kernels] == [k.parallel for k in cached.compiled_kernels] == [True]


def test_kernels_are_shared_between_programs(tmp_path, monkeypatch):
    compile_with(CompileCache(tmp_path), lambda a: a * 3.0)
    # Another program (another name, same kernel) compiles nothing new: the key ignores names.
    monkeypatch.setattr(launch, "compile_objects", lambda kernels: pytest.fail("compiled a cached kernel"))
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
    assert {w.message.args[0].split("corrupt entry ")[1].split(" (")[0] for w in warned} <= named
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
    assert CompileCache.decode(kernel_path.read_bytes(), executable.plan["kernels"][0]["key"])[1]  # replaced


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


# ---- entries under another key's name ------------------------------------------------------

def multiply_add(x, y):
    return x * y + 1.0


def subtract(x, y):
    return x - y


def exp_add(x, y):
    return cj.numpy.exp(x) + y


PAIR = (np.arange(-3, 6, dtype=np.float32), np.arange(9, dtype=np.float32))  # small integers: x*y+1, x-y exact
F32_ULP = np.finfo(np.float32).eps


def check_programs(cache):
    """Each of the three programs compiled with `cache` gives numpy's answer: x*y+1 and x-y exactly
    (small integers), exp(x)+y within exp's 0.94 ulp plus the add's rounding (README's table)."""
    x, y = PAIR
    for fn, expected, rtol in ((multiply_add, x * y + 1, 0), (subtract, x - y, 0),
                               (exp_add, np.exp(x.astype(np.float64)) + y, 2 * F32_ULP)):
        result = ex.Executable.compile(cj.make_graph(fn)(*PAIR), cache)(*PAIR)[0]
        np.testing.assert_allclose(result, expected, rtol=rtol, atol=0, err_msg=fn.__name__)


def entries_by_kind(directory):
    kinds = {"program": [], "object": []}
    for path in entry_files(directory):
        meta, _ = CompileCache.decode(path.read_bytes(), path.stem)
        kinds[meta["kind"]].append(path)
    return kinds["program"], kinds["object"]


def rotate(paths):
    contents = [path.read_bytes() for path in paths]
    for path, data in zip(paths, contents[1:] + contents[:1]):
        path.write_bytes(data)


@pytest.mark.parametrize("misplace", ["rotate programs", "rotate kernels", "copy a program", "copy a kernel"])
def test_an_intact_entry_under_another_key_is_corrupt_and_replaced(tmp_path, misplace):
    """An entry's header holds its key: one moved or copied to another key's name is not run (run,
    a shuffled kernel crashes the process, a rotated program gives another program's answers, a
    copied one fails with a wrong argument count on every later run); it is reported and replaced."""
    check_programs(CompileCache(tmp_path))
    programs, kernels = entries_by_kind(tmp_path)
    assert len(programs) == 3 and len(kernels) == 3
    group = programs if misplace.endswith("programs") or misplace == "copy a program" else kernels
    if misplace.startswith("rotate"):
        rotate(group)
    else:
        group[1].write_bytes(group[0].read_bytes())
    cache = CompileCache(tmp_path)
    with pytest.warns(RuntimeWarning, match=r"corrupt entry .*\.bin \(it holds the entry of key [0-9a-f]{64}\)"):
        check_programs(cache)
    assert cache.corrupt == (3 if misplace.startswith("rotate") else 1)
    healed = CompileCache(tmp_path)
    check_programs(healed)
    assert (healed.hits, healed.misses, healed.corrupt) == (6, 0, 0)


def test_decode_checks_the_key_the_header_and_the_digest(tmp_path):
    key, other = (CompileCache(tmp_path).key("object", text) for text in ("a", "b"))
    data = CompileCache.encode(key, {"kind": "object"}, b"code")
    assert CompileCache.decode(data, key) == ({"kind": "object"}, b"code")
    with pytest.raises(cache_module.CorruptEntry, match=f"holds the entry of key {key}"):
        CompileCache.decode(data, other)
    moved_split = bytearray(data)  # the metadata's length is digested: a shifted split is caught
    struct_offset = 8 + 32
    moved_split[struct_offset] += 1
    moved_split[struct_offset + 8] -= 1
    with pytest.raises(cache_module.CorruptEntry, match="SHA-256"):
        CompileCache.decode(bytes(moved_split), key)


# ---- entries that are not regular files ------------------------------------------------------

def plant(path, kind, tmp_path):
    """Put a `kind` of file at the entry's path."""
    path.unlink()
    if kind == "dangling symlink":
        path.symlink_to(tmp_path / "nowhere")
    elif kind == "symlink to an intact entry":  # only the entry's own regular file is trusted
        other = tmp_path / "elsewhere.bin"
        other.write_bytes(b"")
        path.symlink_to(other)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(path.name)  # relative: a socket's path is limited to about 100 bytes
    elif kind == "sparse file over the size limit":
        with open(path, "wb") as file:
            file.truncate(cache_module.MAX_ENTRY_BYTES + 1)  # no blocks are written


@pytest.mark.parametrize("kind", ["dangling symlink", "symlink to an intact entry", "socket",
                                  "sparse file over the size limit"])
def test_an_entry_that_is_not_a_regular_file_is_corrupt_and_replaced(tmp_path, monkeypatch, kind):
    monkeypatch.chdir(tmp_path)
    executable = compile_with(CompileCache(tmp_path))
    kernel_path = CompileCache(tmp_path).path(executable.plan["kernels"][0]["key"])
    saved = kernel_path.read_bytes()
    plant(kernel_path, kind, tmp_path)
    if kind == "symlink to an intact entry":
        (tmp_path / "elsewhere.bin").write_bytes(saved)
    problem = r"\d+ bytes, over the limit of \d+" if kind.startswith("sparse") else "not a regular file"
    with pytest.warns(RuntimeWarning, match=f"corrupt entry {kernel_path} \\({problem}\\)"):
        again = compile_with(CompileCache(tmp_path))
    np.testing.assert_array_equal(again(X)[0], X + 1)
    assert kernel_path.is_file() and not kernel_path.is_symlink() and kernel_path.read_bytes() == saved
    fresh = CompileCache(tmp_path)
    compile_with(fresh)
    assert (fresh.hits, fresh.misses, fresh.corrupt) == (2, 0, 0)


def test_an_entry_over_the_size_limit_is_not_stored(tmp_path):
    cache = CompileCache(tmp_path, max_entry_bytes=200)
    key = cache.key("object", "k")
    with pytest.warns(RuntimeWarning, match="an entry of 201 bytes is over the limit of 200; it is not kept"):
        cache.store(key, {"kind": "object"}, bytes(96))  # 88 bytes of header, 17 of metadata
    assert not cache.path(key).exists()
    cache.store(key, {"kind": "object"}, bytes(95))
    assert cache.load(key) == ({"kind": "object"}, bytes(95)) and cache.path(key).stat().st_size == 200


DEVICE_AND_FIFO = """
import os, warnings
import numpy as np
import cdnajit as cj
from cdnajit.runtime import executable as ex
from cdnajit.runtime import launch
from cdnajit.runtime.cache import CompileCache, default_cache

X = np.arange(10, dtype=np.float32)
graph = cj.make_graph(lambda a: a + 1.0)(X)
first = ex.Executable.compile(graph, default_cache())
kernel_path = default_cache().path(first.plan["kernels"][0]["key"])
(program_path,) = [p for p in default_cache().directory.glob("*.bin") if p != kernel_path]
program_path.unlink()
program_path.symlink_to("/dev/zero")
kernel_path.unlink()
os.mkfifo(kernel_path)
with warnings.catch_warnings(record=True) as warned:
    warnings.simplefilter("always")
    again = ex.Executable.compile(graph, CompileCache(default_cache().directory))
assert sorted(str(w.message).split(" (")[0] for w in warned) == sorted(
    f"cdnajit compile cache: corrupt entry {path}" for path in (program_path, kernel_path)), warned
assert all("(not a regular file)" in str(w.message) for w in warned)
np.testing.assert_array_equal(again(X)[0], X + 1)
assert program_path.is_file() and not program_path.is_symlink() and kernel_path.is_file()
healed = CompileCache(default_cache().directory)
ex.Executable.compile(graph, healed)
assert (healed.hits, healed.misses, healed.corrupt) == (2, 0, 0)
# VmHWM is this program's own peak: ru_maxrss keeps the forking pytest worker's across the exec.
print("peak kB", [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM")][0])
"""


def test_an_entry_linked_to_dev_zero_or_a_fifo_neither_grows_nor_blocks(tmp_path):
    """Read to its end, a link to /dev/zero grows memory without limit; opened for reading, a FIFO
    blocks until a writer comes. Run in a process of its own, with CDNAJIT_CACHE_DIR a fresh
    folder, a time limit and a data limit."""
    def limit_memory():
        resource.setrlimit(resource.RLIMIT_DATA, (4 << 30, 4 << 30))

    env = dict(os.environ, CDNAJIT_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", DEVICE_AND_FIFO], env=env, capture_output=True, text=True,
                          timeout=300, preexec_fn=limit_memory)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split("peak kB")[1]) < 1 << 20  # under 1 GiB
