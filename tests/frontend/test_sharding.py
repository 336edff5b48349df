"""Multi-device programs on logical devices (CDNAJIT_NUM_DEVICES): the sharding API, shard_map's
collectives against numpy, and partitioned jit programs against their unsharded runs.

Error model: a partitioned program computes the same values as the unsharded one but sums a
reduction or a contraction in partial sums per device then across devices: for n terms of f32,
|difference| <= 2 n eps sum(|terms|) (eps = 2**-23); data movement and integer results are exact."""
import warnings

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.codegen.native_schedule import schedule_layout, side_by_side, value_bytes
from cdnajit.sharding import Mesh, NamedSharding, PartitionSpec as P, ShardedArray, make_mesh

EPS = 2.0 ** -23


@pytest.fixture(autouse=True)
def eight_devices(monkeypatch):
    monkeypatch.setenv("CDNAJIT_NUM_DEVICES", "8")


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close(got, want, terms):
    """got == want within the error model, `terms` the |terms| each element sums (an array or float)."""
    np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=2 * EPS * np.max(terms) + 1e-30)


def test_devices_and_sharded_arrays():
    assert cj.device_count() == 8 and len(cj.local_devices()) == 8 and cj.process_index() == 0
    assert [d.id for d in cj.devices()] == list(range(8))
    mesh = Mesh(np.array(cj.devices()).reshape(2, 4), ("data", "model"))
    x = rand(6, 8)
    xs = cj.device_put(x, NamedSharding(mesh, P("data", "model")))
    assert isinstance(xs, ShardedArray) and len(xs.shards) == 8 and xs.shards[0].shape == (3, 2)
    np.testing.assert_array_equal(xs.shards[5], x[3:6, 2:4])   # device (1, 1)
    np.testing.assert_array_equal(np.asarray(xs), x)


def test_a_sharded_sum_is_partitioned_with_an_all_reduce():
    mesh = make_mesh((4,), ("data",))
    x = np.arange(-50, 50, dtype=np.int32)
    total = cj.jit(lambda v: (v * 3).sum())
    xs = cj.device_put(x, NamedSharding(mesh, P("data")))
    assert int(np.asarray(total(xs))) == int((x * 3).sum())
    assert 'routine = "all_reduce"' in total.lower(xs).compile().as_text("optimized")


def test_repeated_sharded_calls_find_their_program_by_the_arrays_shardings():
    """jit keeps a sharded call's program under its arguments' shapes, dtypes and shardings too
    (jit.array_key), which a repeated call looks up first; an equal sharding of another array finds
    it, another sharding of the same shape, or a numpy array, gets a program of its own."""
    mesh = make_mesh((4,), ("data",))
    x = np.arange(32, dtype=np.int32).reshape(8, 4)
    f = cj.jit(lambda v: v * 2 + 1)
    rows, cols, rows_again = (cj.device_put(x, NamedSharding(mesh, spec)) for spec in (P("data"), P(None, "data"),
                                                                                      P("data")))
    for arg, spec in ((rows, P("data")), (cols, P(None, "data")), (rows_again, P("data")), (x, None)):
        y = f(arg)
        np.testing.assert_array_equal(np.asarray(y), x * 2 + 1)
        assert spec is None and isinstance(y, np.ndarray) or y.sharding == NamedSharding(mesh, spec)
    assert len(f._array_cache) == 3 and len(f._cache) == 3
    # With in_shardings, numpy arguments' key finds the partitioned program too.
    g = cj.jit(lambda v: v * 2 + 1, in_shardings=NamedSharding(mesh, P(None, "data")))
    for _ in range(2):
        y = g(x)
        np.testing.assert_array_equal(np.asarray(y), x * 2 + 1)
        assert y.sharding == NamedSharding(mesh, P(None, "data"))
    assert len(g._array_cache) == 1 and len(g._cache) == 1


