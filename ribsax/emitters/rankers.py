"""Rankers for use across emitters.

A ranker orders a batch of evaluated solutions (best first) for an evolution strategy
and reports the values it used. Emitters accept a ranker class (or any callable taking
a seed), its full name, or one of these abbreviations:

* ``density``: :class:`DensityRanker`
* ``imp``: :class:`ImprovementRanker`
* ``nov``: :class:`NoveltyRanker`
* ``nslc``: :class:`NSLCRanker`
* ``nslc_classic``: :class:`NSLCClassicRanker`
* ``obj``: :class:`ObjectiveRanker`
* ``rd``: :class:`RandomDirectionRanker`
* ``2imp``: :class:`TwoStageImprovementRanker`
* ``2obj``: :class:`TwoStageObjectiveRanker`
* ``2rd``: :class:`TwoStageRandomDirectionRanker`

Functional core
---------------
Every built-in ranker is one pure kernel selected by a hashable
:class:`RankerConfig` (``kind`` is the class name) over a :class:`RankerState`
(PRNG key and target measure direction)::

    state = init(config, key, measure_dim, dtype)
    state = reset(config, state, lower_bounds, upper_bounds)   # new direction (rd)
    indices, values = rank(config, state, key, solutions, objective, measures,
                           add_info)

``rank`` is ``jit``/``vmap``-able with ``config`` static. ``add_info`` is a dict
holding the fields listed by :func:`required_fields` (for NSLC with a
``diversity_field``, that field, taken from the archive's add info or from the data).
Class instances expose ``config``, ``state`` and ``kernels`` (:data:`RANKER_KERNELS`).

Ties
----
Rankers that sort one key use a stable sort, then reverse it for descending order
(equal values: later index first), the same tie order as the two-stage rankers,
whose ``flip(lexsort(...))`` is deterministic in NumPy too. ``DensityRanker`` sorts
ascending (equal values: earlier index first). pyribs uses NumPy's default
``argsort``, whose order among equal values is not stable and depends on the CPU's
SIMD sort; the ranked values are identical, only the positions of exact ties may
differ.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._normal import standard_normal
from ribsax._utils import default_float_dtype, kernel_key, to_device
from ribsax.emitters.opt._kernel_shell import config_property, state_property

__all__ = [
    "DensityRanker",
    "ImprovementRanker",
    "NoveltyRanker",
    "NSLCRanker",
    "NSLCClassicRanker",
    "ObjectiveRanker",
    "RandomDirectionRanker",
    "TwoStageImprovementRanker",
    "TwoStageObjectiveRanker",
    "TwoStageRandomDirectionRanker",
    "RankerBase",
    "RankerConfig",
    "RankerState",
    "RankerKernels",
    "RANKER_KERNELS",
    "required_fields",
]

# Inputs of each kind: which of objective / measures / add_info fields it reads.
_KIND_INPUTS = {
    "ImprovementRanker": ("value",),
    "TwoStageImprovementRanker": ("status", "value"),
    "RandomDirectionRanker": ("measures",),
    "TwoStageRandomDirectionRanker": ("status", "measures"),
    "ObjectiveRanker": ("objective",),
    "TwoStageObjectiveRanker": ("status", "objective"),
    "NoveltyRanker": ("novelty",),
    "DensityRanker": ("density",),
    "NSLCRanker": ("novelty", "local_competition"),
}

_DIRECTION_KINDS = ("RandomDirectionRanker", "TwoStageRandomDirectionRanker")


# ---------------------------------------------------------------------------
# Functional core.
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class RankerConfig:
    """Static ranker configuration (hashable).

    Attributes:
        kind: Class name of the ranker (``"ImprovementRanker"``, ...). NSLC
            variants use ``"NSLCRanker"``.
        diversity_field: NSLC's optional third objective (None: crowding distance
            on novelty and local competition only).
    """

    kind: str
    diversity_field: str | None = None


class RankerState(NamedTuple):
    """Ranker state (a pytree).

    Attributes:
        target_measure_dir: ``(measure_dim,)`` direction of the random-direction
            rankers (zeros for the others).
        key: PRNG key used by ``reset``.
    """

    target_measure_dir: jax.Array
    key: jax.Array


class RankerKernels(NamedTuple):
    """The pure functions of the rankers (see module docstring)."""

    init: Callable
    reset: Callable
    rank: Callable


def required_fields(config: RankerConfig) -> tuple:
    """Names of the ``add_info`` entries ``rank`` reads (besides objective and
    measures, which are arguments)."""
    fields = tuple(f for f in _KIND_INPUTS[config.kind] if f not in ("objective", "measures"))
    if config.kind == "NSLCRanker" and config.diversity_field is not None:
        fields += (config.diversity_field,)
    return fields


def init(config: RankerConfig, key, measure_dim: int, dtype=None) -> RankerState:
    """Creates a ranker state (zero direction; call :func:`reset` to draw one)."""
    del config
    dtype = default_float_dtype() if dtype is None else dtype
    return RankerState(target_measure_dir=to_device(np.zeros(measure_dim, dtype)), key=key)


def reset(config: RankerConfig, state: RankerState, lower_bounds, upper_bounds) -> RankerState:
    """Draws a new direction ``N(0, I) * (upper - lower)`` for the random-direction
    rankers; returns ``state`` unchanged for the others."""
    if config.kind not in _DIRECTION_KINDS:
        return state
    ranges = jnp.asarray(upper_bounds) - jnp.asarray(lower_bounds)
    key, sub = jax.random.split(state.key)
    direction = standard_normal(sub, ranges.shape, ranges.dtype) * ranges
    return RankerState(target_measure_dir=direction, key=key)


def _descending(values):
    """Reverse of a stable ascending argsort (ties: later index first)."""
    return jnp.argsort(values, stable=True)[::-1]


def _two_stage(status, second):
    """``flip(lexsort((second, status)))`` and the ``(status, second)`` value pairs."""
    dtype = _result_float(status, second)
    values = jnp.stack((status.astype(dtype), second.astype(dtype)), axis=-1)
    return jnp.lexsort((values[:, 1], values[:, 0]))[::-1], values


def _result_float(*arrays):
    """NumPy's result dtype of ``arrays``, narrowed to 32 bits without JAX x64."""
    dtype = np.result_type(*[a.dtype for a in arrays])
    if not np.issubdtype(dtype, np.floating):
        dtype = default_float_dtype()
    if dtype == np.float64 and not jax.config.jax_enable_x64:
        dtype = np.dtype(np.float32)
    return dtype


