"""Tests for BanditScheduler, with differential checks against pyribs."""

import numpy as np
import pytest
import ribs.schedulers

from ribsax.emitters import GaussianEmitter
from ribsax.schedulers import BanditScheduler
from tests.emitters.emitter_helpers import assert_same_error, grid_pair


class Deterministic:
    """Duck-typed emitter usable by ribs and ribsax: emits seeded random solutions
    and restarts every ``period`` tells (no ``restarts`` attribute if None)."""

    def __init__(self, seed, spread, period=None, batch=4):
        self.rng = np.random.default_rng(seed)
        self.spread, self.batch, self.period = spread, batch, period
        self.solution_dim = 2
        self.tells = 0
        if period is not None:
            self.restarts = 0

    def ask(self):
        return self.rng.uniform(-self.spread, self.spread, size=(self.batch, 2))

    def tell(self, solution, objective, measures, add_info, **fields):
        self.tells += 1
        if self.period is not None and self.tells % self.period == 0:
            self.restarts += 1


def _pool(restart_periods):
    return [Deterministic(i, spread=0.2 + 0.2 * i, period=p) for i, p in enumerate(restart_periods)]


def _run(cls, archive, pool, iterations, **kwargs):
    scheduler = cls(archive, pool, **kwargs)
    actives = []
    for _ in range(iterations):
        solutions = scheduler.ask()
        scheduler.tell(-np.sum(solutions**2, axis=1), solutions)
        actives.append(scheduler.active.copy())
    return scheduler, np.array(actives)


@pytest.mark.parametrize(
    "periods,kwargs",
    [
        ([2, 3, 1, 5, 2, 4], {"num_active": 2}),
        ([None, 2, None, 3, 1], {"num_active": 3}),
        ([2, 3, 1, 5], {"num_active": 2, "reselect": "all"}),
        ([1, 1, 2, 2, 3], {"num_active": 1, "zeta": 1.0}),
        ([2, 2, 3, 3], {"num_active": 2, "add_mode": "single"}),
    ],
)
def test_selection_matches_ribs(periods, kwargs):
    ribs_archive, archive = grid_pair(solution_dim=2, dims=(6, 6))
    ribs_sched, expected = _run(
        ribs.schedulers.BanditScheduler, ribs_archive, _pool(periods), 15, **kwargs
    )
    sched, ours = _run(BanditScheduler, archive, _pool(periods), 15, **kwargs)
    np.testing.assert_array_equal(ours, expected)
    assert np.all(ours.sum(axis=1) == kwargs["num_active"])
    np.testing.assert_array_equal(sched._success, ribs_sched._success)
    np.testing.assert_array_equal(sched._selection, ribs_sched._selection)


def test_first_ask_activates_first_emitters():
    _, archive = grid_pair(solution_dim=2)
    scheduler = BanditScheduler(archive, _pool([1, 1, 1, 1]), num_active=2)
    assert scheduler.ask().shape == (8, 2)
    np.testing.assert_array_equal(scheduler.active, [True, True, False, False])
    assert not scheduler.active.flags.writeable


def test_properties():
    _, archive = grid_pair(solution_dim=2)
    pool = _pool([1, 2])
    scheduler = BanditScheduler(archive, pool, num_active=1)
    assert scheduler.archive is archive and scheduler.result_archive is archive
    assert isinstance(scheduler.emitter_pool, np.ndarray)
    assert scheduler.emitter_pool.dtype == object
    assert list(scheduler.emitter_pool) == pool


@pytest.mark.parametrize(
    "pool,kwargs",
    [
        ("ok", {"num_active": 0}),
        ("ok", {"num_active": 5}),
        (3, {"num_active": 1}),
        ("dup", {"num_active": 1}),
        ("ok", {"num_active": 1, "reselect": "foo"}),
        ("ok", {"num_active": 1, "add_mode": "foo"}),
        ("same", {"num_active": 1}),
    ],
    ids=["zero", "too_few", "not_list", "dup", "reselect", "add_mode", "same_archive"],
)
def test_constructor_errors_match_ribs(pool, kwargs):
    ribs_archive, archive = grid_pair(solution_dim=2)

    def make(cls, arch):
        if pool == "dup":
            emitter = Deterministic(0, 1.0)
            emitters = [emitter, emitter]
        elif pool in ("ok", "same"):
            emitters = _pool([1, 1])
        else:
            emitters = pool
        result = arch if pool == "same" else None
        return cls(arch, emitters, result, **kwargs)

    assert_same_error(
        lambda: make(ribs.schedulers.BanditScheduler, ribs_archive),
        lambda: make(BanditScheduler, archive),
    )


@pytest.mark.parametrize(
    "calls", [["ask", "ask"], ["tell"], ["ask_dqd"], ["tell_dqd"]], ids=lambda c: "-".join(c)
)
def test_call_errors_match_ribs(calls):
    ribs_archive, archive = grid_pair(solution_dim=2)

    def run(cls, arch):
        scheduler = cls(arch, _pool([1, 1]), num_active=1)
        for call in calls:
            if call in ("ask", "ask_dqd"):
                getattr(scheduler, call)()
            elif call == "tell":
                scheduler.tell(np.zeros(4), np.zeros((4, 2)))
            else:
                scheduler.tell_dqd(np.zeros(4), np.zeros((4, 2)), np.zeros((4, 3, 2)))

    assert_same_error(
        lambda: run(ribs.schedulers.BanditScheduler, ribs_archive),
        lambda: run(BanditScheduler, archive),
    )


def test_emitters_without_restarts_are_always_reselected():
    _, archive = grid_pair(solution_dim=2, dims=(6, 6))
    pool = [
        GaussianEmitter(archive, sigma=0.1, x0=np.zeros(2), batch_size=3, seed=i) for i in range(4)
    ]
    _, actives = _run(BanditScheduler, archive, pool, 8, num_active=2)
    assert np.all(actives.sum(axis=1) == 2)
    # Every emitter is tried once early on (UCB1 gives untried emitters +inf).
    assert actives[:3].any(axis=0).all()


def test_empty_archive_warning():
    from ribsax.archives import GridArchive

    archive = GridArchive(
        solution_dim=2, dims=[4, 4], ranges=[(-1, 1)] * 2, learning_rate=0.1, threshold_min=10.0
    )
    scheduler = BanditScheduler(archive, _pool([1, 1]), num_active=1)
    solutions = scheduler.ask()
    with pytest.warns(UserWarning, match="`archive` was empty before adding"):
        scheduler.tell(np.zeros(len(solutions)), solutions)
