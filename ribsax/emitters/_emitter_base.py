"""EmitterBase: the interface every ribsax emitter implements.

Besides pyribs' public interface (``ask``, ``tell``, ``ask_dqd``, ``tell_dqd``, bounds
properties), this module defines the small protocol that lets a scheduler *fuse*
emitters: emitters whose static configuration is identical are run as one
``jax.vmap``-ed kernel over their stacked states (see :mod:`ribsax.emitters._fusion`).
"""

from __future__ import annotations

import numbers
from abc import ABC

import jax
import numpy as np

from ribsax._utils import (
    check_finite,
    check_is_1d,
    check_shape,
    check_solution_batch_dim,
)
from ribsax.archives._array_store import ensure_committed
from ribsax.archives._kernels import ArchiveView, StoreState, store_view

__all__ = ["EmitterBase", "validate_add_info", "archive_device_view", "ArchiveView"]


def archive_device_view(archive):
    """Returns the :class:`ArchiveView` of ``archive``, or None.

    None means the archive does not keep its solutions in a device
    :class:`~ribsax.archives._kernels.StoreState` (e.g. a user-defined archive, or
    solutions of ``object`` dtype); emitters then sample parents on the host with
    ``archive.sample_elites`` and cannot be fused.
    """
    store = getattr(archive, "store", None)
    state = getattr(store, "state", None)
    if not isinstance(state, StoreState) or "solution" not in state.fields:
        return None
    return store_view(state)


def validate_add_info(add_info: dict, batch_size: int) -> dict:
    """Converts and checks the ``add_info`` an emitter receives in ``tell``.

    Mirrors the add_info part of pyribs' ``validate_batch``: ``status`` must be 1D,
    finite and of length ``batch_size``; ``value`` must be 1D and of length
    ``batch_size``; other entries must have ``batch_size`` rows.

    Args:
        add_info: Dict returned by the archive's ``add``.
        batch_size: Number of solutions.

    Returns:
        A new dict of NumPy arrays.

    Raises:
        ValueError: A check fails.
    """
    out = {}
    for name, arr in add_info.items():
        arr = np.asarray(arr)
        if name == "status":
            check_is_1d(arr, "status", "")
            check_solution_batch_dim(arr, "status", batch_size, is_1d=True)
            check_finite(arr, "status")
        elif name == "value":
            check_is_1d(arr, "value", "")
            check_solution_batch_dim(arr, "value", batch_size, is_1d=True)
        else:
            check_solution_batch_dim(arr, name, batch_size, is_1d=False)
        out[name] = arr
    return out


def _shape_tuple(solution_dim) -> tuple:
    if isinstance(solution_dim, numbers.Integral):
        return (int(solution_dim),)
    return tuple(solution_dim)


