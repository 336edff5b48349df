"""Plain numpy calls on traced arrays dispatch to cdnajit.numpy (__array_ufunc__, __array_function__)."""
import numpy as np
import pytest

import cdnajit as cj


def run(fn, *args):
    return cj.jit(fn, backend="interpret")(*args)


RNG = np.random.default_rng(0)
X = RNG.uniform(0.5, 2.5, (3, 4))
Y = RNG.uniform(0.5, 2.5, (4,))
I = RNG.integers(-20, 20, (3, 4))
J = RNG.integers(1, 4, (4,))

UFUNC_CALLS = [  # (numpy ufunc, operands); the traced call must agree with numpy's own answer
    (np.exp, (X,)), (np.log, (X,)), (np.sqrt, (X,)), (np.sin, (X,)), (np.tanh, (X,)), (np.arcsinh, (X,)),
    (np.expm1, (X,)), (np.log1p, (X,)), (np.cbrt, (X,)), (np.exp2, (X,)), (np.log10, (X,)), (np.fabs, (-X,)),
    (np.abs, (X - 1.5,)), (np.negative, (X,)), (np.positive, (X,)), (np.sign, (X - 1.5,)), (np.floor, (X,)),
    (np.ceil, (X,)), (np.trunc, (X,)), (np.rint, (X,)), (np.square, (X,)), (np.reciprocal, (X,)),
    (np.degrees, (X,)), (np.radians, (X,)), (np.isnan, (X,)), (np.isfinite, (X,)), (np.signbit, (X - 1.5,)),
    (np.nextafter, (X, Y)), (np.spacing, (X - 1.5,)),
    (np.conjugate, (X,)), (np.add, (X, Y)), (np.subtract, (X, 1.0)), (np.multiply, (2.0, X)),
    (np.divide, (X, Y)), (np.true_divide, (I, J)), (np.floor_divide, (I, J)), (np.remainder, (I, J)),
    (np.mod, (X, Y)), (np.fmod, (I, J)), (np.power, (X, Y)), (np.float_power, (X, Y)), (np.maximum, (X, Y)),
    (np.minimum, (X, Y)), (np.fmax, (X, Y)), (np.fmin, (X, Y)), (np.arctan2, (X, Y)), (np.hypot, (X, Y)),
    (np.copysign, (X, -Y)), (np.logaddexp, (X, Y)), (np.logaddexp2, (X, Y)), (np.heaviside, (X - 1.5, Y)),
    (np.greater, (X, Y)), (np.less_equal, (X, Y)), (np.equal, (I, J)), (np.not_equal, (I, J)),
    (np.logical_and, (X > 1, Y > 1)), (np.logical_or, (X > 1, Y > 1)), (np.logical_xor, (X > 1, Y > 1)),
    (np.logical_not, (X > 1,)), (np.bitwise_and, (I, J)), (np.bitwise_or, (I, J)), (np.bitwise_xor, (I, J)),
    (np.invert, (I,)), (np.left_shift, (I, J)), (np.right_shift, (I, J)), (np.matmul, (X, Y)),
]


@pytest.mark.parametrize("ufunc, operands", UFUNC_CALLS, ids=[u.__name__ + str(i) for i, (u, _) in
                                                               enumerate(UFUNC_CALLS)])
def test_numpy_ufuncs_on_tracers(ufunc, operands):
    expected = ufunc(*operands)
    arrays = [o for o in operands if isinstance(o, np.ndarray)]

    def traced(*args):
        it = iter(args)
        call = [next(it) if isinstance(o, np.ndarray) else o for o in operands]
        result = ufunc(*call)
        assert isinstance(result, type(args[0]))       # a tracer, not a numpy array
        return result
    result = run(traced, *arrays)
    assert result.dtype == expected.dtype
    np.testing.assert_allclose(result, expected, rtol=1e-12)


def test_numpy_array_on_the_left_of_a_ufunc_call():
    result = run(lambda y: (np.add(X, y), np.maximum(X, y), X - y, X < y), Y)
    np.testing.assert_allclose(result[0], X + Y)
    np.testing.assert_allclose(result[1], np.maximum(X, Y))
    np.testing.assert_allclose(result[2], X - Y)
    np.testing.assert_array_equal(result[3], X < Y)


