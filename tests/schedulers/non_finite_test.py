"""Rows whose evaluation is not finite: the traced loops keep them out of the
archives and count them, ``non_finite="raise"`` names the first one, and the
ask/tell loop keeps pyribs' errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax import functional as F
from ribsax.archives import GridArchive
from ribsax.emitters import EvolutionStrategyEmitter, GaussianEmitter
from ribsax.schedulers import BanditScheduler, Scheduler
from ribsax.tasks import sphere

DIM = 5
TASK = sphere(DIM)


def grid():
    return GridArchive(solution_dim=DIM, dims=(8, 8), ranges=TASK.measure_ranges, seed=1)


def gaussian(archive, seed=2, batch=8):
    return GaussianEmitter(archive, sigma=0.5, x0=np.zeros(DIM), batch_size=batch, seed=seed)


def broken(rows, what="measures"):
    """``TASK.evaluate`` with ``inf`` measures (or a NaN objective) on ``rows``."""

    def evaluate(solutions, key):
        objective, measures, extras = TASK.evaluate(solutions, key)
        if what == "measures":
            measures = measures.at[np.asarray(rows)].set(jnp.inf)
        else:
            objective = objective.at[np.asarray(rows)].set(jnp.nan)
        return objective, measures, extras

    return evaluate


def stored_are_finite(archive):
    data = archive.data()
    return np.all(np.isfinite(data["objective"])) and np.all(np.isfinite(data["measures"]))


@pytest.mark.parametrize("what", ["measures", "objective"])
def test_fused_loop_counts_and_skips_non_finite_rows(what):
    archive = grid()
    scheduler = Scheduler(archive, [gaussian(archive)])
    result = scheduler.run(broken([0, 3], what), 6, seed=0, history=True)
    assert stored_are_finite(archive)
    assert list(result.metrics["non_finite"]) == [2] * 6
    # The other rows were added as usual; no insertion record is non-finite.
    assert archive.stats.num_elites > 0
    assert np.isfinite(result.history["objective"]).all()
    assert np.isfinite(result.history[["measures_0", "measures_1"]].to_numpy()).all()


def test_raise_option_names_iteration_and_row():
    archive = grid()
    scheduler = Scheduler(archive, [gaussian(archive)])
    scheduler.run(TASK, 2, seed=0)
    # Iterations are counted over the scheduler's runs: this run starts at 3.
    with pytest.raises(ValueError, match="iteration 3, row 5"):
        scheduler.run(broken([5, 6]), 4, non_finite="raise")
    # The run's state was kept (its other rows were added), no bad row stored.
    assert stored_are_finite(archive)
    assert scheduler.run(TASK, 1).metrics["iteration"].tolist() == [7]
    with pytest.raises(ValueError, match="non_finite must be one of"):
        scheduler.run(TASK, 1, non_finite="ignore")


def test_bandit_and_es_emitters_skip_non_finite_rows():
    archive = grid()
    emitters = [
        EvolutionStrategyEmitter(archive, x0=np.zeros(DIM), sigma0=0.5, batch_size=6, seed=10 + i)
        for i in range(3)
    ]
    scheduler = BanditScheduler(archive, emitters, num_active=2)
    result = scheduler.run(broken([0]), 5, seed=0)
    assert stored_are_finite(archive)
    assert list(result.metrics["non_finite"]) == [1] * 5
    for emitter in emitters:
        assert np.all(np.isfinite(np.asarray(emitter.mean)))


def test_functional_tell_keeps_non_finite_rows_out():
    archive = grid()
    scheduler = Scheduler(archive, [gaussian(archive)])
    config, state = F.init(scheduler)
    state, solutions = F.ask(config, state)
    objective, measures, _ = TASK.evaluate(solutions, jax.random.key(0))
    measures = measures.at[4].set(jnp.nan)
    state, add_info = F.tell(config, state, objective, measures)
    status = np.asarray(add_info["status"])
    assert status[4] == 0 and np.all(status[np.arange(8) != 4] > 0)
    assert np.asarray(add_info["value"])[4] == -np.inf
    F.install(scheduler, config, state, 1)
    assert stored_are_finite(archive)
    assert 0 < archive.stats.num_elites <= 7


def test_ask_tell_keeps_pyribs_errors():
    archive = grid()
    scheduler = Scheduler(archive, [gaussian(archive)])
    solutions = scheduler.ask()
    objective, measures, _ = TASK.evaluate(jnp.asarray(solutions), jax.random.key(0))
    measures = np.asarray(measures).copy()
    measures[0, 1] = np.inf
    with pytest.raises(ValueError, match="measures must be finite"):
        scheduler.tell(np.asarray(objective), measures)
    other = grid()
    with pytest.raises(ValueError, match="must be finite"):
        Scheduler(other, [gaussian(other)]).run(broken([0]), 1, fused=False)
