"""Tests for ribsax.rl.PBTSAC on the point-mass environment (tiny networks).

Sharding over several devices is tested in pbt_test.py (subprocess with forced
host devices).
"""

import jax
import numpy as np
import pytest

from ribsax.rl import PBTSAC, PBTSacConfig
from ribsax.rl._pbt_sac import PBT_SAC_RANGES
from tests.rl._point_env import make_point_env

POP, ENVS, STEPS = 4, 2, 6


def _trainer():
    config = PBTSacConfig(
        batch_size=8,
        episode_length=10,
        policy_hidden_layer_size=(8, 8),
        critic_hidden_layer_size=(8, 8),
    )
    return PBTSAC(
        config,
        make_point_env(ENVS, 10),
        population_size=POP,
        num_best_to_replace_from=1,
        num_worse_to_replace=2,
        buffer_size=64,
    )


@pytest.fixture(scope="module")
def run():
    trainer = _trainer()
    population0 = trainer.init(jax.random.key(0))
    init_hyper = jax.tree.map(np.asarray, population0.agents.hyperparams)
    init_params = jax.tree.map(np.asarray, population0.agents.policy_params)
    population, metrics = trainer.train(population0, STEPS)
    return trainer, init_hyper, init_params, population, metrics


def test_init_draws_hyperparameters_in_qdax_ranges(run):
    _, hyper, params, _, _ = run
    for name, low, high in PBT_SAC_RANGES:
        value = getattr(hyper, name)
        assert value.shape == (POP,)
        assert np.all((value >= low) & (value <= high)), name
        assert len(np.unique(value)) == POP, name
    kernels = jax.tree.leaves(params)[1]
    assert kernels.shape[0] == POP and not np.array_equal(kernels[0], kernels[1])


def test_train_runs_each_member_on_its_own_buffer(run):
    trainer, _, params, population, metrics = run
    for name, value in metrics.items():
        assert value.shape == (POP,) and np.all(np.isfinite(value)), name
    sizes = jax.vmap(trainer.buffer.size)(population.buffers)
    np.testing.assert_array_equal(sizes, STEPS * ENVS)
    obs = np.asarray(population.buffers.experience.obs)[:, 0, : STEPS * ENVS]
    assert not np.array_equal(obs[0], obs[1])
    assert np.all(np.asarray(population.agents.steps) == STEPS)
    before = jax.tree.leaves(params)[1]
    after = np.asarray(jax.tree.leaves(population.agents.policy_params)[1])
    assert np.all(np.abs(after - before).reshape(POP, -1).max(1) > 0)


def test_evaluate_and_qd_evaluate(run):
    trainer, _, _, population, _ = run
    returns = trainer.evaluate(population, jax.random.key(3))
    fitness, descriptors, episode_returns = trainer.qd_evaluate(population, jax.random.key(3))
    assert returns.shape == fitness.shape == (POP,)
    assert descriptors.shape == (POP, 2) and episode_returns.shape == (POP, ENVS)
    np.testing.assert_allclose(fitness, returns, rtol=1e-12)
    np.testing.assert_allclose(fitness, episode_returns.mean(1), rtol=1e-12)
    # Point mass: at most 0.1 per step and axis from within 0.1 of the origin.
    assert np.all(np.abs(descriptors) <= 0.1 + 0.1 * 10 + 1e-9)
    assert np.all(fitness <= 10.0 + 1e-9) and np.all(fitness > 8.0)


def test_update_copies_best_into_worst(run):
    trainer, _, _, population, _ = run
    fitness = np.array([2.0, 9.0, 1.0, 5.0])  # best: 1; worst: 2 and 0.
    new = trainer.update(population, jax.random.key(4), fitness)
    old_leaves = jax.tree.leaves(population.agents.policy_params)
    new_leaves = jax.tree.leaves(new.agents.policy_params)
    for old, leaf in zip(old_leaves, new_leaves):
        for target in (0, 2):
            np.testing.assert_array_equal(leaf[target], old[1])
        for keep in (1, 3):
            np.testing.assert_array_equal(leaf[keep], old[keep])
    np.testing.assert_array_equal(
        new.buffers.experience.obs[0], population.buffers.experience.obs[1]
    )
    np.testing.assert_array_equal(new.env_states.obs, population.env_states.obs)
    for name, low, high in PBT_SAC_RANGES:
        value = np.asarray(getattr(new.agents.hyperparams, name))
        assert np.all((value >= low) & (value <= high))
        assert value[0] != value[2]  # Each copy explores on its own.
        np.testing.assert_array_equal(
            value[[1, 3]], np.asarray(getattr(population.agents.hyperparams, name))[[1, 3]]
        )


def test_training_is_deterministic(run):
    trainer, _, _, population, _ = run
    again, _ = trainer.train(trainer.init(jax.random.key(0)), STEPS)
    jax.tree.map(
        np.testing.assert_array_equal, again.agents.policy_params, population.agents.policy_params
    )


def test_bad_arguments():
    env = make_point_env(ENVS, 10)
    with pytest.raises(TypeError, match="PBTSacConfig"):
        PBTSAC(object(), env, population_size=4, num_best_to_replace_from=1, num_worse_to_replace=1)
    config = PBTSacConfig(batch_size=8, episode_length=10)
    with pytest.raises(ValueError, match="num_worse_to_replace"):
        PBTSAC(config, env, population_size=4, num_best_to_replace_from=1, num_worse_to_replace=5)
    with pytest.raises(ValueError, match="batch_size"):
        PBTSAC(
            PBTSacConfig(batch_size=0, episode_length=10),
            env,
            population_size=4,
            num_best_to_replace_from=1,
            num_worse_to_replace=1,
        )
