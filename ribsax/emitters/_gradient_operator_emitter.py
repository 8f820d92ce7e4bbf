"""GradientOperatorEmitter: OG-MAP-Elites and OMG-MEGA (Fontaine & Nikolaidis 2021)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._normal import standard_normal
from ribsax._utils import kernel_key, to_device
from ribsax.archives._array_store import committed, device_of
from ribsax.archives._kernels import sample_occupied
from ribsax.emitters._dqd_common import (
    ASK_BEFORE_MSG,
    jacobian_loop_inputs,
    normalize_jacobian,
    validate_dqd_batch,
)
from ribsax.emitters._emitter_base import (
    ArchiveView,
    EmitterBase,
    _shape_tuple,
    archive_device_view,
)
from ribsax.emitters._fusion import any_across_trials, run_ask
from ribsax.emitters._variation_emitter import ArchiveParentsMixin

__all__ = ["GradientOperatorEmitter", "GOEConfig", "GOEState"]


class GOEConfig(NamedTuple):
    """Static configuration of the emitter's kernels (hashable).

    Attributes:
        batch_size: Solutions per :meth:`ask_dqd` and :meth:`ask`.
        num_coefficients: ``1 + measure_dim``.
        solution_shape: Shape of one solution.
        dtype: Solution dtype.
        iso_line_dd: Whether ``ask_dqd`` applies Iso+LineDD.
        measure_gradients: Whether ``ask`` branches along the measure gradients.
        normalize_grad: Whether ``tell_dqd`` normalises the gradients.
        epsilon: Added to the gradient norms.
    """

    batch_size: int
    num_coefficients: int
    solution_shape: tuple
    dtype: np.dtype
    iso_line_dd: bool
    measure_gradients: bool
    normalize_grad: bool
    epsilon: float


class GOEState(NamedTuple):
    """State pytree of the emitter.

    Attributes:
        key: PRNG key.
        x0: Parent while the archive is empty (zeros when ``initial_solutions`` is
            used instead).
        sigma: Standard deviation of the ``ask_dqd`` perturbation (scalar or
            per-dimension).
        sigma_g: Gradient step (or coefficient standard deviation).
        line_sigma: Standard deviation of the Iso+LineDD line step.
        lower_bounds: Clipping bounds of ``ask_dqd``.
        upper_bounds: Clipping bounds of ``ask_dqd``.
        parents: ``(batch, *shape)`` solutions of the last ``ask_dqd``.
        jacobian: ``(batch, 1 + measure_dim, *shape)`` (normalised) Jacobian of the
            parents, from the last ``tell_dqd``.
    """

    key: jax.Array
    x0: jax.Array
    sigma: jax.Array
    sigma_g: jax.Array
    line_sigma: jax.Array
    lower_bounds: jax.Array
    upper_bounds: jax.Array
    parents: jax.Array
    jacobian: jax.Array


# ---------------------------------------------------------------------------
# Pure kernels.
# ---------------------------------------------------------------------------
def goe_ask_dqd(config: GOEConfig, state: GOEState, view, sigma_zero=None):
    """Samples parents from the archive (``x0`` while it is empty), perturbs them
    (isotropic Gaussian, plus the LineDD step for ``iso_line_dd``), clips them to
    the bounds and keeps them in the state.

    ``sigma_zero`` (bool scalar; default: whether every entry of ``state.sigma`` is
    0) skips the isotropic draws with a real conditional: with sigma = 0
    (OMG-MEGA) the parents are the sampled elites either way. The stacked kernel
    passes one flag for all members, so the conditional is not turned into a
    select by ``vmap``.

    Returns:
        ``(state, parents[batch, *shape])``.
    """
    shape = (config.batch_size,) + config.solution_shape
    key, k_parents, k_noise, k_dir, k_line = jax.random.split(state.key, 5)
    sampled = view.solution[sample_occupied(k_parents, view, config.batch_size)]
    parents = jnp.where(
        view.n_occupied > 0, sampled.astype(config.dtype), jnp.broadcast_to(state.x0, shape)
    )
    if sigma_zero is None:
        sigma_zero = jnp.all(state.sigma == 0)
    noise = jax.lax.cond(
        sigma_zero,
        lambda key: jnp.zeros(shape, config.dtype),
        lambda key: standard_normal(key, shape, config.dtype) * state.sigma,
        k_noise,
    )
    solutions = parents + noise
    if config.iso_line_dd:
        others = view.solution[sample_occupied(k_dir, view, config.batch_size)]
        line = (
            standard_normal(
                k_line, (config.batch_size,) + (1,) * len(config.solution_shape), config.dtype
            )
            * state.line_sigma
        )
        solutions = solutions + line * (others.astype(config.dtype) - parents)
    solutions = jnp.clip(solutions, state.lower_bounds, state.upper_bounds).astype(config.dtype)
    return state._replace(key=key, parents=solutions), solutions


def goe_tell_dqd(config: GOEConfig, state: GOEState, inputs, view):
    """Stores the (normalised) Jacobian ``inputs["jacobian"]`` of the parents."""
    del view
    jacobian = jnp.asarray(inputs["jacobian"]).astype(config.dtype)
    if config.normalize_grad:
        jacobian = normalize_jacobian(jacobian, config.epsilon, len(config.solution_shape))
    return state._replace(jacobian=jacobian), None


def goe_ask(config: GOEConfig, state: GOEState, view):
    """Branches from each parent along its gradients (no clipping, as in pyribs).

    With ``measure_gradients`` the coefficients are ``N(0, sigma_g)`` over
    ``1 + measure_dim`` with the objective coefficient made non-negative; otherwise
    the step is ``sigma_g`` times the objective gradient.
    """
    del view
    key, sub = jax.random.split(state.key)
    if config.measure_gradients:
        coefficients = (
            standard_normal(sub, (config.batch_size, config.num_coefficients), config.dtype)
            * state.sigma_g
        )
        coefficients = coefficients.at[:, 0].set(jnp.abs(coefficients[:, 0]))
        offsets = jnp.einsum("bj,bj...->b...", coefficients, state.jacobian)
    else:
        offsets = state.jacobian[:, 0] * state.sigma_g
    solutions = (state.parents + offsets).astype(config.dtype)
    return state._replace(key=key), solutions


# The state is donated (the emitter installs the returned one): XLA would otherwise
# copy the unchanged Jacobian into the output on every call.
_ask_dqd_jit = jax.jit(goe_ask_dqd, static_argnums=(0,), donate_argnums=(1,))


class GradientOperatorEmitter(ArchiveParentsMixin, EmitterBase):
    r"""Genetic operator followed by a gradient step: OG-MAP-Elites and OMG-MEGA.

    From `Fontaine & Nikolaidis 2021 <https://arxiv.org/abs/2106.03894>`_.
    :meth:`ask_dqd` samples ``batch_size`` elites (``x0`` while the archive is empty)
    and perturbs them with ``N(0, sigma)`` (and, with ``operator_type="iso_line_dd"``,
    a ``N(0, line_sigma)`` step along the line to another sampled elite; Vassiliades
    2018), clipping to the bounds. After :meth:`tell_dqd` has stored their
    gradients, :meth:`ask` branches from each of them:

    .. math::

        \theta'_i = \theta_i + |c_{i,0}| \nabla f(\theta_i)
            + \sum_{j=1}^k c_{i,j} \nabla m_j(\theta_i),
        \quad c_i \sim \mathcal{N}(0, \sigma_g^2 I)

    with ``measure_gradients=True`` (OMG-MEGA), or
    :math:`\theta'_i = \theta_i + \sigma_g \nabla f(\theta_i)` otherwise
    (OG-MAP-Elites). :meth:`ask` does not clip. :meth:`tell` is a no-op.

    ``ask_dqd`` and ``ask`` are jitted kernels reading the archive's device store; the
    parents and the Jacobian live in the state (:class:`GOEState`), so the kernels
    can also run in a pure ``lax.scan`` loop. Differences from pyribs: randomness
    comes from JAX PRNG keys (the archive's generator is not consumed); ``ask`` can
    be called again before the next ``tell_dqd`` (pyribs' OG-MAP-Elites path
    overwrites its stored Jacobian and then fails); ``tell_dqd`` expects the Jacobian
    of the ``batch_size`` solutions of :meth:`ask_dqd` (or of none).

    Args:
        archive: Archive of solutions.
        sigma: Standard deviation of the ``ask_dqd`` perturbation (scalar or 1D
            per-dimension array).
        sigma_g: Gradient step size (``measure_gradients=False``) or standard
            deviation of the gradient coefficients (``True``).
        initial_solutions: ``(n, *solution_dim)`` solutions returned by :meth:`ask`
            while the archive is empty (``ask_dqd`` then returns none).
        x0: Parent used while the archive is empty (exactly one of ``x0`` and
            ``initial_solutions``).
        line_sigma: Standard deviation of the Iso+LineDD line step.
        measure_gradients: Whether to branch along the measure gradients too.
        normalize_grad: Whether :meth:`tell_dqd` normalises each gradient.
        epsilon: Added to the gradient norms when normalising.
        operator_type: ``"isotropic"`` or ``"iso_line_dd"`` (as in pyribs, any value
            other than ``"isotropic"`` selects Iso+LineDD).
        bounds: None, or per-dimension ``(lower, upper)`` pairs (``ask_dqd`` clips).
        lower_bounds: Alternative to ``bounds``.
        upper_bounds: Alternative to ``bounds``.
        batch_size: Solutions per :meth:`ask_dqd` and :meth:`ask`.
        seed: Seed of the emitter's PRNG key.

    Raises:
        ValueError: Bad bounds, both or neither of ``x0`` and ``initial_solutions``,
            or wrong shapes.
    """

    def __init__(
        self,
        archive,
        *,
        sigma,
        sigma_g,
        initial_solutions=None,
        x0=None,
        line_sigma=0.0,
        measure_gradients=False,
        normalize_grad=False,
        epsilon=1e-8,
        operator_type="isotropic",
        bounds=None,
        lower_bounds=None,
        upper_bounds=None,
        batch_size=64,
        seed=None,
    ):
        EmitterBase.__init__(
            self,
            archive,
            solution_dim=archive.solution_dim,
            bounds=bounds,
            lower_bounds=lower_bounds,
            upper_bounds=upper_bounds,
        )
        dtype = np.dtype(archive.dtypes["solution"])
        self._check_x0(x0, initial_solutions)

        self._sigma = np.array(sigma, dtype=dtype)
        self._sigma_g = np.array(sigma_g, dtype=dtype)
        self._line_sigma = line_sigma
        self._use_isolinedd = operator_type != "isotropic"
        self._measure_gradients = bool(measure_gradients)
        self._normalize_grad = bool(normalize_grad)
        self._epsilon = epsilon
        self._batch_size = batch_size
        self._has_jacobian = False
        self._dqd_rows = None  # Rows of the last tell_dqd (0: none to branch from).

        shape = _shape_tuple(self.solution_dim)
        m1 = archive.measure_dim + 1
        self._config = GOEConfig(
            batch_size=int(batch_size),
            num_coefficients=int(m1),
            solution_shape=shape,
            dtype=dtype,
            iso_line_dd=self._use_isolinedd,
            measure_gradients=self._measure_gradients,
            normalize_grad=self._normalize_grad,
            epsilon=float(epsilon),
        )
        x0_dev = self._x0 if self._x0 is not None else np.zeros(shape, dtype)
        self._state = GOEState(
            key=kernel_key(seed),
            x0=to_device(x0_dev),
            sigma=to_device(self._sigma),
            sigma_g=to_device(self._sigma_g),
            line_sigma=to_device(line_sigma, dtype),
            lower_bounds=to_device(self.lower_bounds),
            upper_bounds=to_device(self.upper_bounds),
            parents=to_device(np.zeros((int(batch_size), *shape), dtype)),
            jacobian=to_device(np.zeros((int(batch_size), m1, *shape), dtype)),
        )
        self._device_view_ok = self._device_view_usable(dtype)

    # ------------------------------------------------------------ properties
    @property
    def sigma(self):
        """Standard deviation of the (diagonal) ``ask_dqd`` perturbation."""
        return self._sigma

    @property
    def batch_size(self):
        """Number of solutions returned by :meth:`ask`."""
        return self._batch_size

    @property
    def batch_size_dqd(self):
        """Number of solutions returned by :meth:`ask_dqd`."""
        return self._batch_size

    @property
    def epsilon(self):
        """Added to the gradient norms when :meth:`tell_dqd` normalises them."""
        return self._epsilon

    # ------------------------------------------------------------ fusion / loop
    def _param_shapes(self) -> tuple:
        return self._sigma.shape

    _ask_kernel = staticmethod(goe_ask)
    _ask_dqd_kernel = staticmethod(goe_ask_dqd)
    _tell_dqd_kernel = staticmethod(goe_tell_dqd)
    #: ``tell`` is a no-op (no tell kernel).
    _tell_kernel = None

    @classmethod
    def _ask_dqd_kernel_stacked(cls, config, states, view):
        """``goe_ask_dqd`` vmapped over the members, with the draws skipped when
        every member (of every trial under ``run_trials``) has sigma = 0."""
        sigma_zero = ~any_across_trials(jnp.any(states.sigma != 0))
        return jax.vmap(lambda st: goe_ask_dqd(config, st, view, sigma_zero))(states)

    def _params_error(self, ask_dqd: bool):
        """The ValueError NumPy's sampler (pyribs) raises for a negative scale."""
        scales = (
            [self._sigma] + ([self._line_sigma] if self._use_isolinedd else [])
            if ask_dqd
            else ([self._sigma_g] if self._measure_gradients else [])
        )
        if any(np.any(np.asarray(s) < 0) for s in scales):
            return ValueError("scale < 0")
        return None

    def _fused_ask_ready(self) -> bool:
        return (
            self.fusion_key is not None
            and self._has_jacobian
            and self._dqd_rows != 0
            and not self._initial_phase()
            and self._params_error(False) is None
        )

    def _loop_ready(self) -> bool:
        return (
            self.fusion_key is not None
            and not self._initial_phase()
            and self._params_error(True) is None
            and self._params_error(False) is None
        )

    _loop_tell_dqd_inputs = classmethod(jacobian_loop_inputs)

    @classmethod
    def _loop_tell_inputs(cls, config, data, add_info, archive_nonempty):
        del config, data, add_info, archive_nonempty
        return {}

    def _loop_after(self, iterations: int) -> None:
        if iterations:
            self._after_traced_tell_dqd()

    def _fused_ask_dqd_ready(self) -> bool:
        # pyribs samples the line directions from the archive: IndexError when it
        # is empty (the Python path raises it).
        return not (self._use_isolinedd and self.archive.empty)

    def _after_traced_tell_dqd(self) -> None:
        self._has_jacobian = True
        self._dqd_rows = self._batch_size

    # ------------------------------------------------------------ DQD
    def _host_view(self):
        """View over the elites of an archive without a device store."""
        elites = np.asarray(self.archive.data("solution"), dtype=self._config.dtype)
        n = len(elites)
        if n == 0:
            elites = np.zeros((1, *self._config.solution_shape), self._config.dtype)
        return ArchiveView(
            jnp.arange(len(elites), dtype=jnp.int32), jnp.asarray(n, jnp.int32), jnp.asarray(elites)
        )

    def ask_dqd(self):
        """Samples and perturbs elites; their gradients must then be evaluated.

        Returns:
            ``(batch_size, *solution_dim)`` NumPy array, or an empty
            ``(0, solution_dim)`` array while the archive is empty and
            ``initial_solutions`` is set.

        Raises:
            IndexError: ``iso_line_dd`` with an empty archive.
            ValueError: A negative ``sigma`` or ``line_sigma``.
        """
        if self._initial_phase():
            return np.empty((0, self.archive.solution_dim))
        error = self._params_error(True)
        if error is not None:
            raise error
        if self.archive.empty and self._use_isolinedd:
            # pyribs samples elites for the line directions: IndexError.
            self.archive.sample_elites(self._batch_size)
        view = archive_device_view(self.archive) if self._device_view_ok else self._host_view()
        state, solutions = _ask_dqd_jit(self._config, self._kernel_state(view), view)
        self.state = state
        return np.array(solutions)

    def tell_dqd(self, solution, objective, measures, jacobian, add_info, **fields):
        """Stores the Jacobian of the solutions from :meth:`ask_dqd`.

        Args:
            solution: Solutions from :meth:`ask_dqd`.
            objective: Their objectives.
            measures: Their measures.
            jacobian: ``(n, 1 + measure_dim, solution_dim)``: objective gradient
                followed by the measure gradients of each solution.
            add_info: The archive's ``add`` output.
            fields: Extra per-solution fields.

        Raises:
            ValueError: Invalid data, add_info or Jacobian, or a Jacobian whose
                length is neither ``batch_size`` nor 0.
        """
        _, _, jacobian = validate_dqd_batch(
            self.archive,
            {"solution": solution, "objective": objective, "measures": measures, **fields},
            add_info,
            jacobian,
        )
        n = jacobian.shape[0]
        if n not in (0, self._batch_size):
            raise ValueError(
                "GradientOperatorEmitter.tell_dqd expects the jacobian of the "
                f"{self._batch_size} solutions returned by ask_dqd(), but it has "
                f"shape {jacobian.shape}."
            )
        if self._normalize_grad:
            jacobian = normalize_jacobian(jacobian, self._epsilon, jacobian.ndim - 2, xp=np)
        if n:
            self.state = self.state._replace(
                jacobian=committed(
                    np.asarray(jacobian, dtype=self._config.dtype), device_of(self.state.jacobian)
                )
            )
        self._dqd_rows = n
        self._has_jacobian = True

    def ask(self):
        """Branches from the solutions of :meth:`ask_dqd` along their gradients.

        Returns:
            ``(batch_size, *solution_dim)`` NumPy array (``initial_solutions`` while
            the archive is empty, if set).

        Raises:
            RuntimeError: :meth:`tell_dqd` was never called.
        """
        if self._initial_phase():
            return self._initial_solutions
        if not self._has_jacobian:
            raise RuntimeError(ASK_BEFORE_MSG)
        if self._dqd_rows == 0:
            return self._empty_solutions()
        error = self._params_error(False)
        if error is not None:
            raise error
        state, solutions = run_ask(type(self), self._config, self._kernel_state(), None)
        self.state = state
        return np.array(solutions)
