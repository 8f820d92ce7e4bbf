"""PBTPopulation: a population of off-policy agents trained in parallel with PBT.

Shared by :class:`~ribsax.rl.PBTSAC` and :class:`~ribsax.rl.PBTTD3`. Each member is
a full agent (its state, with its own hyperparameters; its batch of environments;
its replay buffer); the population is the stacked pytree of members, trained by
one ``vmap``-ped (and, with a mesh, ``shard_map``-ped) call of the agent's own
training loop, evaluated the same way, and updated by :class:`~ribsax.rl.PBT`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ribsax.rl._checks import check_positive_int
from ribsax.rl._pbt import (
    PBT,
    POPULATION_AXIS,
    _get,
    _set,
    _set_field,
    population_map,
    shard_population,
)
from ribsax.rl._replay_buffer import ReplayBuffer
from ribsax.rl._transition import Transition
from ribsax.rl._unroll import RLEnv, episode_returns, evaluate_policy
from ribsax.tasks.brax import TASKS

__all__ = ["PopulationState", "PBTPopulation", "PresetPBT", "final_descriptor", "mean_descriptor"]


class PopulationState(NamedTuple):
    """Stacked members (leading axis: population).

    Attributes:
        agents: Agent training states (hyperparameters included).
        env_states: Each member's batch of environment states.
        buffers: Each member's replay-buffer state.
    """

    agents: Any
    env_states: Any
    buffers: Any


def final_descriptor(transitions: Transition, valid: jax.Array) -> jax.Array:
    """``(B, d)`` state descriptor after each episode's last counted step."""
    last = jnp.maximum(jnp.sum(valid, axis=0).astype(jnp.int32) - 1, 0)
    return jnp.take_along_axis(transitions.next_state_desc, last[None, :, None], axis=0)[0]


def mean_descriptor(transitions: Transition, valid: jax.Array) -> jax.Array:
    """``(B, d)`` mean state descriptor over each episode's counted steps (e.g. the
    feet-contact proportions of the ``*_uni`` tasks)."""
    total = jnp.sum(transitions.next_state_desc * valid[..., None], axis=0)
    return total / jnp.maximum(jnp.sum(valid, axis=0), 1.0)[:, None]


def default_descriptor_fn(env: RLEnv) -> Callable:
    """The QD descriptor of ``env``: feet-contact proportions for ``*_uni`` tasks,
    final position (clipped to the task's range) for ``*_omni`` tasks, the final
    state descriptor otherwise."""
    task = env.qd_task
    if task is None:
        return final_descriptor
    if TASKS[task.env_name].descriptor == "feet_contact":
        return mean_descriptor
    low, high = task.measure_ranges[0]
    return lambda tr, valid: jnp.clip(final_descriptor(tr, valid), low, high)