def test_float0_leaves_of_a_sharded_call():
    """float0 arguments and results of a sharded jit (JAX's tangents of integers): no program
    parameters or results, the function sees (and returns) float0 zeros; the rest is partitioned."""
    mesh = make_mesh((4,), ("data",))
    x = np.arange(8.0)
    xs = cj.device_put(x, NamedSharding(mesh, P("data")))
    f = cj.jit(lambda t, x: (cj.jvp(lambda n: n * 2, (np.arange(3),), (t,))[1], (x * 2).sum()), backend="interpret")
    tangent, total = f(np.zeros(3, cj.float0), xs)
    assert tangent.dtype == cj.float0 and tangent.shape == (3,)
    assert float(np.asarray(total)) == 56.0
    params = f.lower(np.zeros(3, cj.float0), xs).module.params   # x's shard on each device, no float0
    assert [str(p.type) for p in params] == ["f64[2]"] * 4


@pytest.mark.slow
def test_data_parallel_loss_is_the_unsharded_one_with_an_all_reduce():
    mesh = make_mesh((4,), ("data",))
    x, w = rand(16, 8), rand(8, 4, seed=1)

    def loss(w, x):
        return cnp.mean(cnp.tanh(x @ w))
    step = cj.jit(loss)
    xs = cj.device_put(x, NamedSharding(mesh, P("data")))
    got = step(w, xs)
    close(got, cj.jit(loss)(w, x), np.abs(np.tanh(x @ w)).sum() / x.shape[0] / 4)
    assert "library_call" in step.lower(w, xs).compile().as_text("optimized")
    assert 'routine = "all_reduce"' in step.lower(w, xs).compile().as_text("optimized")


def test_shard_map_psum_on_four_devices():
    mesh = make_mesh((4,), ("i",))
    x = np.arange(8 * 3, dtype=np.int32).reshape(8, 3)
    total = cj.shard_map(lambda v: lax.psum(v, "i"), mesh, in_specs=P("i"), out_specs=P())(x)
    np.testing.assert_array_equal(np.asarray(total), x.reshape(4, 2, 3).sum(0))


@pytest.mark.slow
def test_shard_map_inside_jit_and_inside_its_loops():
    """shard_map (and pmap) called in a jitted function (on a sharded or a plain argument, and in a
    fori_loop body, its collective then run in lockstep) is inlined into the partitioned program;
    the compiled and the interpreted runs agree with numpy. Integer-valued f32 sums and means of 4
    (a power of two): exact."""
    mesh = make_mesh((4,), ("i",))
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    total = cj.shard_map(lambda v: lax.psum(v * 2, "i"), mesh, in_specs=P("i"), out_specs=P())

    def plus_one(v):
        return total(v) + 1

    def looped(v):
        return lax.fori_loop(0, 2, lambda k, c: total(cnp.concatenate([c, c]) * 0.25).sum() + c, v[:2])
    want = x.reshape(4, 2, 2).sum(0) * 2 + 1
    carry = x[:2]
    for _ in range(2):
        carry = carry.sum() + carry
    xs = cj.device_put(x, NamedSharding(mesh, P("i")))
    assert 'routine = "all_reduce"' in cj.jit(plus_one).lower(xs).compile().as_text("optimized")
    np.testing.assert_array_equal(np.asarray(cj.jit(plus_one)(xs)), want)
    np.testing.assert_array_equal(np.asarray(cj.jit(plus_one)(x)), want)
    np.testing.assert_array_equal(np.asarray(cj.jit(total)(xs)), want - 1)       # jit of the shard_map itself
    for backend in ("compiled", "interpret"):
        np.testing.assert_array_equal(np.asarray(cj.jit(looped, backend=backend)(x)), carry)
    centred = cj.pmap(lambda v: v - lax.pmean(v, "i"), axis_name="i")     # pmap is shard_map's, so also in jit
    np.testing.assert_array_equal(np.asarray(cj.jit(lambda v: centred(v) * 2)(x[:4])), (x[:4] - x[:4].mean(0)) * 2)
    looping = cj.shard_map(lambda v: lax.fori_loop(0, 2, lambda k, c: lax.psum(c, "i"), v), mesh, in_specs=P("i"),
                           out_specs=P("i"))   # each device's own loop: no lockstep, as at top level
    with pytest.raises(NotImplementedError, match="a collective inside while's body within shard_map"):
        cj.jit(lambda v: looping(v))(x)
    other = cj.shard_map(lambda v: v, make_mesh((2,), ("j",)), in_specs=P("j"), out_specs=P("j"))
    with pytest.raises(NotImplementedError, match="shard_map over mesh 'j=2' inside a program partitioned over i=4"):
        cj.jit(lambda v: total(v) + other(v)[:2])(x)


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_shard_map_collectives_on_1_to_8_devices(n):
    mesh = make_mesh((n,), ("i",))
    x = np.random.default_rng(n).integers(-50, 50, (2 * n, n * 2)).astype(np.int32)
    blocks = x.reshape(n, 2, 2 * n)

    def run(fn, out_specs=P("i")):
        return np.asarray(cj.shard_map(fn, mesh, in_specs=P("i"), out_specs=out_specs)(x))
    np.testing.assert_array_equal(run(lambda v: lax.psum(v, "i"), P()), blocks.sum(0))
    np.testing.assert_array_equal(run(lambda v: lax.pmax(v, "i"), P()), blocks.max(0))
    np.testing.assert_array_equal(run(lambda v: lax.pmin(v, "i"), P()), blocks.min(0))
    np.testing.assert_allclose(run(lambda v: lax.pmean(v.astype(np.float32), "i"), P()), blocks.mean(0), rtol=1e-6)
    np.testing.assert_array_equal(run(lambda v: lax.all_gather(v, "i", tiled=True), P()), x)
    np.testing.assert_array_equal(run(lambda v: lax.all_gather(v, "i", axis=1), P()),
                                  np.moveaxis(blocks, 0, 1))
    scattered = run(lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True), P(None, "i"))
    np.testing.assert_array_equal(scattered, blocks.sum(0))
    # all_to_all: device d's block s (along axis 1) goes to device s, stacked along axis 0 in device order.
    moved = run(lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True))
    want = np.concatenate([np.concatenate([blocks[s][:, 2 * d:2 * d + 2] for s in range(n)], 0) for d in range(n)], 0)
    np.testing.assert_array_equal(moved, want)
    shifted = run(lambda v: lax.ppermute(v, "i", [(d, (d + 1) % n) for d in range(n)]))
    np.testing.assert_array_equal(shifted, np.roll(blocks, 1, axis=0).reshape(x.shape))
    index = run(lambda v: v[:1, :1] * 0 + lax.axis_index("i"))
    np.testing.assert_array_equal(index.ravel(), np.arange(n))


