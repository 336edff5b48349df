"""Host codegen of index arithmetic: gathers at indices built with %, // and their mixtures, over
power-of-two and other moduli, offsets and sizes that cross workgroup boundaries, every index
dtype, against numpy's own index arithmetic. LLVM's loop vectorizer once took `(i + c) & m` of a
work-item induction for a consecutive index (codegen/host.py's low_bits)."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.ir import kernel as K
from cdnajit.ir.types import FLOATS, INTS, NUMPY_DTYPES
from cdnajit.runtime.launch import compile_kernel

WORKGROUP = 256
SIZES = (63, 65, 129, 257, 1000, 1280)  # 1280: five whole workgroups, no bounds check to vectorize around


def numpy_rem(a, m, signed):
    return np.fmod(a, m) if signed else a % m  # C's truncated remainder


def gather_kernel(n, source, index_dtype, form, m, c):
    """y[i] = x[index(i)] for i < n, the index computed in index_dtype."""
    x = K.GlobalBuffer("x", "f32", source, readonly=True)
    y = K.GlobalBuffer("y", "f32", n)
    i = K.Var("i", index_dtype)
    linear = (K.workgroup_id(0) * WORKGROUP + K.workitem_id(0)).cast(index_dtype)
    shifted = i + K.Const(c, index_dtype)
    index = {"rem": shifted % m, "div": shifted / m, "mixed": (shifted / m) % 7 * m + shifted % m}[form]
    store = [K.Store(y, i, x[index])]
    body = [K.Let(i, linear)] + (store if n % WORKGROUP == 0 else [K.If(i < n, store)])
    return K.Kernel(f"gather_{form}", params=[x, y], grid=(-(-n // WORKGROUP),), workgroup_size=(WORKGROUP,), body=body)


def expected_index(n, index_dtype, form, m, c):
    signed = index_dtype.startswith("i")
    shifted = np.arange(n, dtype=np.int64) + c
    rem = numpy_rem(shifted, m, signed)
    return {"rem": rem, "div": shifted // m, "mixed": (shifted // m) % 7 * m + rem}[form]


def check_gathers(index_dtype, form, m, sizes, offsets):
    for n in sizes:
        for c in offsets:
            index = expected_index(n, index_dtype, form, m, c)
            x = np.arange(int(index.max()) + 1, dtype=np.float32) * 0.5
            y = np.full(n, -1, np.float32)
            compile_kernel(gather_kernel(n, x.size, index_dtype, form, m, c))(x, y)
            np.testing.assert_array_equal(y, x[index], err_msg=f"n={n} c={c}")


@pytest.mark.parametrize("index_dtype", ["i32", "u32"])
@pytest.mark.parametrize("form", ["rem", "div", "mixed"])
@pytest.mark.parametrize("m", [16, 32, 15])
def test_gathers_at_rem_div_and_mixed_indices(index_dtype, form, m):
    check_gathers(index_dtype, form, m, (65, 1000, 1280), (0, 3))


@pytest.mark.slow
@pytest.mark.parametrize("index_dtype", ["i32", "u32", "i64", "u64"])
@pytest.mark.parametrize("form", ["rem", "div", "mixed"])
@pytest.mark.parametrize("m", [2, 16, 32, 64, 256, 1024, 15, 100])
def test_gathers_at_rem_div_and_mixed_indices_everywhere(index_dtype, form, m):
    check_gathers(index_dtype, form, m, SIZES, (0, 3, 37))


def check_broadcasts(dtype, rows, shapes, widths):
    rng = np.random.default_rng(5)
    for row in rows:
        x = (rng.standard_normal(row) * 50).astype(NUMPY_DTYPES[dtype])
        for shape in shapes(row):
            got = np.asarray(cj.jit(lambda v, s=shape: cnp.broadcast_to(v, s))(x))
            np.testing.assert_array_equal(got, np.broadcast_to(x, shape), err_msg=str(shape))
        column = x[:, None]
        for width in widths:
            got = np.asarray(cj.jit(lambda v, w=width: cnp.broadcast_to(v, (row, w)))(column))
            np.testing.assert_array_equal(got, np.broadcast_to(column, (row, width)))


@pytest.mark.parametrize("dtype", ("bool",) + INTS + FLOATS)
def test_broadcasts_of_a_row_over_every_dtype(dtype):
    """The shapes of the defect: (80, 16), (16, 5, 16) and (16, 5, 32), every dtype."""
    check_broadcasts(dtype, (16, 32), lambda row: [(80, row), (16, 5, row)] if row == 16 else [(16, 5, row)], ())


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ("bool",) + INTS + FLOATS)
def test_broadcasts_of_rows_and_columns_over_every_dtype(dtype):
    check_broadcasts(dtype, (16, 32, 63, 64, 65, 128, 129, 257, 1000),
                     lambda row: [(80, row), (16, 5, row), (3, 129, row)], (16, 63, 65, 257))
