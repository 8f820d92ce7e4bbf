"""BayesianOptimizationScheduler: BOP-Elites' scheduler, with archive upscaling."""

from __future__ import annotations

import numpy as np

from ribsax.archives import GridArchive
from ribsax.emitters import BayesianOptimizationEmitter
from ribsax.schedulers._scheduler import Scheduler
from ribsax.schedulers._scheduler_core import rows_of

__all__ = ["BayesianOptimizationScheduler"]


class BayesianOptimizationScheduler(Scheduler):
    """A :class:`Scheduler` for :class:`~ribsax.emitters.BayesianOptimizationEmitter`
    that upscales the archive when the emitters ask for it.

    :meth:`tell` adds the solutions and tells every emitter as
    :class:`Scheduler` does; each emitter returns None or the next resolution of its
    upscale schedule. All emitters must return the same answer; a resolution makes
    every emitter's archive :meth:`~ribsax.archives.GridArchive.retessellate` to it
    (an archive shared by several emitters is retessellated once per emitter, which
    re-inserts the same elites), and each emitter then runs
    :meth:`~ribsax.emitters.BayesianOptimizationEmitter.post_upscale_updates`. The
    ``result_archive`` keeps its resolution.

    The emitters have no pure kernels, so :meth:`ask` and :meth:`tell` always take
    the Python path, and :meth:`~Scheduler.run` needs ``fused=False``.

    pyribs 0.12 quirk, kept deliberately: its check that the emitters share one
    upscale schedule accepts two schedules only when both are None, or when they are
    arrays of *different* shapes with equal elements (broadcasting). Two emitters
    with equal, non-None schedules are therefore rejected with the ValueError below,
    exactly as in pyribs; use one emitter, or ``upscale_schedule=None``, to combine
    several.

    Args:
        archive: A :class:`~ribsax.archives.GridArchive`.
        emitters: List of :class:`~ribsax.emitters.BayesianOptimizationEmitter`.
        result_archive: Optional archive that receives the same solutions.
        add_mode: ``"batch"`` or ``"single"``.

    Raises:
        TypeError: An emitter is not a BayesianOptimizationEmitter, or the archive
            is not a GridArchive (plus :class:`Scheduler`'s checks).
        ValueError: The emitters' upscale schedules differ (see the quirk above).
    """

    def __init__(self, archive, emitters, result_archive=None, *, add_mode="batch"):
        super().__init__(archive, emitters, result_archive, add_mode=add_mode)

        schedule = None
        for i, emitter in enumerate(emitters):
            if not isinstance(emitter, BayesianOptimizationEmitter):
                raise TypeError(
                    "All emitters must be of type BayesianOptimizationEmitter, "
                    f"but emitter{i} has type {emitter.__class__.__name__}"
                )
            if i == 0:
                schedule = emitter.upscale_schedule
                continue
            other = emitter.upscale_schedule
            # pyribs' condition, quirk included (``shape !=``; see the docstring).
            same = (schedule is None and other is None) or (
                isinstance(schedule, np.ndarray)
                and isinstance(other, np.ndarray)
                and schedule.shape != other.shape
                and np.all(schedule == other)
            )
            if not same:
                raise ValueError(
                    "All emitters must have the same upscale schedule. "
                    "emitter0 has upscale schedule "
                    f"{schedule}, but emitter{i} has upscale "
                    f"schedule {other}."
                )

        if not isinstance(archive, GridArchive):
            raise TypeError(
                f"Archive type must be GridArchive. Actually got {archive.__class__.__name__}"
            )
        self._upscale_schedule = None if schedule is None else schedule.copy()

    @property
    def upscale_schedule(self):
        """The emitters' common upscale schedule, or None."""
        return self._upscale_schedule

    @Scheduler.archive.setter
    def archive(self, new_archive):
        """Replaces the archive."""
        self._archive = new_archive

    def ask_dqd(self):
        """Not supported.

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError("ask_dqd() is not supported by BayesianOptimizationScheduler.")

    def tell_dqd(self, objective, measures, jacobian, **fields):
        """Not supported.

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError("tell_dqd() is not supported by BayesianOptimizationScheduler.")

    def tell(self, objective, measures, extras=None, **fields):
        """Adds the solutions, tells the emitters, and upscales when they ask for it.

        Args:
            objective: ``(n,)`` objectives.
            measures: ``(n, measure_dim)`` measures.
            extras: Optional dict of per-solution data for the emitters only, as
                in :meth:`Scheduler.tell <ribsax.schedulers.Scheduler.tell>`.
            fields: Extra per-solution fields.

        Raises:
            RuntimeError: The previous call was not ``ask``.
            ValueError: A length differs from the number of solutions, or the
                emitters returned different upscale resolutions.
        """
        data, _, add_info = self._begin_tell(False, objective, measures, fields, extras=extras)
        self._asked_plan = None

        pos = 0
        resolution = None
        for i, (emitter, n) in enumerate(zip(self._emitters, self._num_emitted)):
            end = pos + n
            answer = emitter.tell(
                **{
                    name: None if arr is None else rows_of(arr, pos, end)
                    for name, arr in data.items()
                },
                add_info={name: arr[pos:end] for name, arr in add_info.items()},
            )
            pos = end
            if self.upscale_schedule is not None:
                if i == 0:
                    resolution = answer
                elif np.any(resolution != answer):
                    raise ValueError(
                        "Emitters returned different upscale resolutions "
                        "when they should return the same. Emitter0 "
                        f"returned resolution {resolution}, but "
                        f"emitter{i} returned resolution {answer}"
                    )

        if resolution is not None:
            for emitter in self._emitters:
                emitter.archive.retessellate(resolution)
                emitter.post_upscale_updates()
