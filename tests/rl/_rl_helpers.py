"""Small fixtures of the RL tests: a brax-style point-mass env and tiny configs."""

import jax
import jax.numpy as jnp
from brax.envs.base import State

from ribsax.rl import Transition, wrap_env


class PointEnv:
    """1-D point mass: obs (x, target), action moves x by 0.1 a; reward -|x - t|.

    Terminates when |x| > 1. State descriptor: x.
    """

    observation_size = 2
    action_size = 1

    def reset(self, rng):
        x = jax.random.uniform(rng, (), jnp.float32, -0.5, 0.5)
        obs = jnp.stack([x, jnp.float32(0.3)])
        return State(
            pipeline_state=x,
            obs=obs,
            reward=jnp.float32(0.0),
            done=jnp.float32(0.0),
            metrics={},
            info={},
        )

    def step(self, state, action):
        x = state.pipeline_state + 0.1 * action[0]
        obs = jnp.stack([x, jnp.float32(0.3)]).astype(jnp.float32)
        reward = -jnp.abs(x - 0.3)
        done = (jnp.abs(x) > 1.0).astype(jnp.float32)
        return state.replace(pipeline_state=x, obs=obs, reward=reward, done=done)


def point_env(batch_size=4, episode_length=5, auto_reset=True):
    return wrap_env(
        PointEnv(),
        batch_size=batch_size,
        episode_length=episode_length,
        auto_reset=auto_reset,
        feature_fn=lambda s: s.pipeline_state[None],
        state_descriptor_size=1,
        name="point",
    )


def random_batch(key, n=32, obs=3, act=2, desc=0):
    """Transitions with random obs/actions/rewards, no dones or truncations."""
    k = jax.random.split(key, 4)
    base = Transition.zeros(obs, act, desc, (n,))
    return base._replace(
        obs=jax.random.normal(k[0], (n, obs), jnp.float32),
        next_obs=jax.random.normal(k[1], (n, obs), jnp.float32),
        actions=jax.random.uniform(k[2], (n, act), jnp.float32, -1, 1),
        rewards=jax.random.normal(k[3], (n,), jnp.float32),
    )


def tree_allclose(a, b, **kw):
    leaves = jax.tree.leaves(jax.tree.map(lambda x, y: jnp.allclose(x, y, **kw), a, b))
    return all(bool(x) for x in leaves)


def tree_equal(a, b):
    leaves = jax.tree.leaves(jax.tree.map(lambda x, y: jnp.array_equal(x, y), a, b))
    return all(bool(x) for x in leaves)
