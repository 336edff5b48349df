"""The W11 loop programs of benchmarks/ at their --quick sizes: each compiles under cdnajit and agrees
with its numpy reference within the tolerance its builder derives (JAX, a benchmark peer only, is
left out)."""
import sys
from pathlib import Path

import numpy as np
import pytest

import cdnajit as cj

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from loop_workloads import LOOP_WORKLOADS, NUMPY_LAX, newton_sqrt  # noqa: E402
from run import check, select  # noqa: E402
from workloads import Context  # noqa: E402


@pytest.mark.parametrize("workload", LOOP_WORKLOADS, ids=lambda w: w.name)
def test_loop_program_matches_numpy(workload, tmp_path):
    case = workload.build(Context(quick=True, jax=None, scratch=tmp_path))
    assert case.jax is None and case.tolerance is not None
    result = case.cdnajit(*cj.device_put(case.inputs))
    outcome = check(result, (case.reference or case.numpy)(*case.inputs), case.tolerance)
    assert outcome["ok"], f"{workload.name}: {outcome}"


def test_numpy_newton_reference_is_sqrt():
    # The reference of W11.newton is itself checked against the square root it computes: within the
    # 2 ulp of sqrt(a) that the rounded Newton map's fixed points lie.
    a = np.random.default_rng(0).uniform(0.01, 100.0, 1000)
    np.testing.assert_allclose(newton_sqrt(np, NUMPY_LAX, a), np.sqrt(a), rtol=2 * 2.0**-52, atol=0)


def test_runner_selects_the_w11_group():
    assert [w.name for w in select("W11")] == [w.name for w in LOOP_WORKLOADS]
