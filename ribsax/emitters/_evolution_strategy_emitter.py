"""EvolutionStrategyEmitter: CMA-ME, CMA-MAE, novelty search and friends."""
from __future__ import annotations

import warnings
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import check_shape, to_device
from ribsax.archives._kernels import sample_occupied
from ribsax.emitters import rankers as _rankers
from ribsax.emitters._emitter_base import EmitterBase, archive_device_view
from ribsax.emitters._fusion import prepare_due_members, run_ask
from ribsax.emitters._ranked_tell import RankedTellMixin, ranked_tell_inputs
from ribsax.emitters.opt import _get_es
from ribsax.emitters.opt._evolution_strategy_base import (
    BOUNDS_SAMPLING_THRESHOLD,
    BOUNDS_WARNING,
    KernelEvolutionStrategy,
    select_tree,
    single_threaded_blas,
)

__all__ = ["EvolutionStrategyEmitter", "ESEmitterConfig", "ESEmitterState",
           "ranked_tell_inputs"]


class ESEmitterConfig(NamedTuple):
    """Static configuration of the emitter's kernels (hashable).

    Attributes:
        es_kernels: :class:`~ribsax.emitters.opt.ESKernels` of the ES.
        es_config: The ES's static config.
        ranker_kernels: The ranker's kernels.
        ranker_config: The ranker's :class:`~ribsax.emitters.rankers.RankerConfig`.
        batch_size: Population size.
        bounded: Whether any solution bound is finite (resampling may warn).
    """

    es_kernels: Any
    es_config: Any
    ranker_kernels: Any
    ranker_config: Any
    batch_size: int
    bounded: bool


class ESEmitterState(NamedTuple):
    """State pytree of the emitter.

    Attributes:
        opt: The ES state.
        ranker: The ranker state.
        key: PRNG key for choosing the elite a restart starts from.
        itrs: int32 number of tells.
        restarts: int32 number of restarts.
        lower_bounds: ``(n,)`` solution lower bounds.
        upper_bounds: ``(n,)`` solution upper bounds.
        measure_lower: ``(measure_dim,)`` archive lower bounds (direction rankers).
        measure_upper: ``(measure_dim,)`` archive upper bounds.
        mu_selection: bool, ``selection_rule == "mu"``.
        restart_period: int32 ``k`` of an int ``restart_rule`` (0 otherwise).
        restart_no_improvement: bool, ``restart_rule == "no_improvement"``.

    The selection and restart rules live in the state (not the static config) so
    that emitters differing only in these rules share one compiled kernel and fuse.
    """

    opt: Any
    ranker: Any
    key: jax.Array
    itrs: jax.Array
    restarts: jax.Array
    lower_bounds: jax.Array
    upper_bounds: jax.Array
    measure_lower: jax.Array
    measure_upper: jax.Array
    mu_selection: jax.Array
    restart_period: jax.Array
    restart_no_improvement: jax.Array


def es_emitter_ask(config: ESEmitterConfig, state: ESEmitterState, view):
    """Samples a population from the ES (pure; ``view`` is unused)."""
    del view
    opt, solutions = config.es_kernels.ask(config.es_config, state.opt,
                                           *_sampling_bounds(config, state), None)
    return state._replace(opt=opt), solutions


def _sampling_bounds(config: ESEmitterConfig, state: ESEmitterState):
    """The bounds handed to the ES' sampler: None for unbounded emitters, whose
    samples then skip the resampling loop (same numbers, see
    :func:`~ribsax.emitters.opt._evolution_strategy_base.resample_in_bounds`)."""
    if not config.bounded:
        return None, None
    return state.lower_bounds, state.upper_bounds


