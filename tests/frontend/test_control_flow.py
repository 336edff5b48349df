"""cdnajit.lax control flow (fori_loop, while_loop, scan, map, cond, switch) against Python loops.

Every loop body below does exact arithmetic (integers, or floats on values whose sums are
exact in the dtype), or the same float operations in the same order as the Python oracle,
so the results compare equal.
"""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax


def run(fn, *args):
    return cj.jit(fn, backend="interpret")(*args)


def sample(shape, dtype, seed=0):
    values = np.random.default_rng(seed).integers(-4, 5, size=shape)
    return values.astype(dtype)


def as_dtype(value, like):
    return lax.convert_element_type(value, like.dtype)


DTYPES = [np.float32, np.float64, np.int32, np.int64, np.float16]
SHAPES = [(), (1,), (3,), (2, 5)]


# ---- fori_loop -----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower, upper", [(0, 5), (2, 3), (4, 4), (5, 1), (-3, 2)])
def test_fori_loop_matches_a_python_loop(lower, upper, dtype, shape):
    x = sample(shape, dtype)

    def body(i, carry):   # carry = carry * 2 - i, elementwise
        return lax.sub(lax.mul(carry, 2), as_dtype(i, carry))

    expected = x.copy()
    for i in range(lower, upper):
        expected = (expected * 2 - i).astype(dtype)
    got = run(lambda a: lax.fori_loop(lower, upper, body, a), x)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, expected)
    # Traced bounds of a narrower integer type give the same loop.
    got = run(lambda a, lo, hi: lax.fori_loop(lo, hi, body, a), x, np.int32(lower), np.int32(upper))
    np.testing.assert_array_equal(got, expected)


def test_fori_loop_pytree_carry_and_captured_values():
    x = sample((4,), np.float64)
    w = sample((4,), np.float64, 1)

    def f(a, b):
        def body(i, carry):
            total, history = carry["total"], carry["history"]
            row = lax.dynamic_index_in_dim(history, i, keepdims=False)
            return {"total": lax.add(total, lax.mul(row, b)),
                    "history": lax.dynamic_update_index_in_dim(history, lax.add(row, 1.0), i, 0)}
        return lax.fori_loop(0, 3, body, {"total": a, "history": lax.broadcast(a, (3,))})

    got = run(f, x, w)
    np.testing.assert_array_equal(got["total"], x + 3 * x * w)
    np.testing.assert_array_equal(got["history"], np.broadcast_to(x + 1, (3, 4)))


def test_fori_loop_index_dtype_follows_the_bounds():
    got = run(lambda n: lax.fori_loop(0, n, lambda i, c: lax.add(c, i), np.int32(0)), np.int32(5))
    assert got.dtype == np.int32 and got == 10
    with pytest.raises(cj.TracingTypeError, match="integer scalars"):
        run(lambda: lax.fori_loop(0, 2.5, lambda i, c: c, 0))


def test_weak_initial_carry_widens_to_the_body_dtype():
    x = sample((3,), np.float32)
    got = run(lambda a: lax.fori_loop(0, 3, lambda i, c: lax.add(c, a), lax.full((3,), 0.0)), x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, 3 * x)
    got = run(lambda a: lax.fori_loop(0, 3, lambda i, c: lax.add(c, lax.reduce_sum(a, (0,))), 0), x)
    assert got.dtype == np.float32 and got == 3 * x.sum()
    # A weak body output converts to the carry's dtype instead.
    got = run(lambda a: lax.fori_loop(0, 2, lambda i, c: lax.full((3,), 1.5), a), x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.full(3, 1.5, np.float32))


@pytest.mark.parametrize("trips", [0, 2])
def test_weak_initial_carry_becomes_strong_in_its_own_dtype(trips):
    # JAX (x64): a weak 3 carried through an astype(int64) is a strong int64, so int8 + it is int64,
    # even when the loop runs no trip; a carry that stays weak leaves the int8 as it is.
    strong = run(lambda x: x + lax.fori_loop(0, trips, lambda i, c: (c + i).astype(cnp.int64), 3), np.int8(1))
    assert strong.dtype == np.int64 and strong == 4 + (trips == 2)
    weak = run(lambda x: x + lax.fori_loop(0, trips, lambda i, c: c + i, 3), np.int8(1))
    assert weak.dtype == np.int8 and weak == 4 + (trips == 2)


