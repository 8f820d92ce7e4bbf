"""PBT: population-based training's exploit/explore step over stacked agents.

Population-based training (Jaderberg et al. 2017) trains a population of agents in
parallel and, every so often, replaces the worst agents by copies of the best ones
with new hyperparameters. Here the population is a *stacked* training-state pytree
(every leaf has a leading population axis), so the agents' updates run as one
``vmap``; their hyperparameters live in the state (``state.hyperparams``, a dict or
NamedTuple of ``(population_size,)`` arrays) so each member can have its own.

:class:`PBT` is the template, generic over the agent: it ranks members by a fitness
(e.g. the evaluation return), copies whole states *and* replay buffers from members
sampled among the best to the worst (what QDax's ``update_states_and_buffer`` does:
a copied agent continues from its source's buffer), and gives the copies new
hyperparameters (re-sampled uniformly in their ranges as in QDax, or perturbed
multiplicatively as in the PBT paper).

On several devices the population axis is sharded: :func:`population_mesh` builds a
one-axis mesh, :func:`shard_population` places a stacked pytree on it, and
:func:`population_map` runs a per-member function with ``shard_map`` over the mesh
(``vmap`` inside each shard), so the same per-member code runs on one device or many
and gives the same population. The exploit step is an ordinary jitted function;
when its inputs are sharded, XLA moves the copied rows between devices.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["PBT", "POPULATION_AXIS", "population_mesh", "shard_population", "population_map"]

POPULATION_AXIS = "population"


@dataclasses.dataclass(frozen=True)
class PBT:
    """Exploit/explore step of population-based training.

    Args:
        population_size: Number of members.
        num_best_to_replace_from: Sources are drawn (uniformly, with replacement)
            among this many best members.
        num_worse_to_replace: This many worst members are overwritten.
        hyperparameter_ranges: ``((name, low, high), ...)``: the hyperparameters in
            ``state.hyperparams`` that exploration changes, with their ranges.
        explore: ``"resample"`` (QDax: the copies get hyperparameters drawn
            uniformly in their ranges) or ``"perturb"`` (PBT paper: each of the
            source's hyperparameters multiplied by one of ``perturb_factors`` chosen
            at random, then clipped to its range).
        perturb_factors: Factors of ``"perturb"`` exploration.

    Raises:
        ValueError: Counts outside ``[1, population_size]``, sources and replaced
            members overlapping (``num_best + num_worse > population_size``), an
            unknown ``explore`` or an empty/inverted range.
    """

    population_size: int
    num_best_to_replace_from: int
    num_worse_to_replace: int
    hyperparameter_ranges: tuple[tuple[str, float, float], ...] = ()
    explore: str = "resample"
    perturb_factors: tuple[float, float] = (0.8, 1.2)

    def __post_init__(self):
        n = self.population_size
        for name in ("num_best_to_replace_from", "num_worse_to_replace"):
            value = getattr(self, name)
            if int(value) != value or not 1 <= value <= n:
                raise ValueError(
                    f"{name} must be an integer in [1, population_size={n}], got {value}"
                )
        if self.num_best_to_replace_from + self.num_worse_to_replace > n:
            raise ValueError(
                "num_best_to_replace_from + num_worse_to_replace must not exceed "
                f"population_size ({self.num_best_to_replace_from} + "
                f"{self.num_worse_to_replace} > {n})"
            )
        if self.explore not in ("resample", "perturb"):
            raise ValueError(f"explore must be 'resample' or 'perturb', got {self.explore!r}")
        ranges = tuple(
            (str(name), float(low), float(high)) for name, low, high in self.hyperparameter_ranges
        )
        for name, low, high in ranges:
            if not low < high:
                raise ValueError(
                    f"hyperparameter_ranges[{name!r}] must have low < high, got ({low}, {high})"
                )
        object.__setattr__(self, "hyperparameter_ranges", ranges)

    def sample_hyperparams(self, key, n: int, dtype=None) -> dict:
        """``n`` members' hyperparameters drawn uniformly in their ranges."""
        dtype = dtype or jnp.result_type(float)
        keys = jax.random.split(key, max(len(self.hyperparameter_ranges), 1))
        return {
            name: jax.random.uniform(k, (n,), dtype, low, high)
            for k, (name, low, high) in zip(keys, self.hyperparameter_ranges)
        }

    def select(self, key, fitnesses: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Which members are replaced, and by which.

        Members are ranked by decreasing fitness (ties: lower index first; NaN
        ranks last). The ``num_worse_to_replace`` last-ranked members are the
        targets; each gets a source drawn uniformly with replacement among the
        ``num_best_to_replace_from`` first-ranked.

        Returns:
            ``(targets, sources)``: two ``(num_worse_to_replace,)`` int arrays.
        """
        fitnesses = jnp.where(jnp.isnan(fitnesses), -jnp.inf, fitnesses)
        order = jnp.argsort(-fitnesses, stable=True)
        best = order[: self.num_best_to_replace_from]
        targets = order[self.population_size - self.num_worse_to_replace :]
        sources = jax.random.choice(key, best, (self.num_worse_to_replace,), replace=True)
        return targets, sources

    def explore_hyperparams(self, key, hyperparams: dict) -> dict:
        """New hyperparameters for copied members (rows of ``hyperparams``)."""
        out = dict(hyperparams)
        keys = jax.random.split(key, max(len(self.hyperparameter_ranges), 1))
        for k, (name, low, high) in zip(keys, self.hyperparameter_ranges):
            value = hyperparams[name]
            if self.explore == "resample":
                out[name] = jax.random.uniform(k, value.shape, value.dtype, low, high)
            else:
                factors = jnp.asarray(self.perturb_factors, value.dtype)
                choice = jax.random.randint(k, value.shape, 0, len(factors))
                out[name] = jnp.clip(value * factors[choice], low, high)
        return out

    def update_states_and_buffer(
        self, key, fitnesses: jax.Array, training_state, replay_buffer=None
    ):
        """Replaces the worst members by copies of the best, with new hyperparameters.

        Pure and jittable. Every leaf of ``training_state`` and ``replay_buffer``
        (stacked along axis 0) gets rows ``targets`` overwritten by rows
        ``sources`` (see :meth:`select`); then the hyperparameters of the targets
        are explored (:meth:`explore_hyperparams`); the other members are untouched.

        Args:
            key: PRNG key.
            fitnesses: ``(population_size,)`` fitnesses (higher is better).
            training_state: Stacked training states (NamedTuple or flax dataclass)
                with a ``hyperparams`` field (dict or NamedTuple) holding the
                explored hyperparameters.
            replay_buffer: Stacked replay buffers (any pytree), or None.

        Returns:
            ``(training_state, replay_buffer)``.
        """
        if fitnesses.shape != (self.population_size,):
            raise ValueError(
                f"fitnesses must have shape ({self.population_size},), got {fitnesses.shape}"
            )
        select_key, explore_key = jax.random.split(key)
        targets, sources = self.select(select_key, fitnesses)

        def copy(x):
            return x.at[targets].set(x[sources])

        training_state = jax.tree.map(copy, training_state)
        if replay_buffer is not None:
            replay_buffer = jax.tree.map(copy, replay_buffer)
        if self.hyperparameter_ranges:
            hyper = training_state.hyperparams
            names = [name for name, _, _ in self.hyperparameter_ranges]
            copied = {name: _get(hyper, name)[targets] for name in names}
            explored = self.explore_hyperparams(explore_key, copied)
            hyper = _set(
                hyper, {name: _get(hyper, name).at[targets].set(explored[name]) for name in names}
            )
            training_state = _set_field(training_state, "hyperparams", hyper)
        return training_state, replay_buffer


def _get(container, name):
    return container[name] if isinstance(container, dict) else getattr(container, name)


def _set(container, values: dict):
    if isinstance(container, dict):
        return {**container, **values}
    return container._replace(**values)


def _set_field(state, name, value):
    """``state`` with field ``name`` replaced (NamedTuple or flax dataclass)."""
    if hasattr(state, "_replace"):
        return state._replace(**{name: value})
    return state.replace(**{name: value})


def population_mesh(devices: Sequence | None = None) -> Mesh:
    """A one-axis mesh (axis :data:`POPULATION_AXIS`) over ``devices`` (default all)."""
    devices = list(jax.devices() if devices is None else devices)
    return Mesh(np.asarray(devices), (POPULATION_AXIS,))


def _check_divisible(tree, mesh: Mesh):
    size = mesh.shape[POPULATION_AXIS]
    for leaf in jax.tree.leaves(tree):
        if leaf.shape[0] % size:
            raise ValueError(
                f"The population size ({leaf.shape[0]}) must be a "
                f"multiple of the number of devices ({size})"
            )


def shard_population(tree, mesh: Mesh | None):
    """Places a stacked pytree with its leading axis split over ``mesh``.

    With ``mesh=None`` the tree is returned unchanged.

    Raises:
        ValueError: The population size is not a multiple of the mesh size.
    """
    if mesh is None:
        return tree
    _check_divisible(tree, mesh)
    sharding = NamedSharding(mesh, PartitionSpec(POPULATION_AXIS))
    return jax.device_put(tree, sharding)


def population_map(fn: Callable, mesh: Mesh | None = None) -> Callable:
    """``fn`` over stacked members: ``vmap``, sharded over ``mesh`` if given.

    Every positional argument of the returned function is stacked along axis 0
    (one row per member); bind shared arguments with ``functools.partial``. With a
    mesh, ``shard_map`` gives each device its block of members and runs the
    ``vmap``-ped ``fn`` on it, with no communication.
    """
    mapped = jax.vmap(fn)
    if mesh is None:
        return mapped
    spec = PartitionSpec(POPULATION_AXIS)
    # Members never communicate, so replication checks (``check_vma``) add nothing;
    # they would also reject scans whose carry starts from constants (e.g. an
    # environment reset's zeros) and becomes member-dependent.
    return jax.shard_map(mapped, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False)