def test_numpy_ufunc_methods():
    result = run(lambda x, y: (np.add.outer(y, y), np.multiply.outer(x, y), np.add.reduce(x, axis=1),
                               np.maximum.reduce(x), np.add.accumulate(x, axis=1), np.multiply.accumulate(y)), X, Y)
    expected = (np.add.outer(Y, Y), np.multiply.outer(X, Y), np.add.reduce(X, axis=1), np.maximum.reduce(X),
                np.add.accumulate(X, axis=1), np.multiply.accumulate(Y))
    for r, e in zip(result, expected):
        np.testing.assert_allclose(r, e, rtol=1e-12)


@pytest.mark.parametrize("ufunc", [np.gcd, np.lcm, np.bitwise_count])
def test_integer_ufuncs_dispatch(ufunc):
    args = (I,) * ufunc.nin
    np.testing.assert_array_equal(run(lambda *a: ufunc(*a), *args), ufunc(*args).astype(
        np.uint8 if ufunc is np.bitwise_count else I.dtype))


def test_ufunc_keywords_and_out_are_rejected():
    with pytest.raises(NotImplementedError, match=r"np.add.*out="):
        run(lambda x: np.add(x, 1, out=np.empty(4)), Y)
    with pytest.raises(NotImplementedError, match=r"np.exp.*keyword arguments \['where'\]"):
        run(lambda x: np.exp(x, where=x > 1), Y)
    with pytest.raises(NotImplementedError, match="subtract.reduce"):
        run(lambda x: np.subtract.reduce(x), Y)


FUNCTION_CALLS = [  # (numpy function call on one array); dispatched by name to cdnajit.numpy
    lambda a: np.sum(a, axis=0),
    lambda a: np.mean(a, axis=1, keepdims=True),
    lambda a: np.max(a),
    lambda a: np.amax(a, axis=0),
    lambda a: np.prod(a, axis=1),
    lambda a: np.argmax(a, axis=1),
    lambda a: np.cumsum(a, axis=0),
    lambda a: np.std(a),
    lambda a: np.where(a > 1, a, 0.0),
    lambda a: np.where(a > 1, a, np.zeros(4)),
    lambda a: np.concatenate([a, a * 2], axis=0),
    lambda a: np.stack([a, a]),
    lambda a: np.reshape(a, (4, 3)),
    lambda a: np.transpose(a),
    lambda a: np.swapaxes(a, 0, 1),
    lambda a: np.expand_dims(a, 0),
    lambda a: np.clip(a, 1.0, 2.0),
    lambda a: np.round(a, 1),
    lambda a: np.around(a),
    lambda a: np.dot(a, a.T),
    lambda a: np.einsum("ij,kj->ik", a, a),
    lambda a: np.outer(a[0], a[1]),
    lambda a: np.nan_to_num(a),
    lambda a: np.sinc(a),
    lambda a: np.angle(a),
    lambda a: np.real(a),
    lambda a: np.imag(a),
    lambda a: np.isposinf(a),
    lambda a: np.fix(a),
    lambda a: np.flip(a, axis=1),
    lambda a: np.tril(a),
]


@pytest.mark.parametrize("index", range(len(FUNCTION_CALLS)))
def test_numpy_functions_on_tracers(index):
    call = FUNCTION_CALLS[index]
    expected = np.asarray(call(X))
    result = run(call, X)
    assert result.shape == expected.shape and result.dtype == expected.dtype
    np.testing.assert_allclose(result, expected, rtol=1e-12)


def test_shape_queries():
    seen = {}

    def f(a):
        seen.update(shape=np.shape(a), ndim=np.ndim(a), size=np.size(a))
        return a
    run(f, X)
    assert seen == dict(shape=(3, 4), ndim=2, size=12)


@pytest.mark.parametrize("call, name", [
    (lambda a: np.real_if_close(a), "np.real_if_close"),
])
def test_unsupported_numpy_function_names_itself(call, name):
    with pytest.raises(NotImplementedError, match=name.replace(".", r"\.")):
        run(call, X)


def test_functional_numpy_code_jits_unchanged():
    def softmax_layer(x, w, b):
        h = np.matmul(x, w) + b
        h = h - np.max(h, axis=-1, keepdims=True)
        e = np.exp(h)
        return np.where(e > 1e-3, e / np.sum(e, axis=-1, keepdims=True), 0.0)
    w = RNG.standard_normal((4, 5))
    b = RNG.standard_normal((5,))
    np.testing.assert_allclose(run(softmax_layer, X, w, b), softmax_layer(X, w, b), rtol=1e-12)
