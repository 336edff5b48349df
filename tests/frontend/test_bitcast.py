"""Bit reinterpretation: lax.bitcast_convert_type against numpy's .view over every pair of real dtypes,
lax.nextafter / cnp.nextafter / cnp.spacing / cnp.signbit against numpy and stored JAX answers, and
lax.reduce_precision against stored JAX answers (data/make_bitcast_answers.py), compiled under jit and
eagerly. Values are compared bit for bit: NaN signs and payloads, and signed zeros, count."""
import pathlib

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.numpy as cnp
from cdnajit.errors import TracingTypeError, TracingValueError
from cdnajit.ir.types import FLOATS, INTS, NUMPY_DTYPES
from cdnajit.passes import canonicalize, fuse

# numpy warns on the special values (nextafter's overflow to inf, casts of NaN and of f64 extremes).
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ANSWERS = np.load(pathlib.Path(__file__).parent / "data" / "bitcast_answers.npz")
REAL = INTS + FLOATS
SIZES = (0, 1, 63, 65, 1000)
RNG = np.random.default_rng(5)


def bits(array) -> np.ndarray:
    array = np.asarray(array)
    return np.ascontiguousarray(array).view(f"u{array.dtype.itemsize}")


def random_bits(dtype: str, shape) -> np.ndarray:
    """Uniformly random bit patterns of dtype: NaNs of both signs, subnormals, infinities and zeros included."""
    width = NUMPY_DTYPES[dtype].itemsize
    raw = RNG.integers(0, 256, (*shape, width), dtype=np.uint8)
    return raw.view(NUMPY_DTYPES[dtype]).reshape(shape)


def special_values(dtype: str) -> np.ndarray:
    """±0, ±inf, ±1, the extremes and subnormals of dtype, and NaNs of both signs (quiet, with a payload)."""
    info = ml_dtypes.finfo(NUMPY_DTYPES[dtype])
    values = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.1, float(info.max), -float(info.max),
                       float(info.tiny), -float(info.tiny), float(info.smallest_subnormal),
                       -float(info.smallest_subnormal), float(info.tiny) / 3, np.nan], np.float64)
    with np.errstate(over="ignore"):
        values = values.astype(NUMPY_DTYPES[dtype])
    width = values.dtype.itemsize * 8
    nan_bits = bits(values[-1:]) | np.array([0, 1 << (width - 1), 1, (1 << (width - 1)) | 3], f"u{width // 8}")
    return np.concatenate([values[:-1], nan_bits.view(values.dtype)])


def specials_then_random_bits(dtype: str, n: int) -> np.ndarray:
    x = random_bits(dtype, (n,))
    specials = special_values(dtype)[:n]
    x[:len(specials)] = specials
    return x