def non_dominated_fronts(costs):
    """NSGA-II fast non-dominated sort, reproducing pyribs' front order.

    ``i`` dominates ``j`` when ``costs[i] <= costs[j]`` everywhere and ``<`` somewhere.
    Front 0 lists its members by index; a member of front ``f + 1`` is placed by the
    position of its last dominator in front ``f`` (then by index), which is the order
    in which the classic counting algorithm appends it.

    Args:
        costs: ``(n, k)`` costs to minimise.

    Returns:
        ``(front[n], pos[n])``: each solution's front number and its position in the
        front's list.
    """
    n = costs.shape[0]
    leq = jnp.all(costs[:, None, :] <= costs[None, :, :], axis=-1)
    lt = jnp.any(costs[:, None, :] < costs[None, :, :], axis=-1)
    dom = leq & lt  # dom[i, j]: i dominates j.
    idx = jnp.arange(n)

    first = ~jnp.any(dom, axis=0)
    front = jnp.where(first, 0, -1)
    pos = jnp.where(first, jnp.cumsum(first) - 1, 0)

    def cond(carry):
        front, _, _ = carry
        return jnp.any(front < 0)

    def body(carry):
        front, pos, f = carry
        assigned = front >= 0
        current = front == f
        waiting = jnp.any(dom & ~assigned[:, None], axis=0)
        nxt = ~assigned & ~waiting
        last = jnp.max(jnp.where(current[:, None] & dom, pos[:, None], -1), axis=0)
        key = jnp.where(nxt, last * n + idx, n * n + idx)
        order = jnp.argsort(key)
        rank_in = jnp.zeros(n, pos.dtype).at[order].set(jnp.arange(n, dtype=pos.dtype))
        return (jnp.where(nxt, f + 1, front), jnp.where(nxt, rank_in, pos), f + 1)

    front, pos, _ = jax.lax.while_loop(cond, body, (front, pos, jnp.zeros((), front.dtype)))
    return front, pos


