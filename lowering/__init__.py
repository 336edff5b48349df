"""lowering: graph op -> kernel IR, between passes/ and codegen/.

emitters.py   the table of kernel emitters, one entry per graph op, and the parameter contract
              (operands, then results, row-major) the runtime binds arrays by.
tiling.py     the launch configuration of a `fusion` kernel, chosen against the target's budgets.
elemental.py  the kernel-IR expression of one element of a graph op (XLA's elemental emitter);
              elemental_special.py the special functions', special_coefficients.py their derivations,
              elemental_indexing.py dynamic_slice's (a leaf of fused kernels).
emit_fusion.py  fusion kernels in tiling.py's layouts.
emit_ops.py   building blocks of the kernels of the ops fusion leaves alone, one module per family:
              emit_contract.py, emit_indexing.py, emit_scan.py, emit_sort.py (fft: libs/fft).
emit_library.py  a library_call: its library's own emitter (libs/, through ir/ops/library.py's registry).
"""
from . import elemental_indexing, elemental_special, emit_fusion  # noqa: F401
from . import emit_contract, emit_indexing, emit_library, emit_scan, emit_sort  # noqa: F401
