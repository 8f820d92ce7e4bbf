"""Tests of the shared environment loop (OffPolicyAgent.play_step / train)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.rl import SAC, TD3, ReplayBuffer, SacConfig, TD3Config, Transition
from tests.rl._rl_helpers import point_env, tree_equal

ENV = point_env(batch_size=4, episode_length=5)
BUFFER = ReplayBuffer(max_size=200, sample_size=8)


@pytest.fixture(scope="module")
def sac():
    return SAC(
        SacConfig(
            batch_size=8,
            episode_length=5,
            normalize_observations=True,
            critic_hidden_layer_size=(8,),
            policy_hidden_layer_size=(8,),
        ),
        ENV.action_size,
    )


def _fresh(agent, seed=0):
    state = agent.init(jax.random.key(seed), observation_size=ENV.observation_size)
    env_state = ENV.reset(jax.random.key(seed + 1))
    buffer_state = BUFFER.init(
        Transition.zeros(ENV.observation_size, ENV.action_size, ENV.state_descriptor_size)
    )
    return state, env_state, buffer_state


def test_play_step_updates_statistics_and_key(sac):
    state, env_state, _ = _fresh(sac)
    new, env2, t = sac.play_step(state, env_state, env=ENV)
    assert t.obs.shape == (4, 2) and t.state_desc.shape == (4, 1)
    assert float(new.normalization.count) == 4.0
    assert not tree_equal(new.key, state.key)
    np.testing.assert_allclose(env2.obs, t.next_obs)
    same, _, _ = sac.play_step(state, env_state, env=ENV, deterministic=True)
    assert float(same.normalization.count) == 0.0  # evaluation leaves stats alone
    rnd = sac.play_step(state, env_state, env=ENV, random_actions=True)[2]
    assert float(jnp.max(jnp.abs(rnd.actions))) <= 1.0


def test_train_fills_buffer_and_updates(sac):
    state, env_state, buffer_state = _fresh(sac)
    state, env_state, buffer_state, m = sac.train(
        state,
        env_state,
        buffer_state,
        env=ENV,
        buffer=BUFFER,
        num_steps=3,
        grad_updates_per_step=0,
        random_actions=True,
    )
    assert int(BUFFER.size(buffer_state)) == 12 and int(state.steps) == 0
    assert set(m) == {"reward"}
    state, env_state, buffer_state, m = sac.train(
        state, env_state, buffer_state, env=ENV, buffer=BUFFER, num_steps=5, grad_updates_per_step=2
    )
    assert int(BUFFER.size(buffer_state)) == 32 and int(state.steps) == 10
    assert all(np.isfinite(float(v)) for v in m.values())
    warm = sac.train._cache_size()
    state, env_state, buffer_state, _ = sac.train(
        state, env_state, buffer_state, env=ENV, buffer=BUFFER, num_steps=5, grad_updates_per_step=2
    )
    assert sac.train._cache_size() == warm  # no recompilation


def test_train_is_deterministic():
    td3 = TD3(
        dataclasses.replace(
            TD3Config(),
            batch_size=8,
            episode_length=5,
            critic_hidden_layer_size=(8,),
            policy_hidden_layer_size=(8,),
        ),
        ENV.action_size,
    )
    outs = []
    for _ in range(2):
        state, env_state, buffer_state = _fresh(td3, seed=3)
        outs.append(
            td3.train(
                state,
                env_state,
                buffer_state,
                env=ENV,
                buffer=BUFFER,
                num_steps=4,
                grad_updates_per_step=1,
            )
        )
    assert tree_equal(outs[0][0], outs[1][0])
    assert tree_equal(outs[0][3], outs[1][3])


def test_bad_train_arguments(sac):
    state, env_state, buffer_state = _fresh(sac)
    with pytest.raises(ValueError, match="num_steps"):
        sac.train(state, env_state, buffer_state, env=ENV, buffer=BUFFER, num_steps=0)
