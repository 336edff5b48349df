"""What the FFT library tells the compiler about a `library_call fft.*`: its solution (the plan node
it runs), why, and its kernel (generator.py)."""
from __future__ import annotations

import math

from ...ir.core import Op
from ...ir.kernel import Kernel
from ...ir.targets import Target
from .generator import stockham_kernel, twiddles_kernel
from .plan import Node


def select(op: Op, target: Target) -> str:
    if op.attrs["routine"] == "twiddles":
        return f"twiddles_len{op.attrs['length']}" + (f"_large{op.attrs['twiddle_length']}"
                                                       if op.attrs["twiddle_length"] else "")
    radices = tuple(op.attrs["radices"])
    return Node(math.prod(radices), radices).name


def explain(op: Op, target: Target) -> tuple[str, str]:
    if op.attrs["routine"] == "twiddles":
        return select(op, target), "the plan's twiddle table, computed once per call in f64"
    options = [f"scale {op.attrs['scale']:g}"] if op.attrs["scale"] != 1.0 else []
    options += [f"twiddles of length {op.attrs['twiddle_length']} after"] if op.attrs["twiddle_length"] else []
    options += ["transposed result"] if op.attrs["transpose"] else []
    options += ["real input"] if op.attrs["input_kind"] == "real" else []
    return select(op, target), ("the plan node for this length, whole in LDS" +
                                (f" ({', '.join(options)})" if options else ""))


EMITTERS = {"twiddles": twiddles_kernel, "stockham": stockham_kernel}


def emit(op: Op, name: str, target: Target) -> Kernel:
    return EMITTERS[op.attrs["routine"]](op, name)
