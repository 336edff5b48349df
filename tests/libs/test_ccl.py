"""libs/ccl: each collective's kernels on groups of 1 to 8 logical devices against the numpy
reference (libs/ccl/routines.py). Error model: a reduction of n f32 values in any order differs
from another order by at most (n - 1) * eps * sum(|x|) (eps = 2**-23); integer and data-movement
results are exact."""
import numpy as np
import pytest

from cdnajit.codegen.host import optimized_llvm_ir
from cdnajit.ir.interpreter import interpret
from cdnajit.ir.opdef import infer_types
from cdnajit.ir.parser import parse
from cdnajit.libs.ccl import cost
from cdnajit.runtime.executable import Executable
from cdnajit.ir.types import TensorType, dtype_name
from cdnajit.runtime.report import ProgramReport

ROUTINES = {  # routine -> (extra attributes, operand shape for n devices)
    "all_reduce": ('reducer = "sum"', lambda n: (37, 3)),
    "all_gather": ("", lambda n: (5, 2)),
    "reduce_scatter": ('reducer = "sum"', lambda n: (3 * n, 4)),
    "broadcast": ("root = 0", lambda n: (11,)),
    "reduce": ('root = 0, reducer = "max"', lambda n: (9,)),
    "all_to_all": ("", lambda n: (2 * n, 3)),
    "ppermute": ("pairs = []", lambda n: (7,)),
}


def run(routine, n, xs, attrs=None):
    """(compiled results, interpreted results, executable) of one call of `routine` on n devices' xs."""
    extra = ROUTINES[routine][0] if attrs is None else attrs
    attrs_text = f'library = "ccl", routine = "{routine}", solution = "", axes = "i", group_size = {n}' + \
        (", " + extra if extra else "")
    types = [TensorType(dtype_name(xs[0].dtype), xs[0].shape)] * n
    head = f"func @f({', '.join(f'%{i}: {types[0]}' for i in range(n))})"
    attr_values = {k: parse_attr(v) for k, v in (a.split(" = ") for a in attrs_text.split(", "))}
    out_types = infer_types("library_call", types, attr_values)
    results = ", ".join(f"%{n + i}" for i in range(len(out_types)))
    out = ", ".join(map(str, out_types))
    text = (f"{head} -> ({out}) {{\n  {results} = library_call({', '.join(f'%{i}' for i in range(n))}) "
            f"{{{attrs_text}}} : ({out})\n  return {results}\n}}")
    module = parse(text)
    executable = Executable.compile(module)
    return executable(*xs), interpret(module, *xs), executable


def parse_attr(v):
    if v.startswith('"'):
        return v.strip('"')
    if v.startswith("["):
        return tuple(tuple(int(x) for x in p.split(",")) for p in v[2:-2].split("],[") if p)
    return int(v)


def check(routine, n, dtype=np.float32, attrs=None, seed=0):
    rng = np.random.default_rng(seed)
    _, shape_of = ROUTINES[routine]
    xs = [(rng.standard_normal(shape_of(n)) * 10).astype(dtype) for _ in range(n)]
    got, want, executable = run(routine, n, xs, attrs)
    scale = np.sum([np.abs(x).astype(np.float64) for x in xs], axis=0) if routine != "all_gather" else 0
    for g, w in zip(got, want):
        if dtype == np.float32 and routine in ("all_reduce", "reduce_scatter"):
            bound = (n - 1) * 2.0 ** -23 * (np.max(scale) if np.size(scale) else 0)
            np.testing.assert_allclose(g, w, rtol=0, atol=bound)
        else:
            np.testing.assert_array_equal(g, w)
    return executable


def test_ring_and_tree_all_reduce_on_four_devices():
    rng = np.random.default_rng(1)
    small = [rng.integers(-100, 100, 5).astype(np.int32) for _ in range(4)]
    big = [rng.integers(-100, 100, 300_001).astype(np.int32) for _ in range(4)]
    for xs, algorithm in ((small, "tree"), (big, "ring")):
        got, want, executable = run("all_reduce", 4, xs)
        assert algorithm == cost.all_reduce_algorithm(4, xs[0].nbytes)
        for g in got:
            np.testing.assert_array_equal(g, np.sum(xs, axis=0))
        text = ProgramReport(executable).stage_text("optimized")
        assert f'solution = "all_reduce_{"ring_chunked" if algorithm == "ring" else "tree"}_g4"' in text, text


