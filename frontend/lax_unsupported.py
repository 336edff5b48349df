"""The jax.lax functions cdnajit does not support yet, each with its reason: calling one raises
NotImplementedError naming it. README.md's "Not yet supported" section lists the same table
(tests/frontend/test_lax_coverage.py checks that both cover every public jax.lax function).
"""
from __future__ import annotations

from .tracing import located

COLLECTIVE = "a collective over named mesh axes not in libs/ccl yet"
RANDOM = "lax's own random-number primitives: not implemented (use cdnajit.random)"
SPECIAL = "a special function without a compiled kernel yet"
TOKEN = "an ordering token for side effects: cdnajit programs have none"

NOT_SUPPORTED = {
    **{name: COLLECTIVE for name in ("axis_size", "pbroadcast", "pcast", "precv", "psend", "pshuffle", "pswapaxes",
                                      "ragged_all_to_all")},
    **{name: RANDOM for name in ("rng_bit_generator", "rng_uniform", "random_gamma_grad")},
    **{name: SPECIAL for name in ("betainc", "igamma", "igamma_grad_a", "igammac")},
    **{name: TOKEN for name in ("after_all", "create_token")},
    "ragged_dot_general": "not implemented yet: general ragged dimension numbers (lax.ragged_dot is supported)",
    "scaled_dot": "a block-scaled low-precision product: needs a scaled GEMM in the blas library",
}


def unsupported(name: str, reason: str):
    def fn(*args, **kwargs):
        raise NotImplementedError(located(f"lax.{name} is not supported: {reason}"))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"jax.lax.{name}: not supported ({reason})."
    return fn


globals().update({name: unsupported(name, reason) for name, reason in NOT_SUPPORTED.items()})
__all__ = sorted(NOT_SUPPORTED)
