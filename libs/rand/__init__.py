"""libs/rand: random number generators as rocRAND provides them, as library kernels.

philox.py         Philox4x32-10 (Random123), on numpy and on kernel expressions; rocRAND's stream order.
xorwow.py         XORWOW (Marsaglia), seeded as rocRAND; skip-ahead by GF(2) jump matrices.
mrg32k3a.py       MRG32k3a (L'Ecuyer), seeded and reduced as rocRAND; skip-ahead by 3x3 matrices mod m.
mt19937.py        MT19937 (init_genrand, init_by_array seeding), workgroups jumped ahead by a polynomial.
mtgp32.py         MTGP32 (parameter set 11213 No. 0, rocRAND's seeding), one workgroup stepping it in LDS.
sobol.py          Sobol32 quasi-random points, Joe and Kuo's direction numbers (128 dimensions).
distributions.py  uniform, normal (Box-Muller), log-normal and Poisson on a generator's words.
routines.py       the `generate` routine: attributes, shape rule, numpy reference.
kernels.py        its solutions (generator x distribution x dtype) and their kernels.
Calls come from `cj.libs.rand.generate` (frontend/random/rocrand.py), not from a matcher: no rules.
This file registers the library (ir/ops/library.py's contract).
"""
from ...ir.ops.library import Library, register_library
from . import kernels, routines

LIBRARY = register_library(Library(
    name="rand", routines=routines.ROUTINES, select=kernels.select, emit=kernels.emit, explain=kernels.explain,
    cache_stamp=lambda: "rand 3"))
