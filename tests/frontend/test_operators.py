"""Python operators, methods and properties of traced arrays, against numpy, and their errors."""
import operator

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp


def run(fn, *args):
    return cj.jit(fn, backend="interpret")(*args)


RNG = np.random.default_rng(0)
X = RNG.uniform(0.5, 3, (3, 4)).astype(np.float32)
Y = RNG.uniform(0.5, 3, (4,)).astype(np.float32)
I = RNG.integers(-50, 50, (3, 4)).astype(np.int32)
J = RNG.integers(1, 6, (4,)).astype(np.int32)

ARITHMETIC = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
              operator.pow, operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
BITWISE = [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift, operator.add,
           operator.mul, operator.floordiv, operator.mod, operator.eq, operator.lt]


def check(op, lhs, rhs):
    """op over every operand placement: tracer-tracer, tracer-constant, constant-tracer (reflected),
    numpy array on the left of a tracer, and Python/numpy scalars."""
    expected = op(lhs, rhs)
    # f32 results may differ from numpy by an ulp or two (pow): rtol 1e-6 is about 8 ulp.
    close = dict(rtol=1e-6) if expected.dtype.kind == "f" else {}
    for result in run(lambda a, b: (op(a, b), op(a, rhs), op(lhs, b)), lhs, rhs):
        assert result.dtype == expected.dtype
        np.testing.assert_allclose(result, expected, **close)
    scalar = rhs.flat[0].item()  # a Python scalar: weak, keeps lhs's dtype
    np.testing.assert_allclose(run(lambda a: op(a, scalar), lhs), op(lhs, type(scalar)(scalar)), **close)
    np.testing.assert_allclose(run(lambda b: op(scalar, b), rhs), op(np.asarray(scalar, rhs.dtype), rhs), **close)


@pytest.mark.parametrize("op", ARITHMETIC, ids=lambda op: op.__name__)
def test_arithmetic_and_comparison_operators(op):
    check(op, X, Y)


@pytest.mark.parametrize("op", BITWISE, ids=lambda op: op.__name__)
def test_integer_operators(op):
    check(op, I, J)


def test_numpy_array_and_scalar_on_the_left_give_tracers():
    def f(x):
        results = (np.ones(4, np.float32) + x, np.arange(4.0) * x, np.float32(2) - x, np.int8(3) < x,
                   np.ones((3, 4), np.float32) ** x)
        assert all(isinstance(r, type(x)) for r in results)
        return results
    out = run(f, Y)
    np.testing.assert_allclose(out[0], 1 + Y)
    assert out[1].dtype == np.float64          # a strong f64 numpy array widens, as in JAX
    assert out[2].dtype == np.float32          # numpy scalars are strong f32 here
    np.testing.assert_array_equal(out[3], 3 < Y)


@pytest.mark.parametrize("op, values", [(operator.neg, X), (operator.pos, X), (abs, X - 2), (operator.invert, I),
                                        (operator.neg, I), (abs, I), (operator.invert, I > 0)])
def test_unary_operators(op, values):
    np.testing.assert_array_equal(run(op, values), op(values))


