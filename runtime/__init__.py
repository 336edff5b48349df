"""runtime: loading compiled kernels and launching their grids; see docs/design.md.

launch.py  `compile_kernel(kernel)` -> a callable `CompiledKernel` (cached by the kernel's text),
           whose call runs the grid's workgroups on a thread pool; `object_code(kernel, cache)`,
           the object code of a kernel's code text from the cache, the library store or LLVM.
executable.py  `Executable.compile(module)`: the passes, one kernel per op, and the host schedule
           (launches, host loops and branches) that runs them; what `cj.jit` calls.
cache.py   the persistent compile cache (CDNAJIT_CACHE_DIR): object code and whole programs on disk.
occupancy.py  waves per SIMD from a kernel's registers, LDS and workgroup size, and its limiter.
roofline.py   FLOPs and bytes counted from the kernel IR and launch; bound and modelled time.
report.py     `kernel_report(kernel, target)` -> `KernelReport` (resources, occupancy, roofline);
              `ProgramReport(executable)`: the reports, stage texts, code objects and dumps behind
              `Compiled.kernels`, `.report()`, `.as_text()`, `.cost_analysis()`, `.code_object()`.
html_report.py  `Compiled.save_report(path)`: kernel table, fused graph and roofline chart, one page.
graphviz.py   the fused graph as a networkx graph, as Graphviz DOT, and drawn as SVG.
"""
