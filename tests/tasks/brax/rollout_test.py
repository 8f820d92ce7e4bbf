"""Tests for rollout() masking and transitions, on a tiny pure-JAX environment.

The toy environment moves a point by the action each step, rewards its position and
terminates once the position exceeds a threshold; after termination its dynamics
produce NaNs, which must never reach the results.
"""

import jax
import jax.numpy as jnp
import numpy as np
from brax.envs.base import State

from ribsax.tasks.brax import rollout
from ribsax.tasks.brax._rollout import cast_floats, observation_size


class ToyEnv:
    """x_{t+1} = x_t + a_t; reward = x_{t+1}; done when x_{t+1} > 2.5."""

    def reset(self, key):
        del key
        zero = jnp.zeros((), jnp.float64)
        return State(
            pipeline_state=None, obs=jnp.zeros(1), reward=zero, done=zero, metrics={"x": zero}
        )

    def step(self, state, action):
        x = state.obs[0]
        x_next = jnp.where(state.done > 0, jnp.nan, x + action[0])
        done = (x_next > 2.5).astype(jnp.float64)
        return State(
            pipeline_state=None,
            obs=jnp.stack([x_next]),
            reward=x_next,
            done=done,
            metrics={"x": x_next},
        )


def _policy(params, obs):
    del obs
    return jnp.stack([params])  # Constant action = params.


def _run(speed, length=6, transitions=True):
    env = ToyEnv()
    return rollout(
        env,
        _policy,
        jnp.float64(speed),
        env.reset(None),
        episode_length=length,
        feature_fn=lambda s: s.obs * 2,
        return_transitions=transitions,
    )


def test_masks_after_termination():
    result = _run(1.0)
    # x = 1, 2, 3 (done at step 3, counted), then masked.
    np.testing.assert_array_equal(result.valid, [1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(result.rewards, [1, 2, 3, 0, 0, 0])
    np.testing.assert_array_equal(result.features[:, 0], [2, 4, 6, 0, 0, 0])
    # The toy dynamics are NaN after termination; masking keeps results finite.
    assert np.isfinite(np.asarray(result.rewards)).all()
    assert np.isfinite(np.asarray(result.features)).all()
    # Final features are those of the terminating step.
    np.testing.assert_array_equal(result.final_features, [6.0])
    t = result.transitions
    np.testing.assert_array_equal(t.obs[:4, 0], [0, 1, 2, 3])
    assert np.isnan(np.asarray(t.obs[4:])).all()  # Padding: ignore (valid == 0).
    np.testing.assert_array_equal(t.done, [0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(t.valid, [1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(t.truncation, np.zeros(6))
    np.testing.assert_array_equal(t.action[:3, 0], [1, 1, 1])


def test_truncation_without_termination():
    result = _run(0.1, length=4)
    np.testing.assert_array_equal(result.valid, [1, 1, 1, 1])
    np.testing.assert_allclose(result.rewards, [0.1, 0.2, 0.3, 0.4])
    np.testing.assert_array_equal(result.transitions.truncation, [0, 0, 0, 1])
    np.testing.assert_allclose(result.final_features, [0.8])
    assert _run(0.1, transitions=False).transitions is None


def test_vmapped_and_jitted():
    env = ToyEnv()

    @jax.jit
    def batch(speeds):
        states = jax.vmap(env.reset)(jnp.zeros(len(speeds)))

        def run(p, s):
            return rollout(env, _policy, p, s, episode_length=5, feature_fn=lambda st: st.obs)

        return jax.vmap(run)(speeds, states)

    result = batch(jnp.asarray([1.0, 0.5, 3.0]))
    np.testing.assert_array_equal(result.valid.sum(1), [3, 5, 1])
    np.testing.assert_allclose(result.rewards.sum(1), [6.0, 7.5, 3.0])


def test_cast_floats_only_touches_floats():
    tree = {"a": jnp.ones(2, jnp.float64), "b": jnp.ones(2, jnp.int32), "c": None, "d": 1.5}
    out = cast_floats(tree, jnp.float32)
    assert out["a"].dtype == jnp.float32 and out["b"].dtype == jnp.int32
    assert out["c"] is None and out["d"] == 1.5


def test_reward_fn_replaces_reward():
    env = ToyEnv()
    result = rollout(
        env,
        _policy,
        jnp.float64(1.0),
        env.reset(None),
        episode_length=4,
        feature_fn=lambda s: s.obs,
        reward_fn=lambda s: s.reward - 0.5 * s.metrics["x"],
    )
    np.testing.assert_allclose(result.rewards, [0.5, 1.0, 1.5, 0.0])


def test_observation_size_compiles_nothing_and_equals_brax():
    import brax.envs

    from tests.compile_counter import count_compilations

    env = brax.envs.get_environment("inverted_pendulum", backend="spring")
    # Wrapped environments report the unwrapped one's observations, as brax does.
    wrapped = brax.envs.wrappers.training.EpisodeWrapper(env, 5, 1)
    with count_compilations() as compiled:
        size, wrapped_size = observation_size(env), observation_size(wrapped)
    assert compiled.count == 0, compiled.names
    # What brax's property computes (it runs reset op by op: seconds of compiling).
    assert size == jax.jit(env.reset)(jax.random.PRNGKey(0)).obs.shape[-1] == 4
    assert wrapped_size == 4


def test_observation_size_of_a_plain_attribute_or_own_property_is_read_as_is():
    env = ToyEnv()
    env.observation_size = 7  # Not what reset returns: nothing is traced.
    assert observation_size(env) == 7

    from brax.envs.inverted_pendulum import InvertedPendulum

    class Overriding(InvertedPendulum):
        @property
        def observation_size(self):
            return 9

    assert observation_size(Overriding()) == 9