class EmitterBase(ABC):
    """Base class for emitters (pyribs' interface).

    Every emitter has an :meth:`ask` method that generates solutions and a
    :meth:`tell` method that receives their evaluations together with the archive's
    ``add_info``. The defaults return no solutions and ignore feedback. DQD emitters
    also override :meth:`ask_dqd` and :meth:`tell_dqd`.

    **Running in the schedulers' traced steps.** Subclass
    :class:`~ribsax.emitters.JaxEmitter` (around an
    :class:`~ribsax.emitters.EmitterKernel`) for an emitter that the schedulers
    fuse with its equals, run in the fused loop of :meth:`Scheduler.run
    <ribsax.schedulers.Scheduler.run>` and in :mod:`ribsax.functional`. Any
    other subclass (pyribs-style, with Python :meth:`ask` and :meth:`tell`) runs
    in the schedulers' ask/tell loop, which calls its methods; its
    :attr:`fusion_key` stays None.

    Args:
        archive: Archive of solutions, e.g. :class:`ribsax.archives.GridArchive`.
        solution_dim: Shape of the solutions (int or tuple).
        bounds: None, or a sequence with one entry per dimension (1D solutions
            only): None for no bound, or ``(lower, upper)`` where either may be None.
        lower_bounds: Alternative to ``bounds`` for any solution shape: None (-inf)
            or an array of shape ``solution_dim``.
        upper_bounds: None (+inf) or an array of shape ``solution_dim``.

    Raises:
        ValueError: ``bounds`` is combined with ``lower_bounds``/``upper_bounds``,
            ``bounds`` has the wrong length or an entry that is not of length 2, or
            ``lower_bounds``/``upper_bounds`` have the wrong shape.
    """

    #: Hashable key of the emitters a scheduler may fuse (stack the states of,
    #: and run as one ``vmap``-ed kernel): equal keys mean the same kernel,
    #: state shapes and archive. None (the default): not fusable.
    fusion_key = None

    def __init__(self, archive, *, solution_dim, bounds, lower_bounds, upper_bounds):
        self._archive = archive
        self._solution_dim = solution_dim
        self._fused_group = None
        self._fused_index = None
        self._state = None

        dtype = archive.dtypes["solution"]
        use_bounds = bounds is not None
        use_lower_upper = lower_bounds is not None or upper_bounds is not None
        if use_bounds and use_lower_upper:
            raise ValueError(
                "Cannot specify both bounds and lower_bounds/upper_bounds; "
                "either specify bounds or specify lower_bounds/upper_bounds."
            )
        if use_bounds:
            self._lower_bounds, self._upper_bounds = self._process_bounds(
                bounds, solution_dim, dtype
            )
        else:
            self._lower_bounds = (
                np.full(solution_dim, -np.inf, dtype=dtype)
                if lower_bounds is None
                else np.asarray(lower_bounds, dtype=dtype)
            )
            self._upper_bounds = (
                np.full(solution_dim, np.inf, dtype=dtype)
                if upper_bounds is None
                else np.asarray(upper_bounds, dtype=dtype)
            )
            check_shape(self._lower_bounds, "lower_bounds", solution_dim, "solution_dim")
            check_shape(self._upper_bounds, "upper_bounds", solution_dim, "solution_dim")

    @staticmethod
    def _process_bounds(bounds, solution_dim, dtype):
        """Turns pyribs-style ``bounds`` into (lower, upper) arrays.

        Raises:
            ValueError: Wrong length of ``bounds`` or of one of its entries.
        """
        lower = np.full(solution_dim, -np.inf, dtype=dtype)
        upper = np.full(solution_dim, np.inf, dtype=dtype)
        if len(bounds) != solution_dim:
            raise ValueError("If it is an array-like, bounds must have length solution_dim")
        for idx, bnd in enumerate(bounds):
            if bnd is None:
                continue
            if len(bnd) != 2:
                raise ValueError("All entries of bounds must be length 2")
            lower[idx] = -np.inf if bnd[0] is None else bnd[0]
            upper[idx] = np.inf if bnd[1] is None else bnd[1]
        return lower, upper

    # ------------------------------------------------------------ properties
    @property
    def archive(self):
        """The archive this emitter reads parents from (and whose dtypes it uses)."""
        return self._archive

    @property
    def solution_dim(self):
        """Shape of the solutions this emitter produces (int or tuple)."""
        return self._solution_dim

    @property
    def lower_bounds(self) -> np.ndarray:
        """Lower bound of each solution entry (-inf where unbounded)."""
        return self._lower_bounds

    @property
    def upper_bounds(self) -> np.ndarray:
        """Upper bound of each solution entry (+inf where unbounded)."""
        return self._upper_bounds

    # ------------------------------------------------------------ fusion state
    @property
    def state(self):
        """The emitter's state pytree (its slice of the stacked state when fused)."""
        if self._fused_group is not None:
            return self._fused_group.member_state(self._fused_index)
        return self._own_state()

    @state.setter
    def state(self, new_state):
        if self._fused_group is not None:
            self._fused_group.set_member_state(self._fused_index, new_state)
        else:
            self._set_own_state(new_state)

    def _kernel_state(self, view=None):
        """:attr:`state`, to be handed to a jitted kernel: committed to the device
        of ``view`` (an :class:`ArchiveView`; None: JAX's default device) unless
        it already is, as the kernels' outputs are. A state created outside jit
        would otherwise make each kernel compile again at its second call."""
        device = None if view is None else view.device
        return ensure_committed(self.state, device)

    def _own_state(self):
        """State when not fused (subclasses may compose it from sub-objects)."""
        return self._state

    def _set_own_state(self, new_state) -> None:
        self._state = new_state

    def _detach(self) -> None:
        """Takes this emitter out of its fusion group (its state comes along)."""
        group = self._fused_group
        if group is not None:
            state = group.member_state(self._fused_index)
            self._fused_group = None
            self._fused_index = None
            self._set_own_state(state)

    @property
    def fusion_config(self):
        """Static (hashable) configuration passed to the kernels."""
        return None

    # ------------------------------------------------------------ ask / tell
    def _empty_solutions(self) -> np.ndarray:
        return np.empty(
            (0, *_shape_tuple(self.solution_dim)), dtype=self.archive.dtypes["solution"]
        )

    def ask(self) -> np.ndarray:
        """Generates solutions; the base class returns an empty
        ``(0, *solution_dim)`` array."""
        return self._empty_solutions()

    def ask_device(self) -> jax.Array:
        """:meth:`ask` as a JAX array: what a scheduler created with
        ``array_backend="jax"`` collects from the emitters it asks one by one.
        The default converts :meth:`ask`'s result;
        :class:`~ribsax.emitters.JaxEmitter` returns its kernel's device array
        without the copy to the host."""
        return jax.numpy.asarray(self.ask())

    def tell(self, solution, objective, measures, add_info, **fields) -> None:
        """Receives the evaluation of solutions from :meth:`ask` (no-op here).

        Args:
            solution: Solutions returned by :meth:`ask`.
            objective: Objective of each solution.
            measures: ``(n, measure_dim)`` measures of each solution.
            add_info: Dict returned by the archive's ``add``.
            fields: Additional per-solution data.
        """

    def ask_dqd(self) -> np.ndarray:
        """Generates solutions whose gradients must be evaluated (DQD emitters);
        returns an empty ``(0, *solution_dim)`` array by default."""
        return self._empty_solutions()

    def tell_dqd(self, solution, objective, measures, jacobian, add_info, **fields) -> None:
        """Receives the gradients of the solutions from :meth:`ask_dqd` (no-op here).

        Args:
            solution: Solutions returned by :meth:`ask_dqd`.
            objective: Objective of each solution.
            measures: Measures of each solution.
            jacobian: ``(n, 1 + measure_dim, solution_dim)`` objective and measure
                gradients.
            add_info: Dict returned by the archive's ``add``.
            fields: Additional per-solution data.
        """

    # ------------------------------------------------------------ pickling
    def __getstate__(self):
        state = self.__dict__.copy()
        if self._fused_group is not None:
            # The stacked state belongs to the group; carry this member's slice.
            state["_pending_state"] = jax.device_get(self.state)
            state["_fused_group"] = None
            state["_fused_index"] = None
        return state

    def __setstate__(self, state):
        pending = state.pop("_pending_state", None)
        self.__dict__.update(state)
        if pending is not None:
            self._set_own_state(jax.tree.map(jax.numpy.asarray, pending))
