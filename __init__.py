"""cdnajit: a JAX/XLA-style compiler that lowers array programs to AMD Instinct (CDNA) kernels.

    import cdnajit as cj
    import cdnajit.numpy as cnp

    @cj.jit
    def f(x, w):
        return cnp.tanh(x @ w)
"""
import sys as _sys
import types as _types

from . import ir
from .errors import (AllocationError, ArraySizeError, CdnajitError, ConcretizationError, ParseError, TracingError,
                     TracingTypeError, TracingValueError, TypeCheckError, VerifyError)
from .frontend import cnp as numpy
from .frontend import lax
from .frontend import nn
from .frontend import ops
from .frontend import random
from .frontend import eager as _eager
from .frontend.eager import ensure_compile_time_eval
from .frontend import scipy_linalg as _scipy_linalg
from .frontend import sparse
from .frontend import sharding
from .frontend import distributed
from .frontend.device import device_put
from .frontend.shard_map import pmap, shard_map
from .frontend.jit import Compiled, Lowered, jit, make_graph, targets
from .frontend import pytree as _pytree
from .frontend.dtypes import float0 as _float0
from .frontend.pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten
from .frontend.transforms.ad import grad, hessian, jacfwd, jacrev, jvp, linearize, value_and_grad, vjp
from .frontend.transforms.api import (Array, ShapeDtypeStruct, block_until_ready, config,
                                      debug_callback as _debug_callback, debug_print as _debug_print, device_get,
                                      eval_shape, make_jaxpr, named_call, pure_callback)
from .frontend.transforms.batching import vmap
from .frontend.transforms.custom import (checkpoint, checkpoint_name as _checkpoint_name, checkpoint_policies,
                                        custom_jvp, custom_vjp, custom_vmap as _custom_vmap)
from .ir.targets import Target
from .runtime.devices import device_count, devices, local_devices, process_count, process_index
from .libs import blas as _blas
from .libs import dnn as _dnn
from .libs import rand as _rand
from .runtime.blas_tune import tune as _tune
from .runtime.dnn_find import find_module as _dnn_find_module
from .version import __version__
from . import experimental

# The find mode runs kernels, so it lives in runtime/ (libs/ may not import it); users find it where
# rocBLAS users look: cj.libs.blas.tune(M, N, K, dtype).
_blas.tune = _tune
# The rand library's generators are called from user code, inside or outside jit: the frontend builds
# the call, so users find it as cuRAND/rocRAND users look: cj.libs.rand.generate(...).
_rand.generate = random.rocrand.generate


def _dnn_find(fn, *args, **options):
    """cj.libs.dnn.find(fn, *args): time the applicable solvers of each convolution of fn(*args) and record
    the winners in the find-db (runtime/dnn_find.py); options: target, repeats, progress."""
    return _dnn_find_module(make_graph(fn)(*args), **options)


_dnn.find = _dnn_find

# `import cdnajit.numpy as cnp`, `import cdnajit.lax`, `.nn`, `.ops` and `.random` find the frontend's modules.
_sys.modules[__name__ + ".numpy"] = numpy
_sys.modules[__name__ + ".lax"] = lax
_sys.modules[__name__ + ".nn"] = nn
_sys.modules[__name__ + ".nn.initializers"] = nn.initializers
_sys.modules[__name__ + ".ops"] = ops
_sys.modules[__name__ + ".random"] = random
_sys.modules[__name__ + ".sparse"] = sparse
_sys.modules[__name__ + ".sharding"] = sharding
_sys.modules[__name__ + ".distributed"] = distributed

# `import cdnajit.scipy.linalg` (jax.scipy.linalg's functions), eager outside jit as cdnajit.numpy.
scipy = _types.ModuleType(__name__ + ".scipy", "cdnajit.scipy: jax.scipy's namespaces (linalg)")
scipy.linalg = _scipy_linalg
_eager.make_namespace_eager(vars(_scipy_linalg), _scipy_linalg.__all__, host_only=set())
_sys.modules[__name__ + ".scipy"] = scipy
_sys.modules[__name__ + ".scipy.linalg"] = _scipy_linalg

# `cj.tree_util` as jax.tree_util; `cj.debug` as jax.debug (host callbacks inside traced code too).
tree_util = _types.ModuleType(__name__ + ".tree_util", "cdnajit.tree_util: jax.tree_util's pytree functions")
for _name in ("tree_flatten", "tree_unflatten", "tree_leaves", "tree_map", "tree_structure", "register_pytree_node",
              "register_pytree_node_class", "Partial", "TreeDef"):
    setattr(tree_util, _name, getattr(_pytree, _name))
tree_util.PyTreeDef = _pytree.TreeDef
_sys.modules[__name__ + ".tree_util"] = tree_util
debug = _types.ModuleType(__name__ + ".debug", "cdnajit.debug: jax.debug's print and callback (host callbacks)")
debug.print, debug.callback = _debug_print, _debug_callback
_sys.modules[__name__ + ".debug"] = debug
remat = checkpoint
ad_checkpoint = _types.ModuleType(__name__ + ".ad_checkpoint", "cdnajit.ad_checkpoint: jax.ad_checkpoint's checkpoint, "
                                  "checkpoint_name and checkpoint_policies")
ad_checkpoint.checkpoint = ad_checkpoint.remat = checkpoint
ad_checkpoint.checkpoint_name, ad_checkpoint.checkpoint_policies = _checkpoint_name, checkpoint_policies
_sys.modules[__name__ + ".ad_checkpoint"] = ad_checkpoint
dtypes = _types.ModuleType(__name__ + ".dtypes", "cdnajit.dtypes: jax.dtypes' float0")
dtypes.float0 = float0 = _float0
_sys.modules[__name__ + ".dtypes"] = dtypes
custom_batching = _types.ModuleType(__name__ + ".custom_batching", "cdnajit.custom_batching: jax.custom_batching's custom_vmap")
custom_batching.custom_vmap = _custom_vmap
_sys.modules[__name__ + ".custom_batching"] = custom_batching

__all__ = ["jit", "grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "jacrev", "hessian", "vmap",
           "custom_jvp", "custom_vjp", "checkpoint", "remat", "checkpoint_policies", "ad_checkpoint", "dtypes", "float0", "ensure_compile_time_eval", "custom_batching", "tree_util", "debug", "eval_shape", "ShapeDtypeStruct",
           "make_jaxpr", "block_until_ready", "device_get", "named_call", "pure_callback", "device_put", "devices",
           "local_devices", "device_count", "process_index", "process_count", "sharding", "shard_map", "pmap", "distributed", "libs", "make_graph", "Lowered", "Compiled", "targets", "Target", "numpy", "lax", "nn", "ops",
           "random", "sparse", "scipy", "ir", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_map", "CdnajitError", "TracingError",
           "TracingTypeError", "TracingValueError", "ConcretizationError", "ParseError", "VerifyError", "TypeCheckError",
           "ArraySizeError", "AllocationError"]
