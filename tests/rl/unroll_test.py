"""Tests of ribsax.rl's unrolls on a brax-style point-mass environment."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.rl import (
    Transition,
    episode_returns,
    evaluate_policy,
    generate_unroll,
    make_env,
    play_step,
)
from tests.rl._rl_helpers import point_env


def _right(obs, key):
    del key
    return jnp.ones(obs.shape[:-1] + (1,))


def test_play_step_shapes():
    env = point_env(batch_size=3, episode_length=5)
    state = env.reset(jax.random.key(0))
    nxt, t = play_step(env, state, _right, jax.random.key(1))
    assert isinstance(t, Transition)
    assert t.obs.shape == t.next_obs.shape == (3, 2)
    assert t.actions.shape == (3, 1) and t.rewards.shape == (3,)
    assert t.state_desc.shape == t.next_state_desc.shape == (3, 1)
    np.testing.assert_allclose(t.next_obs[:, 0], t.obs[:, 0] + 0.1, rtol=1e-6)
    np.testing.assert_allclose(t.next_state_desc[:, 0], t.next_obs[:, 0])
    np.testing.assert_allclose(t.rewards, -jnp.abs(t.next_obs[:, 0] - 0.3), rtol=1e-6)


def test_unroll_truncates_and_auto_resets():
    env = point_env(batch_size=2, episode_length=4)
    state = env.reset(jax.random.key(0))
    _, t = jax.jit(lambda s, k: generate_unroll(env, s, _right, k, 9))(state, jax.random.key(1))
    assert t.obs.shape == (9, 2, 2)
    # Episode of 4 steps: step index 3 and 7 truncate (x never leaves [-1, 1]).
    np.testing.assert_array_equal(t.truncations[:, 0], [0, 0, 0, 1, 0, 0, 0, 1, 0])
    np.testing.assert_array_equal(t.dones[:, 0], t.truncations[:, 0])
    # After the reset the observation is the initial one again.
    np.testing.assert_allclose(t.obs[4], t.obs[0], rtol=1e-6)
    # State descriptors follow the reset: the truncated step reached x0 + 0.4, and
    # the next step starts from the initial state's descriptor, not from there.
    np.testing.assert_allclose(t.next_state_desc[3, :, 0], t.obs[0, :, 0] + 0.4, rtol=1e-6)
    np.testing.assert_allclose(t.state_desc[4], t.state_desc[0], rtol=1e-6)
    np.testing.assert_allclose(t.state_desc[:, :, 0], t.obs[:, :, 0], rtol=1e-6)
    np.testing.assert_allclose(t.next_state_desc[:, :, 0], t.obs[:, :, 0] + 0.1, rtol=1e-5)


def test_episode_returns_hand_computed():
    t = Transition.zeros(1, 1, batch_shape=(4, 2))
    t = t._replace(
        rewards=jnp.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0]]),
        dones=jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]),
    )
    returns, valid = episode_returns(t)
    np.testing.assert_allclose(returns, [3.0, 60.0])
    np.testing.assert_array_equal(valid[:, 0], [1, 1, 0, 0])


def test_evaluate_policy_terminates():
    env = point_env(batch_size=2, episode_length=30, auto_reset=False)
    returns, t = evaluate_policy(env, _right, jax.random.key(0))
    assert returns.shape == (2,) and t.rewards.shape == (30, 2)
    expected, _ = episode_returns(t)
    np.testing.assert_allclose(returns, expected)
    assert float(jnp.sum(t.dones[:, 0])) >= 1  # x leaves [-1, 1] within 30 steps


def test_make_env_rejects_bad_arguments():
    with pytest.raises(ValueError, match="batch_size"):
        make_env("hopper_uni", batch_size=0)
    with pytest.raises(ValueError, match="Unknown environment name"):
        make_env("not_an_env")
