"""Tests for PyCMAEvolutionStrategy: both ribsax and pyribs wrap pycma with a
NumPy generator of the same seed, so the runs must be identical."""

import pickle
import sys

import jax.numpy as jnp
import numpy as np
import pytest
import ribs.archives
import ribs.emitters
import ribs.emitters.opt
import ribs.schedulers

import ribsax.archives
import ribsax.emitters
import ribsax.schedulers
from ribsax.emitters.opt import PyCMAEvolutionStrategy, _get_es
from tests.emitters.emitter_helpers import assert_same_error
from tests.emitters.opt.es_helpers import sphere_ranking

KWARGS = {
    "sigma0": 0.5,
    "solution_dim": 4,
    "batch_size": 6,
    "seed": 3,
    "lower_bounds": np.full(4, -1.0),
    "upper_bounds": np.full(4, 2.0),
}


def _pair(**overrides):
    kwargs = {**KWARGS, **overrides}
    ours, theirs = (
        PyCMAEvolutionStrategy(**kwargs),
        ribs.emitters.opt.PyCMAEvolutionStrategy(**kwargs),
    )
    ours.reset(np.zeros(4))
    theirs.reset(np.zeros(4))
    return ours, theirs


@pytest.mark.parametrize("two_columns", [False, True], ids=["1d", "2d"])
def test_ask_tell_match_ribs(two_columns):
    ours, theirs = _pair()
    assert ours.batch_size == theirs.batch_size == 6
    for _ in range(5):
        got, want = ours.ask(), theirs.ask()
        np.testing.assert_array_equal(got, want)
        assert not got.flags.writeable
        objective, order = sphere_ranking(got)
        values = np.stack([objective, -objective], axis=1) if two_columns else objective
        ours.tell(order, values, 3)
        theirs.tell(order, values, 3)
        assert ours.check_stop(values[order]) == theirs.check_stop(values[order])
    np.testing.assert_array_equal(ours._es.mean, theirs._es.mean)


def test_default_batch_size_float32_and_opts_match_ribs():
    ours, theirs = _pair(batch_size=None, dtype=np.float32, opts={"CMA_elitist": True})
    assert ours.batch_size == theirs.batch_size
    got, want = ours.ask(), theirs.ask()
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_pickle_round_trip_continues_the_run():
    ours, _ = _pair()
    ours.ask()
    copy = pickle.loads(pickle.dumps(ours))
    np.testing.assert_array_equal(copy.ask(), ours.ask())


def test_opts_are_not_modified():
    opts = {"verbose": -3}
    PyCMAEvolutionStrategy(0.1, 2, opts=opts)
    assert opts == {"verbose": -3}


def test_check_stop_flat_multicolumn_values():
    ours, theirs = _pair()
    flat = np.ones((6, 2))
    assert ours.check_stop(flat) == theirs.check_stop(flat)
    assert ours.check_stop(flat)
    spread = np.arange(12.0).reshape(6, 2)
    assert not ours.check_stop(spread)


def test_missing_cma_raises_ribs_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "cma", None)
    assert_same_error(
        lambda: ribs.emitters.opt.PyCMAEvolutionStrategy(0.1, 2).reset(np.zeros(2)),
        lambda: PyCMAEvolutionStrategy(0.1, 2).reset(np.zeros(2)),
    )


def test_name_lookup():
    assert isinstance(_get_es("pycma_es", sigma0=0.1, solution_dim=2), PyCMAEvolutionStrategy)
    assert isinstance(
        _get_es("PyCMAEvolutionStrategy", sigma0=0.1, solution_dim=2), PyCMAEvolutionStrategy
    )


def _scheduler(lib, **emitter_kwargs):
    archives, emitters, schedulers = lib
    archive = archives.GridArchive(solution_dim=4, dims=[5, 5], ranges=[(-2, 2)] * 2)
    emitter_list = [
        emitters.EvolutionStrategyEmitter(
            archive,
            x0=np.zeros(4),
            sigma0=0.3,
            es="pycma_es",
            batch_size=6,
            seed=s,
            **emitter_kwargs,
        )
        for s in (1, 2)
    ]
    return schedulers.Scheduler(archive, emitter_list)


# Restarts start from an elite drawn by the archive, whose generator differs from
# pyribs'; "basic" restarts only when pycma stops, which these runs do not reach.
@pytest.mark.parametrize("ranker", ["2imp", "obj"])
def test_evolution_strategy_emitter_in_scheduler_matches_ribs(ranker):
    kwargs = {"ranker": ranker, "bounds": [(-1.5, 1.5)] * 4, "restart_rule": "basic"}
    ours = _scheduler((ribsax.archives, ribsax.emitters, ribsax.schedulers), **kwargs)
    theirs = _scheduler((ribs.archives, ribs.emitters, ribs.schedulers), **kwargs)
    assert ours.fusion_groups == []
    for _ in range(4):
        got, want = ours.ask(), theirs.ask()
        np.testing.assert_array_equal(got, want)
        objective = -np.sum((got - 0.5) ** 2, axis=1)
        ours.tell(objective, got[:, :2])
        theirs.tell(objective, got[:, :2])
    assert [e.restarts for e in ours.emitters] == [e.restarts for e in theirs.emitters]
    assert ours.archive.stats.num_elites == theirs.archive.stats.num_elites
    np.testing.assert_allclose(ours.archive.stats.obj_max, theirs.archive.stats.obj_max)


def test_fused_run_names_the_emitter_and_python_run_works():
    def evaluate(solutions, key):
        del key
        return -jnp.sum(solutions**2, axis=1), solutions[:, :2]

    scheduler = _scheduler((ribsax.archives, ribsax.emitters, ribsax.schedulers))
    with pytest.raises(ValueError, match=r"Emitter 0 \(EvolutionStrategyEmitter\)"):
        scheduler.run(evaluate, 2)
    result = scheduler.run(evaluate, 2, fused=False)
    assert result.iterations == 2
    assert len(scheduler.archive) > 0
