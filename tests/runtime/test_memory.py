"""Memory per compile: dropped executables release their kernels' native code, a function
called with ever new shapes keeps a bounded number of executables (frontend/lru_cache.py), and
LLVM's own leak stays in its worker process (codegen/llvm_worker.py).

Resident memory is measured in a fresh interpreter (a subprocess), after a warm-up that also
spends the compiles a process makes in-process, so that other tests' allocations and that one-time
cost do not blur it. One cost per kernel stays behind whatever is freed, inside llvmlite 0.50: a
JIT library's JITDylib is cleared but never removed (about 8 KB per kernel).
"""
import gc
import json
import subprocess
import sys
import weakref

import numpy as np
import pytest

import cdnajit as cj
from cdnajit.frontend.lru_cache import SIZE_ENV, LRUCache, default_size
from cdnajit.runtime.launch import CompiledKernel

# Resident growth allowed per program, compiled and loaded from the persistent cache: the JITDylibs
# above (two per program of one kernel: its kernel's and its native schedule's, about 9 KB each),
# the executables' Python objects, allocator slack. Measured over 300 programs: 9-27 KB compiled,
# 37-48 KB loaded (before LLVM ran in a worker: 95-209 KB compiled; with one JITDylib per program,
# before the schedule was native code: 10-18 KB compiled, 9-16 KB loaded).
COMPILED_BYTES = 40_000
LOADED_BYTES = 56_000

MEASURE = r"""
import gc, json, os, sys
import numpy as np
import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.codegen.llvm_worker import IN_PROCESS_COMPILES
from cdnajit.runtime.launch import CompiledKernel

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def live_kernels():
    gc.collect()
    return sum(isinstance(o, CompiledKernel) for o in gc.get_objects())

mode, count, cache_size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
x = np.ones(8, np.float32)

def functions(offset, count=count):
    for i in range(count):
        f = cj.jit(lambda x, c=float(offset + i): x * c + 1.0)   # a constant of its own: a new program
        f(x)

def shapes(f, offset, count=count):
    for i in range(count):
        f(np.ones(offset + i, np.float32))

def eager(offset, count=count):
    for i in range(count):
        cnp.sin(np.ones(offset + i, np.float32))

runs = {"functions": functions, "shapes": lambda *args: shapes(jitted, *args), "eager": eager}
jitted = cj.jit(lambda x: x * 3.0 + 1.0)
jitted.cache_size = cache_size
cnp.sin.cache.size = cache_size
# warm-up: the allocator's arenas, the pool's threads, a full cache, the compiles made in-process
runs[mode](10_000, cache_size + 8 + IN_PROCESS_COMPILES)
gc.collect()
start = rss()
runs[mode](20_000)            # compiled
gc.collect()
compiled = rss()
runs[mode](20_000)            # the same programs again: from the persistent cache once evicted
gc.collect()
print(json.dumps({"compiled": (compiled - start) / count, "loaded": (rss() - compiled) / count,
                  "kernels": live_kernels(), "jit_cache": len(jitted._cache),
                  "array_cache": len(jitted._array_cache), "eager_cache": len(cnp.sin.cache)}))
"""


def measure(mode: str, count: int, cache_size: int) -> dict:
    result = subprocess.run([sys.executable, "-c", MEASURE, mode, str(count), str(cache_size)],
                            capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def compiled_kernels() -> list:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, CompiledKernel)]


def test_dropped_executables_unload_their_libraries():
    before = {id(k) for k in compiled_kernels()}
    f = cj.jit(lambda x: x * 7.0 - 2.0)
    np.testing.assert_array_equal(f(np.arange(5.0)), np.arange(5.0) * 7.0 - 2.0)
    made = [k for k in compiled_kernels() if id(k) not in before]
    assert made, "the call loaded no kernel"
    # A ResourceTracker disposes of its JIT library when collected (llvmlite's ObjectRef.__del__).
    held = [weakref.ref(k) for k in made] + [weakref.ref(k.library) for k in made]
    del f, made
    gc.collect()
    assert all(ref() is None for ref in held)


def test_lru_cache_forgets_the_least_recently_used():
    cache = LRUCache(3)
    for key in "abc":
        cache.put(key, key.upper())
    assert cache.get("a") == "A"            # now the most recent
    cache.put("d", "D")
    assert cache.get("b") is None and len(cache) == 3
    cache.size = 1
    cache.put("e", "E")
    assert list(cache.entries.items()) == [("e", "E")]


def test_cache_size_knob(monkeypatch):
    monkeypatch.setenv(SIZE_ENV, "7")
    assert default_size() == 7
    assert cj.jit(lambda x: x).cache_size == 7
    monkeypatch.setenv(SIZE_ENV, "0")
    with pytest.raises(ValueError, match=SIZE_ENV):
        default_size()
    monkeypatch.delenv(SIZE_ENV)
    f = cj.jit(lambda x: x + 1)
    with pytest.raises(ValueError, match="positive"):
        f.cache_size = 0


def test_one_function_keeps_its_cache_size_executables():
    f = cj.jit(lambda x: x * 2.0)
    f.cache_size = 3
    for n in range(1, 9):
        np.testing.assert_array_equal(f(np.ones(n)), np.full(n, 2.0))
    assert len(f._cache) == len(f._array_cache) == 3
    traces = f.trace_count
    f(np.ones(8))                          # still cached
    assert f.trace_count == traces
    f(np.ones(1))                          # forgotten: traced again (and loaded from the disk cache)
    assert f.trace_count == traces + 1


def check(figures: dict, cache_size: int, counting: str):
    assert figures[counting] <= cache_size
    # The kernels alive: the bounded cache's, the warm-up's jitted function's and a few eager ones.
    assert figures["kernels"] <= cache_size + 8, figures
    assert figures["compiled"] <= COMPILED_BYTES, figures
    assert figures["loaded"] <= LOADED_BYTES, figures


@pytest.mark.slow
@pytest.mark.parametrize("mode, counting", [("shapes", "jit_cache"), ("eager", "eager_cache")])
def test_many_shapes_keep_bounded_caches_and_memory(mode, counting):
    check(measure(mode, 40, 8), 8, counting)


@pytest.mark.slow
def test_compiled_and_dropped_functions_leave_bounded_memory():
    check(measure("functions", 40, 8), 8, "jit_cache")


@pytest.mark.slow
@pytest.mark.parametrize("mode, counting", [("functions", "jit_cache"), ("shapes", "jit_cache"),
                                            ("eager", "eager_cache")])
def test_two_thousand_programs(mode, counting):
    check(measure(mode, 2000, 256), 256, counting)