def crowding_distances(costs, front, pos):
    """NSGA-II crowding distance of every solution within its front.

    Within a front, each objective is sorted stably (ties by front position); the two
    ends get ``inf`` and the others add ``(next - prev) / (max - min)`` unless the
    range is zero, as in pyribs.

    Args:
        costs: ``(n, k)`` costs.
        front: ``(n,)`` front numbers.
        pos: ``(n,)`` positions within the fronts.

    Returns:
        ``(n,)`` distances (single-member fronts get ``inf``).
    """
    n, k = costs.shape
    distance = jnp.zeros(n, costs.dtype)
    for m in range(k):
        values = costs[:, m]
        perm = jnp.lexsort((pos, values, front))
        sfront = front[perm]
        svalues = values[perm]
        is_first = jnp.concatenate((jnp.ones(1, bool), sfront[1:] != sfront[:-1]))
        is_last = jnp.concatenate((sfront[1:] != sfront[:-1], jnp.ones(1, bool)))
        fmax = jax.ops.segment_max(values, front, num_segments=n)
        fmin = jax.ops.segment_min(values, front, num_segments=n)
        span = (fmax - fmin)[sfront]
        prev = jnp.concatenate((svalues[:1], svalues[:-1]))
        nxt = jnp.concatenate((svalues[1:], svalues[-1:]))
        term = jnp.where(span == 0, 0, (nxt - prev) / jnp.where(span == 0, 1, span))
        sdist = distance[perm]
        sdist = jnp.where(is_first | is_last, jnp.inf, sdist + term)
        distance = distance.at[perm].set(sdist)
    return distance


def _nslc(novelty, local_competition, extra):
    dtype = default_float_dtype()
    objectives = [novelty, local_competition] + ([] if extra is None else [extra])
    objectives = [jnp.asarray(o).astype(dtype) for o in objectives]
    values = jnp.stack(objectives, axis=-1)
    costs = -values
    front, pos = non_dominated_fronts(costs)
    crowding = crowding_distances(costs, front, pos)
    order = jnp.lexsort((pos, -crowding, front))
    return order, values


def rank(config: RankerConfig, state: RankerState, key, solutions, objective, measures, add_info):
    """Orders a batch of solutions, best first.

    Args:
        config: Static ranker configuration.
        state: Ranker state (the direction, for the random-direction rankers).
        key: PRNG key (unused by the built-in rankers; kept so that stochastic
            rankers share the signature).
        solutions: ``(batch, ...)`` solutions (unused by the built-in rankers).
        objective: ``(batch,)`` objectives.
        measures: ``(batch, measure_dim)`` measures.
        add_info: Dict with the fields named by :func:`required_fields`.

    Returns:
        ``(indices[batch], values)``: a descending argsort and the values used,
        ``(batch,)`` or ``(batch, n_values)``.
    """
    del key, solutions
    kind = config.kind
    if kind == "ImprovementRanker":
        value = jnp.asarray(add_info["value"])
        return _descending(value), value
    if kind == "TwoStageImprovementRanker":
        return _two_stage(jnp.asarray(add_info["status"]), jnp.asarray(add_info["value"]))
    if kind in _DIRECTION_KINDS:
        projections = jnp.asarray(measures) @ state.target_measure_dir
        if kind == "RandomDirectionRanker":
            return _descending(projections), projections
        return _two_stage(jnp.asarray(add_info["status"]), projections)
    if kind == "ObjectiveRanker":
        objective = jnp.asarray(objective)
        return _descending(objective), objective
    if kind == "TwoStageObjectiveRanker":
        return _two_stage(jnp.asarray(add_info["status"]), jnp.asarray(objective))
    if kind == "NoveltyRanker":
        novelty = jnp.asarray(add_info["novelty"])
        return _descending(novelty), novelty
    if kind == "DensityRanker":
        density = jnp.asarray(add_info["density"])
        return jnp.argsort(density, stable=True), density
    if kind == "NSLCRanker":
        extra = None if config.diversity_field is None else add_info[config.diversity_field]
        return _nslc(add_info["novelty"], add_info["local_competition"], extra)
    raise ValueError(f"Unknown ranker kind {kind!r}")


