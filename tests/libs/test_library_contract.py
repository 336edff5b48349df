"""The library contract (ir/ops/library.py): a toy library registered here, and nowhere else, is
matched, selected, lowered, compiled, interpreted, printed, parsed and reported like BLAS.

The toy library has one routine, `fma` (d = a * b + c on f32 vectors), one matcher rule (add(mul(a,
b), c)), one solution and a kernel of one work-item per element.
"""
import numpy as np
import pytest

import cdnajit as cj
from cdnajit.ir import kernel as K
from cdnajit.ir.interpreter import interpret
from cdnajit.ir.opdef import require
from cdnajit.ir.ops.library import Library, Routine, register_library, unregister_library
from cdnajit.ir.parser import parse
from cdnajit.lowering.emit_ops import one_item_per_element
from cdnajit.lowering.emitters import operand_buffers
from cdnajit.passes.manager import DEFAULT_PIPELINE, run_pipeline
from cdnajit.passes.patterns import Pat


def fma_infer(types, attrs):
    require(len(types) == 3 and all(t == types[0] and t.dtype == "f32" and t.ndim == 1 for t in types),
            f"library_call: toy.fma takes three equal f32 vectors, got {', '.join(map(str, types))}")
    return [types[0]]


def fma_reference(a, b, c):
    with np.errstate(over="ignore", invalid="ignore"):
        return (a * b + c).astype(np.float32)


def fma_rule(m, a, b, c, product):
    if product.result.type.dtype != "f32" or product.result.type.ndim != 1 or not m.owns(product.result):
        return None
    return m.op("library_call", a, b, c, library="toy", routine="fma", solution="")


def fma_kernel(op, name, target):
    a, b, c, d = operand_buffers(op)
    count = op.result.type.size
    return one_item_per_element(name, [a, b, c, d], count,
                                lambda i: [K.Store(d, i, K.Load(a, i) * K.Load(b, i) + K.Load(c, i))], "i32")


TOY = Library(
    name="toy",
    routines={"fma": Routine(attrs={}, infer=fma_infer, reference=fma_reference, doc="d = a * b + c")},
    rules=((Pat.op("add", Pat.op("mul", Pat.var("a"), Pat.var("b"), name="product"), Pat.var("c")), fma_rule),),
    select=lambda op, target: "toy_one_item_per_element",
    emit=fma_kernel,
    explain=lambda op, target: (op.attrs["solution"], "the toy library's only solution"),
    cache_stamp=lambda: "toy 1",
)


@pytest.fixture
def toy_library():
    register_library(TOY)
    yield TOY
    unregister_library("toy")


def fma(x, y, z):
    return x * y + z


def operands(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(np.float32) for _ in range(3)]


@pytest.mark.parametrize("n", [1, 255, 256, 1000])
def test_a_toy_library_runs_compiled(toy_library, n):
    x, y, z = operands(n)
    compiled = cj.jit(fma).lower(x, y, z).compile()
    text = compiled.as_text("optimized")
    assert 'library = "toy"' in text and 'solution = "toy_one_item_per_element"' in text, text
    # x * y + z in the kernel is one multiply and one add, each rounded: the reference's arithmetic.
    np.testing.assert_array_equal(compiled(x, y, z), fma_reference(x, y, z))
    assert "toy_one_item_per_element (the toy library's only solution)" in compiled.report()


def test_the_toy_call_is_interpreted_printed_and_parsed(toy_library):
    x, y, z = operands(7, seed=1)
    graph = cj.make_graph(fma)(x, y, z)
    until_selection = [(name, run) for name, run in DEFAULT_PIPELINE if name != "fusion"]
    text = str(run_pipeline(graph, until_selection).module)
    assert "library_call" in text and 'routine = "fma"' in text, text
    np.testing.assert_array_equal(interpret(parse(text), x, y, z)[0], fma_reference(x, y, z))


def test_a_toy_routine_checks_its_operands(toy_library):
    text = """
func @f(%0: f32[3], %1: f32[3], %2: f32[4]) -> (f32[3]) {
  %3 = library_call(%0, %1, %2) {library = "toy", routine = "fma", solution = ""} : f32[3]
  return %3
}"""
    with pytest.raises(cj.ParseError, match="toy.fma takes three equal f32 vectors"):
        parse(text)


def test_programs_without_the_library_do_not_match_it(toy_library):
    # Integers are not the toy's: the rule declines and the ops compile as generated kernels.
    x = np.arange(5, dtype=np.int32)
    compiled = cj.jit(fma).lower(x, x, x).compile()
    assert "library_call" not in compiled.as_text()
    np.testing.assert_array_equal(compiled(x, x, x), x * x + x)


def test_an_unregistered_library_is_named():
    text = """
func @f(%0: f32[3]) -> (f32[3]) {
  %1 = library_call(%0, %0, %0) {library = "toy", routine = "fma", solution = ""} : f32[3]
  return %1
}"""
    with pytest.raises(cj.ParseError, match=r"unknown library 'toy' \(registered: blas[^)]*\)"):
        parse(text)
    with pytest.raises(ValueError, match="registered twice"):
        register_library(Library(name="blas", routines={}))


def test_special_values_go_through_the_toy_kernel(toy_library):
    x = np.float32([1, -0.0, np.inf, np.nan, 3e38, -np.inf])
    compiled = cj.jit(fma).lower(x, x, x).compile()
    assert 'library = "toy"' in compiled.as_text("optimized")
    np.testing.assert_array_equal(compiled(x, x, x), fma_reference(x, x, x))
