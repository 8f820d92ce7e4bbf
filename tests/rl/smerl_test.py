"""Tests for ribsax.rl SMERL variants: episode returns in the buffer and the gate."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.rl import DADSSMERL, DIAYNSMERL, DadsSmerlConfig, DiaynSmerlConfig
from tests.rl._point_env import make_point_env

NUM_ENVS, NUM_SKILLS, EPISODE = 4, 2, 10
TARGET, MARGIN, SCALE = 9.5, 0.05, 0.5


def _config(cls=DadsSmerlConfig, **kwargs):
    args = dict(
        batch_size=16,
        episode_length=EPISODE,
        num_skills=NUM_SKILLS,
        critic_hidden_layer_size=(8, 8),
        policy_hidden_layer_size=(8, 8),
        smerl_target=TARGET,
        smerl_margin=MARGIN,
        diversity_reward_scale=SCALE,
        omit_input_dynamics_dim=0,
        dynamics_hidden_layer_size=(8, 8),
    )
    if cls is DiaynSmerlConfig:
        del args["omit_input_dynamics_dim"], args["dynamics_hidden_layer_size"]
    args.update(kwargs)
    return cls(**args)


@pytest.fixture(scope="module")
def run():
    agent = DADSSMERL(_config(), make_point_env(NUM_ENVS, EPISODE), buffer_size=200)
    state, metrics = agent.train(agent.init(jax.random.key(0)), 2, grad_updates_per_step=1)
    return agent, state, metrics


def test_buffer_holds_each_episode_return(run):
    agent, state, metrics = run
    assert all(np.isfinite(v) for v in metrics.values())
    n = int(agent.buffer.size(state.buffer))
    assert n == 2 * EPISODE * NUM_ENVS  # Default unroll: one whole episode.
    items = jax.tree.map(lambda x: np.asarray(x[0, :n]), state.buffer.experience)
    rewards = items.transition.rewards.reshape(2, EPISODE, NUM_ENVS)
    returns = items.episode_return.reshape(2, EPISODE, NUM_ENVS)
    np.testing.assert_allclose(
        returns, np.broadcast_to(rewards.sum(1, keepdims=True), returns.shape), rtol=1e-12
    )


def test_gate_opens_exactly_at_target_minus_margin(run):
    agent, state, _ = run
    items = agent.buffer.sample(state.buffer, jax.random.key(1))
    threshold = TARGET - MARGIN
    returns = np.full(16, threshold)
    returns[:4] = np.nextafter(threshold, -np.inf)
    returns[4:6] = np.nan
    returns[10:] = threshold + 1.0
    items = items._replace(episode_return=jnp.asarray(returns))
    diversity, training = agent.rewards(state, items, jax.random.key(2))
    reward = np.asarray(items.transition.rewards)
    gate = np.array([0.0] * 6 + [1.0] * 10)
    np.testing.assert_allclose(training, reward + SCALE * np.asarray(diversity) * gate, rtol=1e-12)
    assert np.all(np.asarray(diversity)[6:] != 0)


def test_unfinished_episodes_have_no_return_until_they_end(run):
    agent = run[0]
    state, _ = agent.train(
        agent.init(jax.random.key(0)), 2, unroll_length=EPISODE // 2, grad_updates_per_step=0
    )
    items = jax.tree.map(lambda x: np.asarray(x[0, : EPISODE * NUM_ENVS]), state.buffer.experience)
    returns = items.episode_return.reshape(2, EPISODE // 2, NUM_ENVS)
    rewards = items.transition.rewards.reshape(EPISODE, NUM_ENVS)
    assert np.all(np.isnan(returns[0]))  # First half: episode still running.
    np.testing.assert_allclose(returns[1], np.broadcast_to(rewards.sum(0), returns[1].shape))


def test_smerl_configs_and_classes_check_their_arguments():
    config = _config(DiaynSmerlConfig)
    assert (config.smerl_target, config.smerl_margin) == (TARGET, MARGIN)
    defaults = DiaynSmerlConfig(batch_size=4, episode_length=5)
    assert (
        defaults.diversity_reward_scale,
        defaults.smerl_target,
        defaults.smerl_margin,
        defaults.num_skills,
    ) == (1.0, 1e3, 1e2, 5)
    with pytest.raises(TypeError, match="DiaynSmerlConfig"):
        DIAYNSMERL(_config(), make_point_env(NUM_ENVS, EPISODE))
    with pytest.raises(ValueError, match="smerl_margin"):
        DIAYNSMERL(_config(DiaynSmerlConfig, smerl_margin=-1.0), make_point_env(NUM_ENVS, EPISODE))
