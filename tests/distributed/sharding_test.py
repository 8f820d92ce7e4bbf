"""Tests for ribsax.distributed.shard_task: 4 CPU devices equal one device
(subprocess with XLA_FLAGS=--xla_force_host_platform_device_count=4)."""

import textwrap

import jax
import numpy as np
import pytest

from ribsax.distributed import shard_task
from ribsax.tasks import sphere
from tests.child_env import run_with_host_devices

CHILD = textwrap.dedent("""
    import jax, numpy as np, pandas as pd
    jax.config.update("jax_enable_x64", True)
    from ribsax.distributed import shard_task
    from ribsax.experiments import Experiment
    from ribsax.tasks import arm, sphere
    assert len(jax.devices()) == 4, jax.devices()

    # Evaluation: equal outputs, laid out over the 4 devices (padded when uneven).
    for task in (sphere(10), arm(6)):
        sharded = shard_task(task)
        for n in (12, 10):
            x = np.random.default_rng(n).normal(size=(n, task.solution_dim))
            x = x.astype(np.float32)
            one = task.jit_evaluate(x, jax.random.key(0))
            four = sharded.jit_evaluate(x, jax.random.key(0))
            for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(four)):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
            if n == 12:
                assert len(four[0].sharding.device_set) == 4, four[0].sharding
        jac_one = task.jit_evaluate_with_jacobian(x, jax.random.key(0))[2]
        jac_four = sharded.jit_evaluate_with_jacobian(x, jax.random.key(0))[2]
        np.testing.assert_allclose(np.asarray(jac_one), np.asarray(jac_four))

    # The fused loop (Scheduler.run and run_trials) with a sharded task: the
    # same metrics, history and archive; the objects end on the default device.
    from ribsax.archives import GridArchive
    from ribsax.emitters import GaussianEmitter
    from ribsax.schedulers import Scheduler, run_trials
    task = sphere(6)

    def make(seed=1):
        archive = GridArchive(solution_dim=6, dims=(8, 8), ranges=task.measure_ranges,
                              seed=3)
        return Scheduler(archive, [GaussianEmitter(archive, sigma=0.5,
                                                   x0=np.zeros(6), batch_size=18,
                                                   seed=seed)])
    one, four = make(), make()
    r_one = one.run(task, 7, seed=2, history=True)
    r_four = four.run(shard_task(task), 7, seed=2, history=True)
    pd.testing.assert_frame_equal(r_one.metrics, r_four.metrics)
    pd.testing.assert_frame_equal(r_one.history, r_four.history)
    # Same cells; values up to the last bit (the partitioned program may round
    # the measures' arithmetic differently).
    np.testing.assert_array_equal(one.archive.data("index"),
                                  four.archive.data("index"))
    for name, value in one.archive.data().items():
        np.testing.assert_allclose(value, four.archive.data()[name], rtol=1e-12,
                                   atol=1e-14)
    state = jax.tree.leaves(four.archive._loop_state())
    assert all(leaf.sharding.device_set == {jax.devices()[0]} for leaf in state)
    four.tell(*task.jit_evaluate(four.ask(), jax.random.key(1))[:2])
    t_one = run_trials(make, task, 5, [0, 1])
    t_four = run_trials(make, shard_task(task), 5, [0, 1])
    pd.testing.assert_frame_equal(t_one.metrics, t_four.metrics)

    # The runner's shard=true.
    for loop in ("ask_tell", "fused"):
        metrics = [Experiment("sphere_map_elites_test",
                              ["budget.iterations=3", "emitters.0.batch_size=16",
                               f"loop={loop}", f"shard={shard}"],
                              logdir=f"{LOGDIR}/{loop}_{shard}", quiet=True).run()
                   for shard in ("false", "true")]
        pd.testing.assert_frame_equal(metrics[0].drop(columns="elapsed_s"),
                                      metrics[1].drop(columns="elapsed_s"))
    print("SHARDING OK")
""")


def test_four_devices_equal_one_device(tmp_path):
    code = f"LOGDIR = {str(tmp_path)!r}\n" + CHILD
    proc = run_with_host_devices(["-c", code], 4, timeout=300)
    assert "SHARDING OK" in proc.stdout


def test_single_device_sharding_keeps_results():
    task = sphere(6)
    solutions = np.random.default_rng(0).normal(size=(5, 6))
    expected = task.jit_evaluate(solutions, jax.random.key(0))
    actual = shard_task(task, jax.devices()[:1]).jit_evaluate(solutions, jax.random.key(0))
    for a, b in zip(jax.tree.leaves(expected), jax.tree.leaves(actual)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_no_devices_is_an_error():
    with pytest.raises(ValueError, match="devices"):
        shard_task(sphere(4), [])


def test_runner_accepts_shard_with_the_fused_loop():
    from ribsax.experiments import load_config

    cfg = load_config("sphere_map_elites_test", ["shard=true", "loop=fused"])
    assert cfg.shard and cfg.loop.value == "fused"
