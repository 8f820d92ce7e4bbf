"""ME-ES: MAP-Elites with evolution strategies (Colas et al. 2020).

The emitter is written against the public emitter protocol: :class:`MEESKernel` is
an :class:`~ribsax.emitters.EmitterKernel` (a frozen dataclass of static settings
and pure ``init``/``ask``/``tell``), and :class:`MEESEmitter` is the
:class:`~ribsax.emitters.JaxEmitter` around it that validates its arguments and
sets the starting solution.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._normal import mirrored
from ribsax._running_stats import RunningMeanStd
from ribsax.emitters._emitter_kernel import EmitterKernel
from ribsax.emitters._jax_emitter import JaxEmitter

__all__ = ["MEESKernel", "MEESEmitter"]

# Adam's constants (those of optax.adam and of the ME-ES paper's optimizer).
_BETA1 = 0.9
_BETA2 = 0.999
_EPS = 1e-8


def _check_int(name, value, low=1):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")


def _check_bool(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


def _check_float(name, value, *, positive):
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (positive and value == 0):
        raise ValueError(
            f"{name} must be {'positive' if positive else 'non-negative'} and finite, got {value}"
        )


def _first_layer(policy, flat):
    """``(tree, kernel, bias)``: the unravelled parameters of ``flat`` and the
    first dense layer's ``[obs_dim, width]`` kernel and ``[width]`` bias."""
    tree = policy.unravel(flat)
    layer = tree["params"]["dense_0"]
    return tree, layer["kernel"], layer["bias"]


def _with_first_layer(policy, tree, kernel, bias):
    """The flat parameters of ``tree`` with the first layer replaced."""
    params = dict(tree["params"])
    params["dense_0"] = {**params["dense_0"], "kernel": kernel, "bias": bias}
    return policy.ravel({**tree, "params": params})


def _centered_ranks(values):
    """``rank / (n - 1) - 0.5`` of ``values`` (ties in order of appearance)."""
    n = values.shape[0]
    ranks = jnp.argsort(jnp.argsort(values, stable=True), stable=True)
    return ranks.astype(values.dtype) / (n - 1) - 0.5


