"""Tests for ribsax.distributed.DaskEvaluator on a 2-worker LocalCluster."""

import os

import numpy as np
import pytest

from ribsax.distributed import DaskEvaluator, EvaluationError
from ribsax.examples.sphere import sphere


def raise_on_negative(solution):
    """Per-solution objective that fails for solutions starting below zero."""
    if solution[0] < 0:
        raise ValueError(f"negative start {solution[0]}")
    return float(solution.sum()), [float(solution[0]), float(solution[-1])]


def die_once(solutions, marker):
    """Kills its worker process the first time it runs (marker file absent)."""
    if not os.path.exists(marker):
        with open(marker, "w", encoding="utf-8"):
            pass
        os._exit(1)
    return sphere(solutions)


class FlakyOnce:
    """Raises on its first call (marker file absent), then evaluates the sphere."""

    def __init__(self, marker):
        self.marker = marker

    def __call__(self, solutions):
        if not os.path.exists(self.marker):
            with open(self.marker, "w", encoding="utf-8"):
                pass
            raise RuntimeError("transient failure")
        return sphere(solutions)


@pytest.fixture(scope="module", name="threaded")
def fixture_threaded():
    evaluator = DaskEvaluator(sphere, n_workers=2, processes=False, print_dashboard=False)
    yield evaluator
    evaluator.close()


def test_results_equal_local_evaluation_in_order(threaded):
    solutions = np.random.default_rng(0).normal(size=(37, 6))
    objective, measures = threaded(solutions)
    expected_objective, expected_measures = sphere(solutions)
    np.testing.assert_allclose(objective, expected_objective)
    np.testing.assert_allclose(measures, expected_measures)


def test_per_solution_function_and_chunk_size():
    solutions = np.abs(np.random.default_rng(1).normal(size=(9, 3)))
    with DaskEvaluator(
        raise_on_negative,
        n_workers=2,
        processes=False,
        batched=False,
        chunk_size=1,
        print_dashboard=False,
    ) as ev:
        objective, measures = ev(solutions)
    np.testing.assert_allclose(objective, solutions.sum(axis=1))
    np.testing.assert_allclose(measures, solutions[:, [0, -1]])


def test_transient_error_is_retried(tmp_path):
    solutions = np.random.default_rng(2).normal(size=(8, 4))
    with DaskEvaluator(
        FlakyOnce(str(tmp_path / "marker")),
        n_workers=2,
        processes=False,
        retries=2,
        print_dashboard=False,
    ) as ev:
        objective, _ = ev(solutions)
    np.testing.assert_allclose(objective, sphere(solutions)[0])


def test_persistent_error_names_the_solutions_and_keeps_the_rest():
    solutions = np.ones((6, 3))
    solutions[4, 0] = -1.0
    with DaskEvaluator(
        raise_on_negative,
        n_workers=2,
        processes=False,
        batched=False,
        chunk_size=2,
        retries=1,
        print_dashboard=False,
    ) as ev:
        with pytest.raises(
            EvaluationError,
            match=r"2 of 6 solutions failed.*"
            r"solutions 4\.\.5: ValueError: negative start",
        ) as info:
            ev(solutions)
    np.testing.assert_array_equal(info.value.failed, [4, 5])
    objective, _ = info.value.results
    np.testing.assert_allclose(objective[:4], 3.0)
    assert np.isnan(objective[4:]).all()


def test_killed_worker_is_replaced_and_no_result_is_lost(tmp_path):
    solutions = np.random.default_rng(3).normal(size=(10, 4))
    marker = str(tmp_path / "died")

    def evaluate(chunk):
        return die_once(chunk, marker)

    with DaskEvaluator(
        evaluate, n_workers=2, processes=True, chunk_size=5, print_dashboard=False
    ) as ev:
        objective, measures = ev(solutions)
    assert os.path.exists(marker)  # A worker did die.
    np.testing.assert_allclose(objective, sphere(solutions)[0])
    np.testing.assert_allclose(measures, sphere(solutions)[1])


def test_dashboard_address_is_printed(capsys):
    with DaskEvaluator(sphere, n_workers=1, processes=False) as ev:
        assert ev.dashboard_link.startswith("http")
    assert f"Dask dashboard: {ev.dashboard_link}" in capsys.readouterr().out


def test_function_by_name_and_bad_arguments():
    with DaskEvaluator(
        "ribsax.examples.sphere:sphere", n_workers=1, processes=False, print_dashboard=False
    ) as ev:
        objective, _ = ev(np.zeros((2, 4)))
    np.testing.assert_allclose(objective, sphere(np.zeros((2, 4)))[0])
    with pytest.raises(ValueError, match="chunk_size"):
        DaskEvaluator(sphere, chunk_size=0)
    with pytest.raises(ValueError, match="module:attribute"):
        DaskEvaluator("no_colon")


def test_slurm_cluster_from_config_writes_a_job_script():
    from dask_jobqueue import SLURMCluster

    with SLURMCluster(
        cores=4, memory="8GB", queue="cpu", walltime="01:00:00", processes=2
    ) as cluster:
        script = cluster.job_script()
    assert "#SBATCH -p cpu" in script and "#SBATCH -t 01:00:00" in script
    with pytest.raises(ValueError, match="cluster: expected"):
        DaskEvaluator.from_config(sphere, cluster="kubernetes")


def test_runner_evaluator_section_equals_local_evaluation(tmp_path, capsys):
    import pandas as pd

    from ribsax.experiments import Experiment

    overrides = ["budget.iterations=3", "emitters.0.batch_size=16", "task.solution_dim=6"]
    dask_run = Experiment(
        "sphere_map_elites_test",
        [
            *overrides,
            "evaluator={function: 'ribsax.examples.sphere:sphere', n_workers: 2, processes: false}",
        ],
        logdir=tmp_path / "dask",
        quiet=True,
    )
    dask_run.run()
    assert "Dask dashboard" in (tmp_path / "dask" / "run.log").read_text()
    local_run = Experiment(
        "sphere_map_elites_test", overrides, logdir=tmp_path / "local", quiet=True, evaluator=sphere
    )
    local_run.run()
    pd.testing.assert_frame_equal(
        dask_run.metrics.drop(columns="elapsed_s"), local_run.metrics.drop(columns="elapsed_s")
    )
    capsys.readouterr()


def test_runner_rejects_unknown_evaluator_key():
    from ribsax.experiments import ConfigError, load_config

    with pytest.raises(ConfigError, match=r"evaluator\.workers: unknown key.*n_workers"):
        load_config(
            "sphere_map_elites_test",
            ["evaluator={function: 'ribsax.examples.sphere:sphere', workers: 2}"],
        )
