"""Tests for BayesianOptimizationScheduler, differential against pyribs."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest
import ribs.archives
import ribs.emitters
import ribs.schedulers

import ribsax.archives
import ribsax.emitters
import ribsax.schedulers
from tests.emitters.emitter_helpers import assert_same_error

LIBS = {
    "ribs": (ribs.archives, ribs.emitters, ribs.schedulers),
    "ribsax": (ribsax.archives, ribsax.emitters, ribsax.schedulers),
}
INITIAL = np.array([[-0.9, -0.9], [0.9, 0.9], [-0.9, 0.9], [0.3, -0.2]])


def _sphere(solutions):
    """Objective ``2 - |x|^2`` (non-negative on the bounds, as BOP-Elites' default
    ``min_obj=0`` assumes) and the solution as measures."""
    solutions = np.asarray(solutions)
    return 2 - np.sum(solutions**2, axis=1), solutions


def _forcing(cls):
    """A BayesianOptimizationEmitter subclass whose tell returns ``answer``."""

    class Forcing(cls):
        answer = None

        def tell(self, *args, **kwargs):
            super().tell(*args, **kwargs)
            return self.answer

    return Forcing


def _setup(lib, schedules=(None,), emitter_cls=None, archive_cls=None, **kwargs):
    archives, emitters, schedulers = LIBS[lib]
    archive = archives.GridArchive(solution_dim=2, dims=[2, 2], ranges=[(-1, 1)] * 2)
    cls = (
        emitter_cls(emitters.BayesianOptimizationEmitter)
        if emitter_cls
        else emitters.BayesianOptimizationEmitter
    )
    ems = [
        cls(
            archive,
            bounds=[(-1, 1)] * 2,
            initial_solutions=INITIAL,
            upscale_schedule=schedule,
            search_nrestarts=1,
            seed=7,
        )
        for schedule in schedules
    ]
    sched_archive = archive if archive_cls is None else archive_cls(archives)
    return schedulers.BayesianOptimizationScheduler(sched_archive, ems, **kwargs)


def _both(**kwargs):
    return (lambda: _setup("ribs", **kwargs), lambda: _setup("ribsax", **kwargs))


def test_non_bo_emitter_matches_ribs():
    def make(lib):
        archives, emitters, schedulers = LIBS[lib]
        archive = archives.GridArchive(solution_dim=2, dims=[2, 2], ranges=[(-1, 1)] * 2)
        ems = [
            emitters.BayesianOptimizationEmitter(
                archive, bounds=[(-1, 1)] * 2, num_initial_samples=2
            ),
            emitters.GaussianEmitter(archive, sigma=0.1, x0=[0.0, 0.0]),
        ]
        return schedulers.BayesianOptimizationScheduler(archive, ems)

    assert_same_error(lambda: make("ribs"), lambda: make("ribsax"))


@pytest.mark.parametrize(
    "schedules",
    [
        (None, [[2, 2], [4, 4]]),
        ([[2, 2], [4, 4]], None),
        ([[2, 2], [4, 4]], [[2, 2], [4, 8]]),
        # pyribs' quirk, kept: equal schedules are rejected too.
        ([[2, 2], [4, 4]], [[2, 2], [4, 4]]),
    ],
    ids=["none_array", "array_none", "different", "equal_quirk"],
)
def test_schedule_mismatch_matches_ribs(schedules):
    assert_same_error(*_both(schedules=schedules))


def test_broadcast_equal_schedules_accepted_like_ribs():
    """The other side of the quirk: different shapes with equal elements pass."""
    schedules = ([[2, 2], [2, 2]], [[2, 2]])
    expected, scheduler = _setup("ribs", schedules), _setup("ribsax", schedules)
    np.testing.assert_array_equal(scheduler.upscale_schedule, expected.upscale_schedule)


def test_non_grid_archive_matches_ribs():
    def cvt(archives):
        return archives.CVTArchive(
            solution_dim=2, centroids=[[0.0, 0.0], [0.5, 0.5]], ranges=[(-1, 1)] * 2
        )

    assert_same_error(*_both(archive_cls=cvt))


def test_dqd_not_supported_like_ribs():
    expected, scheduler = _setup("ribs"), _setup("ribsax")
    assert_same_error(expected.ask_dqd, scheduler.ask_dqd)
    assert_same_error(
        lambda: expected.tell_dqd(None, None, None), lambda: scheduler.tell_dqd(None, None, None)
    )
    assert_same_error(
        lambda: expected.tell(*_sphere(INITIAL)), lambda: scheduler.tell(*_sphere(INITIAL))
    )


def test_different_upscale_answers_match_ribs():
    schedules = ([[2, 2], [2, 2]], [[2, 2]])  # Accepted (see the quirk).

    def run(lib):
        scheduler = _setup(lib, schedules, emitter_cls=_forcing)
        scheduler.emitters[0].answer = np.array([4, 4])
        scheduler.emitters[1].answer = None
        solutions = scheduler.ask()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scheduler.tell(*_sphere(solutions))

    assert_same_error(lambda: run("ribs"), lambda: run("ribsax"))


@pytest.mark.parametrize("add_mode", ["batch", "single"])
def test_upscale_retessellates_like_ribs(add_mode):
    archives = []
    for lib in ("ribs", "ribsax"):
        scheduler = _setup(lib, ([[2, 2], [4, 4]],), emitter_cls=_forcing, add_mode=add_mode)
        emitter = scheduler.emitters[0]
        emitter.answer = np.array([4, 4])
        solutions = scheduler.ask()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scheduler.tell(*_sphere(solutions))
        assert emitter.archive is scheduler.archive
        archives.append(scheduler.archive)
    expected, archive = archives
    np.testing.assert_array_equal(archive.dims, expected.dims)
    np.testing.assert_array_equal(archive.dims, [4, 4])
    assert archive.cells == expected.cells == 16
    want = expected.data()
    got = archive.data()
    order, want_order = np.argsort(got["index"]), np.argsort(want["index"])
    for name in ("index", "objective", "measures", "solution"):
        np.testing.assert_allclose(got[name][order], want[name][want_order])


def test_short_bop_elites_run_on_sphere_upscales():
    """BOP-Elites on a 2-D sphere: the initial samples fill both cells of a 2x1
    archive, which then finds no new cell and is upscaled to 4x2 once more than
    ``upscale_trigger_threshold`` (1) solutions found nothing new; a passive result
    archive stays at the final resolution."""
    archive = ribsax.archives.GridArchive(solution_dim=2, dims=[2, 1], ranges=[(-1, 1)] * 2)
    result = ribsax.archives.GridArchive(solution_dim=2, dims=[4, 2], ranges=[(-1, 1)] * 2)
    emitter = ribsax.emitters.BayesianOptimizationEmitter(
        archive,
        bounds=[(-1, 1)] * 2,
        upscale_schedule=[[2, 1], [4, 2]],
        num_initial_samples=5,
        search_nrestarts=1,
        entropy_ejie=True,
        seed=1,
    )
    scheduler = ribsax.schedulers.BayesianOptimizationScheduler(archive, [emitter], result)
    assert emitter.upscale_trigger_threshold == 1
    dims_seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            solutions = scheduler.ask()
            assert np.all(np.abs(solutions) <= 1)
            scheduler.tell(*_sphere(solutions))
            dims_seen.append(tuple(archive.dims))
    assert dims_seen == [(2, 1), (2, 1), (4, 2), (4, 2)]
    np.testing.assert_array_equal(result.dims, [4, 2])
    assert emitter.num_evals == 5 + 3
    assert len(result) >= len(archive) > 1
    # The upscaled archive holds the best solution told so far, as does the
    # result archive.
    assert archive.stats.obj_max == result.stats.obj_max


def test_run_is_python_only():
    def evaluate(solutions, key):
        del key
        return -jnp.sum(solutions**2, axis=1), solutions

    scheduler = _setup("ribsax")
    with pytest.raises(ValueError, match="BayesianOptimizationEmitter"):
        scheduler.run(evaluate, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = scheduler.run(evaluate, 2, fused=False)
    assert result.iterations == 2
    assert scheduler.emitters[0].num_evals == len(INITIAL) + 1
