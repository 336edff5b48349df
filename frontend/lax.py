"""cdnajit.lax: jax.lax's names and semantics, traced into the graph IR.

The functions live in family modules: lax_elementwise (elementwise ops, select, convert),
lax_shape (broadcasts, reshapes, slices, pad), lax_contract (dot_general, convolutions),
lax_reduce (reductions, windows, cumulative scans), lax_control (loops and branches), lax_arrays
(split, stack, tile and other helpers), lax_gather (gather and the scatter family), lax_conv (convolution
variants and shape helpers), lax_scans (associative_scan, top_k...), lax_program (barriers, composites,
solvers), lax_bits (population_count, clz, mulhi), lax_bitcast (bitcast_convert_type, nextafter,
reduce_precision), lax_fft; lax_unsupported raises NotImplementedError, with the reason, for the jax.lax
functions not supported yet.
"""
from . import (eager, lax_arrays, lax_bitcast, lax_bits, lax_contract, lax_control, lax_conv, lax_elementwise, lax_fft,
               lax_gather, lax_program, lax_reduce, lax_scans, lax_shape, lax_unsupported)
from .lax_arrays import *  # noqa: F401,F403
from .lax_bitcast import *  # noqa: F401,F403
from .lax_bits import *  # noqa: F401,F403
from .lax_contract import *  # noqa: F401,F403
from .lax_control import *  # noqa: F401,F403
from .lax_conv import *  # noqa: F401,F403
from .lax_elementwise import *  # noqa: F401,F403
from .lax_fft import *  # noqa: F401,F403
from .lax_gather import *  # noqa: F401,F403
from .lax_program import *  # noqa: F401,F403
from .lax_reduce import *  # noqa: F401,F403
from .lax_scans import *  # noqa: F401,F403
from .lax_shape import *  # noqa: F401,F403
from .lax_unsupported import *  # noqa: F401,F403
from .collectives import (all_gather, all_to_all, axis_index, pmax, pmean, pmin, ppermute, psum,  # noqa: F401
                          psum_scatter, with_sharding_constraint)

_COLLECTIVES = ["all_gather", "all_to_all", "axis_index", "pmax", "pmean", "pmin", "ppermute", "psum", "psum_scatter",
               "with_sharding_constraint"]

__all__ = (lax_elementwise.__all__ + lax_shape.__all__ + lax_contract.__all__ + lax_reduce.__all__
           + lax_control.__all__ + lax_arrays.__all__ + lax_gather.__all__ + lax_conv.__all__ + lax_scans.__all__
           + lax_program.__all__ + lax_bits.__all__ + lax_bitcast.__all__ + lax_fft.__all__ + lax_unsupported.__all__
           + _COLLECTIVES)

# Called outside jit, every function computes eagerly through the compiler (frontend/eager.py).
eager.make_namespace_eager(globals(), __all__, host_only={
    "padtype_to_pads", "conv_dimension_numbers", "broadcast_shapes", "dtype", "conv_general_permutations",
    "conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple", "reduce_window_shape_tuple",
    "shape_as_value", "composite", *lax_unsupported.__all__, *_COLLECTIVES})
