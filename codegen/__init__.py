"""codegen: kernel IR -> LLVM IR (llvmlite) -> native code; see DESIGN.md.

llvm_kernel.py  KernelBuilder, the target-neutral lowering of expressions and work-item
           statements; the host and AMDGPU builders are its sibling subclasses (its docstring lists
           what a backend provides).
host.py    the host (CPU) lowering: workgroup functions, work-item loops cut at barriers and wave
           ops, the `run(args, next, last, grab)` entry.
host_llvm.py  LLVM on a host module's text: O3, streaming stores, object code; run as a script,
           the worker process that llvm_worker.py sends that work to (llvmlite's leak stays there).
mathlib.py the math library written once as LLVM IR, shared by every backend.
amdgpu.py  the AMDGPU lowering (gfx942/gfx90a/gfx950): assembly, relocatable ELF, linked code object.
amdgpu_metadata.py  registers, spills, LDS and scratch read from the backend's metadata.
mfma_host.py, mfma_amdgpu.py  the lowerings of the MFMA wave op (ir/kernel_mfma.py), registered here.
fork_safe.py  LLVM_LOCK (llvmlite's lock, around all LLVM work, held across os.fork) and ForkSafeLock.
"""
from . import mfma_amdgpu, mfma_host  # noqa: F401
