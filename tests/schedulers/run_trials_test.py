"""Tests for run_trials: vmapped trials equal separate runs."""

import jax.numpy as jnp
import numpy as np
import pytest

import ribsax
from ribsax.archives import GridArchive
from ribsax.emitters import EvolutionStrategyEmitter, GaussianEmitter
from ribsax.schedulers import Scheduler, TrialsResult, run_trials
from ribsax.tasks import sphere
from tests.backend import CPU_EXACT_FUSED_CMA
from tests.schedulers.fused_loop_test import assert_same_archive

DIM = 6
TASK = sphere(DIM)


def make_gaussian(seed):
    archive = GridArchive(solution_dim=DIM, dims=(8, 8), ranges=TASK.measure_ranges, seed=seed)
    return Scheduler(
        archive, [GaussianEmitter(archive, sigma=0.5, x0=np.zeros(DIM), batch_size=16, seed=seed)]
    )


def make_cma(seed):
    archive = GridArchive(solution_dim=DIM, dims=(8, 8), ranges=TASK.measure_ranges, seed=seed)
    ss = np.random.SeedSequence(seed).spawn(2)
    return Scheduler(
        archive,
        [
            EvolutionStrategyEmitter(
                archive, x0=np.zeros(DIM), sigma0=0.5, batch_size=8, seed=s, restart_rule=3
            )
            for s in ss
        ],
    )


@pytest.mark.parametrize(
    "make,vectorize",
    [
        (make_gaussian, True),
        pytest.param(make_cma, True, marks=CPU_EXACT_FUSED_CMA),
        (make_cma, False),
    ],
    ids=["gaussian", "cma", "cma_sequential"],
)
def test_trials_equal_separate_runs(make, vectorize):
    seeds = [3, 5, 8]
    result = run_trials(make, TASK, 10, seeds, vectorize=vectorize)
    assert isinstance(result, TrialsResult)
    assert result.seeds == seeds
    assert list(result.metrics["trial"].unique()) == [0, 1, 2]
    for i, seed in enumerate(seeds):
        alone = make(seed)
        run = alone.run(TASK, 10, seed=seed)
        trial = result.metrics[result.metrics["trial"] == i]
        np.testing.assert_array_equal(trial["num_elites"], run.metrics["num_elites"])
        np.testing.assert_allclose(trial["qd_score"], run.metrics["qd_score"], rtol=1e-12)
        assert_same_archive(result.schedulers[i].archive, alone.archive)
        for ea, eb in zip(result.schedulers[i].emitters, alone.emitters):
            if isinstance(ea, EvolutionStrategyEmitter):
                assert ea.restarts == eb.restarts
                assert ea.itrs == eb.itrs == 10
    # Different seeds give different runs.
    finals = result.final["qd_score"].to_numpy()
    assert len(set(np.round(finals, 9))) == len(seeds)


def test_trials_continue_with_run_and_summary():
    result = ribsax.run_trials(make_gaussian, TASK, 6, [1, 2], metrics_every=3)
    assert list(result.metrics["iteration"]) == [3, 6, 3, 6]
    continued = make_gaussian(1)
    continued.run(TASK, 9, seed=1)
    result.schedulers[0].run(TASK, 3)
    assert_same_archive(result.schedulers[0].archive, continued.archive)

    summary = result.summary()
    assert list(summary.index) == ["qd_score", "coverage", "obj_max"]
    final = result.final
    np.testing.assert_allclose(summary.loc["qd_score", "mean"], final["qd_score"].mean())
    np.testing.assert_allclose(summary.loc["qd_score", "std"], final["qd_score"].std(ddof=1))
    assert summary.loc["coverage", "trials"] == 2
    with pytest.raises(ValueError, match="Unknown metrics"):
        result.summary(["nope"])


def test_trials_errors():
    with pytest.raises(ValueError, match="seeds must contain at least one seed"):
        run_trials(make_gaussian, TASK, 3, [])
    with pytest.raises(ValueError, match="iterations must be a positive int"):
        run_trials(make_gaussian, TASK, 0, [1])

    def differing(seed):
        return make_gaussian(seed) if seed == 0 else make_cma(seed)

    with pytest.raises(ValueError, match="Trial 1 .* another configuration"):
        run_trials(differing, TASK, 2, [0, 1])
    # Sequential trials may differ (each configuration compiles on its own).
    result = run_trials(differing, TASK, 2, [0, 1], vectorize=False)
    assert len(result.final) == 2


@pytest.mark.parametrize("vectorize", [True, False], ids=["vmapped", "in_turn"])
def test_trials_count_evaluations_and_non_finite_rows(vectorize):
    def evaluate(solutions, key):
        objective, measures, extras = TASK.evaluate(solutions, key)
        return objective, measures.at[2].set(jnp.inf), extras

    trials = run_trials(make_gaussian, evaluate, 3, seeds=[0, 1], vectorize=vectorize)
    batch = trials.schedulers[0].emitters[0].batch_size
    for _, frame in trials.metrics.groupby("trial"):
        assert frame["evaluations"].tolist() == [batch, 2 * batch, 3 * batch]
        assert frame["non_finite"].tolist() == [1, 1, 1]
    for scheduler in trials.schedulers:
        assert np.isfinite(scheduler.archive.data("measures")).all()
    with pytest.raises(ValueError, match=r"Trial 0 \(seed 0\).*iteration 1, row 2"):
        run_trials(
            make_gaussian, evaluate, 2, seeds=[0, 1], vectorize=vectorize, non_finite="raise"
        )
