"""debug.print and debug.callback inside traced code: host callbacks that run when the program runs.

Each check captures what the program prints (pytest's capsys) and compares it, line for line, with
what JAX prints for the same program (jax.debug.print's documented semantics: program order, the
values of each run, once per iteration in a loop, once per lane under vmap, primal values under
grad). Both the interpreter (`backend="interpret"`) and the compiled program (the native schedule)
run each program; the compiled runs are slow tests but one smoke case.
"""
from __future__ import annotations

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.numpy as cnp
from cdnajit.ir.core import walk
from cdnajit.passes.manager import run_pipeline

BACKENDS = ["interpret", pytest.param("native", marks=pytest.mark.slow)]


def jitted(fn, backend):
    return cj.jit(fn, backend="interpret") if backend == "interpret" else cj.jit(fn)


def printed(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def ordered_prints(x):
    cj.debug.print("first {}", x)
    y = cnp.sin(x) * 2
    cj.debug.print("second {y} {n}", y=y, n=7)       # keyword arguments, a static leaf
    cj.debug.print("third {}", x + 1)
    return y


def loop_prints(x):
    def body(i, c):
        cj.debug.print("step {} carry {}", i, c)
        return c * 2
    return lax.fori_loop(0, 3, body, x)


def test_prints_in_order_in_loops_and_errors_compiled(capsys):
    """The make-test smoke case of the native schedule: program order, one print per iteration, and
    a raising callback's exception reaching the caller."""
    x = np.array([0.5, 1.0], np.float32)
    cj.jit(ordered_prints)(x)
    y = np.sin(x) * 2
    assert printed(capsys) == [f"first {x}", f"second {y} 7", f"third {x + 1}"]
    assert cj.jit(loop_prints)(np.float32(1.5)) == 12
    assert printed(capsys) == ["step 0 carry 1.5", "step 1 carry 3.0", "step 2 carry 6.0"]

    def fails(v):
        raise ValueError(f"refused {v}")
    with pytest.raises(ValueError, match=r"refused 2\.0") as raised:
        cj.jit(lambda v: (cj.debug.callback(fails, v), v + 1)[1])(np.float32(2))
    assert "host callback" in raised.value.__notes__[0] and "test_debug_callbacks.py" in raised.value.__notes__[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_prints_run_each_call_with_its_values(backend, capsys):
    f = jitted(ordered_prints, backend)
    for x in (np.array([0.5, 1.0], np.float32), np.array([-2.0, 3.0], np.float32)):
        y = f(x)
        np.testing.assert_allclose(y, np.sin(x) * 2, rtol=1e-6)
        assert printed(capsys) == [f"first {x}", f"second {y} 7", f"third {x + 1}"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_prints_in_control_flow(backend, capsys):
    """while_loop, cond and scan bodies print each time they run (what JAX prints for this program)."""
    def f(x):
        def body(c):
            cj.debug.print("while {}", c)
            return c + 1
        y = lax.while_loop(lambda c: c < 3, body, x)
        z = lax.cond(y > 2, lambda v: (cj.debug.print("true {}", v), v * 2)[1],
                     lambda v: (cj.debug.print("false {}", v), v)[1], y)

        def step(c, r):
            cj.debug.print("scan {} {}", c, r)
            return c + r, c
        return lax.scan(step, z, cnp.arange(2.0))[0]
    assert jitted(f, backend)(np.float64(0.5)) == 8.0
    assert printed(capsys) == ["while 0.5", "while 1.5", "while 2.5", "true 3.5", "scan 7.0 0.0", "scan 7.0 1.0"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_prints_under_grad_jvp_and_vmap(backend, capsys):
    """grad and jvp print the primal values once (a loop's reverse pass recomputes its body without
    printing); vmap prints once per lane, in lane order, as JAX's debug_callback batching rule."""
    x = np.array([0.5, 1.0])

    def loss(x):
        return cnp.sum(loop_prints(x))
    np.testing.assert_allclose(jitted(cj.grad(loss), backend)(x), [8.0, 8.0])
    assert printed(capsys) == [f"step 0 carry {x}", f"step 1 carry {x * 2}", f"step 2 carry {x * 4}"]
    jitted(lambda x, t: cj.jvp(loop_prints, (x,), (t,)), backend)(x, x)
    assert printed(capsys) == [f"step 0 carry {x}", f"step 1 carry {x * 2}", f"step 2 carry {x * 4}"]
    np.testing.assert_allclose(jitted(cj.vmap(loop_prints), backend)(x), x * 8)
    assert printed(capsys) == ["step 0 carry 0.5", "step 0 carry 1.0", "step 1 carry 1.0", "step 1 carry 2.0",
                               "step 2 carry 2.0", "step 2 carry 4.0"]
    checkpointed = cj.checkpoint(lambda v: (cj.debug.print("inside {}", v), cnp.sin(v))[1])
    jitted(cj.grad(lambda v: cnp.sum(checkpointed(v))), backend)(x)
    assert printed(capsys) == [f"inside {x}"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_callback_gets_arrays_and_static_leaves(backend):
    seen = []
    f = jitted(lambda x, z: (cj.debug.callback(lambda a, tree, scale: seen.append((a, tree, scale)),
                                               x * 2, {"z": z, "k": "static"}, scale=3), x)[1], backend)
    f(np.arange(3, dtype=np.int32), np.array([1 + 2j], np.complex64))
    (a, tree, scale), = seen
    np.testing.assert_array_equal(a, [0, 2, 4])
    assert a.dtype == np.int32 and tree["k"] == "static" and scale == 3
    np.testing.assert_array_equal(tree["z"], [1 + 2j])
    assert tree["z"].dtype == np.complex64


def test_callbacks_survive_the_passes():
    """Nothing reads a callback's token, yet it stays; it is neither folded (a constant operand) nor
    merged with a twin, nor moved out of its loop; the optimized order is the program's."""
    def f(x):
        cj.debug.print("a {}", cnp.ones(2))
        cj.debug.print("a {}", cnp.ones(2))
        outer = x * 3
        return lax.fori_loop(0, 2, lambda i, c: (cj.debug.print("in {}", outer), c + outer)[1], x)
    optimized = run_pipeline(cj.make_jaxpr(f)(np.ones(2, np.float32))).module
    ops = list(walk(optimized.body))
    callbacks = [op for op in ops if op.name == "host_callback"]
    assert len(callbacks) == 3
    top = [op.name for op in optimized.body.ops if op.name in ("host_callback", "while")]
    assert top == ["host_callback", "host_callback", "while"]
    loop = next(op for op in optimized.body.ops if op.name == "while")
    assert any(op.name == "host_callback" for op in walk(loop.regions[1]))