#: The functional core of the built-in rankers.
RANKER_KERNELS = RankerKernels(init=init, reset=reset, rank=rank)


@partial(jax.jit, static_argnums=(0,))
def _rank_jit(config, state, key, solutions, objective, measures, add_info):
    return rank(config, state, key, solutions, objective, measures, add_info)


@partial(jax.jit, static_argnums=(0,))
def _reset_jit(config, state, lower_bounds, upper_bounds):
    return reset(config, state, lower_bounds, upper_bounds)


# ---------------------------------------------------------------------------
# Object API.
# ---------------------------------------------------------------------------
class RankerBase(ABC):
    """Base class for rankers.

    :meth:`rank` returns indices that order the solutions best first (a descending
    argsort) and the values used; :meth:`reset` resets internal state (e.g. the
    direction of :class:`RandomDirectionRanker`). Subclasses only need ``rank``.

    Args:
        seed: Seed (int, None or ``np.random.SeedSequence``) for ``self._rng`` (a
            NumPy generator, for NumPy subclasses) and the built-in rankers' PRNG key.
    """

    def __init__(self, seed=None) -> None:
        self._rng = np.random.default_rng(seed)
        self._seed_key = kernel_key(seed)

    @abstractmethod
    def rank(self, emitter, archive, data, add_info):
        """Generates indices that order ``data["solution"]`` best first.

        Args:
            emitter: Emitter that owns this ranker.
            archive: Archive used by ``emitter``.
            data: Dict of field name (``solution``, ``objective``, ``measures``, ...)
                to arrays for the solutions.
            add_info: Information returned by the archive's ``add``.

        Returns:
            ``(indices[batch], values)`` where ``values`` has shape ``(batch,)`` or
            ``(batch, n_values)``.
        """

    def reset(self, emitter, archive) -> None:
        """Resets the internal state of the ranker.

        Args:
            emitter: Emitter that owns this ranker.
            archive: Archive used by ``emitter``.
        """


class _KernelRanker(RankerBase):
    """Shared shell of the built-in rankers: gathers inputs and calls the kernel."""

    kernels = RANKER_KERNELS
    _kind: str = None
    #: ``(source, name)`` of the input returned as the ranking values, exactly as the
    #: caller passed it (pyribs returns e.g. ``data["objective"]`` itself), for the
    #: rankers whose values are one of their inputs unchanged; None for the others.
    _values_as_given: tuple = None

    def __init__(self, seed=None) -> None:
        super().__init__(seed)
        self._config = RankerConfig(self._kind)
        self._state = None

    config = config_property()
    state = state_property("The :class:`RankerState` (None until a direction or a rank is needed).")

    def _ensure_state(self, measure_dim, dtype):
        if self._state is None:
            self._state = init(self._config, self._seed_key, measure_dim, dtype)
        return self._state

    def _validate(self, data, add_info) -> None:
        """Hook for input checks with pyribs' messages."""

    def _inputs(self, data, add_info) -> dict:
        return {name: jnp.asarray(add_info[name]) for name in required_fields(self._config)}

    def rank(self, emitter, archive, data, add_info):
        self._validate(data, add_info)
        inputs = self._inputs(data, add_info)
        needs = _KIND_INPUTS[self._config.kind]
        objective = jnp.asarray(data["objective"]) if "objective" in needs else None
        measures = jnp.asarray(data["measures"]) if "measures" in needs else None
        if measures is not None:
            state = self._ensure_state(measures.shape[-1], measures.dtype)
        else:
            state = self._ensure_state(0, None)
        indices, values = _rank_jit(self._config, state, None, None, objective, measures, inputs)
        if self._values_as_given is None:
            return np.asarray(indices), np.asarray(values)
        source, name = self._values_as_given
        return np.asarray(indices), (data if source == "data" else add_info)[name]


class ImprovementRanker(_KernelRanker):
    """Ranks solutions by improvement ``value`` from the archive's ``add``.

    Not meant for CMA-ME: there, new solutions' values are their objectives, on a
    different scale from other solutions' improvements.
    """

    _kind = "ImprovementRanker"
    _values_as_given = ("add_info", "value")


