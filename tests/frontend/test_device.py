"""cj.device_put: copies of a pytree's arrays on 64-byte boundaries, C-contiguous, native byte
order, the values unchanged; jitted functions take them like any array."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.codegen.host import WRITTEN_BUFFER_ALIGNMENT


@pytest.mark.parametrize("array", [
    np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2],          # a strided view
    np.arange(5, dtype=">i4"),                                       # big-endian
    np.ones((0, 3), np.float64),                                     # empty
    np.float32(2.5),                                                 # a scalar
    np.arange(1000, dtype=np.float16).reshape(10, 100),
])
def test_device_put_copies_to_an_aligned_contiguous_native_array(array):
    placed = cj.device_put(array)
    assert isinstance(placed, np.ndarray) and placed.flags.c_contiguous and placed.dtype.isnative
    assert placed.size == 0 or placed.ctypes.data % WRITTEN_BUFFER_ALIGNMENT == 0
    assert placed.dtype == array.dtype.newbyteorder("=") and placed.shape == np.shape(array)
    np.testing.assert_array_equal(placed, array)
    assert placed.size == 0 or not np.shares_memory(placed, array)


def test_device_put_maps_a_pytree_and_jit_takes_its_leaves():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    placed = cj.device_put({"x": x, "scale": [2.0, 3]})
    assert isinstance(placed["scale"], list) and placed["scale"][1].dtype == np.asarray(3).dtype
    result = cj.jit(lambda tree: tree["x"] * tree["scale"][0] + cnp.float32(1))(placed)
    np.testing.assert_array_equal(result, x * 2 + 1)


def test_device_put_rejects_python_objects():
    with pytest.raises(TypeError, match="Python objects.*shape \\(2,\\)"):
        cj.device_put(np.array([object(), object()]))