# ---- while_loop ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
@pytest.mark.parametrize("start, limit", [(1, 100), (3, 3), (7, 1000), (0, 50)])
def test_while_loop_matches_a_python_loop(start, limit, dtype):
    def cond(carry):
        value, _ = carry
        return lax.lt(value, limit)

    def body(carry):
        value, steps = carry
        return lax.add(lax.mul(value, 2), 1), lax.add(steps, 1)

    value, steps = start, 0
    while value < limit:
        value, steps = value * 2 + 1, steps + 1
    got = run(lambda v: lax.while_loop(cond, body, (v, 0)), np.array(start, dtype))
    assert got[0].dtype == np.dtype(dtype) and got[1].dtype == np.int64
    assert (got[0], got[1]) == (value, steps)


def test_while_loop_cond_must_return_a_bool_scalar():
    with pytest.raises(cj.TracingTypeError, match=r"cond_fun must return a bool scalar, got i64\[\]"):
        run(lambda x: lax.while_loop(lambda c: c, lambda c: c, x), np.int64(3))


def test_nested_loops_capture_outer_values():
    x = sample((3,), np.int64)

    def f(a):
        def outer(i, total):
            inner = lax.fori_loop(0, i, lambda j, t: lax.add(t, a), total)
            return lax.while_loop(lambda t: lax.lt(lax.reduce_max(t, (0,)), -100), lambda t: t, inner)
        return lax.fori_loop(0, 4, outer, lax.mul(a, 0))

    np.testing.assert_array_equal(run(f, x), 6 * x)


# ---- scan and map ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
@pytest.mark.parametrize("length", [0, 1, 5])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_cumulative_sum(length, reverse, dtype):
    xs = sample((length, 3), dtype)

    def step(carry, x):
        total = lax.add(carry, x)
        return total, lax.mul(total, 2)

    carry, ys = np.zeros(3, dtype), []
    for x in (xs[::-1] if reverse else xs):
        carry = carry + x
        ys.append(carry * 2)
    ys = np.array(ys[::-1] if reverse else ys, dtype).reshape(length, 3)
    got_carry, got_ys = run(lambda c, a: lax.scan(step, c, a, reverse=reverse), np.zeros(3, dtype), xs)
    assert got_ys.dtype == np.dtype(dtype) and got_ys.shape == (length, 3)
    np.testing.assert_array_equal(got_carry, carry)
    np.testing.assert_array_equal(got_ys, ys)


def test_scan_pytrees_of_xs_and_ys():
    xs = {"a": sample((4, 2), np.float64), "b": sample((4,), np.int32, 1)}

    def step(carry, x):
        count, total = carry
        scaled = lax.mul(x["a"], lax.convert_element_type(x["b"], np.float64))
        return (lax.add(count, 1), lax.add(total, scaled)), {"scaled": scaled, "none": None, "b": (x["b"],)}

    (count, total), ys = run(lambda x: lax.scan(step, (0, np.zeros(2)), x), xs)
    scaled = xs["a"] * xs["b"][:, None]
    assert count == 4
    np.testing.assert_array_equal(total, scaled.sum(0))
    np.testing.assert_array_equal(ys["scaled"], scaled)
    np.testing.assert_array_equal(ys["b"][0], xs["b"])
    assert ys["none"] is None


def test_scan_without_xs_and_with_unroll():
    carry, ys = run(lambda: lax.scan(lambda c, _: (lax.mul(c, 3), c), 1, None, length=5, unroll=2))
    assert carry == 243
    np.testing.assert_array_equal(ys, [1, 3, 9, 27, 81])


