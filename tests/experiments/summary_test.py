"""Tests for the metrics of one run directory: run_summary, qd_score_auc,
elite_robustness, final_archive and ``ribsax analyze``."""

import dataclasses
import json
import shutil

import jax
import numpy as np
import pandas as pd
import pytest

from ribsax.experiments import (
    Experiment,
    _summary,
    elite_robustness,
    final_archive,
    load_config,
    qd_score_auc,
    run_summary,
)
from ribsax.experiments.cli import main
from ribsax.tasks import sphere

TINY = [
    "budget.iterations=3",
    "emitters.0.batch_size=20",
    "checkpoint.every_iterations=2",
    "logging.snapshot_every=2",
    "logging.heatmaps=false",
    "logging.plots=false",
]
SIGMA = 0.5


@pytest.fixture(name="run", scope="module")
def fixture_run(tmp_path_factory):
    """A finished 3-iteration sphere MAP-Elites run (snapshots and checkpoints at
    iterations 2 and 3)."""
    logdir = tmp_path_factory.mktemp("summary") / "run"
    Experiment(load_config("sphere_map_elites_test", TINY), logdir=logdir, quiet=True).run()
    return logdir


def _noisy(task):
    """``task`` with Gaussian noise on the objective, drawn like a brax task's random
    resets: one key per row, ``jax.random.split(key, batch_size)``."""

    def evaluate_fn(solutions, key):
        objective, measures, extras = task.evaluate_fn(solutions, key)
        keys = jax.random.split(key, solutions.shape[0])
        noise = jax.vmap(lambda k: jax.random.normal(k, (), objective.dtype))(keys)
        return objective + SIGMA * noise, measures, extras

    return dataclasses.replace(task, name="noisy_sphere", evaluate_fn=evaluate_fn)


def _brute_force_robustness(task, solutions, archived, episodes, seed, noise):
    """Each elite re-evaluated alone, episode by episode (plus, with ``noise``, the
    noise that the noisy task draws for its row)."""
    n = len(solutions)
    row_keys = [
        jax.random.split(jax.random.fold_in(jax.random.key(seed), e), n) for e in range(episodes)
    ]
    result = []
    for i in range(n):
        returns = []
        for e in range(episodes):
            value = float(task.evaluate(solutions[i : i + 1])[0][0])
            if noise:
                value += SIGMA * float(jax.random.normal(row_keys[e][i], (), np.float32))
            returns.append(value)
        result.append(np.mean(returns) - archived[i])
    return np.array(result)


def test_qd_score_auc_is_qd_score_times_the_evaluations_of_each_record():
    # dqd-rl: sum over generations of QD score x evaluations per generation.
    constant = pd.DataFrame({"evaluations": [100, 200, 300], "qd_score": [2.0, 5.0, 7.0]})
    assert qd_score_auc(constant) == (2 + 5 + 7) * 100
    # Records of different widths (batch sizes, metrics_every): each value counts
    # for the evaluations since the previous record.
    varying = pd.DataFrame(
        {"evaluations": [10, 20, 40], "qd_score": [1.0, 3.0, 4.0], "norm_qd_score": [0.5, 0.5, 1.0]}
    )
    assert qd_score_auc(varying) == 1 * 10 + 3 * 10 + 4 * 20
    assert qd_score_auc(varying, "norm_qd_score") == 0.5 * 10 + 0.5 * 10 + 1.0 * 20
    assert qd_score_auc(varying.iloc[:0]) == 0.0
    with pytest.raises(KeyError, match="obj_max"):
        qd_score_auc(varying, "obj_max")


def test_run_summary_reads_the_final_metrics(run):
    metrics = pd.read_csv(run / "metrics.csv")
    summary = run_summary(run, robustness_episodes=0)
    last = metrics.iloc[-1]
    assert summary["name"] == "sphere_map_elites" and summary["seed"] == 0
    assert summary["iteration"] == 3 and summary["evaluations"] == 60
    for column in ("qd_score", "norm_qd_score", "coverage", "obj_max"):
        assert summary[column] == pytest.approx(last[column])
    # The archive's normalised QD score: QD score over the number of cells.
    assert summary["norm_qd_score"] == pytest.approx(summary["qd_score"] / 100)
    assert summary["qd_score_auc"] == pytest.approx(sum(q * 20 for q in metrics["qd_score"]))
    assert "mean_robustness" not in summary
    assert not (run / "summary.json").exists()


