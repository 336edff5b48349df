"""Generates lax_answers.npz, known answers of tests/frontend/test_lax_conv_fft.py from JAX 0.10.2
(jax_enable_x64). Run once, with JAX installed:  python tests/frontend/data/make_lax_answers.py
"""
import pathlib

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
from jax import lax  # noqa: E402

rng = np.random.default_rng(7)
arrays = {}

# conv_transpose: (lhs shape, rhs shape, strides, padding, rhs_dilation, dimension_numbers, transpose_kernel)
CONV_TRANSPOSE = [
    ((1, 5, 5, 2), (3, 3, 2, 4), (2, 2), "SAME", None, None, False),
    ((2, 7, 3), (3, 3, 2), (3,), "VALID", None, None, False),
    ((1, 6, 5, 3), (2, 3, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), None, False),
    ((1, 4, 6, 5), (4, 2, 3, 3), (2, 2), "SAME", None, ("NCHW", "OIHW", "NCHW"), True),
    ((1, 0, 4, 2), (3, 3, 2, 2), (2, 2), "VALID", None, None, False),
]
for i, (ls, rs, strides, padding, dilation, dn, transpose) in enumerate(CONV_TRANSPOSE):
    lhs, rhs = rng.standard_normal(ls), rng.standard_normal(rs)
    arrays[f"conv_transpose/{i}/lhs"], arrays[f"conv_transpose/{i}/rhs"] = lhs, rhs
    arrays[f"conv_transpose/{i}/out"] = np.asarray(lax.conv_transpose(
        lhs, rhs, strides, padding, dilation, dn, transpose))

# conv_general_dilated_patches: (lhs shape, filter_shape, strides, padding, dimension_numbers)
PATCHES = [((2, 3, 5, 4), (2, 3), (1, 1), "VALID", None),
           ((1, 6, 5, 2), (3, 2), (2, 1), "SAME", ("NHWC", "OIHW", "NHWC"))]
for i, (ls, filt, strides, padding, dn) in enumerate(PATCHES):
    lhs = rng.standard_normal(ls).astype(np.float32)
    arrays[f"patches/{i}/lhs"] = lhs
    arrays[f"patches/{i}/out"] = np.asarray(lax.conv_general_dilated_patches(
        lhs, filt, strides, padding, dimension_numbers=dn))

# conv_general_dilated_local: (lhs shape, rhs shape, strides, padding, filter_shape, dimension_numbers)
LOCAL = [((2, 3, 5, 4), (4, 3 * 2 * 2, 4, 3), (1, 1), "VALID", (2, 2), None),
         ((1, 6, 5, 2), (2 * 3 * 2, 3, 5, 3), (2, 1), "SAME", (3, 2), ("NHWC", "IHWO", "NHWC"))]
for i, (ls, rs, strides, padding, filt, dn) in enumerate(LOCAL):
    lhs, rhs = rng.standard_normal(ls), rng.standard_normal(rs)
    arrays[f"local/{i}/lhs"], arrays[f"local/{i}/rhs"] = lhs, rhs
    arrays[f"local/{i}/out"] = np.asarray(lax.conv_general_dilated_local(
        lhs, rhs, strides, padding, filt, dimension_numbers=dn))

np.savez_compressed(pathlib.Path(__file__).with_name("lax_answers.npz"), **arrays)
