"""jit(..., donate_argnums=...) as in JAX: a donated array's buffer may hold a result; an argument
not donated is never written; donation shows in the graph text and in where the copies go."""
import numpy as np
import pytest

import cdnajit as cj
from cdnajit import lax
from cdnajit.errors import ParseError


def update(a, v):
    return a.at[1].set(v)


def counted_updates(a):
    return lax.fori_loop(0, a.shape[0], lambda i, a: a.at[i].set(a[i] * 2.0 + 1.0), a)


def test_a_donated_array_holds_the_update():
    x = np.arange(5.0)
    y = cj.jit(update, donate_argnums=0)(x, 9.0)
    np.testing.assert_array_equal(y, [0, 9, 2, 3, 4])
    assert np.shares_memory(x, y)            # the update was written over the donated buffer


def test_an_array_not_donated_is_never_written():
    x = np.arange(5.0)
    y = cj.jit(update)(x, 9.0)
    np.testing.assert_array_equal(x, np.arange(5.0))
    np.testing.assert_array_equal(y, [0, 9, 2, 3, 4])


def test_a_loop_updates_a_donated_carry_without_copying_it():
    x = np.arange(7.0)
    donated = cj.jit(counted_updates, donate_argnums=(0,))
    kept = cj.jit(counted_updates)
    assert "copy(" not in donated.lower(x).compile().as_text("optimized")
    assert "copy(" in kept.lower(x).compile().as_text("optimized")
    np.testing.assert_array_equal(kept(x), np.arange(7.0) * 2 + 1)
    np.testing.assert_array_equal(x, np.arange(7.0))
    np.testing.assert_array_equal(donated(x), np.arange(7.0) * 2 + 1)


def test_a_misaligned_donated_carry():
    raw = np.zeros(1001 * 8, np.uint8)
    x = raw[8:].view(np.float64)              # 8 bytes past an allocation: not 64-byte aligned
    x[:] = np.arange(1000.0)
    np.testing.assert_array_equal(cj.jit(counted_updates, donate_argnums=0)(x), np.arange(1000.0) * 2 + 1)


def test_a_donated_array_also_passed_as_another_argument_is_copied():
    f = cj.jit(lambda a, b: a.at[0].set(b[1]) + b, donate_argnums=0)
    x = np.arange(5.0)
    np.testing.assert_array_equal(f(x, x), [1, 2, 4, 6, 8])   # [1, 1, 2, 3, 4] + x


def test_a_read_only_donated_array_is_copied():
    x = np.arange(5.0)
    x.flags.writeable = False
    np.testing.assert_array_equal(cj.jit(update, donate_argnums=0)(x, 9.0), [0, 9, 2, 3, 4])
    np.testing.assert_array_equal(x, np.arange(5.0))


def test_donated_pytree_leaves_are_module_parameters():
    f = cj.jit(lambda s, t: (s[0] + t, s[1]), donate_argnums=0)
    text = f.lower((np.zeros(3), np.ones(2)), np.ones(3)).as_text()
    assert "%0: f64[3] donated, %1: f64[2] donated, %2: f64[3])" in text


def test_donation_round_trips_through_the_text():
    module = cj.make_graph(cj.jit(update, donate_argnums=0))(np.arange(5.0), 9.0)
    assert cj.ir.parse(str(module)).donated == frozenset({0})
    with pytest.raises(ParseError, match="only the function's parameters may be donated"):
        cj.ir.parse("func @f(%0: i64[]) -> (i64[]) {\n"
                    "  %1 = while(%0) : (i64[]) {\n"
                    "    ^(%2: i64[] donated): %3 = lt(%2, %2) : bool[]\n      yield %3\n"
                    "    ^(%4: i64[]): yield %4\n  }\n  return %1\n}")


@pytest.mark.parametrize("argnums, error, match", [
    (3, ValueError, "donate_argnums=\\(3,\\), but the function only accepts 2 positional arguments"),
    ("a", TypeError, "donate_argnums must be ints"),
])
def test_bad_donate_argnums(argnums, error, match):
    with pytest.raises(error, match=match):
        cj.jit(update, donate_argnums=argnums)


def test_an_argument_both_static_and_donated():
    with pytest.raises(ValueError, match="are both static and donated"):
        cj.jit(update, static_argnums=1, donate_argnums=(0, 1))
