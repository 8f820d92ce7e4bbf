"""QD-RL configs through the runner: a PGA-ME run (critic, greedy actor, replay
buffer and optimizer states in its checkpoints), a QDPG run (two learners and a
novelty archive) and an ME-ES run (whose emitter evaluates with the task and
normalises observations) resume exactly; CMA-MEGA (ES) and ME-ES count their ES
samples in the budget, ME-PBT its training steps."""

import shutil

import jax
import numpy as np
import pytest

from ribsax.experiments import Experiment
from tests.experiments.experiment_test import assert_same_run

OVERRIDES = [
    "budget.evaluations=24",
    "checkpoint.every_iterations=2",
    "logging.snapshot_every=2",
    "fused_chunk=2",
]


def test_pga_me_resume_equals_uninterrupted(tmp_path):
    expected = Experiment(
        "brax_hopper_uni_pga_me_test", OVERRIDES, logdir=tmp_path / "full", quiet=True
    )
    expected.run()
    assert expected.iteration == 4 and expected.evaluations == 24
    emitter = expected.scheduler.emitters[0]
    assert emitter.buffer_size > 0 and np.isfinite(emitter.critic_loss)

    logdir = tmp_path / "resumed"
    shutil.copytree(expected.directory.path, logdir)
    shutil.rmtree(logdir / "checkpoints" / "4")  # as if it died after 3
    resumed = Experiment.resume(logdir, quiet=True)
    assert resumed.iteration == 2
    resumed.run()
    assert_same_run(expected, resumed)
    state, again = (e.kernel_state for e in (emitter, resumed.scheduler.emitters[0]))
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(again)):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow
def test_qdpg_resume_equals_uninterrupted(tmp_path):
    expected = Experiment(
        "brax_ant_omni_qdpg_test", OVERRIDES, logdir=tmp_path / "full", quiet=True
    )
    expected.run()
    assert expected.iteration == 4 and expected.evaluations == 24
    emitter = expected.scheduler.emitters[0]
    assert emitter.buffer_size > 0 and np.isfinite(emitter.diversity_critic_loss)
    assert len(emitter.state_descriptors) > 1  # x, y positions: many are new

    logdir = tmp_path / "resumed"
    shutil.copytree(expected.directory.path, logdir)
    shutil.rmtree(logdir / "checkpoints" / "4")  # as if it died after 3
    resumed = Experiment.resume(logdir, quiet=True)
    assert resumed.iteration == 2
    resumed.run()
    assert_same_run(expected, resumed)
    state, again = (e.kernel_state for e in (emitter, resumed.scheduler.emitters[0]))
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(again)):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_cma_mega_es_counts_its_samples_in_the_budget(tmp_path):
    experiment = Experiment("brax_hopper_uni_cma_mega_es_test", logdir=tmp_path / "run", quiet=True)
    # Per iteration: the solution point, its 10 ES samples and 4 branches.
    assert experiment.evaluations_per_iteration == 15
    experiment.run()
    assert experiment.iteration == 4 and experiment.evaluations == 60
    assert list(experiment.metrics["evaluations"]) == [15, 30, 45, 60]
    assert experiment.scheduler.archive.stats.num_elites <= 4 * 5


@pytest.mark.slow
def test_me_es_counts_its_samples_and_resumes_exactly(tmp_path):
    expected = Experiment(
        "brax_hopper_uni_me_es_test",
        [*OVERRIDES, "budget.evaluations=44"],
        logdir=tmp_path / "full",
        quiet=True,
    )
    # Per iteration: the offspring and its 10 ES samples.
    assert expected.evaluations_per_iteration == 11
    expected.run()
    assert expected.iteration == 4 and expected.evaluations == 44
    logdir = tmp_path / "resumed"
    shutil.copytree(expected.directory.path, logdir)
    shutil.rmtree(logdir / "checkpoints" / "4")
    resumed = Experiment.resume(logdir, quiet=True)
    assert resumed.iteration == 2
    resumed.run()
    assert_same_run(expected, resumed)
    # dqd-rl's ME-ES normalises observations; the statistics resume with the run.
    stats = [
        e.kernel_state["observation_stats"]
        for e in (expected.scheduler.emitters[0], resumed.scheduler.emitters[0])
    ]
    assert float(stats[0].count) > 0
    for a, b in zip(*stats):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow
def test_cma_mega_td3_es_counts_its_samples_and_resumes_exactly(tmp_path):
    expected = Experiment(
        "brax_hopper_uni_cma_mega_td3_es_test", OVERRIDES[1:], logdir=tmp_path / "full", quiet=True
    )
    # Per iteration: the solution point, its 8 ES samples, the greedy actor and
    # 3 branches.
    assert expected.evaluations_per_iteration == 13
    expected.run()
    assert expected.iteration == 4 and expected.evaluations == 52
    logdir = tmp_path / "resumed"
    shutil.copytree(expected.directory.path, logdir)
    shutil.rmtree(logdir / "checkpoints" / "4")
    resumed = Experiment.resume(logdir, quiet=True)
    assert resumed.iteration == 2
    resumed.run()
    assert_same_run(expected, resumed)


@pytest.mark.slow
def test_me_pbt_counts_training_steps_and_resumes_exactly(tmp_path):
    expected = Experiment("brax_hopper_uni_me_pbt_test", logdir=tmp_path / "full", quiet=True)
    # Per iteration: 2 GA offspring and 4 agents evaluated, then 4 agents x 2
    # environments x 2 training steps.
    assert expected.evaluations_per_iteration == 22
    expected.run()
    assert expected.iteration == 4 and expected.evaluations == 88
    assert list(expected.metrics["evaluations"]) == [22, 44, 66, 88]
    emitter = expected.scheduler.emitters[0]
    np.testing.assert_array_equal(emitter.buffer_sizes, [16] * 4)
    logdir = tmp_path / "resumed"
    shutil.copytree(expected.directory.path, logdir)
    shutil.rmtree(logdir / "checkpoints" / "4")
    resumed = Experiment.resume(logdir, quiet=True)
    assert resumed.iteration == 2
    resumed.run()
    assert_same_run(expected, resumed)
    # The agents (networks, buffers, environments) resume with the run.
    state, again = (e.kernel_state for e in (emitter, resumed.scheduler.emitters[0]))
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(again)):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
