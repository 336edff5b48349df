"""Runtime sizes in kernel IR (ir/kernel.py): a grid and buffer counts that are extents of scalar
parameters, so one compiled kernel serves every size; `arguments` bind one launch and are not
part of the code's text."""
import dataclasses

import numpy as np
import pytest

import cdnajit as cj
from cdnajit.codegen.host import compile_object, is_aligned_buffer, streamed_buffers
from cdnajit.ir import kernel as K
from cdnajit.runtime.launch import CompiledKernel, LaunchError

N = K.ScalarParam("n", "i64")


def scale_kernel(arguments=()) -> K.Kernel:
    """y[i] = 2 x[i] + num_workgroups(0) * 0 for i < n, over ceil(n / 64) workgroups of 64."""
    x = K.GlobalBuffer("x", "f32", N, readonly=True)
    y = K.GlobalBuffer("y", "f32", N)
    i = K.Var("i", "i64")
    groups = K.num_workgroups(0).cast("i64")
    body = [K.Let(i, K.workgroup_id(0).cast("i64") * 64 + K.workitem_id(0).cast("i64")),
            K.If(i < N, [K.Store(y, i, x[i] * 2.0 + (groups - K.ceil_div(N, 64)).cast("f32"))])]
    return K.Kernel("scale", params=[x, y, N], grid=(K.ceil_div(N, 64),), workgroup_size=(64,), body=body,
                    arguments=arguments)


def test_one_compiled_kernel_runs_every_size():
    kernel = scale_kernel()
    K.verify(kernel)
    compiled = CompiledKernel(kernel, compile_object(kernel))
    rng = np.random.default_rng(0)
    for n in (1, 63, 64, 65, 129, 1000, 0):
        x = rng.standard_normal(n).astype(np.float32)
        y = np.full(n, np.nan, np.float32)
        compiled(x, y, n)
        np.testing.assert_array_equal(y, x * 2)   # num_workgroups(0) is the launch's ceil(n / 64)
    with pytest.raises(LaunchError, match="array of 5 elements"):
        compiled(np.zeros(4, np.float32), np.zeros(5, np.float32), 5)


def test_arguments_bind_a_launch_and_are_not_part_of_the_code():
    bound = scale_kernel(arguments=(("n", 100),))
    assert "arguments n = 100" in str(bound) and "grid [((n + 63:i64) / 64:i64), 1, 1]" in str(bound)
    assert bound.code_text() == dataclasses.replace(scale_kernel(), name="other").code_text()
    assert bound.launch_grid() == (2, 1, 1) and bound.num_workgroups == 2
    assert bound.launch_count(bound.params[0]) == 100
    x = np.arange(100, dtype=np.float32)
    y = np.zeros(100, np.float32)
    CompiledKernel(bound, compile_object(bound))(x, y)    # the bound scalar may be left out
    np.testing.assert_array_equal(y, x * 2)


def test_the_backend_claims_nothing_about_a_runtime_count():
    """Alignment and streaming stores depend on a buffer's size: a runtime count gets neither."""
    kernel = scale_kernel()
    assert not is_aligned_buffer("f32", kernel.params[1].count, readonly=False)
    assert streamed_buffers(kernel) == set()
    assert is_aligned_buffer("f32", 1 << 20, readonly=False)


@pytest.mark.parametrize("change, message", [
    (lambda k: dataclasses.replace(k, grid=(K.Var("g", "i64"),)), r"must be 1 to 3 counts >= 0 or extents"),
    (lambda k: dataclasses.replace(k, grid=(K.ceil_div(K.ScalarParam("m", "i64"), 64),)),
     "scalar parameter m: i64 is not a parameter of the kernel"),
    (lambda k: dataclasses.replace(k, arguments=(("x", 3),)), "argument 'x' is not a scalar parameter"),
    (lambda k: dataclasses.replace(k, params=(K.GlobalBuffer("x", "f32", K.Const(1.5, "f32")),) + k.params[1:]),
     "count 1.5 must be a number"),
])
def test_the_verifier_checks_extents_and_arguments(change, message):
    with pytest.raises(cj.VerifyError, match=message):
        K.verify(change(scale_kernel()))