class TwoStageImprovementRanker(_KernelRanker):
    """Ranks solutions by add ``status`` (new cell, then improvement, then not added)
    and then by improvement ``value`` (`Fontaine 2020
    <https://arxiv.org/abs/1912.02400>`_, the "improvement emitter").

    The values are the ``(batch, 2)`` pairs ``(status, value)``.
    """

    _kind = "TwoStageImprovementRanker"


class _DirectionRanker(_KernelRanker):
    """Random-direction rankers: own a direction drawn on :meth:`reset`."""

    def __init__(self, seed=None) -> None:
        super().__init__(seed)
        self._direction_set = False

    @property
    def target_measure_dir(self):
        """``(measure_dim,)`` target direction in measure space (None until set)."""
        if not self._direction_set:
            return None
        return np.asarray(self._state.target_measure_dir)

    @target_measure_dir.setter
    def target_measure_dir(self, value):
        if value is None:
            self._direction_set = False
            return
        value = jnp.asarray(value)
        key = self._seed_key if self._state is None else self._state.key
        self._state = RankerState(target_measure_dir=value, key=key)
        self._direction_set = True

    def _validate(self, data, add_info) -> None:
        if not self._direction_set:
            raise RuntimeError("target measure direction not set")

    def reset(self, emitter, archive) -> None:
        """Draws a random direction: a standard normal vector scaled by the archive's
        ``upper_bounds - lower_bounds`` (the archive needs those attributes)."""
        lower = np.asarray(archive.lower_bounds)
        upper = np.asarray(archive.upper_bounds)
        state = self._ensure_state(len(upper - lower), (upper - lower).dtype)
        self._state = _reset_jit(self._config, state, lower, upper)
        self._direction_set = True


class RandomDirectionRanker(_DirectionRanker):
    """Ranks solutions by the projection of their measures onto a random direction
    (`Fontaine 2020 <https://arxiv.org/abs/1912.02400>`_, random direction emitter).

    The archive must have ``lower_bounds`` and ``upper_bounds`` attributes.
    """

    _kind = "RandomDirectionRanker"


class TwoStageRandomDirectionRanker(_DirectionRanker):
    """Ranks solutions by add ``status`` and then by the projection of their measures
    onto a random direction; the values are ``(status, projection)`` pairs.

    The archive must have ``lower_bounds`` and ``upper_bounds`` attributes.
    """

    _kind = "TwoStageRandomDirectionRanker"


class ObjectiveRanker(_KernelRanker):
    """Ranks solutions by objective (`Fontaine 2020
    <https://arxiv.org/abs/1912.02400>`_, optimizing emitter)."""

    _kind = "ObjectiveRanker"
    _values_as_given = ("data", "objective")


class TwoStageObjectiveRanker(_KernelRanker):
    """Ranks solutions by add ``status`` and then by objective; the values are
    ``(status, objective)`` pairs."""

    _kind = "TwoStageObjectiveRanker"


class NoveltyRanker(_KernelRanker):
    """Ranks solutions by ``novelty`` (higher first), as returned by archives such as
    ``ProximityArchive.add``."""

    _kind = "NoveltyRanker"
    _values_as_given = ("add_info", "novelty")


class DensityRanker(_KernelRanker):
    """Ranks solutions by ``density`` in measure space, **lower first**, as returned
    by archives such as ``DensityArchive.add``."""

    _kind = "DensityRanker"
    _values_as_given = ("add_info", "density")