def operand_shape(source: str, target: str, n: int) -> tuple[int, ...]:
    s, t = NUMPY_DTYPES[source].itemsize, NUMPY_DTYPES[target].itemsize
    return (n, t // s) if s < t else (n,)


def expected_view(x: np.ndarray, target: str) -> np.ndarray:
    s, t = x.dtype.itemsize, NUMPY_DTYPES[target].itemsize
    out = np.ascontiguousarray(x).reshape(-1).view(NUMPY_DTYPES[target])
    return out.reshape(x.shape[:-1] if s < t else x.shape + ((s // t,) if s > t else ()))


# ---- bitcast_convert_type ---------------------------------------------------------------------------

# make test checks the casts from and to f32; make test-all every pair (make test's time)
PAIRS = [pytest.param(source, target, marks=() if "f32" in (source, target) else pytest.mark.slow)
         for target in REAL for source in REAL]


@pytest.mark.parametrize("source, target", PAIRS)
def test_bitcast_convert_type_is_numpy_view_under_jit(source, target):
    """One compile per pair: the sizes travel together, and a fused add reads the reinterpreted bits."""
    xs = [random_bits(source, operand_shape(source, target, n)) for n in SIZES]
    if source in FLOATS:
        xs[-1] = specials_then_random_bits(source, xs[-1].size).reshape(xs[-1].shape)

    def f(arrays):
        return [lax.bitcast_convert_type(a, NUMPY_DTYPES[target]) for a in arrays]
    for x, got in zip(xs, cj.jit(f)(xs)):
        want = expected_view(x, target)
        assert got.dtype == want.dtype and got.shape == want.shape, (source, target, got.shape, want.shape)
        assert got.tobytes() == want.tobytes(), (source, target, x.shape)


@pytest.mark.parametrize("source, target", [("f32", "u8"), ("u8", "f64"), ("bf16", "i16"), ("f64", "bf16"),
                                            ("i32", "f32"), ("f16", "u32")])
@pytest.mark.parametrize("n", SIZES)
def test_bitcast_convert_type_eagerly(source, target, n):
    x = random_bits(source, operand_shape(source, target, n))
    got = lax.bitcast_convert_type(x, NUMPY_DTYPES[target])
    assert np.asarray(got).tobytes() == expected_view(x, target).tobytes()
    assert np.shape(got) == expected_view(x, target).shape


def test_bitcast_fuses_with_computation_around_it():
    """Equal widths are elementwise: exp, bitcast, integer add and bitcast back make one kernel."""
    def f(x):
        y = lax.bitcast_convert_type(cnp.exp(x), np.int32) + 1
        return lax.bitcast_convert_type(y, np.float32) * 2
    x = np.linspace(-3, 3, 65, dtype=np.float32)
    module = fuse(canonicalize(cj.make_graph(f)(x)))
    assert [op.name for op in module.body.ops if op.name != "constant"] == ["fusion"]
    want = (cj.jit(cnp.exp)(x).view(np.int32) + 1).view(np.float32) * 2
    np.testing.assert_array_equal(cj.jit(f)(x), want)


def test_bitcast_of_the_same_dtype_is_the_operand():
    x = np.array([1.5, -np.nan], np.float32)
    got = cj.jit(lambda x: lax.bitcast_convert_type(x, np.float32))(x)
    assert got.tobytes() == x.tobytes()


def test_bitcast_errors_name_the_types():
    with pytest.raises(TracingValueError, match=r"last dimension of 4"):
        cj.jit(lambda x: lax.bitcast_convert_type(x, np.float32))(np.zeros((3, 2), np.uint8))
    with pytest.raises(TracingTypeError, match="bool"):
        cj.jit(lambda x: lax.bitcast_convert_type(x, np.uint8))(np.zeros(3, bool))
    with pytest.raises(TracingTypeError, match="c64"):
        cj.jit(lambda x: lax.bitcast_convert_type(x, np.complex64))(np.zeros((3, 2), np.float32))


# ---- nextafter and spacing --------------------------------------------------------------------------

def assert_same_floats(got, want, what=""):
    """Bit-equal, but NaNs only as NaNs (numpy keeps an operand's NaN, XLA gives a quiet positive one)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype, got.shape)
    nan = np.isnan(want.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float64)), nan, err_msg=what)
    np.testing.assert_array_equal(bits(got)[~nan], bits(want)[~nan], err_msg=what)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nextafter_matches_numpy_on_special_values_and_random_bits(dtype):
    specials = special_values(dtype)
    a, b = (v.ravel() for v in np.meshgrid(specials, specials, indexing="ij"))
    a = np.concatenate([a, random_bits(dtype, (1000,))])
    b = np.concatenate([b, random_bits(dtype, (1000,))])
    fn = cj.jit(lambda a, b: (lax.nextafter(a, b), cnp.nextafter(a, b)))
    want = np.where(a == b, b, np.nextafter(a, b))   # equal operands give x2 (numpy's f16 gives x1)
    for got in fn(a, b):
        assert_same_floats(got, want, dtype)


def subnormal(x: np.ndarray) -> np.ndarray:
    magnitude = np.abs(x.astype(np.float64))
    return (magnitude > 0) & (magnitude < float(ml_dtypes.finfo(x.dtype).tiny))


@pytest.mark.parametrize("dtype", FLOATS)
def test_nextafter_and_spacing_match_stored_jax_answers(dtype):
    """JAX's own choices: a quiet positive NaN, nextafter(0, -0) = -0, spacing(-0) negative. Subnormal
    operands are left out: XLA's CPU code reads them as zero (there nextafter(0, 3e-39) = 3e-39); cdnajit
    keeps IEEE subnormals, as numpy, which the tests above compare with."""
    np_dtype = NUMPY_DTYPES[dtype]
    a, b = (ANSWERS[f"nextafter/{dtype}/{k}"].view(np_dtype) for k in "ab")
    normal = ~subnormal(a) & ~subnormal(b)
    got = cj.jit(lax.nextafter)(a, b)
    np.testing.assert_array_equal(bits(got)[normal], ANSWERS[f"nextafter/{dtype}/out"][normal])
    x = ANSWERS[f"spacing/{dtype}/x"].view(np_dtype)
    for got in (cj.jit(cnp.spacing)(x), cnp.spacing(x)):
        np.testing.assert_array_equal(bits(got)[~subnormal(x)], ANSWERS[f"spacing/{dtype}/out"][~subnormal(x)])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_spacing_matches_numpy(dtype, n):
    """numpy's spacing (ml_dtypes' for bf16), but for two values where JAX differs."""
    x = specials_then_random_bits(dtype, n)
    with np.errstate(invalid="ignore", over="ignore"):
        want = np.spacing(x)
    # JAX's answers where numpy's differ (the stored answers check them): spacing(-0.0) is the negative
    # smallest subnormal, and f16 steps towards +inf, so spacing(-inf) = -max - -inf = inf.
    if dtype == "f16":
        want[x == -np.inf] = np.inf
    else:
        want[(x == 0) & np.signbit(x.astype(np.float32))] = -ml_dtypes.finfo(x.dtype).smallest_subnormal
    assert_same_floats(cj.jit(cnp.spacing)(x), want, dtype)


def test_nextafter_and_spacing_promote_as_jax():
    assert cnp.nextafter(np.int32(1), np.int32(2)).dtype == np.float32
    assert cnp.spacing(np.array([3], np.int8)).dtype == np.float32
    assert cnp.spacing(np.int64(3)).dtype == np.float64
    assert cnp.nextafter(np.float16(1), np.float32(2)).dtype == np.float32
    assert float(cnp.nextafter(1, 2)) == np.nextafter(1.0, 2.0)
    with pytest.raises(TracingTypeError, match="floating-point"):
        lax.nextafter(np.int32(1), np.int32(2))
    with pytest.raises(TracingTypeError, match="one dtype"):
        lax.nextafter(np.float32(1), np.float64(2))


# ---- signbit ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_signbit_reads_the_sign_bit(dtype, n):
    """NaN's sign counts, -0.0 too (numpy's signbit; of bf16 through f32, which keeps the sign)."""
    x = specials_then_random_bits(dtype, n)
    want = np.signbit(x.astype(np.float32) if dtype == "bf16" else x)
    for got in (cj.jit(cnp.signbit)(x), cnp.signbit(x)):
        np.testing.assert_array_equal(got, want)


def test_signbit_of_integers_and_bools():
    x = np.array([-3, 0, 5], np.int16)
    np.testing.assert_array_equal(cj.jit(cnp.signbit)(x), [True, False, False])
    np.testing.assert_array_equal(cnp.signbit(np.array([True, False])), [False, False])


# ---- reduce_precision -------------------------------------------------------------------------------

FORMATS = [(5, 10), (8, 7), (4, 3), (5, 2), (3, 1), (2, 0), (11, 52), (8, 23), (10, 40), (1, 5)]


@pytest.mark.parametrize("dtype", FLOATS)
def test_reduce_precision_matches_stored_jax_answers(dtype):
    """Round to nearest even, overflow to inf, underflow to signed zero, NaN kept: bit for bit as XLA, but
    for bf16 NaNs, whose payload XLA's CPU code may change (they match as NaNs of the same sign)."""
    x = ANSWERS[f"reduce_precision/{dtype}/x"].view(NUMPY_DTYPES[dtype])
    nan = np.isnan(x.astype(np.float64)) if dtype == "bf16" else np.zeros(x.shape, bool)
    fn = cj.jit(lambda x: [lax.reduce_precision(x, e, m) for e, m in FORMATS])
    for (e, m), got in zip(FORMATS, fn(x)):
        want = ANSWERS[f"reduce_precision/{dtype}/{e}_{m}"]
        np.testing.assert_array_equal(bits(got)[~nan], want[~nan], err_msg=f"{dtype} to e{e}m{m}")
        np.testing.assert_array_equal(bits(got)[nan] >> 15, want[nan] >> 15, err_msg=f"{dtype} to e{e}m{m}")
        assert np.isnan(np.asarray(got)[nan].astype(np.float32)).all()


def test_reduce_precision_eagerly_and_to_the_dtypes_own_format():
    x = ANSWERS["reduce_precision/f32/x"].view(np.float32)
    np.testing.assert_array_equal(bits(lax.reduce_precision(x, 5, 10)), ANSWERS["reduce_precision/f32/5_10"])
    # Rounding f32 to bf16's format is ml_dtypes' round-to-nearest-even cast, NaNs aside.
    finite = np.isfinite(x)
    np.testing.assert_array_equal(np.asarray(lax.reduce_precision(x, 8, 7))[finite],
                                  x[finite].astype(ml_dtypes.bfloat16).astype(np.float32))


def test_reduce_precision_rejects_bad_formats():
    with pytest.raises(TracingValueError, match="exponent_bits >= 1"):
        lax.reduce_precision(np.float32(1), 0, 3)
    with pytest.raises(TracingTypeError, match="floating-point"):
        lax.reduce_precision(np.int32(1), 5, 10)
