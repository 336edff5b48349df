"""A program's schedule runs as one native function (codegen/native_schedule.py,
runtime/native_schedule.py): every way a loop carry gets its next value agrees with the
interpreter, a call makes no Python-level launch, results are fresh arrays, concurrent calls share
nothing, Ctrl-C interrupts a loop that never ends, a cached program loads its schedule."""
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.codegen import native_schedule as codegen_schedule
from cdnajit.runtime import executable as ex
from cdnajit.runtime.cache import CompileCache
from cdnajit.runtime.launch import address, started_pool
from cdnajit.runtime.native_schedule import ArenaPool
from cdnajit.runtime.schedule import launches_per_call


@pytest.fixture
def cache(tmp_path):
    return CompileCache(tmp_path / "cache")


def compile_fn(fn, cache, *args):
    module = cj.make_graph(fn)(*args)
    return module, ex.Executable.compile(module, cache)


def assert_matches_interpreter(fn, cache, *args):
    module, executable = compile_fn(fn, cache, *args)
    before = [np.array(a, copy=True) for a in args]
    actual = executable(*args)
    expected = cj.ir.interpret(module, *args)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(a, e)
    for arg, copy in zip(args, before):   # nothing the caller did not donate is written
        np.testing.assert_array_equal(arg, copy)
    return executable


def rotate(x, y, z):          # carries that swap: each is copied from another parameter
    return lax.fori_loop(0, 5, lambda i, c: (c[1], c[2], c[0]), (x, y, z))


def from_outside(x, y):       # a carry set to a value made before the loop
    return lax.fori_loop(0, 3, lambda i, c: (y * 2.0, c[1] + c[0]), (x, x))


def one_value_twice(x):       # two carries share the body's one result
    return lax.fori_loop(0, 4, lambda i, c: (c[0] + c[1], c[0] + c[1]), (x, x * 2.0))


def passed_through(x, y):     # a carry the body leaves as it is
    return lax.fori_loop(0, 4, lambda i, c: (c[0], c[1] * c[0]), (x, y))


def point_updates(a):         # an in-place update per iteration, of the caller's array's copy
    return lax.fori_loop(0, a.shape[0], lambda i, a: a.at[i, (i * 3) % a.shape[1]].set(a[i, 0] + 1.0), a)


def inner_loop_result(x):     # the outer carry is a nested loop's result
    return lax.fori_loop(0, 3, lambda i, c: lax.fori_loop(0, i + 2, lambda j, d: d * 1.5 - 1.0, c), x)


def branch_result(x):         # the carry is a branch's result, one branch passing it through
    return lax.fori_loop(0, 6, lambda i, c: lax.cond(i % 3 == 0, lambda v: v, lambda v: v + i.astype(v.dtype), c), x)


def switch_index(x):          # an index of each signedness, clamped to the branches
    def body(i, c):
        index = (i - 2).astype(cnp.int8)
        return lax.switch(index, [lambda v: v + 1.0, lambda v: v * 2.0, lambda v: v - 3.0], c)
    return lax.fori_loop(0, 6, body, x)


def large_body(x):            # launches worth the worker pool inside a loop
    return lax.fori_loop(0, 3, lambda i, c: c * 2.0 - 1.0, x)


def scan_outputs(xs):         # a scan's stacked outputs: dynamic_update_slice in place per step
    return lax.scan(lambda c, x: (c * 0.5 + x, c - x), xs[0], xs)


def zero_trips(x):
    return lax.fori_loop(3, 1, lambda i, c: (c[0] + 1.0, c[1] - 1), (x, 7))


def empty_complex_carries(x):   # fuzz seed 3636011760: an empty constant shares the counter's address
    return lax.fori_loop(0, 0, lambda i, c: cnp.broadcast_to(cnp.arcsin(i), c.shape).astype(c.dtype), x / 0)


def collatz(n):               # integer and bool work only
    return lax.while_loop(lambda c: c[0] != 1,
                          lambda c: (cnp.where(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1), c[1] + 1), (n, 0))


X = np.linspace(-2, 2, 67).astype(np.float32)
M = np.arange(35, dtype=np.float64).reshape(5, 7)