def test_divmod_and_round_builtins():
    q, r = run(lambda a: divmod(a, 1.5), X)
    np.testing.assert_allclose(q, X // np.float32(1.5))
    np.testing.assert_allclose(r, X % np.float32(1.5), rtol=1e-6)
    np.testing.assert_array_equal(run(lambda a: round(a), X), np.round(X))
    np.testing.assert_allclose(run(lambda a: round(a, 1), X), np.round(X, 1), rtol=1e-6)


def test_in_place_operators_rebind_to_new_tracers():
    def f(x):
        original = x
        x += 1
        x *= 2
        x -= 0.5
        x /= 4
        x **= 2
        x //= 1
        assert x is not original
        return original, x
    original, updated = run(f, X)
    np.testing.assert_array_equal(original, X)
    np.testing.assert_allclose(updated, (((X + 1) * 2 - 0.5) / 4) ** 2 // 1, rtol=1e-6)


def test_matmul_operator():
    w = RNG.standard_normal((4, 2)).astype(np.float32)
    np.testing.assert_allclose(run(lambda a, b: a @ b, X, w), X @ w, rtol=1e-5)
    np.testing.assert_allclose(run(lambda b: X @ b, w), X @ w, rtol=1e-5)
    np.testing.assert_allclose(run(lambda a: a @ w, X), X @ w, rtol=1e-5)


# (method call, numpy equivalent)
METHODS = [
    (lambda a: a.reshape(4, 3), lambda a: a.reshape(4, 3)),
    (lambda a: a.reshape((2, -1)), lambda a: a.reshape((2, -1))),
    (lambda a: a.astype(np.int32), lambda a: a.astype(np.int32)),
    (lambda a: a.astype(cnp.float16), lambda a: a.astype(np.float16)),
    (lambda a: a.sum(), lambda a: a.sum()),
    (lambda a: a.sum(axis=0), lambda a: a.sum(axis=0)),
    (lambda a: a.mean(axis=1, keepdims=True), lambda a: a.mean(axis=1, keepdims=True)),
    (lambda a: a.max(axis=1), lambda a: a.max(axis=1)),
    (lambda a: a.min(), lambda a: a.min()),
    (lambda a: a.prod(axis=0), lambda a: a.prod(axis=0)),
    (lambda a: a.argmax(axis=1), lambda a: a.argmax(axis=1)),
    (lambda a: a.argmin(), lambda a: a.argmin()),
    (lambda a: (a > 1).any(axis=0), lambda a: (a > 1).any(axis=0)),
    (lambda a: (a > 1).all(), lambda a: (a > 1).all()),
    (lambda a: a.cumsum(axis=1), lambda a: a.cumsum(axis=1)),
    (lambda a: a.var(axis=0), lambda a: a.var(axis=0)),
    (lambda a: a.std(), lambda a: a.std()),
    (lambda a: a.transpose(), lambda a: a.transpose()),
    (lambda a: a.transpose(1, 0), lambda a: a.transpose(1, 0)),
    (lambda a: a.transpose((1, 0)), lambda a: a.transpose((1, 0))),
    (lambda a: a.T, lambda a: a.T),
    (lambda a: a.mT, lambda a: a.mT),
    (lambda a: a.flatten(), lambda a: a.flatten()),
    (lambda a: a.ravel(), lambda a: a.ravel()),
    (lambda a: a.reshape(1, 3, 1, 4).squeeze(), lambda a: a.reshape(1, 3, 1, 4).squeeze()),
    (lambda a: a.swapaxes(0, 1), lambda a: a.swapaxes(0, 1)),
    (lambda a: a.dot(a.T), lambda a: a.dot(a.T)),
    (lambda a: a.trace(), lambda a: a.trace()),
    (lambda a: a.trace(1), lambda a: a.trace(1)),
    (lambda a: a.clip(1, 2), lambda a: a.clip(1, 2)),
    (lambda a: a.round(1), lambda a: a.round(1)),
    (lambda a: (a * 1j).real, lambda a: (a * np.complex64(1j)).real),
    (lambda a: (a * 1j).imag, lambda a: (a * np.complex64(1j)).imag),
    (lambda a: (a + 2j).conj(), lambda a: (a + np.complex64(2j)).conj()),
    (lambda a: a.imag, lambda a: a.imag),
    (lambda a: a[1:, ::2], lambda a: a[1:, ::2]),
    (lambda a: a[None, ..., 0], lambda a: a[None, ..., 0]),
    (lambda a: a.at[0, 1].set(7.0), lambda a: np.where(np.arange(12).reshape(3, 4) == 1, np.float32(7), a)),
]


@pytest.mark.parametrize("index", range(len(METHODS)))
def test_methods_against_numpy(index):
    traced, reference = METHODS[index]
    expected = reference(X)
    result = run(traced, X)
    assert result.shape == np.shape(expected)
    assert result.dtype == np.asarray(expected).dtype
    # f32 reductions may sum in another order than numpy's pairwise sum: a few ulp.
    np.testing.assert_allclose(result, expected, rtol=2e-6)


def test_properties():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, ndim=x.ndim, size=x.size, dtype=x.dtype, itemsize=x.itemsize, nbytes=x.nbytes,
                    length=len(x))
        return x
    run(f, X)
    assert seen == dict(shape=(3, 4), ndim=2, size=12, dtype=np.float32, itemsize=4, nbytes=48, length=3)


def test_iteration_over_the_first_axis():
    rows = run(lambda a: list(a), X)
    for row, expected in zip(rows, X):
        np.testing.assert_array_equal(row, expected)


# ---- errors ----------------------------------------------------------------------------------------

def test_python_control_flow_on_a_traced_value_is_a_concretization_error():
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(cj.ConcretizationError, match=r"truth value.*test_operators\.py:\d+"):
        run(f, X)
    with pytest.raises(cj.ConcretizationError, match="float"):
        run(lambda x: float(x.sum()), X)
    with pytest.raises(cj.ConcretizationError):
        run(lambda x: np.asarray(x), X)


def test_shape_mismatch_names_both_shapes_and_the_line():
    with pytest.raises(cj.TracingValueError) as info:
        run(lambda a, b: a + b, np.ones((3, 4)), np.ones((5,)))
    message = str(info.value)
    assert "(3, 4)" in message and "(5,)" in message and "add" in message
    assert "test_operators.py:" in message


def test_operand_that_is_not_an_array_is_a_type_error():
    with pytest.raises(TypeError, match="unsupported operand"):
        run(lambda a: a + "text", X)
    with pytest.raises(TypeError):
        run(lambda a: a * object(), X)

    def compare_with_non_arrays(a):
        # == with something that is not an array falls back to identity, as for jax.Array
        assert (a == None) is False and (a != "text") is True  # noqa: E711
        return a
    run(compare_with_non_arrays, X)


def test_item_assignment_points_to_at():
    def f(x):
        x[0] = 1.0
        return x
    with pytest.raises(cj.TracingTypeError, match=r"immutable.*\.at\[index\]\.set"):
        run(f, X)


def test_bad_dtype_for_an_operator_names_the_op_and_dtype():
    with pytest.raises(cj.TracingTypeError, match=r"neg.*bool.*test_operators\.py"):
        run(lambda a: -(a > 0), X)
    with pytest.raises(cj.TracingTypeError, match=r"left_shift does not accept dtype float32"):
        run(lambda a: a << 1, X)
