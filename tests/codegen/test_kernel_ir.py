"""Kernel IR: the printer's text and the verifier's errors."""
import pytest

import cdnajit as cj
from cdnajit.ir import kernel as K

N = 1000
X = K.GlobalBuffer("x", "f32", N, readonly=True)
Y = K.GlobalBuffer("y", "f32", N)
I = K.Var("i", "i32")
T = K.Var("t", "i32")
INDEX = K.Let(I, K.workgroup_id(0) * 64 + K.workitem_id(0))


def kernel(body, params=(X, Y), **options):
    return K.Kernel("k", params=list(params), grid=(16,), body=body, **{"workgroup_size": (64,), **options})


def test_printer_text():
    tile = K.LdsBuffer("tile", "f32", 64)
    n = K.ScalarParam("n", "i32")
    body = [INDEX, K.Let(T, K.workitem_id(0)),
            K.Store(tile, T, K.select(I < n, X[I], 0.0)),
            K.Barrier(),
            K.For(K.Var("k", "i32"), 0, 6, 1, [K.If(T < 32, [K.Store(tile, T, tile[T] + 1.0)])], uniform=True),
            K.WaveReduce(K.Var("s", "f32"), "sum", tile[T]),
            K.If(I < n, [K.Store(Y, I, K.exp(K.Var("s", "f32")).cast("f64").cast("f32"))])]
    text = str(kernel(body, params=(X, Y, n), lds=[tile]))
    assert text == """\
kernel k(x: global f32[1000] readonly, y: global f32[1000], n: i32)
    grid [16, 1, 1] workgroup [64, 1, 1] wave 64 lds 256 bytes
  lds tile: f32[64]
{
  let i: i32 = ((workgroup_id(0) * 64) + workitem_id(0))
  let t: i32 = workitem_id(0)
  tile[t] = select((i < n), x[i], 0.0)
  barrier
  for uniform k: i32 in range(0, 6, 1) {
    if (t < 32) {
      tile[t] = (tile[t] + 1.0)
    }
  }
  let s: f32 = wave_reduce.sum(tile[t])
  if (i < n) {
    y[i] = f32(f64(exp(s)))
  }
}"""


def test_alongside_prints_after_uniform():
    body = [INDEX, K.If(WAVE_ID, [K.Store(LDS, I % 64, X[I])], uniform=True, alongside=True)]
    assert "  if uniform alongside (workgroup_id(0) >= 0) {" in str(kernel(body, lds=[LDS]))


def test_prefetch_prints_its_runs():
    text = str(kernel([K.Prefetch(X, K.workgroup_id(0) * 64, 4, 100, 64)]))
    assert "  prefetch x[(workgroup_id(0) * 64)]: 4 runs of 64, stride 100" in text


def test_constants_print_their_dtype():
    u = K.GlobalBuffer("u", "u8", 64)
    body = [K.Store(u, K.workitem_id(0), K.Const(255, "u8")), K.Store(Y, 0, K.Const(0.1, "f64").cast("f32"))]
    text = str(kernel(body, params=(u, Y)))
    assert "255:u8" in text and "0.1:f64" in text


def test_valid_kernels_verify():
    K.verify(kernel([INDEX, K.If(I < N, [K.Store(Y, I, K.tanh(X[I]))])]))