@pytest.mark.slow
def test_collectives_over_one_axis_of_a_two_dimensional_mesh():
    mesh = make_mesh((2, 4), ("data", "model"))
    x = np.arange(4 * 8, dtype=np.int32).reshape(4, 8)
    summed = cj.shard_map(lambda v: lax.psum(v, "model"), mesh, in_specs=P("data", "model"),
                          out_specs=P("data"))(x)
    np.testing.assert_array_equal(np.asarray(summed), x.reshape(4, 4, 2).sum(1))
    both = cj.shard_map(lambda v: lax.psum(v, ("data", "model")), mesh, in_specs=P("data", "model"), out_specs=P())(x)
    np.testing.assert_array_equal(np.asarray(both), x.reshape(2, 2, 4, 2).sum((0, 2)))


def mlp(x, w1, w2):
    return cnp.tanh(x @ w1) @ w2


@pytest.mark.slow
@pytest.mark.parametrize("devices", [1, 2, 4, 8])
def test_megatron_mlp_matches_the_unsharded_run(devices):
    x, w1, w2 = rand(16, 32), rand(32, 64, seed=1) / 4, rand(64, 32, seed=2) / 4
    mesh = make_mesh((devices,), ("model",))
    f = cj.jit(mlp, in_shardings=(NamedSharding(mesh, P()), NamedSharding(mesh, P(None, "model")),
                                  NamedSharding(mesh, P("model", None))))
    y = f(x, w1, w2)
    close(y, cj.jit(mlp)(x, w1, w2), np.abs(np.tanh(x @ w1)) @ np.abs(w2))
    text = f.lower(x, w1, w2).compile().as_text("optimized")
    assert (text.count('routine = "all_reduce"') == 1) == (devices > 1), text


