"""Environment steps and unrolls in ``lax.scan``, and brax environments for RL.

``play_step``/``generate_unroll`` work on any brax-style environment (``reset``,
``step``, ``State`` with ``obs``/``reward``/``done``/``info``): they do not import
brax. :func:`make_env` builds a batched, auto-resetting brax environment from a
ribsax QD task name (``"walker2d_uni"``, ``"ant_omni"`` ...; it reuses
``ribsax.tasks.brax.create`` for the robot, the state descriptor and the omni
reward) or from a plain brax environment name, and imports brax lazily.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from ribsax.rl._checks import check_positive_int
from ribsax.rl._transition import Transition
from ribsax.tasks import brax as brax_tasks
from ribsax.tasks.brax._rollout import cast_floats, observation_size

__all__ = [
    "RLEnv",
    "make_env",
    "wrap_env",
    "play_step",
    "generate_unroll",
    "episode_returns",
    "evaluate_policy",
]

PolicyFn = Callable[[jax.Array, jax.Array], jax.Array]  # (obs, key) -> actions


class _StateDescriptorWrapper:
    """Puts ``feature_fn(state)`` in ``state.info["state_descriptor"]`` and
    optionally replaces the reward (wraps one unbatched env)."""

    def __init__(self, env, feature_fn, reward_fn):
        self.env = env
        self._feature_fn = feature_fn
        self._reward_fn = reward_fn

    def _finish(self, state):
        if self._feature_fn is None:
            desc = jnp.zeros((0,), state.obs.dtype)
        else:
            desc = self._feature_fn(state).astype(state.obs.dtype)
        state.info["state_descriptor"] = desc
        return _cast(state)

    def reset(self, rng):
        state = self._finish(self.env.reset(rng))
        # The state brax's AutoResetWrapper returns to (see _DescriptorResetWrapper).
        state.info["first_state_descriptor"] = state.info["state_descriptor"]
        return state

    def step(self, state, action):
        state = self.env.step(state, action)
        if self._reward_fn is not None:
            state = state.replace(reward=self._reward_fn(state))
        return self._finish(state)

    def __getattr__(self, name):
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)


class _DescriptorResetWrapper:
    """Keeps the state descriptor in step with brax's ``AutoResetWrapper`` (wraps
    it, batched).

    ``AutoResetWrapper`` puts a finished environment back to its first state
    (observation and physics) but leaves ``info`` alone, so the descriptor would
    still be the finished episode's last one while the observation is the new
    episode's first. After each step, ``info["final_state_descriptor"]`` holds the
    descriptor the step reached (the transition's ``next_state_desc``, before any
    reset) and ``info["state_descriptor"]`` the descriptor of the state the
    observation belongs to (the first state's after a reset: the next
    transition's ``state_desc``).
    """

    def __init__(self, env):
        self.env = env

    def reset(self, rng):
        state = self.env.reset(rng)
        state.info["final_state_descriptor"] = state.info["state_descriptor"]
        return state

    def step(self, state, action):
        state = self.env.step(state, action)
        reached = state.info["state_descriptor"]
        done = state.done.reshape(state.done.shape + (1,) * (reached.ndim - state.done.ndim))
        state.info["final_state_descriptor"] = reached
        state.info["state_descriptor"] = jnp.where(
            done > 0, state.info["first_state_descriptor"], reached
        )
        return state

    def __getattr__(self, name):
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)


def _cast(state):
    return cast_floats(state, jnp.result_type(float))


@dataclasses.dataclass(frozen=True, eq=False)
class RLEnv:
    """A batched brax environment for RL, with its sizes (see :func:`make_env`).

    Attributes:
        env: The wrapped environment: ``reset(keys)`` takes ``(batch_size, 2)``
            raw keys (use :meth:`reset` with one key); ``step`` auto-resets finished
            episodes when ``auto_reset``.
        name: Task or brax environment name.
        batch_size: Number of parallel environments.
        episode_length: Time limit (steps) of an episode.
        observation_size: Length of observations.
        action_size: Length of actions (in ``[-1, 1]``).
        state_descriptor_size: Length of ``state.info["state_descriptor"]``
            (0 for plain brax environments).
        qd_task: The :class:`~ribsax.tasks.brax.BraxTask` used, or None.
    """

    env: Any
    name: str
    batch_size: int
    episode_length: int
    observation_size: int
    action_size: int
    state_descriptor_size: int
    qd_task: Any = None

    def reset(self, key: jax.Array):
        """``batch_size`` fresh environment states from one key.

        Floating fields are cast to JAX's default float dtype (float64 under x64:
        brax mixes dtypes there, which ``lax.scan`` carries cannot hold).
        """
        keys = jax.random.split(key, self.batch_size)
        if jnp.issubdtype(keys.dtype, jax.dtypes.prng_key):
            keys = jax.random.key_data(keys)  # brax's wrappers expect raw keys.
        return _cast(self.env.reset(keys))

    def step(self, state, actions: jax.Array):
        """Steps every environment (floats cast as in :meth:`reset`)."""
        return _cast(self.env.step(state, actions))


def make_env(
    name: str,
    *,
    batch_size: int = 1,
    episode_length: int = 1000,
    backend: str = "spring",
    auto_reset: bool = True,
    env_kwargs: dict | None = None,
) -> RLEnv:
    """Creates a batched brax environment with time limit and state descriptors.

    Args:
        name: A ribsax QD locomotion task (``ribsax.tasks.brax.TASK_NAMES``: state
            descriptors are its per-step measure features, and omni tasks drop the
            forward reward), or any brax environment name (no state descriptor).
        batch_size: Number of parallel environments.
        episode_length: Steps before an episode is truncated.
        backend: brax physics backend.
        auto_reset: Reset finished environments inside ``step`` (training);
            without it, finished environments keep stepping (evaluation, where
            results after the first ``done`` are masked).
        env_kwargs: Extra arguments of ``brax.envs.get_environment``.

    Raises:
        ValueError: Non-positive ``batch_size`` or ``episode_length``, or an
            unknown ``name``.
    """
    import brax.envs  # The brax extra.

    check_positive_int("batch_size", batch_size)
    check_positive_int("episode_length", episode_length)
    task = None
    if name in brax_tasks.TASKS:
        task = brax_tasks.create(
            name, episode_length=episode_length, backend=backend, env_kwargs=env_kwargs
        )
        base, feature_fn, reward_fn = task.env, task.feature_fn, task.reward_fn
        desc_size = task.measure_dim
    else:
        try:
            base = brax.envs.get_environment(name, backend=backend, **(env_kwargs or {}))
        except KeyError as err:
            raise ValueError(
                f"Unknown environment name {name!r}: expected a ribsax QD task "
                f"{sorted(brax_tasks.TASKS)} or a brax environment "
                f"{sorted(brax.envs._envs)}"
            ) from err
        feature_fn = reward_fn = None
        desc_size = 0
    return wrap_env(
        base,
        name=name,
        batch_size=batch_size,
        episode_length=episode_length,
        auto_reset=auto_reset,
        feature_fn=feature_fn,
        reward_fn=reward_fn,
        state_descriptor_size=desc_size,
        qd_task=task,
    )


def wrap_env(
    base_env,
    *,
    batch_size: int,
    episode_length: int,
    auto_reset: bool = True,
    feature_fn: Callable | None = None,
    reward_fn: Callable | None = None,
    state_descriptor_size: int = 0,
    name: str = "",
    qd_task: Any = None,
) -> RLEnv:
    """Wraps one unbatched brax-style environment for RL (used by :func:`make_env`).

    Adds, from the inside out: the state descriptor ``feature_fn(state)`` in
    ``state.info["state_descriptor"]`` (and ``reward_fn`` replacing the reward),
    batching (brax's ``VmapWrapper``), the time limit and truncation flags
    (``EpisodeWrapper``) and, with ``auto_reset``, ``AutoResetWrapper``.

    Args:
        base_env: Environment with ``reset(key)``, ``step(state, action)``,
            ``observation_size`` and ``action_size`` (a brax ``Env``).
        batch_size, episode_length, auto_reset: See :func:`make_env`.
        feature_fn: ``state -> (state_descriptor_size,)`` or None.
        reward_fn: ``state -> reward`` or None.
        state_descriptor_size: Length of ``feature_fn``'s output.
        name: Name recorded in the :class:`RLEnv`.
        qd_task: Task recorded in the :class:`RLEnv`.
    """
    from brax.envs.wrappers import training

    check_positive_int("batch_size", batch_size)
    check_positive_int("episode_length", episode_length)
    env = _StateDescriptorWrapper(base_env, feature_fn, reward_fn)
    env = training.VmapWrapper(env)
    env = training.EpisodeWrapper(env, episode_length, action_repeat=1)
    if auto_reset:
        env = _DescriptorResetWrapper(training.AutoResetWrapper(env))
    return RLEnv(
        env=env,
        name=name,
        batch_size=batch_size,
        episode_length=episode_length,
        observation_size=observation_size(base_env),
        action_size=int(base_env.action_size),
        state_descriptor_size=int(state_descriptor_size),
        qd_task=qd_task,
    )


def _state_desc(state, name="state_descriptor") -> jax.Array:
    info = state.info if hasattr(state, "info") else {}
    desc = info.get(name, info.get("state_descriptor"))
    if desc is None:
        return jnp.zeros(state.obs.shape[:-1] + (0,), state.obs.dtype)
    return desc


def play_step(env, env_state, policy_fn: PolicyFn, key: jax.Array) -> tuple[Any, Transition]:
    """Acts with ``policy_fn(obs, key)`` and steps ``env`` once.

    Returns ``(next_env_state, transition)``. ``truncations`` come from
    ``state.info["truncation"]`` (brax's ``EpisodeWrapper``; zero without it) and
    state descriptors from ``state.info["state_descriptor"]`` (:func:`make_env`;
    empty without it): the transition's ``state_desc`` is the descriptor of the
    state acted in, its ``next_state_desc`` the one the step reached, also when the
    environment then resets (``info["final_state_descriptor"]``, set by
    :func:`wrap_env`'s auto-reset).
    """
    actions = policy_fn(env_state.obs, key).astype(env_state.obs.dtype)
    next_state = env.step(env_state, actions)
    truncation = next_state.info.get("truncation") if hasattr(next_state, "info") else None
    if truncation is None:
        truncation = jnp.zeros_like(next_state.done)
    transition = Transition(
        obs=env_state.obs,
        next_obs=next_state.obs,
        rewards=next_state.reward,
        dones=next_state.done,
        truncations=truncation.astype(next_state.done.dtype),
        actions=actions,
        state_desc=_state_desc(env_state),
        next_state_desc=_state_desc(next_state, "final_state_descriptor"),
    )
    return next_state, transition


def generate_unroll(
    env, env_state, policy_fn: PolicyFn, key: jax.Array, steps: int
) -> tuple[Any, Transition]:
    """``steps`` calls of :func:`play_step` in one ``lax.scan``.

    Returns ``(final_env_state, transitions)`` with transitions stacked on a
    leading time axis (``(steps, batch, ...)`` for a batched env).
    """

    def body(state, k):
        return play_step(env, state, policy_fn, k)

    return jax.lax.scan(body, env_state, jax.random.split(key, steps))


def episode_returns(transitions: Transition) -> tuple[jax.Array, jax.Array]:
    """Undiscounted return of each first episode in a ``(T, B)`` unroll.

    Steps after the first ``done`` of each column are ignored. Returns
    ``(returns (B,), valid (T, B))`` where ``valid`` marks the counted steps.
    """
    done = transitions.dones
    ended_before = jnp.cumsum(done, axis=0) - done > 0
    valid = (~ended_before).astype(transitions.rewards.dtype)
    return jnp.sum(transitions.rewards * valid, axis=0), valid


def evaluate_policy(
    env: RLEnv, policy_fn: PolicyFn, key: jax.Array
) -> tuple[jax.Array, Transition]:
    """Plays one episode in each of ``env.batch_size`` fresh environments.

    Returns ``(returns (batch_size,), transitions (episode_length, batch_size))``;
    returns count the steps up to each environment's first ``done``.
    """
    reset_key, play_key = jax.random.split(key)
    state = env.reset(reset_key)
    _, transitions = generate_unroll(env, state, policy_fn, play_key, env.episode_length)
    returns, _ = episode_returns(transitions)
    return returns, transitions
