"""runtime: loading compiled kernels and launching their grids; see DESIGN.md.

launch.py  `compile_kernel(kernel)` -> a callable `CompiledKernel` (cached by the kernel's text),
           whose call runs the grid's workgroups on a thread pool.
"""