def test_scan_length_mismatch_is_an_error():
    with pytest.raises(cj.TracingValueError, match="one number of iterations"):
        run(lambda a, b: lax.scan(lambda c, x: (c, x), 0, (a, b)), np.zeros(3), np.zeros(4))
    with pytest.raises(cj.TracingValueError, match="one number of iterations"):
        run(lambda a: lax.scan(lambda c, x: (c, x), 0, a, length=2), np.zeros(3))
    with pytest.raises(cj.TracingTypeError, match="must return a pair"):
        run(lambda a: lax.scan(lambda c, x: c, 0, a), np.zeros(3))


def test_map():
    xs = sample((5, 2), np.int64)
    np.testing.assert_array_equal(run(lambda a: lax.map(lambda x: lax.reduce_sum(x, (0,)), a), xs), xs.sum(1))


# ---- cond and switch ------------------------------------------------------------------------------

@pytest.mark.parametrize("pred", [True, False, np.int32(0), np.int32(-3), np.uint8(1)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_cond_takes_the_right_branch(pred, dtype):
    x, y = sample((3,), dtype), sample((3,), dtype, 1)

    def f(p, a, b):
        return lax.cond(p, lambda u, v: (lax.add(u, v), u), lambda u, v: (lax.sub(u, v), v), a, b)

    got = run(f, pred, x, y)
    expected = (x + y, x) if pred else (x - y, y)
    for g, e in zip(got, expected):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(g, e)


def test_cond_pytree_operands_and_weak_branch_outputs():
    x = sample((2,), np.float16)

    def f(p, a):
        return lax.cond(p, lambda d: {"r": d["v"]}, lambda d: {"r": lax.full((2,), 0.5)}, {"v": a})

    for pred, expected in [(True, x), (False, np.full(2, 0.5, np.float16))]:
        got = run(f, pred, x)["r"]
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(cj.TracingTypeError, match="branches' output leaf 0"):
        run(lambda p, a: lax.cond(p, lambda: a, lambda: 0.5), True, x)   # f16[2] and a scalar differ in shape


@pytest.mark.parametrize("index", [-2, 0, 1, 2, 3, 7])
def test_switch_clamps_the_index(index):
    x = sample((3,), np.int32)
    branches = [lambda a: lax.add(a, 100), lambda a: lax.mul(a, 2), lambda a: lax.neg(a)]
    got = run(lambda i, a: lax.switch(i, branches, a), np.int32(index), x)
    expected = [x + 100, x * 2, -x][min(max(index, 0), 2)]
    np.testing.assert_array_equal(got, expected)


def test_cond_and_switch_lower_to_one_cond_op():
    text = cj.jit(lambda p, a: lax.cond(p, lax.neg, lax.abs, a)).lower(True, np.ones(2)).as_text()
    assert text.count("cond(") == 1 and "while" not in text
    text = cj.jit(lambda a: lax.scan(lambda c, x: (c, x), 0, a)).lower(np.ones(2)).as_text()
    assert "while(" in text and "dynamic_slice" in text and "dynamic_update_slice" in text


def test_nested_regions_verify_and_round_trip():
    def f(p, a):
        def step(c, row):
            inner = lax.fori_loop(0, 2, lambda i, t: lax.add(t, row), c)
            return inner, lax.switch(lax.convert_element_type(lax.reduce_sum(row, (0,)), np.int32),
                                     [lambda: row, lambda: a[0]])
        first = lax.index_in_dim(a, 0, keepdims=False)
        return lax.cond(p, lambda: lax.scan(step, first, a), lambda: (first, a))
    module = cj.make_graph(f)(True, np.ones((3, 2), np.float32))
    cj.ir.verify(module)
    assert cj.ir.parse(str(module)) == module


def test_control_flow_inside_scan_inside_cond():
    xs = sample((4, 3), np.int64)

    def f(p, a):
        def step(carry, x):
            bumped = lax.fori_loop(0, 2, lambda i, c: lax.add(c, x), carry)
            return bumped, lax.switch(lax.rem(lax.reduce_sum(x, (0,)), 3), [lax.neg, lax.abs, lambda v: v], x)
        first = lax.index_in_dim(a, 0, keepdims=False)
        return lax.cond(p, lambda b: lax.scan(step, lax.mul(first, 0), b), lambda b: (first, b), a)

    carry, ys = run(f, True, xs)
    np.testing.assert_array_equal(carry, 2 * xs.sum(0))
    fns = [np.negative, np.abs, lambda v: v]
    np.testing.assert_array_equal(ys, [fns[int(np.fmod(x.sum(), 3)) if x.sum() >= 0 else 0](x) for x in xs])


def test_user_style_code_with_operators_and_indexing():
    x = np.arange(12, dtype=np.float32).reshape(4, 3) - 5

    def f(a):
        weighted = lax.fori_loop(0, a.shape[0], lambda i, c: c + a[i, 0] * i, 0.0)
        carry, ys = lax.scan(lambda c, row: (c * 2 + row.sum(), cnp.abs(row)), 0.0, a)
        count, scaled = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, a))
        return weighted, carry, ys, count, scaled, lax.cond(weighted > 0, lambda: a + 1, lambda: a - 1)

    weighted, carry, ys, count, scaled, chosen = run(f, x)
    assert weighted.dtype == carry.dtype == np.float32
    assert weighted == sum(x[i, 0] * i for i in range(4))
    expected_carry = 0.0
    for row in x:
        expected_carry = expected_carry * 2 + row.sum()
    assert carry == expected_carry and count == 3
    np.testing.assert_array_equal(ys, np.abs(x))
    np.testing.assert_array_equal(scaled, 8 * x)
    np.testing.assert_array_equal(chosen, x + 1 if weighted > 0 else x - 1)