class PBTPopulation:
    """Population-based training of an off-policy agent (SAC or TD3).

    Public functions (pure, jitted once; the environments are static):

    * ``init(key) -> PopulationState``: ``population_size`` agents with
      hyperparameters drawn uniformly in the PBT ranges, their environments reset
      and empty buffers; placed on the mesh if one is given;
    * ``train(population, num_iterations, grad_updates_per_step=1,
      random_actions=False) -> (population, metrics)``: every member runs the
      agent's own loop (``num_iterations`` environment steps of its batch, each
      followed by ``grad_updates_per_step`` updates); ``metrics`` have a leading
      population axis. ``random_actions`` plays uniform actions (warm-up);
    * ``evaluate(population, key) -> returns``: ``(population_size,)`` mean
      deterministic return of each member over one episode per evaluation env;
    * ``qd_evaluate(population, key) -> (fitnesses, descriptors, returns)``: the
      same episodes' mean return and mean QD descriptor (``descriptor_fn``), plus
      the per-episode returns ``(population_size, eval_batch)``;
    * ``update(population, key, fitnesses) -> population``: PBT's exploit/explore
      (:meth:`~ribsax.rl.PBT.update_states_and_buffer`): the worst members become
      copies (state and buffer) of sampled best ones with new hyperparameters;
      environment states stay with their slot.

    Args:
        agent: An off-policy agent (:class:`~ribsax.rl.SAC`, :class:`~ribsax.rl.TD3`)
            whose state has a ``hyperparams`` NamedTuple.
        pbt: The :class:`~ribsax.rl.PBT` step (population size, counts, ranges).
        env: Training environment of each member (``env.batch_size`` envs each).
        buffer_size: Replay-buffer capacity of each member.
        eval_env: Evaluation environment (default: ``env``; steps after an
            episode's first ``done`` are ignored either way).
        mesh: A :func:`~ribsax.rl.population_mesh` to shard members over devices
            (the population size must be a multiple of its size), or None.
        descriptor_fn: ``(transitions (T, B), valid (T, B)) -> (B, d)`` QD
            descriptor (default :func:`default_descriptor_fn`).
    """

    def __init__(
        self,
        agent,
        pbt: PBT,
        env: RLEnv,
        *,
        buffer_size: int,
        eval_env: RLEnv | None = None,
        mesh: Mesh | None = None,
        descriptor_fn: Callable | None = None,
    ):
        if not isinstance(pbt, PBT):
            raise TypeError(f"pbt must be a PBT, got {type(pbt).__name__}")
        if not isinstance(env, RLEnv):
            raise TypeError(f"env must be an RLEnv (ribsax.rl.make_env), got {type(env).__name__}")
        check_positive_int("buffer_size", buffer_size)
        if mesh is not None and pbt.population_size % mesh.shape[POPULATION_AXIS]:
            raise ValueError(
                f"population_size ({pbt.population_size}) must be a "
                f"multiple of the number of devices "
                f"({mesh.shape[POPULATION_AXIS]})"
            )
        self.agent = agent
        self.pbt = pbt
        self.env = env
        self.eval_env = env if eval_env is None else eval_env
        self.mesh = mesh
        self.descriptor_fn = descriptor_fn or default_descriptor_fn(self.eval_env)
        self.buffer = ReplayBuffer(buffer_size, agent.config.batch_size)
        self.init = jax.jit(self._init)
        self.train = jax.jit(
            self._train,
            static_argnames=("num_iterations", "grad_updates_per_step", "random_actions"),
            donate_argnums=0,
        )
        self.evaluate = jax.jit(self._evaluate)
        self.qd_evaluate = jax.jit(self._qd_evaluate)
        self.update = jax.jit(self._update)

    def _map(self, fn):
        return population_map(fn, self.mesh)

    def _constrain(self, tree):
        if self.mesh is None:
            return tree
        sharding = NamedSharding(self.mesh, PartitionSpec(POPULATION_AXIS))
        return jax.lax.with_sharding_constraint(tree, sharding)

    def _init_member(self, key, hyper):
        agent_key, env_key = jax.random.split(key)
        env = self.env
        state = self.agent._init(agent_key, env.observation_size)
        current = state.hyperparams
        state = _set_field(
            state,
            "hyperparams",
            _set(
                current,
                {name: value.astype(_get(current, name).dtype) for name, value in hyper.items()},
            ),
        )
        env_state = env.reset(env_key)
        example = Transition.zeros(
            env.observation_size,
            env.action_size,
            env.state_descriptor_size,
            dtype=env_state.obs.dtype,
        )
        return state, env_state, self.buffer.init(example)

    def _init(self, key) -> PopulationState:
        n = self.pbt.population_size
        hyper_key, member_key = jax.random.split(key)
        hyper = self.pbt.sample_hyperparams(hyper_key, n, jnp.float32)
        keys = jax.random.split(member_key, n)
        agents, env_states, buffers = jax.vmap(self._init_member)(keys, hyper)
        return self._constrain(PopulationState(agents, env_states, buffers))

    def _train(
        self,
        population: PopulationState,
        num_iterations: int,
        grad_updates_per_step: int = 1,
        random_actions: bool = False,
    ):
        member_train = functools.partial(
            self.agent._train,
            env=self.env,
            buffer=self.buffer,
            num_steps=num_iterations,
            grad_updates_per_step=grad_updates_per_step,
            random_actions=random_actions,
        )
        agents, env_states, buffers, metrics = self._map(member_train)(*population)
        return PopulationState(agents, env_states, buffers), metrics

    def _episodes(self, agent_state, key):
        def policy_fn(obs, k):
            return self.agent._select_action(agent_state, obs, k, deterministic=True)

        return evaluate_policy(self.eval_env, policy_fn, key)

    def _member_qd(self, agent_state, key):
        returns, transitions = self._episodes(agent_state, key)
        _, valid = episode_returns(transitions)
        descriptors = self.descriptor_fn(transitions, valid)
        return jnp.mean(returns), jnp.mean(descriptors, axis=0), returns

    def _evaluate(self, population: PopulationState, key) -> jax.Array:
        keys = jax.random.split(key, self.pbt.population_size)
        member = lambda s, k: jnp.mean(self._episodes(s, k)[0])  # noqa: E731
        return self._map(member)(population.agents, keys)

    def _qd_evaluate(self, population: PopulationState, key):
        keys = jax.random.split(key, self.pbt.population_size)
        return self._map(self._member_qd)(population.agents, keys)

    def _update(self, population: PopulationState, key, fitnesses) -> PopulationState:
        agents, buffers = self.pbt.update_states_and_buffer(
            key, fitnesses, population.agents, population.buffers
        )
        return self._constrain(population._replace(agents=agents, buffers=buffers))

    def shard(self, population: PopulationState) -> PopulationState:
        """Places ``population`` on the mesh (identity without a mesh)."""
        return shard_population(population, self.mesh)