def runs_on_buffers_of_their_own(compiled) -> list[list[dict]]:
    """The launches of each run of `compiled`'s schedule that runs together (codegen/native_schedule.py:
    side_by_side), after checking that no value a run's launch makes shares arena bytes with a
    value another of its launches reads."""
    plan = compiled.executable.plan
    layout = schedule_layout(plan["body"], plan["outputs"], plan["slots"], plan["kernels"], plan["donated"])
    steps = plan["body"]["steps"]
    offsets = dict(layout.buffers)   # the arena's values: their bytes
    arena = {slot: set(range(offsets[slot], offsets[slot] + value_bytes(dtype, shape)))
             for step in steps if step["op"] == "kernel" for slot, dtype, shape in step["results"] if slot in offsets}
    runs = [[steps[k] for k in run] for run in side_by_side(steps, plan["kernels"]) if len(run) > 1]
    pairs = [(arena[slot], arena[read]) for run in runs for launch in run for other in run if other is not launch
             for read in other["inputs"] if read in arena for slot, _, _ in launch["results"] if slot in arena]
    assert not any(made & read for made, read in pairs)
    return runs


def test_the_devices_launches_of_an_op_run_together_on_buffers_of_their_own():
    """Every device's copy of an op is one job of the worker pool (codegen/native_schedule.py:
    side_by_side), so the devices run side by side: the schedule shows each such run, no value a
    run's launch makes shares arena bytes with a value another of its launches reads, and the
    result is the unsharded program's."""
    x, w1, w2 = rand(96, 200), rand(200, 4 * 136, seed=1) / 8, rand(4 * 136, 200, seed=2) / 8
    mesh = make_mesh((4,), ("model",))
    f = cj.jit(mlp, in_shardings=(NamedSharding(mesh, P()), NamedSharding(mesh, P(None, "model")),
                                  NamedSharding(mesh, P("model", None))))
    compiled = f.lower(x, w1, w2).compile()
    assert compiled.as_text("schedule").count("together, one job of the worker pool:") == 2
    runs = runs_on_buffers_of_their_own(compiled)
    assert [len(run) for run in runs] == [4, 4]
    close(f(x, w1, w2), mlp(x, w1, w2), np.abs(np.tanh(x @ w1)) @ np.abs(w2))


def test_a_sharded_sums_devices_reduce_side_by_side():
    """The issue's sharded sum: split_reductions makes each device's reduce a partial and a final
    reduce, device by device; the schedule still runs the devices' partials as one job of the pool
    (each on buffers of its own), then their finals, then the all-reduce. The sum is the
    unsharded program's and float64 numpy's, within the error model (`close`)."""
    x = rand(2048, 1024)   # each device's partials worth a quarter of the pool (runtime/launch.py: pool_share)
    mesh = make_mesh((4,), ("data",))
    xs = cj.device_put(x, NamedSharding(mesh, P("data")))
    f = cj.jit(lambda v: cnp.sum(cnp.tanh(v)))
    compiled = f.lower(xs).compile()
    runs = runs_on_buffers_of_their_own(compiled)
    assert [len(run) for run in runs] == [4], compiled.as_text("schedule")
    assert len({tuple(launch["inputs"]) for launch in runs[0]}) == 4   # one launch per device's shard
    terms = np.abs(np.tanh(x.astype(np.float64)))
    close(f(xs), np.tanh(x.astype(np.float64)).sum(), terms.sum())
    close(f(xs), f(x), terms.sum())


@pytest.mark.slow
def test_data_and_model_parallel_on_a_two_dimensional_mesh_with_out_shardings():
    x, w1, w2 = rand(16, 32), rand(32, 64, seed=1) / 4, rand(64, 32, seed=2) / 4
    mesh = make_mesh((2, 4), ("data", "model"))
    f = cj.jit(mlp, in_shardings=(NamedSharding(mesh, P("data")), NamedSharding(mesh, P(None, "model")),
                                  NamedSharding(mesh, P("model"))), out_shardings=NamedSharding(mesh, P(None, "model")))
    y = f(x, w1, w2)
    assert y.sharding.spec == P(None, "model")
    close(y, mlp(x, w1, w2), np.abs(np.tanh(x @ w1)) @ np.abs(w2))


@pytest.mark.slow
def test_reductions_reshapes_and_constraints_are_partitioned():
    mesh = make_mesh((4,), ("d",))
    x = np.arange(8 * 8, dtype=np.int32).reshape(8, 8)
    xs = cj.device_put(x, NamedSharding(mesh, P("d")))
    for fn in (lambda v: v.max(0), lambda v: v.sum(1), lambda v: cnp.reshape(v, (4, 16)).sum(1),
               lambda v: lax.with_sharding_constraint(v * 2, NamedSharding(mesh, P(None, "d"))) + v.T):
        with warnings.catch_warnings():
            warnings.simplefilter("error")   # none of these runs replicated
            got = cj.jit(fn)(xs)
        np.testing.assert_array_equal(np.asarray(got), cj.jit(fn)(x))