S = K.Var("s", "f32")
LDS = K.LdsBuffer("l", "f32", 64)
WAVE_ID = K.workgroup_id(0) >= 0  # a condition every work-item sees alike
# (body, kernel options, a fragment of the expected message)
BAD = [
    ([INDEX, K.If(I < N, [K.Barrier()])], {}, "barrier under non-uniform control flow `if (i < 1000) {`"),
    ([INDEX, K.For(K.Var("j", "i32"), 0, I, 1, [K.WaveReduce(S, "sum", 1.0 * X[I])])], {},
     "wave_reduce under non-uniform control flow `for j"),
    ([INDEX, K.If(I < N, [K.For(K.Var("j", "i32"), 0, 4, 1, [K.Barrier()], uniform=True)])], {},
     "under non-uniform control flow `if (i < 1000) {`"),
    ([INDEX, K.If(I < N, [K.Barrier()], uniform=True)], {}, "marked uniform, but its bounds or condition depend"),
    ([K.Store(Y, I, 1.0)], {}, "variable 'i' is used before it is defined"),
    ([INDEX, K.Let(S, X[I] + K.Const(1.0, "f64"))], {}, "add of different dtypes f32 and f64"),
    ([INDEX, K.Store(X, I, 1.0)], {}, "store to read-only buffer x"),
    ([INDEX, K.Let(I, K.workitem_id(0))], {}, "'i' is already defined"),
    ([INDEX, K.Store(Y, X[I], 1.0)], {}, "index must be an integer, got f32"),
    ([INDEX, K.Store(Y, I, K.exp(I).cast("f32"))], {}, "exp takes 1 operand(s) of one of f16"),
    ([INDEX, K.Let(S, I)], {}, "value of s is i32, expected f32"),
    ([INDEX, K.If(I, [])], {}, "condition is i32, expected bool"),
    ([INDEX, K.Assign(K.Var("z", "f32"), X[I])], {}, "assignment to undefined variable 'z'"),
    ([INDEX, K.WaveReduce(K.Var("r", "f64"), "sum", X[I])], {}, "result r: f64 differs from the value's dtype f32"),
    ([INDEX, K.WaveReduce(S, "prod", X[I])], {}, "unknown reduction 'prod'"),
    ([], {"workgroup_size": (96,)}, "must be a multiple of the wave size 64"),
    ([], {"workgroup_size": (96,), "wave_size": 32}, None),
    ([], {"wave_size": 48}, "wave size 48 must be a power of two"),
    ([], {"lds": [K.LdsBuffer("big", "f32", 20000)]}, "LDS of 80000 bytes exceeds the limit of 65536 bytes"),
    ([INDEX, K.Store(K.GlobalBuffer("w", "f32", 8), I, 1.0)], {}, "buffer 'w' is not declared"),
    ([INDEX, K.Let(S, K.Unary("not", X[I]))], {}, "not does not apply to f32"),
    ([INDEX, K.For(K.Var("j", "i32"), 0, 4, 0, [])], {}, "loop step must be positive, got 0"),
    ([INDEX, K.Let(K.Var("b", "i32"), K.Binary("shift_left", I, I) + (I << 2))], {}, None),
    ([INDEX, K.Let(K.Var("b", "u8"), X[I].bitcast("u8"))], {}, "bitcast of f32 to u8: needs two non-bool dtypes"),
    ([INDEX, K.Let(K.Var("b", "bool"), I.bitcast("bool"))], {}, "bitcast of i32 to bool"),
    ([INDEX, K.Let(K.Var("b", "u32"), X[I].bitcast("u32"))], {}, None),
    ([], {"streams": [("y", 64)]}, "stream 'y' is not a read-only global buffer"),
    ([], {"streams": [("x", 0)]}, "stream x: 0 elements per workgroup"),
    ([], {"streams": [("x", 64)]}, None),
    ([INDEX, K.If(WAVE_ID, [K.Store(LDS, I % 64, X[I])], alongside=True)], {"lds": [LDS]},
     "marked alongside, but not uniform"),
    ([INDEX, K.If(WAVE_ID, [K.Barrier()], uniform=True, alongside=True)], {}, "holds a barrier, wave op or prefetch"),
    ([INDEX, K.If(WAVE_ID, [K.Store(Y, I, 1.0)], uniform=True, alongside=True)], {},
     "stores to global buffer y (only LDS stores can run alongside what follows)"),
    ([INDEX, K.Let(S, K.Const(1.0, "f32")), K.If(WAVE_ID, [K.Assign(S, K.Const(2.0, "f32"))], uniform=True, alongside=True)], {},
     "assigns s, defined outside it"),
    ([INDEX, K.If(WAVE_ID, [K.Let(S, X[I]), K.Assign(S, S * 2.0), K.Store(LDS, I % 64, S)], uniform=True,
                  alongside=True)], {"lds": [LDS]}, None),
    ([K.Prefetch(X, K.workgroup_id(0) * 64, 4, 100, 64)], {}, None),
    ([K.Prefetch(LDS, 0, 1, 0, 64)], {"lds": [LDS]}, "prefetch of lds buffer l (only global memory is prefetched)"),
    ([K.Prefetch(X, K.workitem_id(0), 1, 0, 64)], {}, "prefetch is a workgroup-level statement"),
    ([INDEX, K.If(I < N, [K.Prefetch(X, 0, 1, 0, 64)])], {}, "prefetch is a workgroup-level statement"),
    ([K.Prefetch(X, 0, 0, 0, 64)], {}, "prefetch of 0 runs of 64 elements, stride 0: runs and elements must be"),
    ([K.Prefetch(X, X[0], 1, 0, 64)], {}, "start must be an integer, got f32"),
]


@pytest.mark.parametrize("body, options, message", BAD, ids=[str(i) for i in range(len(BAD))])
def test_verifier_errors(body, options, message):
    k = kernel(body, **options)
    if message is None:  # a control case: valid
        K.verify(k)
        return
    with pytest.raises(cj.VerifyError) as info:
        K.verify(k)
    assert message in str(info.value)
    assert str(info.value).startswith("kernel k: ")


def test_uniform_loop_with_uniform_bounds_verifies():
    """A uniform loop whose bound comes from a variable computed uniformly is accepted; one
    assigned under a non-uniform if is not."""
    count = K.Var("count", "i32")
    ok = [K.Let(count, K.workgroup_id(0) + 2), K.For(K.Var("j", "i32"), 0, count, 1, [K.Barrier()], uniform=True)]
    K.verify(kernel(ok))
    varying = [INDEX, K.Let(count, K.Const(2, "i32")), K.If(I < 5, [K.Assign(count, K.Const(3, "i32"))]),
               K.For(K.Var("j", "i32"), 0, count, 1, [K.Barrier()], uniform=True)]
    with pytest.raises(cj.VerifyError, match="marked uniform"):
        K.verify(kernel(varying))


def test_lds_layout_and_sizes():
    lds = [K.LdsBuffer("a", "f16", 3), K.LdsBuffer("b", "f64", 4)]
    k = kernel([], lds=lds, workgroup_size=(8, 8))
    assert k.lds_offsets() == {"a": 0, "b": 16}
    assert k.lds_bytes == 48 and k.workgroup_items == 64 and k.grid == (16, 1, 1)
