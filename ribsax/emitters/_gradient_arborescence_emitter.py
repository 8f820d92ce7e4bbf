"""GradientArborescenceEmitter: CMA-MEGA and CMA-MAEGA (Fontaine & Nikolaidis 2021)."""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import check_shape, to_device
from ribsax.archives._array_store import committed, device_of
from ribsax.archives._kernels import sample_occupied
from ribsax.emitters import rankers as _rankers
from ribsax.emitters._dqd_common import (
    ASK_BEFORE_MSG,
    jacobian_loop_inputs,
    normalize_jacobian,
    validate_dqd_batch,
)
from ribsax.emitters._emitter_base import (
    EmitterBase,
    _shape_tuple,
    archive_device_view,
)
from ribsax.emitters._evolution_strategy_emitter import _kernel_capable
from ribsax.emitters._fusion import run_ask
from ribsax.emitters._ranked_tell import RankedTellMixin, ranked_tell_inputs
from ribsax.emitters.opt import _get_es, _get_grad_opt
from ribsax.emitters.opt._evolution_strategy_base import (
    parent_weights,
    select_tree,
    single_threaded_blas,
)
from ribsax.emitters.opt._gradient_opt_base import KernelGradientOpt

__all__ = ["GradientArborescenceEmitter", "GAEConfig", "GAEState"]

_BOUNDS_MSG = (
    "bounds, lower_bounds, and upper_bounds must be set to None. "
    "The GradientArborescenceEmitter does not currently support solution "
    "space bounds, as bounding solutions for DQD algorithms such as "
    "CMA-MEGA is an open problem."
)


class GAEConfig(NamedTuple):
    """Static configuration of the emitter's kernels (hashable).

    Attributes:
        es_kernels: :class:`~ribsax.emitters.opt.ESKernels` of the coefficient ES.
        es_config: The ES's static config.
        ranker_kernels: The ranker's kernels.
        ranker_config: The ranker's :class:`~ribsax.emitters.rankers.RankerConfig`.
        grad_kernels: :class:`~ribsax.emitters.opt.GradOptKernels` of the gradient
            optimizer that moves the solution point.
        grad_config: Its static config.
        batch_size: Number of branches per :meth:`ask`.
        num_coefficients: ``1 + measure_dim``.
        solution_shape: Shape of one solution.
        dtype: Solution dtype.
        normalize_grad: Whether ``tell_dqd`` normalises the gradients.
        epsilon: Added to the gradient norms.
    """

    es_kernels: Any
    es_config: Any
    ranker_kernels: Any
    ranker_config: Any
    grad_kernels: Any
    grad_config: Any
    batch_size: int
    num_coefficients: int
    solution_shape: tuple
    dtype: np.dtype
    normalize_grad: bool
    epsilon: float


class GAEState(NamedTuple):
    """State pytree of the emitter.

    Everything the ``ask_dqd -> tell_dqd -> ask -> tell`` cycle carries lives here:
    the solution point (in ``grad_opt``), the stored Jacobian, and the coefficients
    sampled by the last ``ask`` (``opt.solutions``, which the ES's ``tell`` uses, so
    the coefficients that are ranked and recombined are by construction the ones
    that produced the returned solutions).

    Attributes:
        opt: ES state over the ``1 + measure_dim`` gradient coefficients.
        ranker: Ranker state.
        grad_opt: Gradient-optimizer state (``grad_opt.theta`` is the solution point).
        jacobian: ``(1 + measure_dim, *solution_shape)`` (normalised) Jacobian of the
            solution point, from the last ``tell_dqd``.
        key: PRNG key for choosing the elite a restart starts from.
        itrs: int32 number of tells.
        restarts: int32 number of restarts.
        measure_lower: ``(measure_dim,)`` archive lower bounds (direction rankers).
        measure_upper: ``(measure_dim,)`` archive upper bounds.
        mu_selection: bool, ``selection_rule == "mu"``.
        restart_period: int32 ``k`` of an int ``restart_rule`` (0 otherwise).
        restart_no_improvement: bool, ``restart_rule == "no_improvement"``.
    """

    opt: Any
    ranker: Any
    grad_opt: Any
    jacobian: jax.Array
    key: jax.Array
    itrs: jax.Array
    restarts: jax.Array
    measure_lower: jax.Array
    measure_upper: jax.Array
    mu_selection: jax.Array
    restart_period: jax.Array
    restart_no_improvement: jax.Array


