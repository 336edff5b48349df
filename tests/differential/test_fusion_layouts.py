"""Programs whose loop fusions take the loop_by_rows layout (lowering/tiling.py), compiled by
`Executable.compile` and compared exactly with the interpreter: their float ops are additions,
multiplications and minima, which the kernels compute as the interpreter does.

Shapes cover rows shorter than, as long as and longer than a workgroup, odd lengths, one row or
one column, and 3-D and 4-D results; operands broadcast from either side, sliced, reversed and
dynamically sliced (with starts that clamp), and a Floyd-Warshall loop whose body is one such fusion.
"""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.lowering.tiling import launch_config
from cdnajit.runtime.executable import Executable

RNG = np.random.default_rng(11)

SHAPES = [(2, 64), (3, 65), (5, 127), (4, 256), (3, 257), (7, 300), (2, 1000), (1, 300), (300, 1), (2, 3, 97),
          (3, 2, 4, 130)]


def floyd_warshall(d):
    return lax.fori_loop(0, d.shape[0], lambda k, d: cnp.minimum(d, d[:, k, None] + d[None, k, :]), d)


PROGRAMS = {
    "row_broadcast": lambda x, k: x * x[..., :1, :] + x[..., 1:2],
    "column_of_a_dynamic_row": lambda x, k: cnp.minimum(x, lax.dynamic_index_in_dim(x, k, x.ndim - 2) + x[..., :1]),
    "dynamic_slice": lambda x, k: lax.dynamic_slice(x, (k,) * x.ndim, x.shape[:-1] + (x.shape[-1] // 2 + 1,)) + 1,
    "reversed": lambda x, k: x[..., ::-1] * 2 + x[..., ::-1, :],
    "outer_sum": lambda x, k: x.reshape(-1)[:, None] + x.reshape(-1)[None, :] if x.size <= 600 else x + k,
}


def compiled_and_interpreted(fn, *args):
    module = cj.make_graph(fn)(*args)
    executable = Executable.compile(module)
    return executable, executable(*args), cj.ir.interpret(module, *args)


def assert_same(actual, expected):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(a, e)


def fusion_strategies(executable):
    return {launch_config(op).strategy for op in executable.kernel_ops if op.name == "fusion"}


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_loop_fusions_match_the_interpreter(name, shape):
    x = RNG.uniform(-4, 4, shape).astype(np.float32)
    k = np.int32(shape[-2] if len(shape) > 1 else 0)  # past the last row: the start clamps
    executable, actual, expected = compiled_and_interpreted(PROGRAMS[name], x, k)
    assert_same(actual, expected)
    if name in ("row_broadcast", "column_of_a_dynamic_row", "reversed") and shape[-1] >= 64 and x.size > shape[-1]:
        assert fusion_strategies(executable) == {"loop_by_rows"}


@pytest.mark.parametrize("n", [1, 63, 65, 130, 300])
def test_floyd_warshall_matches_the_interpreter(n):
    d = RNG.uniform(1, 10, (n, n)).astype(np.float32)
    d[RNG.uniform(size=(n, n)) < 0.5] = np.inf
    np.fill_diagonal(d, 0)
    executable, actual, expected = compiled_and_interpreted(floyd_warshall, d)
    assert_same(actual, expected)
    assert ("loop_by_rows" in fusion_strategies(executable)) == (n >= 64)
