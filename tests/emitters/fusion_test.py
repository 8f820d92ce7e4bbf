"""Tests for emitter fusion: fused groups behave exactly like lone emitters."""

import pickle

import numpy as np
import pytest

from ribsax.archives import GridArchive
from ribsax.emitters import (
    EvolutionStrategyEmitter,
    GaussianEmitter,
    GeneticAlgorithmEmitter,
    IsoLineEmitter,
)
from ribsax.schedulers import BanditScheduler, Scheduler

DIM = 6


def _archive():
    return GridArchive(solution_dim=DIM, dims=[8, 8], ranges=[(-3, 3)] * 2)


def _evaluate(solutions):
    return -np.sum(solutions**2, axis=1), solutions[:, :2]


def _loop(scheduler, iterations):
    history = []
    for _ in range(iterations):
        solutions = scheduler.ask()
        scheduler.tell(*_evaluate(solutions))
        history.append(solutions)
    return history


def _gaussians(archive, n=4, **kwargs):
    return [
        GaussianEmitter(archive, sigma=0.3, x0=np.zeros(DIM), batch_size=5, seed=i, **kwargs)
        for i in range(n)
    ]


def _es(archive, n=3, **kwargs):
    kwargs.setdefault("batch_size", 6)
    return [
        EvolutionStrategyEmitter(archive, x0=np.zeros(DIM), sigma0=0.3, seed=i, **kwargs)
        for i in range(n)
    ]


def test_fused_gaussian_group_equals_unfused_exactly():
    fused_archive, plain_archive = _archive(), _archive()
    fused = Scheduler(fused_archive, _gaussians(fused_archive))
    plain = Scheduler(plain_archive, _gaussians(plain_archive), fuse=False)
    assert fused.fusion_groups == [[0, 1, 2, 3]]
    assert plain.fusion_groups == []
    for a, b in zip(_loop(fused, 4), _loop(plain, 4)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fused_archive.data("objective"), plain_archive.data("objective"))