def es_emitter_tell(config: ESEmitterConfig, state: ESEmitterState, inputs, view):
    """Ranks the evaluated population, updates the ES and restarts it if needed.

    Pure counterpart of pyribs' ``EvolutionStrategyEmitter.tell``: count the
    solutions with nonzero status, rank, select ``num_parents`` (filter: the new
    solutions; mu: half the population), tell the ES, and restart (mean at a
    uniformly sampled elite of ``view``, fresh ranker direction) when the ES's
    ``check_stop`` or the restart rule says so.

    Args:
        config: Static configuration.
        state: Emitter state after :func:`es_emitter_ask`.
        inputs: Dict with ``objective``, ``measures``, ``status``, ``value``, the
            ranker's extra fields, and ``allow_restart`` (bool; False leaves the
            restart itself to the host, which then samples the elite).
        view: :class:`~ribsax.emitters._emitter_base.ArchiveView` of the archive.

    Returns:
        ``(state, restart)`` where ``restart`` is the bool restart decision.
    """
    status = inputs["status"]
    new_sols = jnp.sum(status != 0).astype(jnp.int32)
    fields = _rankers.required_fields(config.ranker_config)
    add_info = {name: inputs[name] for name in fields}
    indices, values = config.ranker_kernels.rank(
        config.ranker_config, state.ranker, None, None, inputs["objective"],
        inputs["measures"], add_info)
    num_parents = jnp.where(state.mu_selection,
                            jnp.asarray(config.batch_size // 2, jnp.int32), new_sols)
    opt = config.es_kernels.tell(config.es_config, state.opt, indices, values,
                                 num_parents)
    itrs = state.itrs + 1
    stop = config.es_kernels.check_stop(config.es_config, opt, values[indices])
    period = state.restart_period
    by_period = (period != 0) & (itrs % jnp.where(period == 0, 1, period) == 0)
    restart = (stop | by_period
               | (state.restart_no_improvement & (new_sols == 0)))

    key, sub = jax.random.split(state.key)
    cell = sample_occupied(sub, view, 1)[0]
    x0 = view.solution[cell].reshape(state.lower_bounds.shape).astype(
        state.lower_bounds.dtype)
    opt_reset = config.es_kernels.reset(config.es_config, opt, x0)
    ranker_reset = config.ranker_kernels.reset(config.ranker_config, state.ranker,
                                               state.measure_lower,
                                               state.measure_upper)
    do_reset = restart & inputs["allow_restart"]
    new_state = state._replace(
        opt=select_tree(do_reset, opt_reset, opt),
        ranker=select_tree(do_reset, ranker_reset, state.ranker),
        key=key,
        itrs=itrs,
        restarts=state.restarts + do_reset.astype(jnp.int32),
    )
    return new_state, restart


@partial(jax.jit, static_argnums=(0,))
def _host_restart(config, state, x0):
    """Restarts at ``x0`` (an elite sampled on the host)."""
    opt = config.es_kernels.reset(config.es_config, state.opt,
                                  x0.reshape(state.lower_bounds.shape))
    ranker = config.ranker_kernels.reset(config.ranker_config, state.ranker,
                                         state.measure_lower, state.measure_upper)
    return state._replace(opt=opt, ranker=ranker, restarts=state.restarts + 1)


def _kernel_capable(opt, ranker) -> bool:
    """Whether ``opt`` and ``ranker`` are built-in, kernel-backed implementations."""
    if not isinstance(opt, KernelEvolutionStrategy):
        return False
    opt_cls = type(opt)
    for name in ("ask", "tell", "check_stop", "reset"):
        if getattr(opt_cls, name) is not getattr(KernelEvolutionStrategy, name):
            return False
    if not isinstance(ranker, _rankers._KernelRanker):
        return False
    rcls = type(ranker)
    if rcls.rank is not _rankers._KernelRanker.rank:
        return False
    return rcls.reset in (_rankers.RankerBase.reset, _rankers._DirectionRanker.reset)


class EvolutionStrategyEmitter(RankedTellMixin, EmitterBase):
    """Adapts an evolution strategy (CMA-ES by default) towards archive improvement.

    This is the emitter of CMA-ME (Fontaine 2020), CMA-MAE (Fontaine 2023), and, with
    other rankers and archives, novelty search, NSLC, DDS and DMS. Every ``ask``
    samples the ES; every ``tell`` ranks the evaluated solutions with the ranker,
    selects parents (``selection_rule``), updates the ES, and restarts it from a
    uniformly sampled elite when the ES stops or the ``restart_rule`` fires.

    With the built-in evolution strategies and rankers, ``ask`` and ``tell`` are one
    jitted kernel each (and a scheduler fuses emitters of equal configuration);
    custom ES or ranker classes run through their object methods, as in pyribs.
    Differences from pyribs: randomness comes from JAX PRNG keys, and the restart
    elite is drawn with the emitter's own key on the device instead of
    ``archive.sample_elites(1)`` (the archive's generator is not consumed).

    Args:
        archive: Archive of solutions.
        x0: Initial mean of the ES, of shape ``archive.solution_dim``.
        sigma0: Initial step size.
        ranker: Ranker name (``"2imp"``, ``"imp"``, ``"obj"``, ``"2obj"``,
            ``"rd"``, ``"2rd"``, ``"nov"``, ``"density"``, ``"nslc"``, ... or the
            full class names) or a callable taking a seed and returning a ranker.
        es: ES name (``"cma_es"``, ``"sep_cma_es"``, ``"lm_ma_es"``,
            ``"openai_es"``, ``"pycma_es"`` or the class names) or a callable
            returning an :class:`~ribsax.emitters.opt.EvolutionStrategyBase`.
            ``"pycma_es"`` (and custom strategies) run through their Python
            methods: not fused, not in ``Scheduler.run``'s fused loop.
        es_kwargs: Extra keyword arguments for the ES.
        selection_rule: ``"filter"`` (parents are the solutions added to the
            archive) or ``"mu"`` (the top half of the population).
        restart_rule: ``"no_improvement"`` (restart when nothing was added),
            ``"basic"`` (only the ES's own stopping test) or an int ``k``
            (restart every ``k`` tells).
        bounds: None, or per-dimension ``(lower, upper)`` pairs; out-of-bounds
            samples are resampled by the ES.
        lower_bounds: Alternative to ``bounds``.
        upper_bounds: Alternative to ``bounds``.
        batch_size: Population size (None: the ES default, ``4 + int(3 ln n)`` for
            CMA-ES).
        seed: None, an int or a :class:`numpy.random.SeedSequence`; split into the
            ES and ranker seeds with ``SeedSequence(seed).spawn(2)``.

    Raises:
        ValueError: Bad x0 shape, selection_rule, restart_rule, ranker or ES name,
            or bounds.
    """

    def __init__(self, archive, *, x0, sigma0, ranker="2imp", es="cma_es",
                 es_kwargs=None, selection_rule="filter",
                 restart_rule="no_improvement", bounds=None, lower_bounds=None,
                 upper_bounds=None, batch_size=None, seed=None):
        EmitterBase.__init__(self, archive, solution_dim=archive.solution_dim,
                             bounds=bounds, lower_bounds=lower_bounds,
                             upper_bounds=upper_bounds)
        seed_sequence = (seed if isinstance(seed, np.random.SeedSequence)
                         else np.random.SeedSequence(seed))
        opt_seed, ranker_seed = seed_sequence.spawn(2)

        self._x0 = np.array(np.asarray(x0, dtype=archive.dtypes["solution"]))
        check_shape(self._x0, "x0", archive.solution_dim, "archive.solution_dim")
        self._sigma0 = sigma0

        self._init_rules(selection_rule, restart_rule)

        self._opt_obj = _get_es(
            es, sigma0=sigma0, batch_size=batch_size, solution_dim=self._solution_dim,
            seed=opt_seed, dtype=self.archive.dtypes["solution"],
            lower_bounds=self.lower_bounds, upper_bounds=self.upper_bounds,
            **(es_kwargs if es_kwargs is not None else {}))
        self._opt_obj.reset(self._x0)

        self._ranker_obj = _rankers._get_ranker(ranker, ranker_seed)
        self._ranker_obj.reset(self, archive)

        self._batch_size = self._opt_obj.batch_size

        self._kernel_mode = _kernel_capable(self._opt_obj, self._ranker_obj)
        self._config = None
        if self._kernel_mode:
            self._setup_kernels(ranker_seed)

    def _setup_kernels(self, ranker_seed):
        archive = self.archive
        ranker = self._ranker_obj
        lower, upper, self._key = self._setup_ranker(ranker_seed)
        self._measure_bounds = (lower, upper)
        bounded = bool(np.isfinite(self.lower_bounds).any()
                       or np.isfinite(self.upper_bounds).any())
        self._config = ESEmitterConfig(
            es_kernels=self._opt_obj.kernels,
            es_config=self._opt_obj.config,
            ranker_kernels=ranker.kernels,
            ranker_config=ranker.config,
            batch_size=int(self._batch_size),
            bounded=bounded,
        )
        self._itrs_dev = to_device(0, np.int32)
        self._restarts_dev = to_device(0, np.int32)
        self._bounds_dev = (to_device(self.lower_bounds), to_device(self.upper_bounds))
        self._device_view_ok = archive_device_view(archive) is not None
        self._rules_dev = self._rule_arrays()

    # ------------------------------------------------------------ state
    def _own_state(self):
        if not self._kernel_mode:
            return None
        return ESEmitterState(
            opt=self._opt_obj.state, ranker=self._ranker_obj.state, key=self._key,
            itrs=self._itrs_dev, restarts=self._restarts_dev,
            lower_bounds=self._bounds_dev[0], upper_bounds=self._bounds_dev[1],
            measure_lower=self._measure_bounds[0],
            measure_upper=self._measure_bounds[1],
            mu_selection=self._rules_dev[0], restart_period=self._rules_dev[1],
            restart_no_improvement=self._rules_dev[2])

    def _set_own_state(self, new_state) -> None:
        if new_state is None:
            return
        self._opt_obj.state = new_state.opt
        self._ranker_obj.state = new_state.ranker
        self._key = new_state.key
        self._itrs_dev = new_state.itrs
        self._restarts_dev = new_state.restarts
        self._bounds_dev = (new_state.lower_bounds, new_state.upper_bounds)
        self._measure_bounds = (new_state.measure_lower, new_state.measure_upper)
        self._rules_dev = (new_state.mu_selection, new_state.restart_period,
                           new_state.restart_no_improvement)

    def _sync_objects(self):
        """Copies the fused slice into the ES and ranker objects."""
        if self._fused_group is not None:
            state = self.state
            self._opt_obj.state = state.opt
            self._ranker_obj.state = state.ranker

    # ------------------------------------------------------------ properties
    @property
    def mean(self):
        """ribsax extension: current mean of the ES (``opt.mean``)."""
        return self.opt.mean

    @property
    def sigma(self):
        """ribsax extension: current step size of the ES (``opt.sigma``), for
        strategies that have one."""
        return self.opt.sigma

    # ------------------------------------------------------------ fusion
    _ask_kernel = staticmethod(es_emitter_ask)
    _tell_kernel = staticmethod(es_emitter_tell)

    #: The ES's ask may run LAPACK (CMA-ES' eigendecomposition).
    _uses_lapack = True

    #: A bandit scheduler runs the ES's kernels on its active members only.
    _loop_members_one_by_one = True

    #: The ES samples from its own distribution, not from the archive.
    _ask_reads_archive = False

    @classmethod
    def _prepare_kernel_stacked(cls, config, states, active=None):
        """The fused ask's lazy eigendecomposition (CMA-ES' ``prepare`` step), only
        for the active members that are due (see
        :func:`~ribsax.emitters._fusion.prepare_due_members`)."""
        return states._replace(opt=prepare_due_members(
            config.es_kernels, config.es_config, states.opt, active))

    @classmethod
    def _ask_kernel_stacked(cls, config, states, view, active=None):
        """Fused ask after :meth:`_prepare_kernel_stacked`: sampling, vmapped."""
        del active
        kernels, es_config = config.es_kernels, config.es_config
        opt, solutions = jax.vmap(
            lambda st: kernels.sample(es_config, st.opt, *_sampling_bounds(config, st),
                                      None))(states)
        return states._replace(opt=opt), solutions

    @classmethod
    def _after_fused_ask(cls, config, states, slots):
        """pyribs' bound-resampling warning, once per asking member that needed
        more resampling rounds than the threshold (``states`` stacked, or one
        emitter's state with ``slots == [0]``)."""
        if config.bounded:
            rounds = np.atleast_1d(np.asarray(states.opt.resample_rounds))[slots]
            for _ in range(int(np.sum(rounds > BOUNDS_SAMPLING_THRESHOLD))):
                warnings.warn(BOUNDS_WARNING, stacklevel=4)

    @classmethod
    def _loop_tell_inputs(cls, config, data, add_info, archive_nonempty):
        """Traced tell inputs (see :meth:`EmitterBase._loop_tell_inputs`). A
        restart due while the archive is empty is skipped (the Python ``tell``
        raises pyribs' IndexError instead)."""
        return ranked_tell_inputs(config.ranker_config, data, add_info,
                                  archive_nonempty)

    def _loop_after(self, iterations: int) -> None:
        self._itrs += int(iterations)

    # ------------------------------------------------------------ ask / tell
    def ask(self):
        """Samples a population from the evolution strategy.

        Returns:
            ``(batch_size, solution_dim)`` read-only NumPy array.
        """
        if not self._kernel_mode:
            return self._opt_obj.ask()
        solutions = np.asarray(self._ask_kernel_mode(stacklevel=3))
        if solutions.flags.writeable:
            solutions.flags.writeable = False
        return solutions

    def _ask_kernel_mode(self, stacklevel):
        """Runs the ask kernel; returns the device array of solutions."""
        with single_threaded_blas():
            state, solutions = jax.block_until_ready(
                run_ask(type(self), self._config, self._kernel_state(), None))
        self.state = state
        if self._config.bounded and int(state.opt.resample_rounds) > \
                BOUNDS_SAMPLING_THRESHOLD:
            warnings.warn(BOUNDS_WARNING, stacklevel=stacklevel)
        return solutions

    def _ask_jax(self):
        if not self._kernel_mode:
            return jnp.asarray(self._opt_obj.ask())
        return self._ask_kernel_mode(stacklevel=4)

    def tell(self, solution, objective, measures, add_info, **fields):
        """Ranks the solutions, updates the ES, and restarts it if needed.

        Args:
            solution: ``(batch_size, solution_dim)`` solutions from :meth:`ask`.
            objective: ``(batch_size,)`` objectives (None is rejected).
            measures: ``(batch_size, measure_dim)`` measures.
            add_info: The archive's ``add`` output for these solutions.
            fields: Extra per-solution fields.

        Raises:
            ValueError: Invalid data or add_info (pyribs' ``validate_batch``).
            IndexError: A restart is due while the archive is empty.
        """
        self._ranked_tell(solution, objective, measures, add_info, fields)

    _host_restart = staticmethod(_host_restart)

    def _objects_restart(self, new_x0) -> None:
        self._opt_obj.reset(new_x0)