# ---------------------------------------------------------------------------
# Pure kernels.
# ---------------------------------------------------------------------------
def gae_ask_dqd(config: GAEConfig, state: GAEState, view):
    """Returns the solution point as a batch of one (pure; ``view`` unused)."""
    del config, view
    return state, state.grad_opt.theta[None]


def gae_tell_dqd(config: GAEConfig, state: GAEState, inputs, view):
    """Stores the (normalised) Jacobian of the solution point.

    Args:
        config: Static configuration.
        state: Emitter state.
        inputs: ``{"jacobian": (1, 1 + measure_dim, *solution_shape)}``.
        view: Unused.

    Returns:
        ``(state, None)``.
    """
    del view
    jacobian = jnp.asarray(inputs["jacobian"]).astype(config.dtype)[0]
    if config.normalize_grad:
        jacobian = normalize_jacobian(jacobian, config.epsilon, len(config.solution_shape))
    return state._replace(jacobian=jacobian), None


def branch(theta, coefficients, jacobian):
    """Gradient arborescence ``theta + sum_j c_ij J_j`` for every row ``i`` of
    ``coefficients`` (``(batch, 1 + m)``; ``jacobian`` is ``(1 + m, *shape)``).

    The sum over the ``1 + m`` gradients is unrolled into broadcast multiply-adds:
    on CPU that is about half the time of a (batched) ``tensordot`` for these
    shapes."""
    trailing = (1,) * (jacobian.ndim - 1)
    out = theta
    for j in range(jacobian.shape[0]):
        out = out + coefficients[:, j].reshape((-1,) + trailing) * jacobian[j]
    return out


def gae_ask(config: GAEConfig, state: GAEState, view):
    """Samples coefficients from the ES and branches from the solution point."""
    del view
    opt, coefficients = config.es_kernels.ask(config.es_config, state.opt, None, None, None)
    solutions = branch(state.grad_opt.theta, coefficients, state.jacobian)
    return state._replace(opt=opt), solutions.astype(config.dtype)


