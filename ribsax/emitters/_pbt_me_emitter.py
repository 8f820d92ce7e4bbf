"""ME-PBT: MAP-Elites with a population of RL agents trained by population-based
training (Pierrot & Flajolet 2023, "Evolving Populations of Diverse RL Agents with
MAP-Elites").

The emitter is written against the public emitter protocol
(:class:`~ribsax.emitters.EmitterKernel`): the agents (SAC or TD3 training
states, each with its replay buffer and its batch of environments) are one state
pytree, :class:`~ribsax.rl.PBTPopulation` trains them and :class:`~ribsax.rl.PBT`
does the exploit/explore step; :class:`PBTMEEmitter` is the
:class:`~ribsax.emitters.JaxEmitter` around it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from ribsax.emitters._emitter_kernel import EmitterKernel
from ribsax.emitters._jax_emitter import JaxEmitter
from ribsax.emitters.operators._kernels import iso_line_variation
from ribsax.rl._optim import adam_init
from ribsax.rl._pbt import PBT, POPULATION_AXIS, population_mesh, shard_population
from ribsax.rl._pbt_population import PBTPopulation, PopulationState
from ribsax.rl._pbt_sac import PBT_SAC_RANGES
from ribsax.rl._pbt_td3 import PBT_TD3_RANGES
from ribsax.rl._sac import SAC, SacConfig
from ribsax.rl._td3 import TD3, TD3Config
from ribsax.rl._unroll import RLEnv, wrap_env
from ribsax.tasks.brax._policy import _activation

__all__ = ["PBTMEKernel", "PBTMEState", "PBTMEEmitter"]

AGENTS = ("sac", "td3")

#: Name of the scale head in the parameters of a SAC agent's actor.
_SCALE = "scale"


class PBTMEState(NamedTuple):
    """State of :class:`PBTMEKernel`.

    Attributes:
        population: :class:`~ribsax.rl.PopulationState` of the agents: their
            training states (policy, critics, targets, Adam moments,
            hyperparameters, PRNG key), each agent's batch of training
            environments and each agent's replay buffer (leading axis: agents).
        training_steps: Environment steps the agents played in training since
            :meth:`PBTMEKernel.init` (int32 scalar).
    """

    population: PopulationState
    training_steps: jax.Array


class _SACActor(nn.Module):
    """SAC's actor on a task policy's network: ``loc`` is the network without its
    final tanh (same layers, same parameter names), ``scale = softplus(raw) +
    min_std`` with ``raw`` a dense head on the last hidden layer (parameters
    ``"scale"``), so ``tanh(loc)``, SAC's deterministic action, is the task
    network's action."""

    hidden_layer_sizes: tuple[int, ...]
    action_size: int
    activation: Callable
    kernel_init: Callable
    min_std: float = 1e-3

    @nn.compact
    def __call__(self, obs):
        x = obs
        zeros = nn.initializers.zeros
        for i, size in enumerate(self.hidden_layer_sizes):
            dense = nn.Dense(size, kernel_init=self.kernel_init, bias_init=zeros, name=f"dense_{i}")
            x = self.activation(dense(x))
        last = len(self.hidden_layer_sizes)
        loc = nn.Dense(
            self.action_size, kernel_init=self.kernel_init, bias_init=zeros, name=f"dense_{last}"
        )(x)
        raw = nn.Dense(
            self.action_size, kernel_init=self.kernel_init, bias_init=zeros, name=_SCALE
        )(x)
        return loc, jax.nn.softplus(raw) + self.min_std


