"""codegen: kernel IR -> LLVM IR (llvmlite) -> native code; see DESIGN.md.

host.py    the host (CPU) lowering: workgroup functions, work-item loops cut at barriers and wave
           ops, the `run(args, first, last)` entry, O3 optimisation and object code.
mathlib.py the math library written once as LLVM IR, shared with the AMDGPU lowering.
"""
