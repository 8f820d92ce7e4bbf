"""A 2-D point-mass environment with brax's interface, for fast RL unit tests.

The point starts near the origin, moves by ``0.1 * action`` per step, and its
position is both the observation and the state descriptor. Reward per step is
``1 - 0.1 |action|^2``. An episode ends at the time limit or, early, when
``x > 1`` (termination). Finished environments are reset inside ``step`` when
``auto_reset`` is set (as brax's ``AutoResetWrapper`` does), keeping the reached
state descriptor in ``info["final_state_descriptor"]`` (as ``wrap_env`` does).
"""

import flax
import jax
import jax.numpy as jnp

from ribsax.rl import RLEnv


@flax.struct.dataclass
class PointState:
    obs: jax.Array
    reward: jax.Array
    done: jax.Array
    info: dict


class PointEnv:
    def __init__(self, episode_length, auto_reset=True):
        self.episode_length = episode_length
        self.auto_reset = auto_reset

    def _start(self, keys):
        return jax.vmap(
            lambda k: jax.random.uniform(
                jax.random.wrap_key_data(k), (2,), jnp.result_type(float), -0.1, 0.1
            )
        )(keys)

    def reset(self, keys):
        pos = self._start(keys)
        zeros = jnp.zeros(pos.shape[:1], pos.dtype)
        return PointState(
            obs=pos,
            reward=zeros,
            done=zeros,
            info={
                "truncation": zeros,
                "state_descriptor": pos,
                "final_state_descriptor": pos,
                "steps": zeros,
                "first_obs": pos,
                "keys": keys,
            },
        )

    def step(self, state, action):
        action = jnp.clip(action, -1.0, 1.0)
        pos = state.obs + 0.1 * action
        steps = state.info["steps"] + 1
        terminated = pos[:, 0] > 1.0
        truncated = (steps >= self.episode_length) & ~terminated
        done = (terminated | truncated).astype(pos.dtype)
        reward = 1.0 - 0.1 * jnp.sum(action * action, axis=-1)
        info = dict(state.info)
        info["state_descriptor"] = info["final_state_descriptor"] = pos
        info["truncation"] = truncated.astype(pos.dtype)
        obs = pos
        if self.auto_reset:
            keys = jax.vmap(
                lambda k: jax.random.key_data(jax.random.fold_in(jax.random.wrap_key_data(k), 1))
            )(state.info["keys"])
            fresh = self._start(keys)
            obs = jnp.where(done[:, None] > 0, fresh, pos)
            steps = jnp.where(done > 0, 0.0, steps)
            info["keys"] = keys
            # As ribsax.rl.wrap_env's auto-reset: the reached descriptor, and the
            # descriptor of the state the observation belongs to.
            info["final_state_descriptor"] = pos
            info["state_descriptor"] = obs
        info["steps"] = steps
        return PointState(obs=obs, reward=reward, done=done, info=info)


def make_point_env(batch_size, episode_length=10, auto_reset=True):
    return RLEnv(
        env=PointEnv(episode_length, auto_reset),
        name="point",
        batch_size=batch_size,
        episode_length=episode_length,
        observation_size=2,
        action_size=2,
        state_descriptor_size=2,
    )