class NSLCRanker(_KernelRanker):
    """Novelty Search with Local Competition (Lehman and Stanley 2011, GECCO).

    Solutions are sorted into Pareto fronts (NSGA-II fast non-dominated sort) on
    novelty and local competition (both higher is better), plus an optional third
    "genotypic diversity" objective; within a front, NSGA-II crowding distance
    (descending, ends first) breaks ties. The values are the stacked objectives.
    Requires ``novelty`` and ``local_competition`` in ``add_info`` (e.g.
    ``ProximityArchive(local_competition=True)``).

    Args:
        seed: Unused; kept for a uniform constructor.
        diversity_field: Optional name of a third objective, looked up in
            ``add_info`` first and then in ``data``.
    """

    _kind = "NSLCRanker"

    def __init__(self, seed=None, diversity_field=None) -> None:
        super().__init__(seed)
        self._diversity_field = diversity_field
        self._config = RankerConfig("NSLCRanker", diversity_field)

    @property
    def diversity_field(self):
        """Name of the optional third objective field, or None."""
        return self._diversity_field

    def _validate(self, data, add_info) -> None:
        if "novelty" not in add_info:
            raise KeyError(
                "NSLCRanker requires a 'novelty' field in add_info. Use an archive "
                "that returns novelty from add(), such as ProximityArchive."
            )
        if "local_competition" not in add_info:
            raise KeyError(
                "NSLCRanker requires a 'local_competition' field in add_info. Use "
                "ProximityArchive with local_competition=True."
            )
        novelty = np.asarray(add_info["novelty"])
        local_competition = np.asarray(add_info["local_competition"])
        if novelty.shape != local_competition.shape:
            raise ValueError(
                "'novelty' and 'local_competition' in add_info must have the same "
                f"shape; got {novelty.shape} and {local_competition.shape}."
            )
        field = self._diversity_field
        if field is not None:
            if field in add_info:
                extra = np.asarray(add_info[field])
            elif field in data:
                extra = np.asarray(data[field])
            else:
                raise KeyError(
                    f"diversity_field='{field}' was not found in "
                    "add_info or data. Provide the field when calling the ranker or "
                    "set diversity_field=None to fall back to crowding distance."
                )
            if extra.shape != novelty.shape:
                raise ValueError(
                    f"diversity_field '{field}' has shape {extra.shape}; expected {novelty.shape}."
                )

    def _inputs(self, data, add_info) -> dict:
        inputs = {name: jnp.asarray(add_info[name]) for name in ("novelty", "local_competition")}
        field = self._diversity_field
        if field is not None:
            source = add_info if field in add_info else data
            inputs[field] = jnp.asarray(source[field])
        return inputs


class NSLCClassicRanker(NSLCRanker):
    """NSLC with Lehman and Stanley's third objective, ``genotypic_diversity``
    (looked up in ``add_info`` then ``data``; KeyError when missing).

    Args:
        seed: Unused; kept for a uniform constructor.
    """

    def __init__(self, seed=None) -> None:
        super().__init__(seed, diversity_field="genotypic_diversity")


_NAME_TO_RANKER_MAP = {
    "DensityRanker": DensityRanker,
    "ImprovementRanker": ImprovementRanker,
    "NoveltyRanker": NoveltyRanker,
    "NSLCRanker": NSLCRanker,
    "NSLCClassicRanker": NSLCClassicRanker,
    "ObjectiveRanker": ObjectiveRanker,
    "RandomDirectionRanker": RandomDirectionRanker,
    "TwoStageImprovementRanker": TwoStageImprovementRanker,
    "TwoStageObjectiveRanker": TwoStageObjectiveRanker,
    "TwoStageRandomDirectionRanker": TwoStageRandomDirectionRanker,
    "density": DensityRanker,
    "imp": ImprovementRanker,
    "nov": NoveltyRanker,
    "nslc": NSLCRanker,
    "nslc_classic": NSLCClassicRanker,
    "obj": ObjectiveRanker,
    "rd": RandomDirectionRanker,
    "2imp": TwoStageImprovementRanker,
    "2obj": TwoStageObjectiveRanker,
    "2rd": TwoStageRandomDirectionRanker,
}


def _get_ranker(klass, seed) -> RankerBase:
    """Builds a ranker from its full or abbreviated name, or from a callable.

    Args:
        klass: A name (``"imp"``, ``"ImprovementRanker"`` ...) or a callable taking a
            seed and returning a :class:`RankerBase`.
        seed: Seed for the ranker.

    Returns:
        The ranker instance.

    Raises:
        ValueError: Unknown name, a callable returning something else, or neither a
            callable nor a string.
    """
    if isinstance(klass, str):
        if klass in _NAME_TO_RANKER_MAP:
            return _NAME_TO_RANKER_MAP[klass](seed)
        raise ValueError(f"`{klass}` is not the full or abbreviated name of a valid ranker")
    if callable(klass):
        ranker = klass(seed)
        if isinstance(ranker, RankerBase):
            return ranker
        raise ValueError(f"Callable `{klass}` did not return an instance of RankerBase.")
    raise ValueError(f"`{klass}` is neither a callable nor a string")
