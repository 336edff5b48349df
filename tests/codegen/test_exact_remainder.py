"""codegen/exact_remainder.py (the NVPTX backend's float `rem`): C's fmod bit for bit, checked on
the host through LLVM's JIT against numpy's fmod (libm's, exact) over special values, subnormals,
the largest exponent gaps and random operands."""
import ctypes

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

from cdnajit.codegen import exact_remainder
from cdnajit.codegen.fork_safe import LLVM_LOCK


def jitted_fmod(dtype):
    float_type = ir.FloatType() if dtype == np.float32 else ir.DoubleType()
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(float_type, [float_type, float_type]), name="fmod_exact")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(exact_remainder.fmod(b, *fn.args))
    with LLVM_LOCK:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        parsed = llvm.parse_assembly(str(module))
        parsed.verify()
        machine = llvm.Target.from_default_triple().create_target_machine()
        engine = llvm.create_mcjit_compiler(parsed, machine)
        engine.finalize_object()
        c_type = ctypes.c_float if dtype == np.float32 else ctypes.c_double
        function = ctypes.CFUNCTYPE(c_type, c_type, c_type)(engine.get_function_address("fmod_exact"))
    return function, engine


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fmod_is_exact(dtype):
    function, engine = jitted_fmod(dtype)
    info = np.finfo(dtype)
    specials = [0.0, -0.0, 1.0, -1.0, 3.0, -6.0, 0.1, np.inf, -np.inf, np.nan, info.max, -info.max, info.tiny,
                info.smallest_subnormal, -info.smallest_subnormal, info.tiny * 0.75, 1e-3, 7.5e8]
    rng = np.random.default_rng(7)
    random = rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300)
    values = np.array(specials + list(random), dtype)
    x, y = np.meshgrid(values, values[:60])
    x, y = x.ravel(), y.ravel()
    got = np.array([function(a, c) for a, c in zip(x.tolist(), y.tolist())], dtype)
    with np.errstate(all="ignore"):
        want = np.fmod(x, y)
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(x[~same][:5], y[~same][:5], got[~same][:5], want[~same][:5]))
