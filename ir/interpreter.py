"""The reference interpreter: evaluates any module with numpy, one op table reference per op.

It is the oracle every pass and backend is checked against, so it is written for clarity.
"""
from __future__ import annotations

import numpy as np

from ..errors import CdnajitError
from .core import Module, Region
from .opdef import get_opdef
from .types import NUMPY_DTYPES


def interpret(module: Module, *arrays) -> list[np.ndarray]:
    """Run `module` on numpy arrays (converted to the parameter dtypes); returns its outputs."""
    params = module.params
    if len(arrays) != len(params):
        raise CdnajitError(f"module @{module.name} takes {len(params)} arguments, got {len(arrays)}")
    inputs = []
    for i, (param, array) in enumerate(zip(params, arrays)):
        array = np.asarray(array)
        if tuple(array.shape) != param.type.shape:
            raise CdnajitError(f"argument {i} of @{module.name} has shape {array.shape}, expected {param.type}")
        inputs.append(array.astype(NUMPY_DTYPES[param.type.dtype], copy=False))
    return [np.array(v, copy=True) for v in run_region(module.body, inputs, {})]


def run_region(region: Region, args, outer_env: dict) -> list[np.ndarray]:
    env = dict(outer_env)
    env.update({id(p): a for p, a in zip(region.params, args)})
    for op in region.ops:
        opdef = get_opdef(op.name)
        operands = [env[id(v)] for v in op.operands]
        kwargs = dict(op.attrs)
        if op.regions:
            kwargs["regions"] = [lambda *xs, r=r, env=env: run_region(r, xs, env) for r in op.regions]
        results = opdef.reference(*operands, **kwargs)
        if not isinstance(results, (tuple, list)):
            results = (results,)
        if len(results) != len(op.results):
            raise AssertionError(f"reference of {op.name} returned {len(results)} results, expected {len(op.results)}")
        for value, result in zip(op.results, results):
            # A reference returns exactly its op's type: a silent cast here would hide its bugs.
            result = np.asarray(result)
            if result.shape != value.type.shape or result.dtype != NUMPY_DTYPES[value.type.dtype]:
                raise AssertionError(f"reference of {op.name} returned {result.dtype}{list(result.shape)}, "
                                     f"expected {value.type}")
            env[id(value)] = result
    return [env[id(v)] for v in region.outputs]
