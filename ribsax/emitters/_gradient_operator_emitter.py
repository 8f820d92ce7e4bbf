"""GradientOperatorEmitter: OG-MAP-Elites and OMG-MEGA (Fontaine & Nikolaidis 2021)."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._normal import standard_normal
from ribsax._utils import to_device
from ribsax.archives._kernels import sample_occupied
from ribsax.emitters._dqd_common import (
    ASK_BEFORE_MSG,
    normalize_jacobian,
    validate_dqd_batch,
)
from ribsax.emitters._emitter_base import (
    ArchiveView,
    EmitterBase,
    _shape_tuple,
    archive_device_view,
)
from ribsax.emitters._emitter_kernel import EmitterKernel
from ribsax.emitters._jax_emitter import JaxEmitter, _JaxDQDEmitter, _run_ask, _run_tell
from ribsax.emitters._variation_emitter import ArchiveParentsMixin

__all__ = ["GradientOperatorEmitter", "GradientOperatorKernel", "GOEState"]


class GOEState(NamedTuple):
    """State pytree of :class:`GradientOperatorKernel`.

    Attributes:
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
        dqd_rows: int32 rows of the last ``tell_dqd``: -1 before any, 0 when it
            had none (``ask`` then returns none), else the batch size.
    """

    x0: jax.Array
    sigma: jax.Array
    sigma_g: jax.Array
    line_sigma: jax.Array
    lower_bounds: jax.Array
    upper_bounds: jax.Array
    parents: jax.Array
    jacobian: jax.Array
    dqd_rows: jax.Array


@dataclasses.dataclass(frozen=True)
class GradientOperatorKernel(EmitterKernel):
    """The :class:`~ribsax.emitters.EmitterKernel` of
    :class:`GradientOperatorEmitter` (a DQD kernel without ``tell``).

    :meth:`ask_dqd` samples parents from the archive (``x0`` while it is empty),
    perturbs them (isotropic Gaussian, plus the LineDD step for ``iso_line_dd``),
    clips them to the bounds and keeps them in the state; :meth:`tell_dqd` stores
    their (normalised) Jacobian; :meth:`ask` branches from each parent along its
    gradients (no clipping, as in pyribs).

    Attributes:
        batch_size: Solutions per :meth:`ask_dqd` and :meth:`ask`.
        num_coefficients: ``1 + measure_dim``.
        solution_shape: Shape of one solution.
        dtype: Solution dtype.
        iso_line_dd: Whether ``ask_dqd`` applies Iso+LineDD.
        measure_gradients: Whether ``ask`` branches along the measure gradients.
        normalize_grad: Whether ``tell_dqd`` normalises the gradients.
        epsilon: Added to the gradient norms.
        isotropic: Whether ``ask_dqd`` draws the isotropic perturbation (False
            when every entry of ``sigma`` is 0, as in OMG-MEGA: the parents are
            then the sampled elites, and nothing is drawn).
    """

    batch_size: int
    num_coefficients: int
    solution_shape: tuple
    dtype: Any
    iso_line_dd: bool
    measure_gradients: bool
    normalize_grad: bool
    epsilon: float
    isotropic: bool = True

    #: ``ask`` branches from the stored parents without reading the archive.
    ask_reads_archive = False

    def init(self, key, archive, *, x0, sigma, sigma_g, line_sigma, lower_bounds, upper_bounds):
        """The state (see :class:`GOEState` for the arguments), with zero parents
        and Jacobian."""
        del key, archive
        shape = (self.batch_size, *self.solution_shape)
        return GOEState(
            x0=to_device(x0),
            sigma=to_device(sigma),
            sigma_g=to_device(sigma_g),
            line_sigma=to_device(line_sigma, self.dtype),
            lower_bounds=to_device(lower_bounds),
            upper_bounds=to_device(upper_bounds),
            parents=to_device(np.zeros(shape, self.dtype)),
            jacobian=to_device(
                np.zeros((self.batch_size, self.num_coefficients, *self.solution_shape), self.dtype)
            ),
            dqd_rows=to_device(-1, np.int32),
        )

    def ask_dqd(self, state, archive, key):
        """Samples, perturbs and clips the parents; keeps them in the state."""
        shape = (self.batch_size,) + self.solution_shape
        k_parents, k_noise, k_dir, k_line = jax.random.split(key, 4)
        sampled = archive.solution[sample_occupied(k_parents, archive, self.batch_size)]
        parents = jnp.where(
            archive.n_occupied > 0, sampled.astype(self.dtype), jnp.broadcast_to(state.x0, shape)
        )
        solutions = parents
        if self.isotropic:
            solutions = solutions + standard_normal(k_noise, shape, self.dtype) * state.sigma
        if self.iso_line_dd:
            others = archive.solution[sample_occupied(k_dir, archive, self.batch_size)]
            line = (
                standard_normal(
                    k_line, (self.batch_size,) + (1,) * len(self.solution_shape), self.dtype
                )
                * state.line_sigma
            )
            solutions = solutions + line * (others.astype(self.dtype) - parents)
        solutions = jnp.clip(solutions, state.lower_bounds, state.upper_bounds).astype(self.dtype)
        return state._replace(parents=solutions), solutions

    def tell_dqd(self, state, archive, key, feedback):
        """Stores the (normalised) Jacobian of the parents."""
        del archive, key
        jacobian = jnp.asarray(feedback.jacobian).astype(self.dtype)
        if self.normalize_grad:
            jacobian = normalize_jacobian(jacobian, self.epsilon, len(self.solution_shape))
        return state._replace(jacobian=jacobian, dqd_rows=jnp.asarray(self.batch_size, jnp.int32))

    def ask(self, state, archive, key):
        """Branches from each parent along its gradients.

        With ``measure_gradients`` the coefficients are ``N(0, sigma_g)`` over
        ``1 + measure_dim`` with the objective coefficient made non-negative;
        otherwise the step is ``sigma_g`` times the objective gradient.
        """
        del archive
        if self.measure_gradients:
            coefficients = (
                standard_normal(key, (self.batch_size, self.num_coefficients), self.dtype)
                * state.sigma_g
            )
            coefficients = coefficients.at[:, 0].set(jnp.abs(coefficients[:, 0]))
            offsets = jnp.einsum("bj,bj...->b...", coefficients, state.jacobian)
        else:
            offsets = state.jacobian[:, 0] * state.sigma_g
        return state, (state.parents + offsets).astype(self.dtype)


def _dqd_rows_leaf(stacked):
    return stacked.inner.dqd_rows


class GradientOperatorEmitter(ArchiveParentsMixin, _JaxDQDEmitter):
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

    The emitter is a :class:`~ribsax.emitters.JaxEmitter` running a
    :class:`GradientOperatorKernel`: ``ask_dqd`` and ``ask`` are jitted kernels
    reading the archive's device store, the parents and the Jacobian live in the
    state (:class:`GOEState`), a scheduler fuses emitters of equal configuration
    and the fused loop runs them. Differences from pyribs: randomness
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
        # Rows of the last tell_dqd as far as the host knows (-1: none yet); the
        # state's dqd_rows is read while this is not the batch size.
        self._dqd_rows = -1

        shape = _shape_tuple(self.solution_dim)
        kernel = GradientOperatorKernel(
            batch_size=int(batch_size),
            num_coefficients=int(archive.measure_dim + 1),
            solution_shape=shape,
            dtype=dtype,
            iso_line_dd=self._use_isolinedd,
            measure_gradients=self._measure_gradients,
            normalize_grad=self._normalize_grad,
            epsilon=float(epsilon),
            isotropic=bool(np.any(self._sigma != 0)),
        )
        self._device_view_ok = self._device_view_usable(dtype)
        view = archive_device_view(archive) if self._device_view_ok else self._host_view(dtype)
        self._start_kernel(
            kernel,
            view,
            seed,
            {
                "x0": self._x0 if self._x0 is not None else np.zeros(shape, dtype),
                "sigma": self._sigma,
                "sigma_g": self._sigma_g,
                "line_sigma": line_sigma,
                "lower_bounds": self.lower_bounds,
                "upper_bounds": self.upper_bounds,
            },
            self._initial_solutions,
        )

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

    @property
    def fusion_config(self):
        return self.kernel

    @property
    def fusion_key(self):
        return JaxEmitter.fusion_key.fget(self) if self._device_view_ok else None

    # ------------------------------------------------------------ scheduler
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

    def _rows_told(self) -> int:
        """Rows of the last :meth:`tell_dqd` (-1: none yet), read from the state
        (where the schedulers' traced steps write it) until it is the batch
        size."""
        if self._dqd_rows != self._batch_size:
            if self._fused_group is not None:
                rows = self._fused_group.host_leaf(_dqd_rows_leaf)[self._fused_index]
            else:
                rows = _dqd_rows_leaf(self.state)
            self._dqd_rows = int(rows)
        return self._dqd_rows

    def kernel_ready(self, phase="ask") -> bool:
        """Whether the schedulers' traced steps can run this emitter: not while
        ``initial_solutions`` are pending, nor with a negative noise scale (the
        ask must raise pyribs' error); an ``ask_dqd`` with Iso+LineDD needs
        elites (pyribs raises IndexError otherwise), and an ``ask`` a stored
        Jacobian of the parents."""
        if not JaxEmitter.kernel_ready(self, phase):
            return False
        if self._params_error(True) is not None or self._params_error(False) is not None:
            return False
        if phase == "ask_dqd":
            return not (self._use_isolinedd and self.archive.empty)
        if phase == "ask":
            return self._rows_told() == self._batch_size
        return True

    # ------------------------------------------------------------ DQD
    def _host_view(self, dtype=None):
        """View over the elites of an archive without a device store."""
        dtype = self.kernel.dtype if dtype is None else dtype
        elites = np.asarray(self.archive.data("solution"), dtype=dtype)
        n = len(elites)
        if n == 0:
            elites = np.zeros((1, *_shape_tuple(self.solution_dim)), dtype)
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
        if self._initial_pending():
            return np.empty((0, self.archive.solution_dim))
        error = self._params_error(True)
        if error is not None:
            raise error
        if self.archive.empty and self._use_isolinedd:
            # pyribs samples elites for the line directions: IndexError.
            self.archive.sample_elites(self._batch_size)
        if self._device_view_ok:
            return np.array(self._ask_device(dqd=True))
        view = self._host_view()
        state, solutions = _run_ask(self.kernel, self._kernel_state(view), view, dqd=True)
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
        data, add_info, jacobian = validate_dqd_batch(
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
        state = self.state
        if n:
            view = archive_device_view(self.archive) if self._device_view_ok else self._host_view()
            state, _ = _run_tell(
                self.kernel,
                self._kernel_state(view),
                self._feedback(data, add_info, jacobian),
                view,
                dqd=True,
            )
        else:
            state = state._replace(inner=state.inner._replace(dqd_rows=jnp.zeros((), jnp.int32)))
        self.state = state
        self._dqd_rows = n

    def ask(self):
        """Branches from the solutions of :meth:`ask_dqd` along their gradients.

        Returns:
            ``(batch_size, *solution_dim)`` NumPy array (``initial_solutions`` while
            the archive is empty, if set).

        Raises:
            RuntimeError: :meth:`tell_dqd` was never called.
        """
        if self._initial_pending():
            return np.array(self._initial_batch)
        rows = self._rows_told()
        if rows < 0:
            raise RuntimeError(ASK_BEFORE_MSG)
        if rows == 0:
            return self._empty_solutions()
        error = self._params_error(False)
        if error is not None:
            raise error
        return np.array(self._ask_device())

    def ask_device(self):
        """:meth:`ask` as a device array."""
        return jnp.asarray(self.ask())

    def tell(self, solution, objective, measures, add_info, **fields) -> None:
        """Does nothing: the emitter does not learn from its branches (as in
        pyribs)."""
