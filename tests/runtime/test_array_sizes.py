"""Sizes no machine holds: each is a clear error naming the op, the shape, the bytes it would need
and, for traced code, the user's line; sizes a machine can hold are untouched.

Two limits: an array whose bytes overflow int64 (the byte offsets kernels index with) is refused
when traced, and by the verifier in IR text (ArraySizeError, a ValueError); an array within that
but beyond the machine's memory and swap fails when the program runs (AllocationError, a
MemoryError), whatever the system's overcommit policy. The sizes of the reliability report are
terabytes; a size past any address space (2**58 bytes) fails on every machine.
"""
import re

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.errors import AllocationError, ArraySizeError, ArraySizeVerifyError, CdnajitError, VerifyError
from cdnajit.ir import kernel as K
from cdnajit.ir.kernel_verifier import verify_kernel
from cdnajit.ir.types import MAX_ARRAY_BYTES, TensorType, format_bytes
from cdnajit.runtime.executable import Executable
from cdnajit.runtime.launch import machine_memory

HUGE = 2**55          # f64 elements: 2**58 bytes, more than any address space, fewer than int64 counts


def beyond_this_machine(nbytes: int):
    available = machine_memory()
    return pytest.mark.skipif(available is None or available >= nbytes,
                              reason=f"this machine has {available} bytes of memory and swap")


terabytes = beyond_this_machine(8 * 10**12)


def where(fn, offset=1) -> str:
    """file:line of the line `offset` lines below `fn`'s def: the user's line an error names."""
    return f"test_array_sizes.py:{fn.__code__.co_firstlineno + offset}"


def check_allocation_error(error: AllocationError, op: str, shape: tuple, nbytes: int, line: str):
    assert isinstance(error, CdnajitError) and isinstance(error, MemoryError)
    message = str(error)
    for fragment in (op, str(shape), f"{nbytes} bytes", line):
        assert fragment in message, (fragment, message)


def ones_huge():
    return cnp.ones((HUGE,))


def outer_of(a, b):
    return cnp.outer(a, b)


def zeros_square(n):
    return cnp.zeros((n, n))


def arange_huge():
    return cnp.arange(HUGE)


def arange_offset(stop):
    return cnp.arange(0.5, stop)


@pytest.mark.parametrize("run", ["jit", "eager"])
def test_ones_beyond_the_address_space(run):
    with pytest.raises(AllocationError) as info:
        cj.jit(ones_huge)() if run == "jit" else ones_huge()
    check_allocation_error(info.value, "broadcast_in_dim", (HUGE,), 8 * HUGE, where(ones_huge))


@terabytes
@pytest.mark.parametrize("run", ["jit", "eager"])
def test_ones_of_a_terabyte_size(run):
    fn = cj.jit(lambda: cnp.ones((10**12,))) if run == "jit" else (lambda: cnp.ones((10**12,)))
    with pytest.raises(AllocationError) as info:
        fn()
    check_allocation_error(info.value, "broadcast_in_dim", (10**12,), 8 * 10**12, "test_array_sizes.py:")


@beyond_this_machine(4 * 10**12)
def test_outer_of_two_million_vectors():
    a = np.ones(10**6, np.float32)
    with pytest.raises(AllocationError) as info:
        outer_of(a, a)
    check_allocation_error(info.value, "dot_general", (10**6, 10**6), 4 * 10**12, where(outer_of))
    with pytest.raises(AllocationError):
        cj.jit(outer_of)(a, a)


@terabytes
def test_zeros_of_a_terabyte_square():
    with pytest.raises(AllocationError) as info:
        zeros_square(10**6)
    check_allocation_error(info.value, "broadcast_in_dim", (10**6, 10**6), 8 * 10**12, where(zeros_square))


@pytest.mark.parametrize("run", ["jit", "eager"])
def test_sizes_that_overflow_int64_are_refused_when_traced(run):
    n = 2**40
    with pytest.raises(ArraySizeError) as info:
        cj.jit(zeros_square, static_argnums=0)(n) if run == "jit" else zeros_square(n)
    assert isinstance(info.value, CdnajitError) and isinstance(info.value, ValueError)
    message = str(info.value)
    for fragment in ("broadcast_in_dim", f"f64[{n},{n}]", str(8 * n * n), "YiB", where(zeros_square)):
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize("run", ["jit", "eager"])
def test_arange_of_an_unallocatable_count(run):
    with pytest.raises(AllocationError) as info:
        cj.jit(arange_huge)() if run == "jit" else arange_huge()
    check_allocation_error(info.value, "iota", (HUGE,), 8 * HUGE, where(arange_huge))


def test_arange_values_computed_when_traced():
    # Not an iota: its values are computed while tracing, as a constant of the program.
    with pytest.raises(AllocationError) as info:
        arange_offset(float(HUGE))
    message = str(info.value)
    for fragment in ("arange(0.5", str(HUGE), format_bytes(8 * HUGE), where(arange_offset)):
        assert fragment in message, (fragment, message)


@terabytes
def test_arange_of_a_trillion():
    with pytest.raises(AllocationError) as info:
        cnp.arange(10**12)
    check_allocation_error(info.value, "iota", (10**12,), 8 * 10**12, "test_array_sizes.py:")