def test_robustness_of_a_deterministic_task_is_zero_and_the_brute_force(run):
    iteration, data = final_archive(run)
    assert iteration == 3 and len(data) > 1
    solutions = data.filter(like="solution_").to_numpy()
    archived = data["objective"].to_numpy()
    task = sphere(solution_dim=solutions.shape[1])
    per_elite = elite_robustness(task, solutions, archived, episodes=3, seed=5)
    expected = _brute_force_robustness(task, solutions, archived, 3, 5, noise=False)
    np.testing.assert_allclose(per_elite, expected, atol=1e-4)
    np.testing.assert_allclose(per_elite, 0.0, atol=1e-4)
    summary = run_summary(run, robustness_episodes=3, seed=5)
    assert summary["mean_robustness"] == pytest.approx(0.0, abs=1e-4)
    assert summary["archive_iteration"] == 3
    assert summary["robustness_episodes"] == 3


def test_robustness_of_a_noisy_task_matches_the_brute_force(run):
    _, data = final_archive(run)
    solutions = data.filter(like="solution_").to_numpy()
    archived = data["objective"].to_numpy()
    task = sphere(solution_dim=solutions.shape[1])
    noisy = _noisy(task)
    per_elite = elite_robustness(noisy, solutions, archived, episodes=4, seed=7)
    expected = _brute_force_robustness(task, solutions, archived, 4, 7, noise=True)
    np.testing.assert_allclose(per_elite, expected, rtol=1e-5, atol=1e-4)
    # The noise does not cancel: each elite and episode gets its own draw.
    assert np.abs(per_elite).max() > 0.05
    assert len(np.unique(np.round(per_elite, 4))) == len(per_elite)
    summary = run_summary(run, robustness_episodes=4, seed=7, task=noisy)
    assert summary["mean_robustness"] == pytest.approx(expected.mean(), abs=1e-4)
    other_seed = run_summary(run, robustness_episodes=4, seed=8, task=noisy)
    assert other_seed["mean_robustness"] != pytest.approx(expected.mean(), abs=1e-4)


def test_final_archive_prefers_a_newer_checkpoint(run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    _, snapshot = final_archive(copy)
    (copy / "snapshots" / "archive_00000003.parquet").unlink()
    iteration, data = final_archive(copy)
    assert iteration == 3
    pd.testing.assert_frame_equal(data.reset_index(drop=True), snapshot.reset_index(drop=True))


def test_brax_tasks_are_rebuilt_with_random_resets(monkeypatch):
    built = []
    monkeypatch.setattr(_summary, "build_task", built.append)
    cfg = load_config("brax_hopper_uni_pga_me_test")
    _summary._robustness_task(cfg)
    assert built[0].task.deterministic is False
    assert built[0].task.return_transitions is False
    assert cfg.task.return_transitions is True  # the loaded config is untouched
    assert "deterministic" not in cfg.task


def test_analyze_command_prints_and_writes_the_summary(run, tmp_path, capsys):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    table = tmp_path / "summary.csv"
    assert main(["analyze", str(copy), "--robustness-episodes", "2", "--csv", str(table)]) == 0
    out = capsys.readouterr().out
    assert "qd_score_auc" in out and "mean_robustness" in out
    written = json.loads((copy / "summary.json").read_text())
    assert written == {**run_summary(copy, robustness_episodes=2), "path": str(copy)}
    assert pd.read_csv(table)["iteration"].tolist() == [3]


def test_missing_or_empty_run_directories_give_clear_errors(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        run_summary(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="holds no config.yaml; is it a run directory"):
        run_summary(empty)
    assert main(["analyze", str(empty)]) == 2
    assert capsys.readouterr().err.startswith(f"ribsax: error: {empty} holds no config.yaml")
    assert main(["analyze", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err
    # A run that has not recorded an iteration yet.
    started = tmp_path / "started"
    Experiment(load_config("sphere_map_elites_test", TINY), logdir=started, quiet=True)
    with pytest.raises(FileNotFoundError, match="holds no metrics.csv"):
        run_summary(started)
    pd.DataFrame(columns=["iteration", "evaluations"]).to_csv(started / "metrics.csv", index=False)
    with pytest.raises(ValueError, match="metrics.csv has no rows"):
        run_summary(started)
    assert main(["analyze", str(started)]) == 2
    assert "has no rows" in capsys.readouterr().err


def test_robustness_without_an_archive_fails_clearly(run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("*.parquet", "checkpoints"))
    assert run_summary(copy, robustness_episodes=0)["iteration"] == 3
    with pytest.raises(FileNotFoundError, match="no archive snapshot"):
        run_summary(copy, robustness_episodes=2)
    with pytest.raises(ValueError, match="episodes must be at least 1"):
        elite_robustness(sphere(solution_dim=2), np.zeros((1, 2)), np.zeros(1), episodes=0)
