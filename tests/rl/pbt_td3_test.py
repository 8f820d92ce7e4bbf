"""Tests for ribsax.rl.PBTTD3 on the point-mass environment (tiny networks)."""

import jax
import numpy as np
import pytest

from ribsax.rl import PBTTD3, PBTTD3Config
from ribsax.rl._pbt_td3 import PBT_TD3_RANGES
from tests.rl._point_env import make_point_env

POP, ENVS, STEPS = 4, 2, 4


@pytest.fixture(scope="module")
def trainer():
    config = PBTTD3Config(
        batch_size=8,
        episode_length=10,
        policy_hidden_layer_size=(8, 8),
        critic_hidden_layer_size=(8, 8),
    )
    return PBTTD3(
        config,
        make_point_env(ENVS, 10),
        population_size=POP,
        num_best_to_replace_from=2,
        num_worse_to_replace=1,
        buffer_size=64,
        explore="perturb",
    )


def test_pbt_td3_trains_evaluates_and_updates(trainer):
    population = trainer.init(jax.random.key(0))
    hyper = jax.tree.map(np.asarray, population.agents.hyperparams)
    for name, low, high in PBT_TD3_RANGES:
        value = getattr(hyper, name)
        assert np.all((value >= low) & (value <= high)) and len(np.unique(value)) == POP
    population, metrics = trainer.train(population, STEPS)
    assert all(v.shape == (POP,) and np.all(np.isfinite(v)) for v in metrics.values())
    fitness, descriptors, _ = trainer.qd_evaluate(population, jax.random.key(1))
    assert fitness.shape == (POP,) and descriptors.shape == (POP, 2)
    np.testing.assert_allclose(trainer.evaluate(population, jax.random.key(1)), fitness)
    order = np.argsort(-np.asarray(fitness), kind="stable")
    worst, best = order[-1], set(order[:2].tolist())
    new = trainer.update(population, jax.random.key(2), fitness)
    old_kernel = np.asarray(jax.tree.leaves(population.agents.policy_params)[1])
    new_kernel = np.asarray(jax.tree.leaves(new.agents.policy_params)[1])
    sources = [i for i in best if np.array_equal(new_kernel[worst], old_kernel[i])]
    assert len(sources) == 1
    source = sources[0]
    for name, low, high in PBT_TD3_RANGES:  # "perturb": source value x 0.8 or 1.2.
        value = float(getattr(new.agents.hyperparams, name)[worst])
        candidates = np.clip(np.array([0.8, 1.2]) * getattr(hyper, name)[source], low, high)
        assert np.min(np.abs(candidates - value)) <= 1e-6 * max(abs(value), 1e-6), name
    others = [i for i in range(POP) if i != worst]
    np.testing.assert_array_equal(new_kernel[others], old_kernel[others])


def test_bad_config_type():
    with pytest.raises(TypeError, match="PBTTD3Config"):
        PBTTD3(
            object(),
            make_point_env(ENVS, 10),
            population_size=4,
            num_best_to_replace_from=1,
            num_worse_to_replace=1,
        )