@pytest.mark.parametrize("fn, args", [
    (rotate, (X, X[::-1].copy(), X * 3)),
    (from_outside, (X, X[::-1].copy())),
    (one_value_twice, (M,)),
    (passed_through, (X, X + 1)),
    (point_updates, (M,)),
    (inner_loop_result, (X,)),
    (branch_result, (M,)),
    (switch_index, (X,)),
    (large_body, (np.linspace(0, 1, 300_001).astype(np.float32),)),
    (scan_outputs, (M,)),
    (zero_trips, (X,)),
    (collatz, (np.int64(27),)),
    (empty_complex_carries, (np.zeros(0, np.complex64),)),
], ids=lambda v: getattr(v, "__name__", None))
def test_native_loops_match_the_interpreter(fn, args, cache):
    executable = assert_matches_interpreter(fn, cache, *args)
    assert any(step["op"] == "while" for step in executable.plan["body"]["steps"])


@pytest.mark.parametrize("fn, x", [(point_updates, M), (large_body, np.linspace(0, 1, 300_001).astype(np.float32))],
                         ids=["scalar work", "worker pool"])
def test_a_call_makes_no_python_level_launch(fn, x, cache, monkeypatch):
    """Neither a Python step nor a Python launch (the pool's launches are native code too)."""
    module, executable = compile_fn(fn, cache, x)
    counted = []
    monkeypatch.setattr(ex.CompiledKernel, "launch", lambda *args: counted.append("launch"))

    def counting(kind):
        original = kind.run

        def run(self, env):
            counted.append(kind.__name__)
            return original(self, env)
        return run
    for kind in (ex.Allocate, ex.Launch, ex.LaunchInPlace, ex.Reshape, ex.WhileLoop, ex.Branch):
        monkeypatch.setattr(kind, "run", counting(kind))
    np.testing.assert_array_equal(executable(x)[0], cj.ir.interpret(module, x)[0])
    launches = [s for s in executable.plan["body"]["steps"] if s["op"] == "kernel"]
    assert launches or fn is large_body     # point_updates: the copy before the loop
    assert fn is point_updates or any(kernel["parallel"] for kernel in executable.plan["kernels"])
    assert counted == []


def loop_kernel_steps(block):
    for step in block["steps"]:
        if step["op"] == "kernel":
            yield step
        for inner in codegen_schedule.blocks_of(step):
            yield from loop_kernel_steps(inner)


def test_a_one_element_update_in_a_loop_touches_one_element(cache):
    """Each launch inside the Gauss-Seidel-like loop writes a few scalars or, updating the 200 x 200
    array in place, a grid of one workgroup (a 200 x 200 copy would take 157 of 256 items): no
    iteration copies the array."""
    a = np.zeros((200, 200), np.float32)
    module, executable = compile_fn(point_updates, cache, a)
    (loop,) = [s for s in executable.plan["body"]["steps"] if s["op"] == "while"]
    kernels = executable.plan["kernels"]
    steps = list(loop_kernel_steps(loop["body"]))
    assert any(step["in_place"] for step in steps)
    for step in steps:
        plan = kernels[step["kernel"]]
        if step["in_place"]:
            assert np.prod(plan["grid"]) == 1, plan
        else:
            assert all(np.prod(shape) <= 2 for _, _, shape in step["results"]), step
    layout = codegen_schedule.schedule_layout(executable.plan["body"], executable.plan["outputs"],
                                              executable.plan["slots"], executable.plan["kernels"])
    assert layout.arena_bytes < a.nbytes   # the carry is updated in the result's buffer: no spares


def test_concurrent_calls_of_a_loop(cache):
    module, executable = compile_fn(point_updates, cache, M)
    inputs = [M + i for i in range(8)]
    expected = [cj.ir.interpret(module, x)[0] for x in inputs]
    results = [None] * 8

    def work(i):
        for _ in range(30):
            results[i] = executable(inputs[i])[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result, want in zip(results, expected):
        np.testing.assert_array_equal(result, want)


def call_in_child(executable, x, expected, connection):
    result = executable(x)[0]
    connection.send((bool(np.array_equal(result, expected)), executable.schedule.pool is started_pool()))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_a_forked_child_runs_the_schedule_on_a_pool_of_its_own(cache):
    """The parent's pool threads do not exist in a forked child: the schedule it inherited
    launches on the child's own pool."""
    x = np.linspace(0, 1, 300_001).astype(np.float32)
    module, executable = compile_fn(large_body, cache, x)
    expected = executable(x)[0]
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=call_in_child, args=(executable, x, expected, sender))
    child.start()
    child.join(timeout=120)
    if child.is_alive():
        child.kill()
        pytest.fail("a forked child's parallel launch hung")
    assert receiver.recv() == (True, True) and child.exitcode == 0   # its result; its own pool