def _check_int(name, value, low=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def _check_fraction(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")


class _MeshDeviceIds(NamedTuple):
    """A pickled :func:`~ribsax.rl.population_mesh`: the ids of its devices."""

    ids: tuple

    def mesh(self) -> Mesh:
        """The population mesh over this process's devices of those ids."""
        devices = {d.id: d for d in jax.devices()}
        missing = [i for i in self.ids if i not in devices]
        if missing:
            raise ValueError(
                f"The pickled ME-PBT emitter's mesh spans devices {list(self.ids)}; "
                f"this process has no device with id {missing}"
            )
        return population_mesh([devices[i] for i in self.ids])


@dataclasses.dataclass(frozen=True)
class PBTMEKernel(EmitterKernel):
    """ME-PBT as an :class:`~ribsax.emitters.EmitterKernel` (see
    :class:`PBTMEEmitter` for the algorithm and the arguments).

    Attributes:
        policy: The task's :class:`~ribsax.tasks.brax.MLPPolicy` (solutions are its
            flat parameters; it is every agent's actor).
        env: The :class:`~ribsax.tasks.brax.BraxTask` whose environment the agents
            train in, or a :class:`~ribsax.rl.RLEnv`.
        agent, num_agents, ga_batch_size, iso_sigma, line_sigma, env_batch_size,
        num_training_iterations, grad_updates_per_step, replay_buffer_size,
        training_batch_size, critic_hidden_layer_size,
        fraction_best_to_replace_from, fraction_to_replace_from_best,
        fraction_to_replace_from_samples, soft_tau_update, alpha_init,
        fix_alpha, policy_delay, mesh: As in :class:`PBTMEEmitter`.
    """

    policy: Any
    env: Any
    agent: str = "sac"
    num_agents: int = 10
    ga_batch_size: int = 30
    iso_sigma: float = 0.005
    line_sigma: float = 0.05
    env_batch_size: int = 250
    num_training_iterations: int = 40
    grad_updates_per_step: int = 1
    replay_buffer_size: int = 100_000
    training_batch_size: int = 256
    critic_hidden_layer_size: tuple[int, ...] = (256, 256)
    fraction_best_to_replace_from: float = 0.1
    fraction_to_replace_from_best: float = 0.2
    fraction_to_replace_from_samples: float = 0.4
    soft_tau_update: float = 0.005
    alpha_init: float = 1.0
    fix_alpha: bool = False
    policy_delay: int = 2
    mesh: Mesh | None = None

    def __post_init__(self):
        for attr in ("apply_tree", "unravel", "ravel", "init_batch", "module"):
            if not hasattr(self.policy, attr):
                raise TypeError(
                    "policy must be a ribsax.tasks.brax.MLPPolicy (a task's .policy), got "
                    f"{type(self.policy).__name__}"
                )
        if not isinstance(self.env, RLEnv) and not hasattr(self.env, "feature_fn"):
            raise TypeError(
                "env must be a ribsax.tasks.brax.BraxTask (the task whose environment "
                "the agents train in) or a ribsax.rl.RLEnv, got "
                f"{type(self.env).__name__}"
            )
        if self.agent not in AGENTS:
            raise ValueError(f"agent must be one of {AGENTS}, got {self.agent!r}")
        _check_int("num_agents", self.num_agents, 2)
        _check_int("ga_batch_size", self.ga_batch_size, 0)
        _check_int("env_batch_size", self.env_batch_size)
        _check_int("num_training_iterations", self.num_training_iterations)
        _check_int("grad_updates_per_step", self.grad_updates_per_step, 0)
        _check_int("replay_buffer_size", self.replay_buffer_size)
        _check_int("training_batch_size", self.training_batch_size)
        for name in ("iso_sigma", "line_sigma"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be non-negative, got {getattr(self, name)!r}")
        if not 0.0 <= self.soft_tau_update <= 1.0:
            raise ValueError(f"soft_tau_update must be in [0, 1], got {self.soft_tau_update!r}")
        for name in (
            "fraction_best_to_replace_from",
            "fraction_to_replace_from_best",
            "fraction_to_replace_from_samples",
        ):
            _check_fraction(name, getattr(self, name))
        n = self.num_agents
        if self.num_best_to_replace_from < 1 or self.num_to_replace_from_best < 1:
            raise ValueError(
                "fraction_best_to_replace_from and fraction_to_replace_from_best must "
                f"each give at least one of the num_agents={n} agents "
                f"(int(num_agents * fraction)), got {self.fraction_best_to_replace_from!r} "
                f"and {self.fraction_to_replace_from_best!r}"
            )
        total = (
            self.num_best_to_replace_from
            + self.num_to_replace_from_best
            + self.num_to_replace_from_samples
        )
        if total > n:
            raise ValueError(
                "The agents to replace from (fraction_best_to_replace_from) and those "
                "replaced (fraction_to_replace_from_best, "
                "fraction_to_replace_from_samples) must not overlap: "
                f"{self.num_best_to_replace_from} + {self.num_to_replace_from_best} + "
                f"{self.num_to_replace_from_samples} > num_agents={n}"
            )
        if self.agent == "sac" and _activation(self.policy.final_activation) is not jnp.tanh:
            raise ValueError(
                "agent='sac' needs a policy whose final_activation is 'tanh' (SAC's "
                "deterministic action is tanh of its mean), got "
                f"{self.policy.final_activation!r}"
            )
        object.__setattr__(self, "critic_hidden_layer_size", tuple(self.critic_hidden_layer_size))
        if self.training_batch_size > self.replay_buffer_size:
            raise ValueError(
                f"training_batch_size ({self.training_batch_size}) must not exceed "
                f"replay_buffer_size ({self.replay_buffer_size})"
            )
        if self.mesh is not None:
            if not isinstance(self.mesh, Mesh) or self.mesh.axis_names != (POPULATION_AXIS,):
                raise TypeError(
                    "mesh must be a ribsax.rl.population_mesh (a jax.sharding.Mesh with "
                    f"the one axis {POPULATION_AXIS!r}) or None, got {self.mesh!r}"
                )
            if n % self.mesh.size:
                raise ValueError(
                    f"num_agents ({n}) must be a multiple of the number of devices of "
                    f"mesh ({self.mesh.size})"
                )
        # The agents' configs check their own fields (tau, policy_delay, sizes).
        _ = self.rl_agent

    def __getstate__(self):
        # Devices do not pickle: a mesh travels as the ids of its devices.
        state = super().__getstate__()
        if self.mesh is not None:
            state["mesh"] = _MeshDeviceIds(tuple(int(d.id) for d in self.mesh.devices.flat))
        return state

    def __setstate__(self, state):
        mesh = state.get("mesh")
        if isinstance(mesh, _MeshDeviceIds):
            state = {**state, "mesh": mesh.mesh()}
        super().__setstate__(state)

    # ------------------------------------------------------------ derived
    @property
    def batch_size(self) -> int:
        """Solutions per ask: the GA offspring, then one policy per agent."""
        return self.ga_batch_size + self.num_agents

    @property
    def num_best_to_replace_from(self) -> int:
        """Agents among which the copied ones are drawn."""
        return int(self.num_agents * self.fraction_best_to_replace_from)

    @property
    def num_to_replace_from_best(self) -> int:
        """Worst agents replaced by copies of the best at each tell."""
        return int(self.num_agents * self.fraction_to_replace_from_best)

    @property
    def num_to_replace_from_samples(self) -> int:
        """Next-worst agents whose policy is replaced by an archive elite."""
        return int(self.num_agents * self.fraction_to_replace_from_samples)

    @property
    def evaluations_per_tell(self) -> int:
        """Training environment steps per tell: ``num_agents * env_batch_size *
        num_training_iterations``."""
        return self.num_agents * self.rl_env.batch_size * self.num_training_iterations

    @functools.cached_property
    def rl_env(self) -> RLEnv:
        """The batched, auto-resetting training environment of each agent."""
        if isinstance(self.env, RLEnv):
            return self.env
        task = self.env
        return wrap_env(
            task.env,
            batch_size=self.env_batch_size,
            episode_length=task.episode_length,
            feature_fn=task.feature_fn,
            reward_fn=task.reward_fn,
            state_descriptor_size=task.measure_dim,
            name=task.env_name,
            qd_task=task,
        )

    @functools.cached_property
    def rl_agent(self):
        """The :class:`~ribsax.rl.SAC` or :class:`~ribsax.rl.TD3` of every agent
        (its actor is the task's policy network)."""
        policy = self.policy
        hidden = tuple(policy.hidden_layer_sizes)
        if self.agent == "sac":
            config = SacConfig(
                batch_size=self.training_batch_size,
                episode_length=int(self._episode_length),
                tau=self.soft_tau_update,
                alpha_init=self.alpha_init,
                critic_hidden_layer_size=self.critic_hidden_layer_size,
                policy_hidden_layer_size=hidden,
                fix_alpha=self.fix_alpha,
            )
            actor = _SACActor(
                hidden_layer_sizes=hidden,
                action_size=policy.action_dim,
                activation=_activation(policy.activation),
                kernel_init=(
                    nn.initializers.lecun_uniform()
                    if policy.kernel_init is None
                    else policy.kernel_init
                ),
            )
            return SAC(config, policy.action_dim, policy=actor)
        config = TD3Config(
            episode_length=int(self._episode_length),
            batch_size=self.training_batch_size,
            policy_delay=self.policy_delay,
            soft_tau_update=self.soft_tau_update,
            critic_hidden_layer_size=self.critic_hidden_layer_size,
            policy_hidden_layer_size=hidden,
        )
        return TD3(config, policy.action_dim, policy=policy.module)

    @property
    def _episode_length(self):
        return self.env.episode_length

    @property
    def ranges(self) -> tuple:
        """The explored hyperparameters and their ranges, ``((name, low, high),
        ...)``: those of :class:`~ribsax.rl.PBTSAC` or :class:`~ribsax.rl.PBTTD3`."""
        return PBT_SAC_RANGES if self.agent == "sac" else PBT_TD3_RANGES

    @functools.cached_property
    def pbt(self) -> PBT:
        """The exploit/explore step (QDax's resampling)."""
        return PBT(
            self.num_agents,
            self.num_best_to_replace_from,
            self.num_to_replace_from_best,
            self.ranges,
            explore="resample",
        )

    @functools.cached_property
    def population(self) -> PBTPopulation:
        """The :class:`~ribsax.rl.PBTPopulation` that initialises and trains the
        agents."""
        if self.rl_env.observation_size != self.policy.obs_dim:
            raise ValueError(
                f"env's observations have length {self.rl_env.observation_size}, the "
                f"policy's {self.policy.obs_dim}: env must be the task's environment"
            )
        return PBTPopulation(
            self.rl_agent,
            self.pbt,
            self.rl_env,
            buffer_size=self.replay_buffer_size,
            mesh=self.mesh,
        )

    # ------------------------------------------------------------ protocol
    def init(self, key, archive):
        del archive
        return PBTMEState(
            population=self.population._init(key), training_steps=jnp.zeros((), jnp.int32)
        )

    def ask(self, state, archive, key):
        dtype = archive.solution.dtype
        agents = self.agent_solutions(state.population.agents).astype(dtype)
        if not self.ga_batch_size:
            return state, agents
        k_select, k_vary, k_fresh = jax.random.split(key, 3)
        parents = self.sample_parents(k_select, archive, 2 * self.ga_batch_size)
        parents = parents.reshape((2, self.ga_batch_size) + parents.shape[1:])
        offspring = iso_line_variation(k_vary, parents, self.iso_sigma, self.line_sigma)
        # An empty archive has no parents: start from freshly initialised policies.
        fresh = self.policy.init_batch(k_fresh, self.ga_batch_size, dtype)
        offspring = jnp.where(archive.n_occupied > 0, offspring.astype(dtype), fresh)
        return state, jnp.concatenate([offspring, agents])

    def tell(self, state, archive, key, feedback):
        k_exploit, k_samples, k_explore = jax.random.split(key, 3)
        fitness = jnp.where(
            feedback.valid[-self.num_agents :], feedback.objective[-self.num_agents :], jnp.nan
        )
        population = self.exploit_explore(
            state.population, archive, fitness, k_exploit, k_samples, k_explore
        )
        population, _ = self.population._train(
            population, self.num_training_iterations, self.grad_updates_per_step
        )
        return PBTMEState(
            population=population,
            training_steps=state.training_steps + self.evaluations_per_tell,
        )

    def evaluations(self, state):
        """The environment steps the agents played in training."""
        return state.training_steps

    # ------------------------------------------------------------ pieces
    def _policy_tree(self, policy_params):
        """The task network's parameters inside one agent's actor parameters."""
        if self.agent == "td3":
            return policy_params
        return {"params": {k: v for k, v in policy_params["params"].items() if k != _SCALE}}

    def agent_solutions(self, agents):
        """``[num_agents, solution_dim]``: each agent's policy, flat."""
        return jax.vmap(lambda p: self.policy.ravel(self._policy_tree(p)))(agents.policy_params)

    def exploit_explore(self, population, archive, fitness, k_exploit, k_samples, k_explore):
        """Replaces agents by better ones and by archive elites.

        Agents are ranked by ``fitness`` (decreasing; NaN last,
        :meth:`~ribsax.rl.PBT.rank`). The ``num_to_replace_from_best`` last become
        copies (training state and replay buffer) of agents drawn uniformly with
        replacement among the ``num_best_to_replace_from`` first, with resampled
        hyperparameters and a fresh PRNG key
        (:meth:`~ribsax.rl.PBT.update_states_and_buffer`); the
        ``num_to_replace_from_samples`` before them take the policy of an elite
        drawn uniformly from the archive (nothing happens to them while the
        archive is empty), with fresh Adam moments for the policy and resampled
        hyperparameters, and keep their critics and replay buffer. Environment
        states stay with their slot.

        Returns:
            The new :class:`~ribsax.rl.PopulationState`.
        """
        n = self.num_agents
        agents, buffers = self.pbt.update_states_and_buffer(
            k_exploit, fitness, population.agents, population.buffers
        )
        order = self.pbt.rank(fitness)
        copies = order[n - self.num_to_replace_from_best :]
        # A copy and its source would otherwise draw the same actions and minibatches.
        fresh_keys = jax.vmap(jax.random.fold_in)(agents.key[copies], copies + 1)
        agents = agents._replace(key=agents.key.at[copies].set(fresh_keys))
        count = self.num_to_replace_from_samples
        if count:
            end = n - self.num_to_replace_from_best
            targets = order[end - count : end]
            elites = self.sample_parents(k_samples, archive, count)

            def take_elites(agents):
                agents = self._with_policies(agents, targets, elites)
                return self.pbt.explore_members(k_explore, agents, targets)

            agents = jax.lax.cond(archive.n_occupied > 0, take_elites, lambda a: a, agents)
        return population._replace(agents=agents, buffers=buffers)

    def _with_policies(self, agents, rows, solutions):
        """``agents`` whose rows ``rows`` act with the flat policies ``solutions``
        (and start their policy's Adam moments afresh)."""
        current = jax.tree.map(lambda x: x[rows], agents.policy_params)
        dtype = jax.tree.leaves(current)[0].dtype
        new = jax.vmap(self.policy.unravel)(solutions.astype(dtype))
        if self.agent == "sac":
            new = {"params": {**current["params"], **new["params"]}}

        def put(tree, rows_tree):
            return jax.tree.map(lambda x, y: x.at[rows].set(y.astype(x.dtype)), tree, rows_tree)

        fields = {
            "policy_params": put(agents.policy_params, new),
            "policy_opt_state": put(agents.policy_opt_state, jax.vmap(adam_init)(new)),
        }
        if self.agent == "td3":
            fields["target_policy_params"] = put(agents.target_policy_params, new)
        return agents._replace(**fields)


class PBTMEEmitter(JaxEmitter):
    """ME-PBT's emitter: genetic variation of archive elites plus a population of
    RL agents (SAC or TD3) trained with population-based training.

    **Solutions and agents.** The archive holds policies: flat parameter vectors
    of the task's :class:`~ribsax.tasks.brax.MLPPolicy`, as for every other brax
    emitter. Each agent's actor *is* that network (TD3), or that network without
    its final tanh as the mean of SAC's tanh-Gaussian, with a separate dense head
    on the last hidden layer for the standard deviation (SAC; its deterministic
    action is then the network's action). An agent's critics, targets, Adam
    moments, hyperparameters, replay buffer and ``env_batch_size`` training
    environments live in the emitter's state, not in the archive.

    Each :meth:`ask` returns ``ga_batch_size + num_agents`` policies:

    * ``ga_batch_size`` Iso+LineDD offspring (``x + iso_sigma·N(0, I) +
      line_sigma·N(0, 1)·(y - x)`` of two elites drawn uniformly), freshly
      initialised policies while the archive is empty;
    * then each agent's current policy, agent by agent.

    Each :meth:`tell` reads the agents' fitness (the objective the scheduler just
    measured for their rows; a row whose evaluation was not finite ranks last),
    then (:meth:`PBTMEKernel.exploit_explore`):

    * the worst ``int(num_agents * fraction_to_replace_from_best)`` agents become
      copies, training state **and** replay buffer, of agents drawn uniformly
      with replacement among the ``int(num_agents *
      fraction_best_to_replace_from)`` best, with hyperparameters resampled
      uniformly in QDax's ranges (SAC: discount in [0.9, 1], policy, critic
      and temperature learning rates in [3e-5, 3e-3], reward scaling in
      [0.1, 10]; TD3: discount in [0.9, 1], policy and critic learning rates
      in [3e-5, 3e-3], ``noise_clip`` and ``policy_noise`` in [0, 1],
      ``expl_noise`` in [0, 0.2]);
    * the next-worst ``int(num_agents * fraction_to_replace_from_samples)``
      take the policy of an elite drawn uniformly from the archive, with fresh
      Adam moments for it and resampled hyperparameters; they keep their own
      critics and replay buffer;

    and finally every agent trains: ``num_training_iterations`` iterations of one
    step of its ``env_batch_size`` environments (exploration actions), insertion
    of those transitions into its own replay buffer, and
    ``grad_updates_per_step`` SAC/TD3 updates on minibatches of
    ``training_batch_size`` drawn from it (:class:`~ribsax.rl.PBTPopulation`:
    one ``vmap`` over the agents). The agents learn only from the transitions
    they collect; the task need not return its transitions.

    **Devices.** Without ``mesh`` the agents run on one device, ``vmap``-ped.
    With ``mesh`` (a :func:`~ribsax.rl.population_mesh`) the agents' training
    states, environment states and replay buffers are sharded along the agent
    axis over its devices (``num_agents / mesh.size`` agents each) and trained
    with ``shard_map`` (``vmap`` within each device's block); the exploit/explore
    step copies agents between devices where needed. The archive keeps its state
    on its own device; for each compiled step (the emitter's own
    :meth:`ask`/:meth:`tell`, :meth:`Scheduler.ask
    <ribsax.schedulers.Scheduler.ask>`/``tell``, the fused loop of
    :meth:`Scheduler.run <ribsax.schedulers.Scheduler.run>` and
    :func:`ribsax.run_trials`, :mod:`ribsax.functional`) the archive's arrays
    and the emitters' other state are replicated over the mesh, and the agents'
    state stays sharded between steps (a pickled emitter keeps its mesh as the
    ids of its devices and shards its agents again when unpickled). The sharded
    steps compute what the one-device steps compute, so a run gives the archive
    of the one-device run up to floating-point rounding (which RL training may
    amplify over long runs). Other emitters of the
    same scheduler share the mesh (their state is replicated over it); emitters
    whose kernels use different meshes run only through their own
    :meth:`ask`/:meth:`tell` (the schedulers' ask/tell loop falls back to them,
    the fused loop and :mod:`ribsax.functional` raise ValueError).

    **Budget.** The training environment steps, ``num_agents * env_batch_size *
    num_training_iterations`` per tell, are reported by :attr:`evaluations`, and
    the schedulers add them to the run's evaluation count: an iteration costs
    ``batch_size`` evaluations (episodes) plus that many training steps, and an
    evaluation budget counts both.

    Differences from QDax's ``PBTEmitter``: QDax's archive holds whole training
    states, so an agent replaced by an archive sample also takes that sample's
    critics (here the archive holds policies only, and the agent keeps its
    critics); QDax resets every agent's Adam moments before each training phase
    (here they carry over, except the policy's after an archive replacement);
    QDax replaces by fitness thresholds (ties may replace more agents), here by
    rank. QDax spreads the agents over devices with ``pmap`` (with exchanges of
    the best agents); here the population is sharded (``mesh``) and the
    exploit/explore step ranks all agents together, as on one device.

    Args:
        archive: The archive (solutions: the policy's flat parameters).
        policy: The task's :class:`~ribsax.tasks.brax.MLPPolicy` (``task.policy``).
            With ``agent="sac"`` its ``final_activation`` must be tanh.
        env: The :class:`~ribsax.tasks.brax.BraxTask` being evaluated: each agent
            trains in ``env_batch_size`` auto-resetting copies of its environment
            (same reward, same episode length); or a :class:`~ribsax.rl.RLEnv`
            (``ribsax.rl.make_env``) used as is (``env_batch_size`` is then its
            ``batch_size``).
        agent: ``"sac"`` or ``"td3"``.
        num_agents: Number of RL agents (at least 2).
        ga_batch_size: Iso+LineDD offspring per ask (0 for none).
        iso_sigma: Isotropic noise scale of Iso+LineDD.
        line_sigma: Line noise scale of Iso+LineDD.
        env_batch_size: Training environments per agent.
        num_training_iterations: Environment steps (of all ``env_batch_size``
            environments) each agent plays per tell.
        grad_updates_per_step: Gradient updates after each of those steps.
        replay_buffer_size: Transitions each agent's buffer holds.
        training_batch_size: Transitions per gradient update.
        critic_hidden_layer_size: Hidden widths of each critic.
        fraction_best_to_replace_from: Share of the agents the copies come from.
        fraction_to_replace_from_best: Share of the agents replaced by copies.
        fraction_to_replace_from_samples: Share of the agents given an archive
            elite.
        soft_tau_update: Polyak rate of the target networks.
        alpha_init: SAC's initial temperature.
        fix_alpha: Keep SAC's temperature at ``alpha_init``.
        policy_delay: TD3's critic updates per actor (and target) update.
        mesh: A :func:`ribsax.rl.population_mesh` to shard the agents, their
            environments and replay buffers over devices; ``num_agents`` must
            be a multiple of its size. None (the default) keeps them on one
            device.
        seed: Seed of the emitter's PRNG key.

    Raises:
        TypeError: ``policy`` is not an MLP policy, ``env`` neither a brax task
            nor an RL environment, or ``mesh`` not a population mesh.
        ValueError: An unknown ``agent``, a size that is not a positive int, a
            fraction outside ``[0, 1]``, fractions that give no agent to copy or
            to replace or that make the best and the replaced agents overlap, a
            negative noise scale, a policy whose output is not tanh with SAC, an
            invalid SAC/TD3 setting, or ``num_agents`` not a multiple of the
            mesh's size.
    """

    def __init__(
        self,
        archive,
        *,
        policy,
        env,
        agent="sac",
        num_agents=10,
        ga_batch_size=30,
        iso_sigma=0.005,
        line_sigma=0.05,
        env_batch_size=250,
        num_training_iterations=40,
        grad_updates_per_step=1,
        replay_buffer_size=100_000,
        training_batch_size=256,
        critic_hidden_layer_size=(256, 256),
        fraction_best_to_replace_from=0.1,
        fraction_to_replace_from_best=0.2,
        fraction_to_replace_from_samples=0.4,
        soft_tau_update=0.005,
        alpha_init=1.0,
        fix_alpha=False,
        policy_delay=2,
        mesh=None,
        seed=None,
    ):
        kernel = PBTMEKernel(
            policy=policy,
            env=env,
            agent=agent,
            num_agents=num_agents,
            ga_batch_size=ga_batch_size,
            iso_sigma=iso_sigma,
            line_sigma=line_sigma,
            env_batch_size=env_batch_size,
            num_training_iterations=num_training_iterations,
            grad_updates_per_step=grad_updates_per_step,
            replay_buffer_size=replay_buffer_size,
            training_batch_size=training_batch_size,
            critic_hidden_layer_size=critic_hidden_layer_size,
            fraction_best_to_replace_from=fraction_best_to_replace_from,
            fraction_to_replace_from_best=fraction_to_replace_from_best,
            fraction_to_replace_from_samples=fraction_to_replace_from_samples,
            soft_tau_update=soft_tau_update,
            alpha_init=alpha_init,
            fix_alpha=fix_alpha,
            policy_delay=policy_delay,
            mesh=mesh,
        )
        if tuple(np.atleast_1d(archive.solution_dim)) != (kernel.policy.num_params,):
            raise ValueError(
                f"The archive's solution_dim ({archive.solution_dim}) must be the "
                f"policy's number of parameters ({kernel.policy.num_params})"
            )
        super().__init__(archive, kernel, seed=seed)

    def __setstate__(self, state):
        super().__setstate__(state)
        mesh = self.kernel.mesh
        if mesh is not None:
            # Unpickled arrays are on one device: the agents go back on the mesh.
            current = self.state
            inner = current.inner
            population = shard_population(inner.population, mesh)
            self.state = current._replace(inner=inner._replace(population=population))

    @property
    def agents(self):
        """``[num_agents, solution_dim]`` numpy array: the agents' current
        policies (the last rows of the next ask)."""
        return np.asarray(self.kernel.agent_solutions(self.kernel_state.population.agents))

    @property
    def hyperparameters(self) -> dict:
        """The agents' hyperparameters: name -> ``(num_agents,)`` numpy array."""
        hyper = self.kernel_state.population.agents.hyperparams
        return {name: np.asarray(value) for name, value in hyper._asdict().items()}

    @property
    def buffer_sizes(self):
        """``(num_agents,)`` numpy array: transitions in each agent's buffer."""
        buffer = self.kernel.population.buffer
        return np.asarray(jax.vmap(buffer.size)(self.kernel_state.population.buffers))