class PresetPBT(PBTPopulation):
    """Base of :class:`~ribsax.rl.PBTSAC` and :class:`~ribsax.rl.PBTTD3`: a
    :class:`PBTPopulation` of one agent kind with its config type and
    hyperparameter ranges (class attributes ``config_type`` and ``ranges``, and
    ``make_agent(config, action_size)``).

    Args:
        config: The algorithm's PBT config.
        env: Training environment of each member.
        population_size: Number of agents.
        num_best_to_replace_from: PBT sources are drawn among this many best.
        num_worse_to_replace: This many worst agents are replaced at each update.
        buffer_size: Replay-buffer capacity of each member.
        explore: ``"resample"`` (QDax) or ``"perturb"`` (see :class:`~ribsax.rl.PBT`).
        eval_env: Evaluation environment (default ``env``).
        mesh: Optional :func:`~ribsax.rl.population_mesh` to shard the members.

    Raises:
        TypeError: ``config`` is not a ``config_type``.
        ValueError: Invalid sizes (see :class:`~ribsax.rl.PBT`).
    """

    config_type: type = type(None)
    ranges: tuple = ()

    @staticmethod
    def make_agent(config, action_size: int):
        """The member agent for ``config`` (provided by subclasses)."""
        raise NotImplementedError

    def __init__(
        self,
        config,
        env: RLEnv,
        *,
        population_size: int,
        num_best_to_replace_from: int,
        num_worse_to_replace: int,
        buffer_size: int = 100_000,
        explore: str = "resample",
        eval_env: RLEnv | None = None,
        mesh: Mesh | None = None,
    ):
        if not isinstance(config, self.config_type):
            raise TypeError(
                f"config must be a {self.config_type.__name__}, got {type(config).__name__}"
            )
        check_positive_int("population_size", population_size)
        self.config = config
        pbt = PBT(
            population_size,
            num_best_to_replace_from,
            num_worse_to_replace,
            self.ranges,
            explore=explore,
        )
        super().__init__(
            self.make_agent(config, env.action_size),
            pbt,
            env,
            buffer_size=buffer_size,
            eval_env=eval_env,
            mesh=mesh,
        )