def test_big_but_possible_sizes_trace_and_run():
    # Terabytes are traced and compiled without complaint: only running them needs the memory.
    graph = cj.make_graph(lambda: cnp.zeros((10**6, 10**6)))()
    assert str(graph.outputs[0].type) == "f64[1000000,1000000]"
    cj.ir.verify(graph)
    # A GiB result is allocated as any other (compiled, not run).
    compiled = cj.jit(lambda: cnp.ones((2**27,))).lower().compile()
    ((_, _, _, allocate, _),) = compiled.executable.schedule.results
    assert allocate is not None
    n = 2**23  # 64 MiB of f64 runs
    got = cnp.arange(n) * 2.0
    np.testing.assert_array_equal(got, np.arange(n) * 2.0)
    np.testing.assert_array_equal(cj.jit(lambda: cnp.ones((n,)))(), np.ones(n))


def module_text(shape: str, dtype: str = "f32") -> str:
    return (f"func @f(%0: {dtype}[{shape}]) -> ({dtype}[{shape}]) {{\n"
            f"  %1 = neg(%0) : {dtype}[{shape}]\n"
            f"  return %1\n}}\n")


@pytest.mark.parametrize("shape", ["4294967296,4294967296",        # 2**64 elements: an int64 product wraps to 0
                                   "3037000500,3037000500",        # just past 2**63 elements
                                   "1099511627776,1099511627776",
                                   "2305843009213693952"])         # 2**61 f32: 2**63 bytes
def test_verifier_refuses_sizes_that_overflow(shape):
    module = cj.ir.parse(module_text(shape))
    with pytest.raises(ArraySizeVerifyError) as info:
        cj.ir.verify(module)
    assert isinstance(info.value, VerifyError) and isinstance(info.value, ArraySizeError)
    message = str(info.value)
    assert message.startswith("line 1: func: parameter 0 ") and f"f32[{shape}]" in message, message
    with pytest.raises(ArraySizeError):          # compiling checks first: no pass sees such a module
        Executable.compile(module)


def test_verifier_names_the_op_whose_result_overflows():
    text = ("func @f() -> (f64[1099511627776,1099511627776]) {\n"
            "  %0 = constant() {value = dense<1.0>} : f64[]\n"
            "  %1 = broadcast_in_dim(%0) {shape = [1099511627776, 1099511627776], broadcast_dimensions = []}"
            " : f64[1099511627776,1099511627776]\n"
            "  return %1\n}\n")
    module = cj.ir.parse(text)
    with pytest.raises(ArraySizeVerifyError, match=r"^line 3: broadcast_in_dim: result 0 f64\["):
        cj.ir.verify(module)
    with pytest.raises(ArraySizeError):   # once "iterator is too large" from numpy, inside canonicalize
        Executable.compile(module)


def test_the_largest_sizes_that_fit_verify():
    for shape, dtype in (("2305843009213693951", "f32"), ("9223372036854775807", "i8"),
                         ("1073741824,1073741823", "f64")):
        cj.ir.verify(cj.ir.parse(module_text(shape, dtype)))
    assert TensorType("i8", (MAX_ARRAY_BYTES,)).size_problem() is None
    assert TensorType("i16", (MAX_ARRAY_BYTES,)).size_problem() is not None
    # The element count is exact: an int64 product would wrap 2**64 around to 0.
    assert TensorType("f32", (2**32, 2**32)).size == 2**64


def test_kernel_verifier_refuses_buffers_and_grids_that_overflow():
    x = K.GlobalBuffer("x", "f32", 2**61)
    kernel = K.Kernel("big", params=(x,), grid=(1, 1, 1), workgroup_size=(64, 1, 1), body=())
    with pytest.raises(VerifyError, match=r"x: 2305843009213693952 elements of f32"):
        verify_kernel(kernel)
    y = K.GlobalBuffer("y", "f32", 16)
    kernel = K.Kernel("wide", params=(y,), grid=(2**40, 2**40, 1), workgroup_size=(64, 1, 1), body=())
    with pytest.raises(VerifyError, match="more work-items than an int64 counts"):
        verify_kernel(kernel)


def test_format_bytes():
    assert format_bytes(0) == "0 bytes"
    assert format_bytes(1023) == "1023 bytes"
    assert format_bytes(8 * 10**12) == "8000000000000 bytes (7.28 TiB)"
    assert format_bytes(2**80) == f"{2**80} bytes (1 YiB)"


def sorted_terabyte_in_a_loop(x):
    return lax.fori_loop(0, 2, lambda i, c: c + cnp.sort(cnp.full((10**12,), i * 1.0))[0], x)


@terabytes
def test_a_loop_whose_buffers_the_machine_cannot_hold():
    with pytest.raises(AllocationError) as info:
        cj.jit(sorted_terabyte_in_a_loop)(0.0)
    message = str(info.value)
    # The value past the machine's memory: the array, or its rows as the sort library reads them.
    assert re.search(r"cannot allocate its result of shape \((1000000000000,|1, 1000000000000)\)", message), message
    assert where(sorted_terabyte_in_a_loop) in message