ENDLESS_LOOP_UNDER_CTRL_C = """
import faulthandler, os, signal, sys, numpy as np, cdnajit as cj
from cdnajit import lax
faulthandler.register(signal.SIGUSR1)       # the test asks where a child that never answers is
if os.path.exists("/proc/self/status"):     # the signal state it inherited, for a failure's message
    print(*(line for line in open("/proc/self/status") if line.startswith("Sig")), signal.getsignal(signal.SIGINT),
          file=sys.stderr, flush=True)
endless = cj.jit(lambda n: lax.while_loop(lambda c: c >= 0, lambda c: c + 1, n))
assert endless(np.int64(-5)) == -5          # compiled before the loop starts
try:
    print("started", flush=True)            # a press may come before print returns: inside the try
    endless(np.int64(0))
    print("returned", flush=True)
except KeyboardInterrupt:
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the test keeps pressing until this answers
    print("interrupted", int(endless(np.int64(-7))), flush=True)   # still usable
"""


# A child compiles and runs for ~15 s of CPU: make test-all only.
@pytest.mark.slow
def test_ctrl_c_interrupts_a_loop_that_never_ends(tmp_path):
    """A fresh Python process runs an endless compiled loop and gets Ctrl-C every 0.3 s until it
    answers, so a loop that never polls fails the test instead of hanging the run."""
    environment = dict(os.environ, CDNAJIT_CACHE_DIR=str(tmp_path))
    child = subprocess.Popen([sys.executable, "-c", ENDLESS_LOOP_UNDER_CTRL_C], stdout=subprocess.PIPE,
                             stderr=open(tmp_path / "stderr", "w"), text=True, env=environment)
    try:
        assert child.stdout.readline().strip() == "started"
        time.sleep(1)   # the child is in the loop by then, not still returning from print
        deadline = time.monotonic() + 60
        while child.poll() is None and time.monotonic() < deadline:
            child.send_signal(signal.SIGINT)
            time.sleep(0.3)
        if child.poll() is None:
            child.send_signal(signal.SIGUSR1)   # its threads' stacks to stderr
            time.sleep(2)
    finally:
        child.kill()
    answer = child.stdout.read().split()
    assert answer == ["interrupted", "-7"], (answer, (tmp_path / "stderr").read_text()[-4000:])


def test_a_cached_program_loads_its_schedule_without_llvm(cache, monkeypatch):
    module, first = compile_fn(collatz, cache, np.int64(27))

    def refuse(text):
        raise AssertionError("the schedule was compiled again")
    monkeypatch.setattr("cdnajit.runtime.native_schedule.compile_schedule", refuse)
    again = ex.Executable.compile(module, cache)
    assert [int(v) for v in again(np.int64(27))] == [1, 111]


def gauss_seidel_like(a):   # three counted loops, the inner two from 1
    def row(i, a):
        return lax.fori_loop(1, a.shape[1] - 1, lambda j, a: a.at[i, j].set((a[i - 1, j] + a[i, j + 1]) * 0.5), a)
    return lax.fori_loop(0, 3, lambda _, a: lax.fori_loop(1, a.shape[0] - 1, row, a), a)


def test_launches_per_call_are_the_loops_trip_counts(cache):
    a = np.arange(42, dtype=np.float32).reshape(6, 7)
    module, executable = compile_fn(gauss_seidel_like, cache, a)
    counts = launches_per_call(executable.optimized)
    _, profile = executable.profile(a)
    assert len(counts) == len(profile) and len(set(counts)) > 2
    assert counts == [str(launches) for launches, _ in profile]


def test_launches_of_unknown_loops_and_branches(cache):
    def program(n, x):
        y = lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]
        return lax.cond(n > 2, lambda v: v + 1.0, lambda v: v - 1.0, y)
    module, executable = compile_fn(program, cache, np.int64(3), X)
    counts = launches_per_call(executable.optimized)
    assert "per iteration" in counts and "at most 1" in counts