@pytest.mark.slow
def test_slices_and_concatenations_keep_the_shardings_of_whole_dims():
    """Slicing or concatenating along an unsharded dim keeps the rows split (no warning, no
    gather of the sharded dim); slicing the sharded dim gathers it. Data movement: exact."""
    mesh = make_mesh((4,), ("d",))
    x = np.arange(8 * 6, dtype=np.int32).reshape(8, 6)
    xs = cj.device_put(x, NamedSharding(mesh, P("d")))

    def fn(v):
        pieces = cnp.concatenate([v[:, 1:4], lax.dynamic_slice(v, (0, 2), (8, 2))], axis=1)
        return pieces, v[1:7:2, :2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lowered = cj.jit(fn).lower(xs)
        got = cj.jit(fn)(xs)
    want = np.concatenate([x[:, 1:4], x[:, 2:4]], axis=1), x[1:7:2, :2]
    assert got[0].sharding.spec == P("d", None) and got[1].sharding.spec == P(None, None)
    assert lowered.as_text().count("routine = \"all_gather\"") == 1   # the strided slice's rows only
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)


@pytest.mark.slow
def test_an_embedding_lookup_keeps_the_token_ids_split():
    """A gather keeps its indices' batch sharding (no warning, no gather of the ids); the table's
    split feature dim is gathered (the frontend indexes every element). Data movement: exact."""
    mesh = make_mesh((2, 2), ("data", "model"))
    table = rand(10, 8)
    ids = np.array([[3, 9, 0], [1, 1, 7], [2, 5, 4], [8, 6, 0]], np.int32)
    ts = cj.device_put(table, NamedSharding(mesh, P(None, "model")))
    ix = cj.device_put(ids, NamedSharding(mesh, P("data")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = cj.jit(lambda t, i: t[i] * 2)(ts, ix)
    assert got.sharding.spec == P("data", None, None)
    np.testing.assert_array_equal(np.asarray(got), table[ids] * 2)


@pytest.mark.slow
def test_convolutions_split_the_batch_the_output_channels_or_the_input_channels():
    """A convolution keeps a batch split (data parallel) and an output-channel split; input channels
    split alike on both sides are partial convolutions and an all-reduce. No warning; against the
    unsharded run (error model above: each output sums 4 x 3 x 3 terms)."""
    mesh = make_mesh((2, 2), ("data", "model"))
    x, w = rand(4, 4, 7, 6), rand(6, 4, 3, 3, seed=1)

    def conv(x, w):
        return lax.conv(x, w, (1, 1), "SAME")
    want = cj.jit(conv)(x, w)
    terms = cj.jit(lambda x, w: lax.conv(cnp.abs(x), cnp.abs(w), (1, 1), "SAME"))(x, w)
    cases = [(P("data"), P(), P("data", None, None, None), 0),
             (P("data"), P("model"), P("data", "model", None, None), 0),
             (P(None, "model"), P(None, "model"), P(None, None, None, None), 2)]   # one all-reduce per group
    for x_spec, w_spec, out_spec, all_reduces in cases:
        args = cj.device_put(x, NamedSharding(mesh, x_spec)), cj.device_put(w, NamedSharding(mesh, w_spec))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = cj.jit(conv)(*args)
            assert cj.jit(conv).lower(*args).as_text().count('routine = "all_reduce"') == all_reduces
        assert got.sharding.spec == out_spec
        close(got, want, terms)


@pytest.mark.slow
def test_loops_and_branches_over_sharded_values_are_partitioned():
    """fori_loop, while_loop and cond with sharded operands: the carries stay split, the
    collectives their bodies and predicates need run inside them (the devices in lockstep), no
    warning. Against numpy: the sums add the 4 devices' partials in another order (error model above;
    the loop's three iterations of sums of 8 terms of |tanh| <= 1 bounded by 24 max|result|)."""
    mesh = make_mesh((4,), ("d",))
    x, w = rand(8, 4), rand(8, 4, seed=1)
    xs, ws = (cj.device_put(v, NamedSharding(mesh, P("d"))) for v in (x, w))

    def loop(v, w):
        return lax.fori_loop(0, 3, lambda i, v: cnp.tanh(v * w).sum(0, keepdims=True) * 0.5 + v, v)

    def doubled_until_large(v):
        return lax.while_loop(lambda v: v.sum() < 100.0, lambda v: v * 2 + 1, v)

    def branch(v, k):
        return lax.cond(k > 0, lambda v: v.sum(0), lambda v: v.max(0), v)
    want = x
    for _ in range(3):
        want = np.tanh(want * w).sum(0, keepdims=True) * 0.5 + want
    grown = x
    while grown.sum() < 100.0:
        grown = grown * 2 + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = cj.jit(loop).lower(xs, ws).as_text()
        got = [cj.jit(loop)(xs, ws), cj.jit(doubled_until_large)(xs), cj.jit(branch)(xs, np.int32(1)),
               cj.jit(branch)(xs, np.int32(0))]
    assert text.count('routine = "all_reduce"') == 1 and text.index("while") < text.index('routine = "all_reduce"')
    assert got[0].sharding.spec == P("d", None) and got[1].sharding.spec == P("d", None)
    close(got[0], want, 3 * 8 * np.abs(want).max())
    np.testing.assert_array_equal(np.asarray(got[1]), grown)
    close(got[2], x.sum(0), np.abs(x).sum(0))
    np.testing.assert_array_equal(np.asarray(got[3]), x.max(0))


@pytest.mark.slow
def test_what_is_not_partitioned_runs_replicated_with_a_warning():
    mesh = make_mesh((4,), ("d",))
    x = rand(8, 5)
    xs = cj.device_put(x, NamedSharding(mesh, P("d")))
    with pytest.warns(UserWarning, match="sort is not partitioned; it runs replicated"):
        got = cj.jit(lambda v: cnp.sort(v, axis=0) * 2)(xs)
    np.testing.assert_array_equal(np.asarray(got), np.sort(x, axis=0) * 2)


def test_bad_meshes_specs_and_collectives_are_named():
    with pytest.raises(ValueError, match=r"a mesh of shape \(16,\) needs 16 devices; there are 8"):
        make_mesh((16,), ("x",))
    mesh = make_mesh((4,), ("x",))
    with pytest.raises(ValueError, match="names axis 'y', which the mesh"):
        NamedSharding(mesh, P("y"))
    with pytest.raises(ValueError, match=r"dimension 0 \(6\) is not a multiple of the 4 devices of mesh axes \('x',\)"):
        cj.device_put(np.zeros((6, 2)), NamedSharding(mesh, P("x")))
    with pytest.raises(NameError, match="unbound axis name 'x': collectives run inside shard_map"):
        cj.jit(lambda v: lax.psum(v, "x"))(np.ones(3))
    with pytest.raises(ValueError, match="Mesh: a device appears twice"):
        Mesh([cj.devices()[0]] * 2, ("x",))
    with pytest.raises(ValueError, match="CDNAJIT_NUM_DEVICES='two' is not an integer"):
        import os
        os.environ["CDNAJIT_NUM_DEVICES"] = "two"
        cj.devices()


@pytest.mark.slow
def test_pmap_maps_the_leading_axis_over_devices():
    x = np.arange(4 * 3, dtype=np.float32).reshape(4, 3)
    got = cj.pmap(lambda v: v * 2 + lax.psum(v, "i"), axis_name="i")(x)
    np.testing.assert_array_equal(np.asarray(got), x * 2 + x.sum(0))
    with pytest.raises(ValueError, match="pmap: every mapped argument needs the same size along its mapped axis"):
        cj.pmap(lambda a, b: a + b)(x, x[:2])
    # in_axes: b mapped along its axis 1, w given whole to every device; out_axes: stacked along 1.
    b, w = x.T.copy(), np.arange(3, dtype=np.float32)
    fn = cj.pmap(lambda u, v, w: (u * v + w, lax.psum(u, "i")), axis_name="i", in_axes=(0, 1, None), out_axes=(1, None))
    got, total = fn(x, b, w)
    np.testing.assert_array_equal(np.asarray(got), (x * x + w).T)
    np.testing.assert_array_equal(np.asarray(total), x.sum(0))