# ---- errors ------------------------------------------------------------------------------------------

def test_body_output_type_mismatch_names_both_types_and_the_line():
    def f(a):
        return lax.fori_loop(0, 3, lambda i, c: lax.convert_element_type(c, np.float64), a)
    line = f.__code__.co_firstlineno + 1
    with pytest.raises(cj.TracingTypeError) as info:
        run(f, np.zeros(3, np.float32))
    message = str(info.value)
    assert "f64[3]" in message and "f32[3]" in message and f"test_control_flow.py:{line}" in message


def test_body_output_shape_and_tree_mismatches():
    with pytest.raises(cj.TracingTypeError, match=r"returns f32\[1,3\].*carry is f32\[3\]"):
        run(lambda a: lax.while_loop(lambda c: False, lambda c: lax.reshape(c, (1, 3)), a), np.zeros(3, np.float32))
    with pytest.raises(cj.TracingTypeError, match=r"tree structure \(\*, \*\) but init_val has \[\*, \*\]"):
        run(lambda a: lax.fori_loop(0, 1, lambda i, c: (c[0], c[1]), [a, a]), np.zeros(3))
    with pytest.raises(cj.TracingTypeError, match=r"f's carry output has tree structure"):
        run(lambda a: lax.scan(lambda c, x: ((c, c), x), a, a), np.zeros(3))
    with pytest.raises(cj.TracingTypeError, match=r"returns i32\[\] for carry leaf 0 but the carry is f32\[\]"):
        run(lambda a: lax.scan(lambda c, x: (np.int32(1), x), np.float32(0), a), np.zeros(3, np.float32))


def test_branch_mismatches_name_the_branches():
    def f(p, a):
        return lax.cond(p, lambda: a, lambda: lax.convert_element_type(a, np.int32))
    line = f.__code__.co_firstlineno + 1
    with pytest.raises(cj.TracingTypeError) as info:
        run(f, True, np.zeros(2, np.float32))
    message = str(info.value)
    assert "false_fun returns i32[2]" in message and "true_fun returns f32[2]" in message
    assert f"test_control_flow.py:{line}" in message
    with pytest.raises(cj.TracingTypeError, match=r"the output of branches\[1\] has tree structure"):
        run(lambda i, a: lax.switch(i, [lambda: a, lambda: (a, a)]), 0, np.zeros(2))
    with pytest.raises(cj.TracingTypeError, match="pred must be a bool or integer scalar"):
        run(lambda a: lax.cond(a, lambda: a, lambda: a), np.float32(1))
    with pytest.raises(cj.TracingTypeError, match="index must be an integer scalar"):
        run(lambda a: lax.switch(True, [lambda: a], ), np.float32(1))