@dataclasses.dataclass(frozen=True)
class MEESKernel(EmitterKernel):
    """The ME-ES emitter as an :class:`~ribsax.emitters.EmitterKernel`.

    Each ask returns one offspring. Each tell (after the offspring was evaluated
    and offered to the archive):

    1. inserts the offspring's measures into a ring-buffer *novelty archive* (of
       ``novelty_archive_size`` slots), and, if the offspring entered the archive,
       its solution and objective into a ring buffer of the last
       ``last_updated_size`` added offspring;
    2. every ``num_optimizer_steps`` tells, picks a new parent and resets the
       optimizer; in between, the parent is the last offspring. The steps
       alternate between ``num_optimizer_steps`` steps of *explore* (novelty
       gradient) and ``num_optimizer_steps`` steps of *exploit* (objective
       gradient), explore first; with ``use_explore`` or ``use_exploit`` False
       every step is of the other kind. An explore parent is drawn uniformly
       among the ``explore_num_cell_sample`` archive elites of highest novelty; an
       exploit parent, with probability 1/2 each, among the
       ``exploit_num_cell_sample`` best elites of the archive or the
       ``exploit_num_cell_sample`` best of the last added offspring (the archive
       when none was added yet). While the archive is empty the last offspring
       stays the parent;
    3. estimates the gradient of the step's score at the parent with OpenAI-ES:
       ``sample_number`` samples ``parent + sample_sigma * eps_i`` (mirrored
       pairs ``±eps_i`` when ``sample_mirror``) are evaluated with ``evaluate``
       (they never enter the archive), their scores (objective, or novelty of
       their measures) are replaced by centred ranks ``rank / (n - 1) - 0.5``
       when ``sample_rank_norm``, and the gradient estimate is
       ``g = sum_i eps_i (r_i+ - r_i-) / (sample_number * sample_sigma)``
       (``sum_i eps_i r_i / (sample_number * sample_sigma)`` unmirrored);
    4. takes one Adam step (SGD if ``adam_optimizer`` is False) of
       ``learning_rate`` on the loss gradient ``-g + l2_coefficient * parent``;
       the result is the next offspring.

    Novelty is the mean Euclidean distance to the ``novelty_nearest_neighbors``
    nearest descriptors of the novelty archive (to all of them while it holds
    fewer). Samples whose objective or measures are not finite get the lowest
    score. The ``sample_number`` evaluations of each tell are reported by
    :meth:`evaluations`.

    **Observation normalisation** (``normalize_observations``, as in dqd-rl's
    ME-ES). Solutions are then flat parameters of ``policy`` (an
    :class:`~ribsax.tasks.brax.MLPPolicy`) and ``evaluate`` must return the
    episodes' transitions (``extras["transitions"]`` with ``obs`` and ``valid``,
    as brax tasks created with ``return_transitions=True`` do). The kernel keeps
    running statistics (count, mean, sum of squared deviations) of every valid,
    finite observation of the ES samples' episodes, updated after each tell's
    samples are evaluated; the normalisation uses their mean ``mu`` and
    population standard deviation ``sigma`` floored at
    ``observation_std_min`` (``mu = 0``, ``sigma = 1`` before any observation).
    The ES works on parameters ``theta`` of a policy fed normalised observations
    ``(obs - mu) / sigma``: the parent, the samples, the gradient and Adam's
    moments live in that space. Every policy that leaves the kernel (the asked
    offspring, the samples handed to ``evaluate``) is *folded*: the
    normalisation goes into the first layer, ``W' = W / sigma`` (row ``i``
    divided by ``sigma_i``) and ``b' = b - (mu / sigma) W``, so the plain task
    evaluates it on raw observations and the archive stores ordinary policies
    (:meth:`fold`). A new parent drawn from the archive (or from the last added
    offspring) is *unfolded* with the current statistics (:meth:`unfold`), the
    inverse map. The samples of a tell are folded with the statistics from
    before the tell; its new offspring with the updated ones.

    Args:
        evaluate: The task's batched ``evaluate(solutions, key) -> (objective,
            measures[, extras])`` (e.g. a :class:`ribsax.tasks.Task`'s
            ``evaluate``), JAX-traceable; it is part of the static configuration
            (compared by identity).
        sample_number: Number of ES samples per step (even when mirrored).
        sample_sigma: Standard deviation of the sample perturbations.
        sample_mirror: Mirrored (antithetic) sampling.
        sample_rank_norm: Use centred ranks of the scores instead of the scores.
        num_optimizer_steps: Steps from one parent (and one mode) before the next.
        adam_optimizer: Adam (True) or plain gradient descent (False).
        learning_rate: Step size of the optimizer.
        l2_coefficient: Weight of the L2 penalty ``l2_coefficient * |x|^2 / 2``.
        novelty_nearest_neighbors: ``k`` of the novelty's k nearest neighbours.
        last_updated_size: Length of the buffer of last added offspring.
        exploit_num_cell_sample: How many of the best elites (and of the best
            last added offspring) an exploit parent is drawn from.
        explore_num_cell_sample: How many of the most novel elites an explore
            parent is drawn from.
        use_explore: Take explore (novelty) steps.
        use_exploit: Take exploit (objective) steps.
        novelty_archive_size: Number of offspring descriptors the novelty archive
            keeps (the most recent ones).
        normalize_observations: Optimise policies on normalised observations
            (see above).
        policy: The :class:`~ribsax.tasks.brax.MLPPolicy` of the solutions;
            required with ``normalize_observations``, ignored (None) otherwise.
        observation_std_min: Floor of the observations' standard deviation
            (dqd-rl's ME-ES floors the variance at 0.01).

    Raises:
        TypeError: An argument has the wrong type.
        ValueError: An argument is out of range (the message names it), or
            ``normalize_observations`` is set without a ``policy``.
    """

    evaluate: Callable[..., Any]
    sample_number: int = 1000
    sample_sigma: float = 0.02
    sample_mirror: bool = True
    sample_rank_norm: bool = True
    num_optimizer_steps: int = 10
    adam_optimizer: bool = True
    learning_rate: float = 0.01
    l2_coefficient: float = 0.02
    novelty_nearest_neighbors: int = 10
    last_updated_size: int = 5
    exploit_num_cell_sample: int = 2
    explore_num_cell_sample: int = 5
    use_explore: bool = True
    use_exploit: bool = True
    novelty_archive_size: int = 1000
    normalize_observations: bool = False
    policy: Any = None
    observation_std_min: float = 0.1

    def __post_init__(self):
        if not callable(self.evaluate):
            raise TypeError(
                "evaluate must be a callable evaluate(solutions, key) -> "
                "(objective, measures[, extras]) (or a ribsax Task), "
                f"got {type(self.evaluate).__name__}"
            )
        _check_int("sample_number", self.sample_number, low=2)
        _check_bool("sample_mirror", self.sample_mirror)
        if self.sample_mirror and self.sample_number % 2:
            raise ValueError(
                f"sample_number must be even with sample_mirror=True, got {self.sample_number}"
            )
        _check_float("sample_sigma", self.sample_sigma, positive=True)
        _check_bool("sample_rank_norm", self.sample_rank_norm)
        _check_int("num_optimizer_steps", self.num_optimizer_steps)
        _check_bool("adam_optimizer", self.adam_optimizer)
        _check_float("learning_rate", self.learning_rate, positive=True)
        _check_float("l2_coefficient", self.l2_coefficient, positive=False)
        _check_int("novelty_nearest_neighbors", self.novelty_nearest_neighbors)
        _check_int("last_updated_size", self.last_updated_size)
        _check_int("exploit_num_cell_sample", self.exploit_num_cell_sample)
        _check_int("explore_num_cell_sample", self.explore_num_cell_sample)
        _check_bool("use_explore", self.use_explore)
        _check_bool("use_exploit", self.use_exploit)
        if not (self.use_explore or self.use_exploit):
            raise ValueError("use_explore and use_exploit cannot both be False")
        _check_int("novelty_archive_size", self.novelty_archive_size)
        if self.novelty_nearest_neighbors > self.novelty_archive_size:
            raise ValueError(
                f"novelty_nearest_neighbors ({self.novelty_nearest_neighbors}) must "
                f"not exceed novelty_archive_size ({self.novelty_archive_size})"
            )
        _check_bool("normalize_observations", self.normalize_observations)
        _check_float("observation_std_min", self.observation_std_min, positive=True)
        if self.normalize_observations:
            self._check_policy()

    def _check_policy(self):
        policy = self.policy
        if policy is None:
            raise ValueError(
                "normalize_observations=True needs policy: the MLPPolicy whose flat "
                "parameters the solutions are (e.g. the policy of a "
                "ribsax.tasks.brax task), got None"
            )
        if not all(hasattr(policy, name) for name in ("obs_dim", "num_params", "unravel", "ravel")):
            raise TypeError(
                "policy must be a ribsax.tasks.brax.MLPPolicy (with "
                "obs_dim, num_params, unravel and ravel), got "
                f"{type(policy).__name__}"
            )
        try:
            _, kernel, bias = jax.eval_shape(
                partial(_first_layer, policy),
                jax.ShapeDtypeStruct((policy.num_params,), jnp.float32),
            )
        except (KeyError, TypeError, IndexError) as error:
            raise TypeError(
                "policy must be a ribsax.tasks.brax.MLPPolicy: its "
                "unravelled parameters have no first dense layer "
                f"params['dense_0'] ({error!r})"
            ) from None
        if kernel.shape != (policy.obs_dim, bias.shape[0]):
            raise TypeError(
                "policy must be a ribsax.tasks.brax.MLPPolicy: its first layer's "
                f"kernel has shape {kernel.shape}, expected ({policy.obs_dim}, "
                f"{bias.shape[0]}) (obs_dim, width)"
            )

    # ------------------------------------------------------------ protocol
    def init(self, key, archive):
        """The initial state.

        The first offspring is an elite drawn uniformly from ``archive``, or zeros
        while it is empty (:class:`MEESEmitter` sets its ``x0`` instead).

        Returns:
            A dict: ``offspring`` (what the next ask returns), ``adam_mu``,
            ``adam_nu`` and ``adam_count`` (the optimizer's moments and step
            count since the last new parent), ``step`` (tells so far),
            ``explore`` (whether the last step was an explore step),
            ``novelty_archive`` and ``novelty_count`` (the ring buffer of
            offspring measures and the number inserted so far),
            ``last_solution``, ``last_objective`` (``-inf`` in empty slots) and
            ``last_position`` (the ring buffer of last added offspring), and
            ``evaluations`` (ES samples evaluated so far). With
            ``normalize_observations`` also ``theta`` (the offspring in
            normalised-observation space: what the ES steps from) and
            ``observation_stats`` (a :class:`~ribsax.rl.RunningMeanStdState`
            of the observations seen, empty at first: the first offspring is
            both ``theta`` and its folded form).

        Raises:
            ValueError: The archive view has no objectives or measures.
        """
        if archive.objective is None or archive.measures is None:
            raise ValueError(
                "ME-ES needs an archive whose view carries the elites' objectives and measures"
            )
        solution = archive.solution
        dtype = solution.dtype
        offspring = self.sample_parents(key, archive, 1)[0]
        measure_dim = archive.measures.shape[1]
        normalization = {}
        if self.normalize_observations:
            normalization = {
                "theta": jnp.array(offspring, copy=True),
                "observation_stats": RunningMeanStd.init(self.policy.obs_dim, dtype),
            }
        return {
            "offspring": offspring,
            # Distinct arrays: the state's leaves are donated to the compiled
            # steps, and one buffer cannot be donated twice.
            "adam_mu": jnp.zeros(offspring.shape, dtype),
            "adam_nu": jnp.zeros(offspring.shape, dtype),
            "adam_count": jnp.zeros((), jnp.int32),
            "step": jnp.zeros((), jnp.int32),
            "explore": jnp.zeros((), bool),
            "novelty_archive": jnp.zeros(
                (self.novelty_archive_size, measure_dim), archive.measures.dtype
            ),
            "novelty_count": jnp.zeros((), jnp.int32),
            "last_solution": jnp.zeros((self.last_updated_size, *offspring.shape), dtype),
            "last_objective": jnp.full(
                (self.last_updated_size,), -jnp.inf, archive.objective.dtype
            ),
            "last_position": jnp.zeros((), jnp.int32),
            "evaluations": jnp.zeros((), jnp.int32),
            **normalization,
        }

    def ask(self, state, archive, key):
        """Returns the current offspring as a batch of one."""
        del archive, key
        return state, state["offspring"][None]

    def tell(self, state, archive, key, feedback):
        """Records the offspring, picks the parent and takes one ES step."""
        k_parent, k_noise, k_eval = jax.random.split(key, 3)
        state = self._record_offspring(state, feedback)
        step = state["step"]
        explore = self.is_explore_step(step)
        new_parent = step % self.num_optimizer_steps == 0
        parent = jax.lax.cond(
            new_parent & (archive.n_occupied > 0),
            lambda: self._unfold_state(
                self.select_parent(state, archive, k_parent, explore), state
            ),
            lambda: state["theta" if self.normalize_observations else "offspring"],
        )
        keep = jnp.logical_not(new_parent)
        mu = jnp.where(keep, state["adam_mu"], 0)
        nu = jnp.where(keep, state["adam_nu"], 0)
        count = jnp.where(keep, state["adam_count"], 0)

        samples, noise = self.es_samples(parent, k_noise)
        if self.normalize_observations:
            mean, std = self.observation_mean_std(state)
            out = self.evaluate(jax.vmap(lambda s: self.fold(s, mean, std))(samples), k_eval)
            stats = self.update_observation_stats(state["observation_stats"], out)
            state = {**state, "observation_stats": stats}
        else:
            out = self.evaluate(samples, k_eval)
        objective = jnp.asarray(out[0])
        measures = jnp.asarray(out[1]).reshape(samples.shape[0], -1)
        scores = self.sample_scores(objective, measures, explore, state)
        gradient = self.es_gradient(noise, scores)

        loss_gradient = -gradient + self.l2_coefficient * parent
        if self.adam_optimizer:
            count = count + 1
            mu = _BETA1 * mu + (1 - _BETA1) * loss_gradient
            nu = _BETA2 * nu + (1 - _BETA2) * jnp.square(loss_gradient)
            t = count.astype(parent.dtype)
            mu_hat = mu / (1 - _BETA1**t)
            nu_hat = nu / (1 - _BETA2**t)
            update = mu_hat / (jnp.sqrt(nu_hat) + _EPS)
        else:
            update = loss_gradient
        offspring = (parent - self.learning_rate * update).astype(parent.dtype)
        if self.normalize_observations:
            mean, std = self.observation_mean_std(state)
            state = {**state, "theta": offspring}
            offspring = self.fold(offspring, mean, std)
        return {
            **state,
            "offspring": offspring,
            "adam_mu": mu.astype(parent.dtype),
            "adam_nu": nu.astype(parent.dtype),
            "adam_count": count,
            "step": step + 1,
            "explore": explore,
            "evaluations": state["evaluations"] + self.sample_number,
        }

    def evaluations(self, state):
        """The ES samples evaluated so far (``sample_number`` per tell)."""
        return state["evaluations"]

    @property
    def evaluations_per_tell(self) -> int:
        """``sample_number``: the ES samples each tell evaluates."""
        return self.sample_number

    # ------------------------------------------------------------ pieces
    def is_explore_step(self, step):
        """Whether ES step ``step`` (0-based, one per tell) follows the novelty
        gradient (bool array)."""
        step = jnp.asarray(step)
        if not self.use_exploit:
            return jnp.ones(step.shape, bool)
        if not self.use_explore:
            return jnp.zeros(step.shape, bool)
        return (step // self.num_optimizer_steps) % 2 == 0

    def novelty(self, descriptors, novelty_archive, novelty_count):
        """Mean distance of each descriptor to its nearest neighbours.

        Args:
            descriptors: ``[n, measure_dim]``.
            novelty_archive: ``[size, measure_dim]`` ring buffer.
            novelty_count: Descriptors inserted so far (the first
                ``min(novelty_count, size)`` slots are filled).

        Returns:
            ``[n]`` mean distance to the ``novelty_nearest_neighbors`` nearest
            filled slots (to all filled slots while there are fewer; 0 while
            there are none).
        """
        size = novelty_archive.shape[0]
        filled = jnp.arange(size) < jnp.minimum(novelty_count, size)
        distances = jnp.sqrt(
            jnp.sum(jnp.square(descriptors[:, None, :] - novelty_archive[None]), axis=-1)
        )
        distances = jnp.where(filled[None], distances, jnp.inf)
        k = min(self.novelty_nearest_neighbors, size)
        nearest = -jax.lax.top_k(-distances, k)[0]
        used = jnp.arange(k) < jnp.minimum(novelty_count, size)
        total = jnp.sum(jnp.where(used[None], nearest, 0), axis=1)
        return total / jnp.maximum(jnp.sum(used), 1).astype(total.dtype)

    def select_parent(self, state, archive, key, explore):
        """A new parent drawn from the archive (and the last added offspring).

        Args:
            state: The kernel's state (its novelty archive and buffer of last
                added offspring are read).
            archive: The archive's view; it must not be empty.
            key: PRNG key.
            explore: Bool scalar: draw an explore parent (among the most novel
                elites) rather than an exploit one.

        Returns:
            The parent solution.
        """
        k_choice, k_rank, k_last = jax.random.split(key, 3)
        cells = archive.order.shape[0]
        occupied = jnp.arange(cells) < archive.n_occupied

        def top_of(values, count, k, key):
            # Uniformly one of the k highest values among the first `count`
            # entries (positions of `values` beyond `count` are ignored).
            k = min(k, values.shape[0])
            values = jnp.where(jnp.arange(values.shape[0]) < count, values, -jnp.inf)
            top = jax.lax.top_k(values, k)[1]
            return top[jax.random.randint(key, (), 0, jnp.clip(count, 1, k))]

        def from_explore():
            measures = archive.measures[archive.order]
            novelty = self.novelty(measures, state["novelty_archive"], state["novelty_count"])
            novelty = jnp.where(occupied, novelty, -jnp.inf)
            position = top_of(novelty, archive.n_occupied, self.explore_num_cell_sample, k_rank)
            return archive.solution[archive.order[position]]

        def from_exploit():
            objective = archive.objective[archive.order]
            position = top_of(objective, archive.n_occupied, self.exploit_num_cell_sample, k_rank)
            best_elite = archive.solution[archive.order[position]]
            last = state["last_objective"]
            n_last = jnp.sum(last > -jnp.inf)
            # The filled slots of the buffer are not a prefix once it wrapped;
            # rank all slots (empty ones hold -inf) and draw among the filled.
            k = min(self.exploit_num_cell_sample, last.shape[0])
            top = jax.lax.top_k(last, k)[1]
            index = top[jax.random.randint(k_last, (), 0, jnp.clip(n_last, 1, k))]
            best_last = state["last_solution"][index]
            use_last = (jax.random.uniform(k_choice) >= 0.5) & (n_last > 0)
            return jnp.where(use_last, best_last, best_elite)

        return jax.lax.cond(explore, from_explore, from_exploit)

    def observation_mean_std(self, state):
        """``(mu, sigma)`` of the normalisation (``normalize_observations``):
        the mean and the population standard deviation, floored at
        ``observation_std_min``, of the observations seen so far (0 and 1 before
        any)."""
        return RunningMeanStd.mean_std(state["observation_stats"], self.observation_std_min)

    def fold(self, theta, mean, std):
        """Folds the normalisation into a policy's first layer.

        Args:
            theta: Flat parameters of ``policy`` fed normalised observations
                ``(obs - mean) / std``.
            mean: ``[obs_dim]`` observation mean.
            std: ``[obs_dim]`` observation standard deviation (positive).

        Returns:
            Flat parameters of the same policy fed raw observations: the first
            layer's kernel ``W / std`` (per input row) and bias
            ``b - (mean / std) W``; the other layers unchanged.
        """
        tree, kernel, bias = _first_layer(self.policy, theta)
        kernel = kernel / std[:, None].astype(kernel.dtype)
        bias = bias - mean.astype(kernel.dtype) @ kernel
        return _with_first_layer(self.policy, tree, kernel, bias)

    def unfold(self, solution, mean, std):
        """The inverse of :meth:`fold`: parameters of a policy on raw
        observations to those of the same policy on normalised ones (first
        layer ``W' std`` and ``b' + mean W'``)."""
        tree, kernel, bias = _first_layer(self.policy, solution)
        bias = bias + mean.astype(kernel.dtype) @ kernel
        kernel = kernel * std[:, None].astype(kernel.dtype)
        return _with_first_layer(self.policy, tree, kernel, bias)

    def _unfold_state(self, solution, state):
        if not self.normalize_observations:
            return solution
        return self.unfold(solution, *self.observation_mean_std(state))

    def update_observation_stats(self, stats, out):
        """``stats`` updated with the valid, finite observations of the episodes
        in ``out`` (what ``evaluate`` returned for the ES samples).

        Raises:
            ValueError: ``out`` carries no ``extras["transitions"]`` with ``obs``
                and ``valid``, or its observations are not ``obs_dim`` long.
        """
        extras = out[2] if isinstance(out, (tuple, list)) and len(out) > 2 else None
        transitions = extras.get("transitions") if isinstance(extras, dict) else None
        if not (hasattr(transitions, "obs") and hasattr(transitions, "valid")):
            raise ValueError(
                "normalize_observations=True needs the observations of the ES "
                "samples' episodes: evaluate must return extras['transitions'] "
                "with obs and valid (create the brax task with "
                "return_transitions=True)"
            )
        obs = jnp.asarray(transitions.obs)
        if obs.shape[-1] != self.policy.obs_dim:
            raise ValueError(
                f"evaluate returns observations of length {obs.shape[-1]}; the "
                f"policy expects obs_dim={self.policy.obs_dim}"
            )
        obs = obs.reshape(-1, obs.shape[-1]).astype(stats.mean.dtype)
        valid = jnp.asarray(transitions.valid).reshape(-1) > 0
        valid &= jnp.all(jnp.isfinite(obs), axis=1)
        obs = jnp.where(valid[:, None], obs, 0)
        return RunningMeanStd.update(stats, obs, valid)

    def es_samples(self, parent, key):
        """The ES samples around ``parent``.

        Returns:
            ``(samples, noise)``: ``samples`` ``[sample_number, *parent.shape]``
            are ``parent + sample_sigma * eps``; ``noise`` holds the ``eps``
            (``[sample_number // 2, ...]`` when mirrored: the samples are then
            ``parent + sample_sigma * noise`` followed by ``parent -
            sample_sigma * noise``).
        """
        half = self.sample_number // 2 if self.sample_mirror else self.sample_number
        noise = jax.random.normal(key, (half, *parent.shape), parent.dtype)
        full = mirrored(noise) if self.sample_mirror else noise
        return parent[None] + self.sample_sigma * full, noise

    def sample_scores(self, objective, measures, explore, state):
        """Scores of the ES samples: their novelty (explore) or objective, the
        lowest possible for samples whose evaluation is not finite."""
        finite = jnp.isfinite(objective) & jnp.all(jnp.isfinite(measures), axis=1)
        if self.use_explore:
            scores = jax.lax.cond(
                explore,
                lambda: self.novelty(
                    measures, state["novelty_archive"], state["novelty_count"]
                ).astype(objective.dtype),
                lambda: objective,
            )
        else:
            scores = objective
        return jnp.where(finite, scores, -jnp.inf)

    def es_gradient(self, noise, scores):
        """OpenAI-ES estimate of the scores' gradient (ascent direction).

        Args:
            noise: The ``noise`` of :meth:`es_samples`.
            scores: ``[sample_number]`` scores of the samples, in their order.

        Returns:
            The gradient estimate, shaped like one solution.
        """
        scores = jnp.asarray(scores)
        if self.sample_rank_norm:
            weights = _centered_ranks(scores)
        else:
            weights = scores
        if self.sample_mirror:
            half = noise.shape[0]
            weights = weights[:half] - weights[half:]
        weights = weights.astype(noise.dtype)
        return jnp.tensordot(weights, noise, axes=1) / (self.sample_number * self.sample_sigma)

    def _record_offspring(self, state, feedback):
        """Adds the told offspring to the novelty archive (when its evaluation is
        valid) and to the buffer of last added offspring (when it entered the
        archive)."""
        valid = feedback.valid[0]
        added = valid & (feedback.status[0] > 0)
        size = state["novelty_archive"].shape[0]
        slot = state["novelty_count"] % size
        novelty_archive = state["novelty_archive"]
        novelty_archive = novelty_archive.at[slot].set(
            jnp.where(
                valid, feedback.measures[0].astype(novelty_archive.dtype), novelty_archive[slot]
            )
        )
        position = state["last_position"]
        last_solution = state["last_solution"]
        last_objective = state["last_objective"]
        last_solution = last_solution.at[position].set(
            jnp.where(
                added, feedback.solution[0].astype(last_solution.dtype), last_solution[position]
            )
        )
        last_objective = last_objective.at[position].set(
            jnp.where(
                added, feedback.objective[0].astype(last_objective.dtype), last_objective[position]
            )
        )
        return {
            **state,
            "novelty_archive": novelty_archive,
            "novelty_count": state["novelty_count"] + valid.astype(jnp.int32),
            "last_solution": last_solution,
            "last_objective": last_objective,
            "last_position": (position + added.astype(jnp.int32)) % self.last_updated_size,
        }


class MEESEmitter(JaxEmitter):
    """ME-ES (MAP-Elites with evolution strategies, Colas et al. 2020).

    A :class:`~ribsax.emitters.JaxEmitter` running a :class:`MEESKernel` (see it
    for the algorithm): one offspring per ask, obtained by OpenAI-ES steps on the
    objective (exploit) or on the novelty of the measures (explore) from parents
    drawn from the archive every ``num_optimizer_steps`` iterations. The
    ``sample_number`` ES samples of each iteration are evaluated with
    ``evaluate`` inside the emitter's tell, never enter the archive, and are
    counted in the run's evaluations (:attr:`evaluations`), so an iteration
    costs ``sample_number + 1`` evaluations. Defaults are those of QDax's
    ``MEESConfig``.

    With ``normalize_observations`` (off by default, as in QDax; dqd-rl's ME-ES
    turns it on) the ES optimises policies fed observations normalised by
    running statistics of the observations its samples met, and folds the
    normalisation into the first layer of every policy it emits, so the archive
    holds ordinary policies that the task evaluates on raw observations (see
    :class:`MEESKernel`). It needs the task's ``policy`` and an ``evaluate``
    that returns the episodes' transitions: create the brax task with
    ``return_transitions=True``. The statistics are part of the emitter's state
    (checkpoints resume them).

    Args:
        archive: The archive (its device view must carry objectives and
            measures, as the built-in archives' do).
        evaluate: The task's ``evaluate(solutions, key) -> (objective,
            measures[, extras])``, JAX-traceable, or a :class:`ribsax.tasks.Task`
            (its ``evaluate`` is used). Pass the same function as the scheduler
            evaluates with.
        sample_number: ES samples per iteration (even when mirrored).
        sample_sigma: Standard deviation of the sample perturbations.
        sample_mirror: Mirrored (antithetic) sampling.
        sample_rank_norm: Centred ranks of the scores instead of the scores.
        num_optimizer_steps: Iterations from one parent (and one mode) before a
            new parent is drawn and the optimizer reset.
        adam_optimizer: Adam (True) or plain gradient descent (False).
        learning_rate: Step size of the optimizer.
        l2_coefficient: Weight of the L2 penalty on the solution.
        novelty_nearest_neighbors: ``k`` of the novelty's k nearest neighbours.
        last_updated_size: Length of the buffer of last added offspring.
        exploit_num_cell_sample: Exploit parents are drawn among this many best
            elites (or best last added offspring).
        explore_num_cell_sample: Explore parents are drawn among this many most
            novel elites.
        use_explore: Take explore (novelty) steps.
        use_exploit: Take exploit (objective) steps.
        novelty_archive_size: Offspring descriptors kept for the novelty (the
            most recent; QDax sizes it to the number of iterations).
        normalize_observations: Optimise on normalised observations.
        policy: The :class:`~ribsax.tasks.brax.MLPPolicy` whose flat parameters
            the solutions are (e.g. ``task.policy``); required with
            ``normalize_observations``, unused otherwise.
        observation_std_min: Floor of the observations' standard deviation in
            the normalisation.
        x0: The first offspring, ``solution_dim``-shaped; required while the
            archive is empty. None starts from an elite drawn from the archive.
        seed: Seed of the emitter's PRNG key.

    Raises:
        TypeError: An argument has the wrong type.
        ValueError: An argument is out of range, ``x0`` has the wrong shape or is
            not finite, or ``x0`` is None while the archive is empty; with
            ``normalize_observations``: ``policy`` is None or does not match
            the archive's ``solution_dim``, or ``evaluate`` is a task created
            without ``return_transitions`` (an ``evaluate`` function that
            returns no transitions raises at the first tell).
    """

    def __init__(
        self,
        archive,
        *,
        evaluate,
        sample_number=1000,
        sample_sigma=0.02,
        sample_mirror=True,
        sample_rank_norm=True,
        num_optimizer_steps=10,
        adam_optimizer=True,
        learning_rate=0.01,
        l2_coefficient=0.02,
        novelty_nearest_neighbors=10,
        last_updated_size=5,
        exploit_num_cell_sample=2,
        explore_num_cell_sample=5,
        use_explore=True,
        use_exploit=True,
        novelty_archive_size=1000,
        normalize_observations=False,
        policy=None,
        observation_std_min=0.1,
        x0=None,
        seed=None,
    ):
        _check_bool("normalize_observations", normalize_observations)
        normalize_observations = bool(normalize_observations)
        if normalize_observations and getattr(evaluate, "return_transitions", None) is False:
            raise ValueError(
                "normalize_observations=True needs the observations of the ES "
                "samples' episodes, but evaluate is a task created without them: "
                "create it with return_transitions=True"
            )
        if not callable(evaluate) and callable(getattr(evaluate, "evaluate", None)):
            evaluate = evaluate.evaluate
        kernel = MEESKernel(
            evaluate=evaluate,
            sample_number=sample_number,
            sample_sigma=sample_sigma,
            sample_mirror=sample_mirror,
            sample_rank_norm=sample_rank_norm,
            num_optimizer_steps=num_optimizer_steps,
            adam_optimizer=adam_optimizer,
            learning_rate=learning_rate,
            l2_coefficient=l2_coefficient,
            novelty_nearest_neighbors=novelty_nearest_neighbors,
            last_updated_size=last_updated_size,
            exploit_num_cell_sample=exploit_num_cell_sample,
            explore_num_cell_sample=explore_num_cell_sample,
            use_explore=use_explore,
            use_exploit=use_exploit,
            novelty_archive_size=novelty_archive_size,
            normalize_observations=normalize_observations,
            # Unused without normalisation: leaving it out keeps such kernels
            # equal (fusable) whatever policy a caller passes.
            policy=policy if normalize_observations else None,
            observation_std_min=observation_std_min,
        )
        if normalize_observations and policy.num_params != int(np.prod(archive.solution_dim)):
            raise ValueError(
                f"policy has {policy.num_params} parameters but the archive's "
                f"solution_dim is {archive.solution_dim}; pass the task's policy"
            )
        if x0 is None:
            if archive.empty:
                raise ValueError(
                    "x0 is required while the archive is empty (ME-ES "
                    "needs a first solution to start from)"
                )
        else:
            x0 = np.asarray(x0)
            dim = archive.solution_dim
            expected = tuple(dim) if isinstance(dim, tuple) else (int(dim),)
            if x0.shape != expected:
                raise ValueError(
                    f"x0 must have shape {expected} (the archive's solution_dim), got {x0.shape}"
                )
            if not np.all(np.isfinite(x0)):
                raise ValueError("x0 must be finite")
        super().__init__(archive, kernel, seed=seed)
        if x0 is not None:
            inner = self.kernel_state
            start = jnp.asarray(x0, inner["offspring"].dtype)
            # Before any observation the normalisation is the identity: x0 is
            # its own unfolded form.
            extra = {"theta": jnp.array(start, copy=True)} if normalize_observations else {}
            self.state = self.state._replace(inner={**inner, "offspring": start, **extra})