def test_all_gather_on_two_devices_and_the_report_models_the_node():
    executable = check("all_gather", 2)
    table = ProgramReport(executable).table()
    assert "all_gather_g2 (2 devices" in table and "8 x MI300X" in table, table


def test_the_ring_sums_each_chunk_in_ring_order():
    # Chunk c of the message starts at device c + 1: with values 1, 2**24, -2**24 in f32, the order shows.
    xs = [np.full(3, v, np.float32) for v in (1.0, 2.0 ** 24, -(2.0 ** 24))]
    got, _, _ = run("all_reduce", 3, [np.tile(x, 100_000) for x in xs])
    c = np.array(got[0]).reshape(3, -1)   # chunk c: 100 000 elements
    orders = [(1, 2, 0), (2, 0, 1), (0, 1, 2)]
    for chunk, order in enumerate(orders):
        acc = np.float32(xs[order[0]][0])
        for d in order[1:]:
            acc = np.float32(acc + xs[d][0])
        assert np.all(c[chunk] == acc), (chunk, c[chunk][:3], acc)


def test_the_reductions_work_items_run_as_vector_loads_and_stores():
    # Each element is an independent work-item with unit-stride addresses: the host's work-item
    # loops must vectorize (an index the loop loaded from memory would make every access a gather).
    rng = np.random.default_rng(2)
    for routine, count in (("all_reduce", 5), ("all_reduce", 300_000), ("reduce_scatter", 4 * 3000)):
        xs = [rng.standard_normal(count).astype(np.float32) for _ in range(4)]
        _, _, executable = run(routine, 4, xs)
        for kernel in executable.kernels:
            text = optimized_llvm_ir(kernel)
            assert "load <" in text and "store <" in text and "load float" not in text, (routine, count, text)


@pytest.mark.slow
@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("routine", sorted(ROUTINES))
def test_every_collective_on_1_to_8_devices(routine, n):
    attrs = None
    if routine == "ppermute":
        attrs = "pairs = [" + ",".join(f"[{s},{(s + 1) % n}]" for s in range(n - 1)) + "]"
    if routine in ("broadcast", "reduce"):
        attrs = ROUTINES[routine][0].replace("root = 0", f"root = {n - 1}")
    check(routine, n, attrs=attrs)
    check(routine, n, dtype=np.int32, attrs=attrs, seed=1)


def test_bad_groups_are_named():
    from cdnajit.errors import ParseError
    text = """
func @f(%0: f32[3], %1: f32[3]) -> (f32[3], f32[3]) {
  %2, %3 = library_call(%0, %1) {library = "ccl", routine = "all_reduce", solution = "", axes = "i", group_size = 3, reducer = "sum"} : (f32[3], f32[3])
  return %2, %3
}"""
    with pytest.raises(ParseError, match="a group of 3 devices takes 1 operand"):
        parse(text)
    text = text.replace("group_size = 3", "group_size = 2").replace('"all_reduce"', '"reduce_scatter"')
    with pytest.raises(ParseError, match="must be a multiple of the group's 2 devices"):
        parse(text)


def test_the_cost_model_prefers_the_tree_for_small_and_the_ring_for_large_messages():
    assert cost.all_reduce_algorithm(8, 8) == "tree"
    assert cost.all_reduce_algorithm(8, 256 << 20) == "ring"
    # 256 MiB over 7 links of 64 GB/s each way: the ring's wire time 2 * 7/8 * S / 448e9.
    t = cost.modelled_seconds("all_reduce", "ring", 8, 256 << 20)
    assert abs(t - (14 * cost.LINK_LATENCY_S + 2 * 7 / 8 * (256 << 20) / 448e9)) < 1e-9