def gae_tell(config: GAEConfig, state: GAEState, inputs, view):
    """Ranks the branches, updates the coefficient ES, moves the solution point
    and restarts if needed (pure counterpart of pyribs' ``tell``).

    The solution point steps towards the log-rank weighted mean of the best
    ``num_parents`` solutions (``grad_opt.step(mean - theta)``; with zero parents
    the mean is 0, pyribs' empty-sum quirk). A restart (ES ``check_stop`` or the
    restart rule) moves the point to a uniformly sampled elite of ``view``, resets
    the ES to zero coefficients and resets the ranker.

    Args:
        config: Static configuration.
        state: State after :func:`gae_ask`.
        inputs: Dict with ``solution``, ``objective``, ``measures``, ``status``,
            ``value``, the ranker's extra fields and ``allow_restart`` (False
            leaves a due restart to the host).
        view: :class:`~ribsax.emitters._emitter_base.ArchiveView` of the archive.

    Returns:
        ``(state, restart)`` with the bool restart decision.
    """
    status = inputs["status"]
    new_sols = jnp.sum(status != 0).astype(jnp.int32)
    fields = _rankers.required_fields(config.ranker_config)
    indices, values = config.ranker_kernels.rank(
        config.ranker_config,
        state.ranker,
        None,
        None,
        inputs["objective"],
        inputs["measures"],
        {name: inputs[name] for name in fields},
    )
    num_parents = jnp.where(
        state.mu_selection, jnp.asarray(config.batch_size // 2, jnp.int32), new_sols
    )
    opt = config.es_kernels.tell(config.es_config, state.opt, indices, values, num_parents)

    theta = state.grad_opt.theta
    weights, _ = parent_weights(num_parents, config.batch_size, config.dtype)
    parents = jnp.asarray(inputs["solution"]).astype(config.dtype)[indices]
    new_mean = jnp.tensordot(weights, parents, axes=1)
    new_mean = jnp.where(num_parents > 0, new_mean, jnp.zeros_like(new_mean))
    grad_opt = config.grad_kernels.step(config.grad_config, state.grad_opt, new_mean - theta)

    itrs = state.itrs + 1
    stop = config.es_kernels.check_stop(config.es_config, opt, values[indices])
    period = state.restart_period
    by_period = (period != 0) & (itrs % jnp.where(period == 0, 1, period) == 0)
    restart = stop | by_period | (state.restart_no_improvement & (new_sols == 0))

    key, sub = jax.random.split(state.key)
    cell = sample_occupied(sub, view, 1)[0]
    x0 = view.solution[cell].reshape(theta.shape).astype(theta.dtype)
    do_reset = restart & inputs["allow_restart"]
    new_state = state._replace(
        opt=select_tree(do_reset, _reset_es(config, opt), opt),
        ranker=select_tree(do_reset, _reset_ranker(config, state), state.ranker),
        grad_opt=select_tree(do_reset, config.grad_kernels.init(config.grad_config, x0), grad_opt),
        key=key,
        itrs=itrs,
        restarts=state.restarts + do_reset.astype(jnp.int32),
    )
    return new_state, restart


def _reset_es(config, opt):
    return config.es_kernels.reset(
        config.es_config, opt, jnp.zeros(config.num_coefficients, config.dtype)
    )


def _reset_ranker(config, state):
    return config.ranker_kernels.reset(
        config.ranker_config, state.ranker, state.measure_lower, state.measure_upper
    )


@partial(jax.jit, static_argnums=(0,))
def _host_restart(config, state, x0):
    """Restart at ``x0`` (an elite sampled on the host)."""
    return state._replace(
        opt=_reset_es(config, state.opt),
        ranker=_reset_ranker(config, state),
        grad_opt=config.grad_kernels.init(
            config.grad_config, x0.astype(state.grad_opt.theta.dtype)
        ),
        restarts=state.restarts + 1,
    )


def _grad_opt_capable(grad_opt) -> bool:
    """Whether ``grad_opt`` is a built-in, kernel-backed gradient optimizer."""
    if not isinstance(grad_opt, KernelGradientOpt):
        return False
    cls = type(grad_opt)
    return (
        cls.step is KernelGradientOpt.step
        and cls.reset is KernelGradientOpt.reset
        and cls.theta is KernelGradientOpt.theta
    )


def _flush_group(group) -> None:
    """Writes the pending Jacobians of the members of ``group`` into its stacked
    state at once (one transfer instead of one scatter per member)."""
    slots, values = [], []
    for slot, emitter in enumerate(group.emitters):
        pending = getattr(emitter, "_pending_jacobian", None)
        if pending is not None and emitter._fused_group is group:
            slots.append(slot)
            values.append(pending)
            emitter._pending_jacobian = None
    if not slots:
        return
    stacked = group.stacked_state
    if len(slots) == len(group):
        # Committed like the rest of the stacked state: an uncommitted leaf made
        # the next ask step re-place the whole state on the device.
        jacobian = committed(
            np.stack(values).astype(stacked.jacobian.dtype), device_of(stacked.jacobian)
        )
    else:
        jacobian = stacked.jacobian.at[np.asarray(slots)].set(np.stack(values))
    group._set_stacked(stacked._replace(jacobian=jacobian))


def _theta_leaf(stacked):
    return stacked.grad_opt.theta


class GradientArborescenceEmitter(RankedTellMixin, EmitterBase):
    r"""Gradient arborescence with ES-adapted coefficients: CMA-MEGA and CMA-MAEGA.

    From `Fontaine & Nikolaidis 2021 <https://arxiv.org/abs/2106.03894>`_. The
    emitter keeps a *solution point* :math:`\theta`. :meth:`ask_dqd` returns it so
    that the objective and measure gradients can be evaluated there, and
    :meth:`tell_dqd` stores them (normalised by default). :meth:`ask` then samples
    coefficients :math:`c_i \sim \mathcal{N}(\mu, \sigma^2 C)` from an evolution
    strategy over the ``1 + measure_dim`` coefficients and returns the branches

    .. math::

        \theta'_i = \theta + c_{i,0} \nabla f(\theta)
            + \sum_{j=1}^{k} c_{i,j} \nabla m_j(\theta).

    :meth:`tell` ranks the branches with the ranker, updates the ES with the
    ranking (the coefficients are those that produced the branches: they are kept
    in the state between ``ask`` and ``tell``), moves :math:`\theta` with the
    gradient optimizer towards the log-rank weighted mean of the selected branches,
    and restarts (solution point at a random elite, ES at zero coefficients, ranker
    reset) when the ES stops or the restart rule fires.

    Call order: :meth:`ask_dqd`, :meth:`tell_dqd`, then :meth:`ask`, :meth:`tell`.

    With the built-in ES, ranker and gradient optimizer, ``ask`` and ``tell`` are one
    jitted kernel each and a scheduler fuses emitters of equal configuration; the
    state (:class:`GAEState`) holds the solution point, the Jacobian and the sampled
    coefficients, so the kernels can also run in a pure ``lax.scan`` loop. Custom
    classes run through their object methods, as in pyribs. Differences from pyribs:
    randomness comes from JAX PRNG keys; the restart elite is drawn with the emitter's
    own key on the device (the archive's generator is not consumed); ``tell_dqd``
    expects the Jacobian of exactly one solution (the solution point), as
    :meth:`ask_dqd` returns one.

    Args:
        archive: Archive of solutions.
        x0: Initial solution point, of shape ``archive.solution_dim``.
        sigma0: Initial step size of the coefficient distribution.
        lr: Learning rate of the gradient optimizer.
        ranker: Ranker name or callable taking a seed (see
            :mod:`ribsax.emitters.rankers`).
        selection_rule: ``"filter"`` (parents are the branches that entered the
            archive) or ``"mu"`` (the top half).
        restart_rule: ``"no_improvement"``, ``"basic"`` or an int ``k``.
        grad_opt: ``"adam"``, ``"gradient_ascent"``, a full class name, or a callable
            taking ``theta0`` and ``lr`` and returning a
            :class:`~ribsax.emitters.opt.GradientOptBase`.
        grad_opt_kwargs: Extra keyword arguments of the gradient optimizer.
        es: ES name or callable (see :mod:`ribsax.emitters.opt`).
        es_kwargs: Extra keyword arguments of the ES.
        normalize_grad: Whether :meth:`tell_dqd` divides each gradient by its norm
            (plus ``epsilon``).
        bounds: Must be None (bounds are not supported).
        lower_bounds: Must be None.
        upper_bounds: Must be None.
        batch_size: Branches per :meth:`ask` (None: the ES default for
            ``1 + measure_dim`` dimensions, ``4 + int(3 ln(1 + m))`` for CMA-ES). The
            solution point of :meth:`ask_dqd` is not counted.
        epsilon: Added to the gradient norms when normalising.
        seed: None, an int or a :class:`numpy.random.SeedSequence`; split into the
            ES and ranker seeds with ``SeedSequence(seed).spawn(2)``.

    Raises:
        ValueError: A bound is given, x0 has the wrong shape, or
            ``selection_rule``, ``restart_rule``, ``ranker``, ``grad_opt`` or ``es`` is
            invalid.
    """

    def __init__(
        self,
        archive,
        *,
        x0,
        sigma0,
        lr,
        ranker="2imp",
        selection_rule="filter",
        restart_rule="no_improvement",
        grad_opt="adam",
        grad_opt_kwargs=None,
        es="cma_es",
        es_kwargs=None,
        normalize_grad=True,
        bounds=None,
        lower_bounds=None,
        upper_bounds=None,
        batch_size=None,
        epsilon=1e-8,
        seed=None,
    ):
        if bounds is not None or lower_bounds is not None or upper_bounds is not None:
            raise ValueError(_BOUNDS_MSG)
        EmitterBase.__init__(
            self,
            archive,
            solution_dim=archive.solution_dim,
            bounds=None,
            lower_bounds=None,
            upper_bounds=None,
        )
        seed_sequence = (
            seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        )
        opt_seed, ranker_seed = seed_sequence.spawn(2)

        dtype = archive.dtypes["solution"]
        self._epsilon = epsilon
        self._x0 = np.array(x0, dtype=dtype)
        check_shape(self._x0, "x0", archive.solution_dim, "archive.solution_dim")
        self._sigma0 = sigma0
        self._normalize_grads = bool(normalize_grad)
        self._has_jacobian = False
        self._jacobian_host = None  # Object mode only.
        self._pending_jacobian = None  # Fused members: written on next use.

        self._ranker_obj = _rankers._get_ranker(ranker, ranker_seed)
        self._ranker_obj.reset(self, archive)

        self._init_rules(selection_rule, restart_rule)

        self._num_coefficients = archive.measure_dim + 1
        self._grad_opt_obj = _get_grad_opt(
            grad_opt,
            theta0=self._x0,
            lr=lr,
            **(grad_opt_kwargs if grad_opt_kwargs is not None else {}),
        )
        self._opt_obj = _get_es(
            es,
            sigma0=sigma0,
            batch_size=batch_size,
            solution_dim=self._num_coefficients,
            seed=opt_seed,
            dtype=dtype,
            lower_bounds=-np.inf,
            upper_bounds=np.inf,
            **(es_kwargs if es_kwargs is not None else {}),
        )
        self._opt_obj.reset(np.zeros(self._num_coefficients))
        self._batch_size = self._opt_obj.batch_size

        self._kernel_mode = _kernel_capable(self._opt_obj, self._ranker_obj) and _grad_opt_capable(
            self._grad_opt_obj
        )
        self._config = None
        if self._kernel_mode:
            self._setup_kernels(ranker_seed)

    def _setup_kernels(self, ranker_seed):
        archive = self.archive
        ranker = self._ranker_obj
        dtype = np.dtype(archive.dtypes["solution"])
        lower, upper, key = self._setup_ranker(ranker_seed)
        shape = _shape_tuple(self.solution_dim)
        self._config = GAEConfig(
            es_kernels=self._opt_obj.kernels,
            es_config=self._opt_obj.config,
            ranker_kernels=ranker.kernels,
            ranker_config=ranker.config,
            grad_kernels=self._grad_opt_obj.kernels,
            grad_config=self._grad_opt_obj.config,
            batch_size=int(self._batch_size),
            num_coefficients=int(self._num_coefficients),
            solution_shape=shape,
            dtype=dtype,
            normalize_grad=self._normalize_grads,
            epsilon=float(self._epsilon),
        )
        mu_selection, restart_period, restart_no_improvement = self._rule_arrays()
        self._state = GAEState(
            opt=self._opt_obj.state,
            ranker=ranker.state,
            grad_opt=self._grad_opt_obj.state,
            jacobian=to_device(np.zeros((self._num_coefficients, *shape), dtype)),
            key=key,
            itrs=to_device(0, np.int32),
            restarts=to_device(0, np.int32),
            measure_lower=lower,
            measure_upper=upper,
            mu_selection=mu_selection,
            restart_period=restart_period,
            restart_no_improvement=restart_no_improvement,
        )
        self._device_view_ok = archive_device_view(archive) is not None

    # ------------------------------------------------------------ properties
    @property
    def batch_size_dqd(self) -> int:
        """Number of solutions returned by :meth:`ask_dqd` (always 1: the solution
        point)."""
        return 1

    @property
    def epsilon(self):
        """Added to the gradient norms when :meth:`tell_dqd` normalises them."""
        return self._epsilon

    @property
    def theta(self) -> np.ndarray:
        """ribsax extension: the current solution point."""
        if not self._kernel_mode:
            return np.array(self._grad_opt_obj.theta)
        if self._fused_group is not None:
            return np.array(self._fused_group.host_leaf(_theta_leaf)[self._fused_index])
        return np.array(self._state.grad_opt.theta)

    def _sync_objects(self):
        if self._kernel_mode:
            state = self.state
            self._opt_obj.state = state.opt
            self._ranker_obj.state = state.ranker
            self._grad_opt_obj.state = state.grad_opt

    @property
    def grad_opt(self):
        """ribsax extension: the gradient optimizer holding the solution point."""
        self._sync_objects()
        return self._grad_opt_obj

    # pyribs code sometimes reads the private attribute.
    _grad_opt = grad_opt

    # ------------------------------------------------------------ fusion / loop
    _ask_kernel = staticmethod(gae_ask)
    _tell_kernel = staticmethod(gae_tell)
    _ask_dqd_kernel = staticmethod(gae_ask_dqd)
    _tell_dqd_kernel = staticmethod(gae_tell_dqd)

    #: The coefficient ES's ask may run LAPACK (CMA-ES' eigendecomposition).
    _uses_lapack = True

    def _fused_ask_ready(self) -> bool:
        self._flush_pending()
        return self.fusion_key is not None and self._has_jacobian

    def _loop_ready(self) -> bool:
        return self.fusion_key is not None

    _loop_tell_dqd_inputs = classmethod(jacobian_loop_inputs)

    @classmethod
    def _loop_tell_inputs(cls, config, data, add_info, archive_nonempty):
        return {
            "solution": data["solution"],
            **ranked_tell_inputs(config.ranker_config, data, add_info, archive_nonempty),
        }

    def _loop_after(self, iterations: int) -> None:
        self._itrs += int(iterations)
        if iterations:
            self._has_jacobian = True

    def _fused_ask_dqd_ready(self) -> bool:
        self._flush_pending()
        return True

    def _after_traced_tell_dqd(self) -> None:
        self._has_jacobian = True

    #: The tell kernel also reads the branches.
    _tell_data_fields = ("solution", "objective", "measures")

    def _tell_ready(self) -> bool:
        return self._has_jacobian

    def _set_jacobian(self, jacobian: np.ndarray) -> None:
        """Stores the Jacobian. A fused member defers the write: the pending
        Jacobians of a group are written in one transfer before the group's next
        use of its stacked state (see :func:`_flush_group`)."""
        if self._fused_group is None:
            self._state = self._state._replace(
                jacobian=committed(np.asarray(jacobian), device_of(self._state.jacobian))
            )
        else:
            self._pending_jacobian = jacobian

    def _flush_pending(self) -> None:
        if self._pending_jacobian is not None:
            if self._fused_group is None:
                jacobian, self._pending_jacobian = self._pending_jacobian, None
                self._set_jacobian(jacobian)
            else:
                _flush_group(self._fused_group)

    @property
    def state(self):
        """The emitter's :class:`GAEState` (its slice of the stack when fused)."""
        self._flush_pending()
        return EmitterBase.state.fget(self)

    @state.setter
    def state(self, new_state):
        self._flush_pending()
        EmitterBase.state.fset(self, new_state)

    def _detach(self) -> None:
        self._flush_pending()
        EmitterBase._detach(self)

    # ------------------------------------------------------------ DQD
    def ask_dqd(self):
        """Returns the solution point, whose gradients must be evaluated.

        Returns:
            ``(1, *solution_dim)`` NumPy array.
        """
        return self.theta[None]

    def tell_dqd(self, solution, objective, measures, jacobian, add_info, **fields):
        """Stores the Jacobian of the solution point from :meth:`ask_dqd`.

        Args:
            solution: ``(1, solution_dim)`` solution from :meth:`ask_dqd`.
            objective: ``(1,)`` objective.
            measures: ``(1, measure_dim)`` measures.
            jacobian: ``(1, 1 + measure_dim, solution_dim)``: the objective gradient
                followed by the measure gradients.
            add_info: The archive's ``add`` output for the solution.
            fields: Extra per-solution fields.

        Raises:
            ValueError: Invalid data, add_info or Jacobian (shape or non-finite
                entries), or a Jacobian for more than one solution.
        """
        _, _, jacobian = validate_dqd_batch(
            self.archive,
            {"solution": solution, "objective": objective, "measures": measures, **fields},
            add_info,
            jacobian,
        )
        if self._normalize_grads:
            jacobian = normalize_jacobian(jacobian, self._epsilon, jacobian.ndim - 2, xp=np)
        if not self._kernel_mode:
            self._jacobian_host = jacobian
            self._has_jacobian = True
            return
        if jacobian.shape[0] != 1:
            raise ValueError(
                "GradientArborescenceEmitter.tell_dqd expects the jacobian of the "
                f"single solution returned by ask_dqd(), but it has shape "
                f"{jacobian.shape}."
            )
        self._set_jacobian(np.asarray(jacobian[0], dtype=self._config.dtype))
        self._has_jacobian = True

    @classmethod
    def _group_tell_dqd(cls, emitters, data_slices, jacobian_slices, add_info_slices):
        """:meth:`tell_dqd` of the members of a fusion group at once: one validation
        of the concatenated slices and one normalisation (the same checks and
        arithmetic, row by row, as the members' own calls).

        Returns:
            False (nothing done) when a member is not in kernel mode, a slice is
            not one row, or validation fails: the members are then told one by one,
            which raises each one's own error.
        """
        if not all(e._kernel_mode for e in emitters) or any(len(j) != 1 for j in jacobian_slices):
            return False
        first = emitters[0]
        data = {
            name: None
            if data_slices[0][name] is None
            else np.concatenate([d[name] for d in data_slices])
            for name in data_slices[0]
        }
        add_info = {
            name: np.concatenate([a[name] for a in add_info_slices]) for name in add_info_slices[0]
        }
        try:
            _, _, jacobian = validate_dqd_batch(
                first.archive, data, add_info, np.concatenate(jacobian_slices)
            )
        except ValueError:
            return False
        if first._normalize_grads:
            jacobian = normalize_jacobian(jacobian, first._epsilon, jacobian.ndim - 2, xp=np)
        jacobian = np.asarray(jacobian, dtype=first._config.dtype)
        for emitter, row in zip(emitters, jacobian):
            emitter._set_jacobian(row)
            emitter._has_jacobian = True
        return True

    # ------------------------------------------------------------ ask / tell
    def ask(self):
        """Samples gradient coefficients from the ES and branches from the solution
        point.

        Returns:
            ``(batch_size, *solution_dim)`` NumPy array.

        Raises:
            RuntimeError: :meth:`tell_dqd` was never called.
        """
        if not self._has_jacobian:
            raise RuntimeError(ASK_BEFORE_MSG)
        if not self._kernel_mode:
            coefficients = self._opt_obj.ask()[:, :, None]
            return self._grad_opt_obj.theta + np.sum(self._jacobian_host * coefficients, axis=1)
        with single_threaded_blas():
            state, solutions = jax.block_until_ready(
                run_ask(type(self), self._config, self._kernel_state(), None)
            )
        self.state = state
        return np.array(solutions)

    def tell(self, solution, objective, measures, add_info, **fields):
        """Ranks the branches, updates the coefficient ES, moves the solution point
        and restarts if needed.

        Args:
            solution: ``(batch_size, solution_dim)`` solutions from :meth:`ask`.
            objective: ``(batch_size,)`` objectives.
            measures: ``(batch_size, measure_dim)`` measures.
            add_info: The archive's ``add`` output.
            fields: Extra per-solution fields.

        Raises:
            ValueError: Invalid data or add_info.
            RuntimeError: :meth:`tell_dqd` was never called.
            IndexError: A restart is due while the archive is empty.
        """
        self._ranked_tell(solution, objective, measures, add_info, fields)

    _host_restart = staticmethod(_host_restart)

    def _objects_step(self, data, indices, num_parents) -> None:
        """Object mode: moves the solution point towards the log-rank weighted
        mean of the parents."""
        parents = data["solution"][indices][:num_parents]
        weights = np.log(num_parents + 0.5) - np.log(np.arange(1, num_parents + 1))
        weights = weights / np.sum(weights)
        new_mean = np.sum(parents * np.expand_dims(weights, axis=1), axis=0)
        self._grad_opt_obj.step(new_mean - self._grad_opt_obj.theta)

    def _objects_restart(self, new_x0) -> None:
        self._grad_opt_obj.reset(new_x0)
        self._opt_obj.reset(np.zeros(self._num_coefficients))
