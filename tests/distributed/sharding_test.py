"""Tests for ribsax.distributed.shard_task: 4 CPU devices equal one device
(subprocess with XLA_FLAGS=--xla_force_host_platform_device_count=4)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest

from ribsax.distributed import shard_task
from ribsax.tasks import sphere

REPO = Path(__file__).resolve().parents[2]

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

    # The runner's shard=true (ask/tell loop).
    for loop in ("ask_tell",):
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
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    proc = subprocess.run(
        [sys.executable, "-c", f"LOGDIR = {str(tmp_path)!r}\n" + CHILD], cwd=REPO,
        env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "SHARDING OK" in proc.stdout


def test_single_device_sharding_keeps_results():
    task = sphere(6)
    solutions = np.random.default_rng(0).normal(size=(5, 6))
    expected = task.jit_evaluate(solutions, jax.random.key(0))
    actual = shard_task(task, jax.devices()[:1]).jit_evaluate(solutions,
                                                               jax.random.key(0))
    for a, b in zip(jax.tree.leaves(expected), jax.tree.leaves(actual)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_no_devices_is_an_error():
    with pytest.raises(ValueError, match="devices"):
        shard_task(sphere(4), [])


def test_runner_rejects_shard_with_the_fused_loop():
    # pylint: disable-next=import-outside-toplevel
    from ribsax.experiments import ConfigError, load_config
    with pytest.raises(ConfigError, match="shard: .*loop=ask_tell"):
        load_config("sphere_map_elites_test", ["shard=true", "loop=fused"])
