"""What the FFT library tells the compiler about a `library_call fft.*`: its solution (the plan node
it runs: `stockham_len4096_radix[16,16,16]`, `bluestein_len10007_chirp`, ...), why, and its kernel
(generator.py)."""
from __future__ import annotations

import math

from ...ir.core import Op
from ...ir.kernel import Kernel
from ...ir.targets import Target
from .generator import chirp_kernel, lanes_of, pointwise_kernel, real_edge_kernel, stockham_kernel, twiddles_kernel
from .plan import Node
from .routines import complex_view, stockham_view


def stockham_options(op) -> list[str]:
    attrs = op.attrs
    lanes = lanes_of(op)
    options = []
    if lanes:
        columns = stockham_view(complex_view("fft.stockham", op.operands[0].type, attrs["input_kind"]), attrs).shape[3] > 1
        rows = "rows written transposed" if attrs["transpose"] else "rows in place"
        options.append(f"{lanes} transforms per workgroup side by side, one a lane: "
                       f"{'columns' if columns else rows}, their entries strided")
    options += ["times a spectrum between the passes and their inverse"] if attrs["spectrum"] != "none" else []
    options += [f"scale {attrs['scale']:g}"] if attrs["scale"] != 1.0 else []
    options += [f"the twiddles of length {attrs['twiddle_length']} after"] if attrs["twiddle_length"] else []
    options += ["transposed result"] if attrs["transpose"] else []
    options += [f"{attrs['input_kind']} input"] if attrs["input_kind"] != "complex" else []
    options += [f"{attrs['output_kind']} output"] if attrs["output_kind"] != "complex" else []
    options += ["a padded input times a conjugated factor"] if attrs["load_factor"] != "none" else []
    options += [f"times a {attrs['store_factor']} factor, {attrs['output_length']} positions"
                + (f" of {attrs['store_positions']}" if attrs["store_positions"] else "")] \
        if attrs["store_factor"] != "none" else []
    return options


# routine -> (the solution's name, why) of a call's attributes and the call
SOLUTIONS = {
    "twiddles": lambda a, op: (f"twiddles_len{a['length']}" + (f"_large{a['twiddle_length']}" if a["twiddle_length"] else ""),
                               "the node's twiddle table, computed once per call in f64"),
    "stockham": lambda a, op: (Node(math.prod(a["radices"]), tuple(a["radices"])).name,
                               "the plan node, whole in LDS" + (f" ({', '.join(stockham_options(op))})"
                                                                if stockham_options(op) else "")),
    "chirp": lambda a, op: (f"bluestein_len{a['length']}_chirp", f"Bluestein's filter, padded to {a['size']}"),
    "pointwise": lambda a, op: (f"pointwise_{a['factor']}_{a['input_kind']}_{a['output_kind']}",
                                f"a product, padding or crop to {a['length']} of a plan's edge"),
    "rfft_post": lambda a, op: ("rfft_post", "a real transform's spectrum from the half-length complex FFT"),
    "irfft_pre": lambda a, op: ("irfft_pre", "a real inverse transform's half-length complex input"),
}
EMITTERS = {"twiddles": twiddles_kernel, "stockham": stockham_kernel, "chirp": chirp_kernel,
            "pointwise": pointwise_kernel, "rfft_post": real_edge_kernel, "irfft_pre": real_edge_kernel}


def select(op: Op, target: Target) -> str:
    return SOLUTIONS[op.attrs["routine"]](op.attrs, op)[0]


def explain(op: Op, target: Target) -> tuple[str, str]:
    return SOLUTIONS[op.attrs["routine"]](op.attrs, op)


def emit(op: Op, name: str, target: Target) -> Kernel:
    return EMITTERS[op.attrs["routine"]](op, name)