def test_schedule_text_shows_native_loops_and_in_place_updates(cache):
    text = cj.jit(point_updates).lower(M).compile().as_text("schedule")
    assert text.startswith("schedule @point_updates(s0)")
    assert "one native function; arena" in text and "loop carries s" in text and "= while (" in text
    assert "in place on s" in text and "inlined" in text and "\n  return s" in text
    text = cj.jit(large_body).lower(np.zeros(300_001, np.float32)).compile().as_text("schedule")
    assert "worker pool" in text


def two_independent_launches(a, b):
    return a * 2.0 + 1.0, b * b - 3.0


def test_independent_launches_run_as_one_pool_job(cache):
    """Two launches neither of which reads the other's result run together (codegen/native_schedule.py:
    side_by_side): one pool job over both grids (293 and 196 workgroups), whose ranges of workgroups
    cross from one launch into the next; every element is still written once, as the interpreter's."""
    a, b = np.linspace(-1, 1, 300_001, dtype=np.float32), np.linspace(-2, 2, 200_003, dtype=np.float32)
    executable = assert_matches_interpreter(two_independent_launches, cache, a, b)
    assert [len(run) for run in codegen_schedule.side_by_side(executable.plan["body"]["steps"],
                                                              executable.plan["kernels"])] == [2]
    text = cj.jit(two_independent_launches).lower(a, b).compile().as_text("schedule")
    assert "\n  together, one job of the worker pool:\n    s" in text
    # Launches each too small for the pool (PARALLEL_MIN_WORK_ITEMS is 2**17 work-items) take it
    # together when their work adds up to a launch worth it, and not when it does not.
    for size, runs in ((40_001, [2]), (20_001, [1, 1])):
        a, b = np.linspace(-1, 1, size, dtype=np.float32), np.linspace(-2, 2, size + 2, dtype=np.float32)
        executable = assert_matches_interpreter(two_independent_launches, cache, a, b)
        assert not any(kernel["parallel"] for kernel in executable.plan["kernels"])
        assert [len(run) for run in codegen_schedule.side_by_side(executable.plan["body"]["steps"],
                                                                  executable.plan["kernels"])] == runs


def launch(kernel: int, inputs: list[int], result: int) -> dict:
    """A plan's launch step (runtime/executable.py: Planner.step) of one float32[64] result."""
    return {"op": "kernel", "kernel": kernel, "inputs": inputs, "results": [[result, "f32", [64]]], "in_place": False}


def test_every_devices_copy_of_a_chain_step_runs_with_the_others():
    """Two devices' chains, emitted device by device as split_reductions emits a sharded sum
    (partial 0, final 0, partial 1, final 1): each launch moves up to the run of its own code, so
    the partials run together and then the finals (codegen/native_schedule.py: side_by_side). A
    launch does not move past one whose value it reads, nor past a callback; launches of other
    code join only the run just before them."""
    partial, final, other = ({"grid": [8, 1], "key": key, "pool_share": share}
                             for key, share in (("partial", 0.5), ("final", 0.25), ("other", 0.5)))
    kernels = [partial, final, partial, final, other]
    chains = [launch(0, [0], 10), launch(1, [10], 11), launch(2, [1], 12), launch(3, [12], 13)]
    assert codegen_schedule.side_by_side(chains, kernels) == [[0, 2], [1], [3]]   # finals: shares under 1
    kernels = [dict(plan, pool_share=1.0) for plan in kernels]
    assert codegen_schedule.side_by_side(chains, kernels) == [[0, 2], [1, 3]]
    # Device 1's partial reads device 0's final: it stays after it.
    chained = chains[:2] + [launch(2, [11], 12), chains[3]]
    assert codegen_schedule.side_by_side(chained, kernels) == [[0], [1], [2], [3]]
    # A callback between the devices' chains keeps its place.
    callback = {"op": "callback", "inputs": [11], "results": [[20, "f32", [64]]]}
    assert codegen_schedule.side_by_side(chains[:2] + [callback] + chains[2:], kernels) == [[0], [1], [2], [3], [4]]
    # Another code's independent launch joins only the run before it (consecutive launches).
    assert codegen_schedule.side_by_side(chains[:2] + [launch(4, [2], 14)] + chains[2:], kernels) == \
        [[0, 3], [1, 2, 4]]
    # Plans of unknown code (no key) never move.
    unkeyed = [dict(plan, key=None) for plan in kernels]
    assert codegen_schedule.side_by_side(chains, unkeyed) == [[0], [1, 2], [3]]