def test_fused_es_group_equals_unfused():
    fused_archive, plain_archive = _archive(), _archive()
    fused_emitters = _es(fused_archive, restart_rule=2)
    plain_emitters = _es(plain_archive, restart_rule=2)
    fused = Scheduler(fused_archive, fused_emitters)
    plain = Scheduler(plain_archive, plain_emitters, fuse=False)
    assert fused.fusion_groups == [[0, 1, 2]]
    for a, b in zip(_loop(fused, 5), _loop(plain, 5)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    for e_fused, e_plain in zip(fused_emitters, plain_emitters):
        assert e_fused.restarts == e_plain.restarts == 2
        assert e_fused.itrs == e_plain.itrs == 5
        np.testing.assert_allclose(e_fused.mean, e_plain.mean, rtol=1e-9, atol=1e-12)
        assert e_fused.sigma == pytest.approx(e_plain.sigma, rel=1e-9)


def test_grouping_rules():
    archive, other = _archive(), _archive()
    emitters = (
        _es(archive, 2, ranker="2rd")
        + _es(archive, 2, ranker="2imp")
        + _es(archive, 1, batch_size=4)
        + _es(other, 2)
        + _gaussians(archive, 2)
        + [IsoLineEmitter(archive, x0=np.zeros(DIM), batch_size=5)]
        + [
            GeneticAlgorithmEmitter(
                archive,
                operator="gaussian",
                operator_kwargs={"sigma": 0.3},
                x0=np.zeros(DIM),
                batch_size=5,
            )
        ]
    )
    # Emitters on another archive share a key among themselves only.
    scheduler = Scheduler(archive, emitters[:5] + emitters[7:])
    assert sorted(scheduler.fusion_groups) == [[0, 1], [2, 3], [5, 6]]


def test_different_rules_and_sigmas_fuse():
    archive = _archive()
    emitters = [
        EvolutionStrategyEmitter(
            archive,
            x0=np.zeros(DIM),
            sigma0=0.1,
            selection_rule="mu",
            restart_rule="basic",
            batch_size=6,
        ),
        EvolutionStrategyEmitter(
            archive, x0=np.ones(DIM), sigma0=0.5, restart_rule=3, batch_size=6
        ),
    ]
    scheduler = Scheduler(archive, emitters)
    assert scheduler.fusion_groups == [[0, 1]]
    _loop(scheduler, 3)
    assert emitters[1].restarts == 1
    assert emitters[0].restarts == 0


def test_members_stay_addressable():
    fused_archive, plain_archive = _archive(), _archive()
    fused_emitters, plain_emitters = _es(fused_archive), _es(plain_archive)
    fused = Scheduler(fused_archive, fused_emitters)
    plain = Scheduler(plain_archive, plain_emitters, fuse=False)
    _loop(fused, 2)
    _loop(plain, 2)
    # Reading and asking a fused member directly.
    np.testing.assert_allclose(fused_emitters[1].mean, plain_emitters[1].mean, rtol=1e-9)
    np.testing.assert_allclose(
        fused_emitters[1].ask(), plain_emitters[1].ask(), rtol=1e-9, atol=1e-12
    )
    # The direct ask advanced that member's stream inside the stack.
    np.testing.assert_allclose(fused.ask(), plain.ask(), rtol=1e-9, atol=1e-12)


def test_direct_ask_of_gaussian_member():
    archive = _archive()
    twins = _gaussians(_archive())
    emitters = _gaussians(archive)
    Scheduler(archive, emitters)
    np.testing.assert_array_equal(emitters[2].ask(), twins[2].ask())


def test_second_scheduler_takes_emitters_and_first_regroups():
    archive = _archive()
    emitters = _gaussians(archive)
    first = Scheduler(archive, emitters)
    _loop(first, 1)
    second = Scheduler(archive, emitters[:2])
    assert second.fusion_groups == [[0, 1]]
    _loop(second, 1)
    # The first scheduler rebuilds its groups and keeps the emitters' progress.
    assert first.fusion_groups == [[0, 1, 2, 3]]
    twin_archive = _archive()
    twins = _gaussians(twin_archive)
    twin = Scheduler(twin_archive, twins, fuse=False)
    _loop(twin, 1)
    _loop(Scheduler(twin_archive, twins[:2], fuse=False), 1)
    np.testing.assert_array_equal(first.ask(), twin.ask())


def test_pickled_scheduler_continues_identically():
    archive = _archive()
    scheduler = Scheduler(archive, _es(archive))
    _loop(scheduler, 2)
    clone = pickle.loads(pickle.dumps(scheduler))
    assert clone.fusion_groups == [[0, 1, 2]]
    np.testing.assert_array_equal(clone.ask(), scheduler.ask())


def test_bandit_fused_equals_unfused():
    def run(fuse):
        archive = _archive()
        pool = _es(archive, 3, ranker="obj") + _gaussians(archive, 3)
        bandit = BanditScheduler(archive, pool, num_active=2, fuse=fuse)
        actives = []
        history = []
        for _ in range(6):
            solutions = bandit.ask()
            bandit.tell(*_evaluate(solutions))
            actives.append(bandit.active.copy())
            history.append(solutions)
        return actives, history

    fused_active, fused_history = run(True)
    plain_active, plain_history = run(False)
    np.testing.assert_array_equal(fused_active, plain_active)
    for a, b in zip(fused_history, plain_history):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_bandit_active_subsets_equal_unfused():
    """A fusion group of ES emitters with some members active runs its kernels on
    the active members one after another (GaussianEmitter groups run every member
    under a mask): the same numbers as unfused runs, for any number of active
    members, and the idle members' states untouched."""

    def run(fuse):
        archive = _archive()
        pool = _es(archive, 6, ranker="2imp", batch_size=4) + _gaussians(archive, 6)
        bandit = BanditScheduler(archive, pool, num_active=5, fuse=fuse)
        history = []
        for _ in range(8):
            solutions = bandit.ask()
            bandit.tell(*_evaluate(solutions))
            history.append(
                (
                    bandit.active.copy(),
                    solutions,
                    [np.asarray(e.kernel_state.opt.mean) for e in pool[:6]],
                )
            )
        return history, [e.itrs for e in pool[:6]]

    fused, fused_itrs = run(True)
    plain, plain_itrs = run(False)
    assert fused_itrs == plain_itrs
    counts = set()
    for (a_active, a, a_means), (b_active, b, b_means) in zip(fused, plain):
        np.testing.assert_array_equal(a_active, b_active)
        # The same single-member kernels run in both: equal to the last bit.
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a_means, b_means)
        counts.add(int(a_active[:6].sum()))
    # Runs with some (1..4) and with all (5) of the ES emitters active happened.
    assert counts & {1, 2, 3, 4} and 5 in counts