def test_an_arena_is_reused_once_nothing_refers_to_it():
    pool = ArenaPool(1024, AssertionError)
    first = pool.take()
    view = first[64:128].view(np.float32)      # a result handed to a caller, say
    del first
    second = pool.take()
    assert not np.shares_memory(second, view)
    del second, view
    assert len({address(pool.take()) for _ in range(3)}) == 1


def test_repeated_calls_keep_one_arena(cache):
    x = np.linspace(-1, 1, 1000).astype(np.float32)
    module, executable = compile_fn(sorted_steps, cache, x)
    for _ in range(3):
        np.testing.assert_array_equal(executable(x)[0], cj.ir.interpret(module, x)[0])
    assert len(executable.schedule.arenas.arenas) == 1


def test_a_carry_updated_in_its_own_array_is_handed_over_uncopied(cache):
    """A scan's stacked outputs are updated in place in an array this call made: the loop's result
    is that array, returned as is; returned twice, the second is a copy."""
    def twice(xs):
        ys = scan_outputs(xs)[1]
        return ys, ys
    for fn, copied in ((lambda xs: scan_outputs(xs)[1], []), (twice, [False, True])):
        module, executable = compile_fn(fn, cache, M)
        layout = codegen_schedule.schedule_layout(executable.plan["body"], executable.plan["outputs"],
                                                  executable.plan["slots"], executable.plan["kernels"])
        assert [output.copied_from is not None for output in layout.outputs] == (copied or [False])
        outputs = executable(M)
        for got, want in zip(outputs, cj.ir.interpret(module, M)):
            np.testing.assert_array_equal(got, want)
        assert len(outputs) == 1 or not np.shares_memory(outputs[0], outputs[1])


def sorted_steps(x):       # three kernels a step, each value dead once the next is made
    return lax.fori_loop(0, 3, lambda i, c: cnp.sort(cnp.cumsum(cnp.sort(c)) * -0.5), x)


def test_values_never_live_together_share_arena_bytes(cache):
    x = np.linspace(-1, 1, 1000).astype(np.float32)
    executable = assert_matches_interpreter(sorted_steps, cache, x)
    (loop,) = [s for s in executable.plan["body"]["steps"] if s["op"] == "while"]
    layout = codegen_schedule.schedule_layout(executable.plan["body"], executable.plan["outputs"],
                                              executable.plan["slots"], executable.plan["kernels"])
    kernels = [s for s in loop["body"]["steps"] if s["op"] == "kernel"]
    assert len(kernels) >= 3
    spares = sum(2 * codegen_schedule.aligned_bytes(c.nbytes) for c in layout.carries[id(loop)] if c.spares)
    made = sum(codegen_schedule.aligned_bytes(codegen_schedule.value_bytes(dtype, shape))
               for step in kernels for _, dtype, shape in step["results"])
    assert layout.arena_bytes < spares + made
    offsets = dict(layout.buffers)
    firsts = [step["results"][0][0] for step in kernels]
    assert len({offsets.get(slot) for slot in firsts if slot in offsets}) < len([s for s in firsts if s in offsets])


def test_small_results_share_one_allocation_each_aligned_and_apart(cache):
    # Eight 1000-element results (a collective's one per device) come from one allocation; each
    # starts at a 64-byte boundary, none overlaps another, and their page offsets differ.
    x = np.arange(1000, dtype=np.float32)
    _, executable = compile_fn(lambda x: tuple(x * k for k in range(8)), cache, x)
    first, second = executable(x), executable(x)
    for k, result in enumerate(first):
        np.testing.assert_array_equal(result, x * k)
        assert address(result) % 64 == 0
    assert all(r.base is first[0].base for r in first) and first[0].base is not second[0].base
    spans = sorted((address(r), address(r) + r.nbytes) for r in first)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))
    assert len({start % 4096 for start, _ in spans}) == 8
    # Results too large to share (1 MiB together) are allocated one by one.
    big = np.arange(1 << 16, dtype=np.float32)
    _, executable = compile_fn(lambda x: (x + 1, x * 2, x - 3, x / 4), cache, big)
    results = executable(big)
    assert len({id(r.base) for r in results}) == 4
    np.testing.assert_array_equal(results[3], big / 4)
