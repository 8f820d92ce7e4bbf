"""Tests for ribsax.experiments.Experiment: run directory, checkpoints, resume."""

import json
import re
import shutil
import sys

import numpy as np
import pandas as pd
import pytest
import yaml

from ribsax.archives._archive_stats import STAT_NAMES, stats_metrics
from ribsax.experiments import (
    METRIC_COLUMNS,
    Checkpointer,
    ConfigError,
    Experiment,
    UnreadableCheckpointError,
    UnreadableCheckpointWarning,
)
from tests.checkpointer_test import truncate_checkpoint

OVERRIDES = [
    "budget.iterations=7",
    "checkpoint.every_iterations=3",
    "logging.snapshot_every=3",
    "emitters.0.batch_size=30",
    "fused_chunk=3",
]


def _run(logdir, loop, extra=()):
    experiment = Experiment(
        "sphere_map_elites_test", [*OVERRIDES, f"loop={loop}", *extra], logdir=logdir, quiet=True
    )
    experiment.run()
    return experiment


@pytest.fixture(scope="module", params=["ask_tell", "fused"])
def finished(request, tmp_path_factory):
    """An uninterrupted run of each loop."""
    logdir = tmp_path_factory.mktemp(request.param) / "run"
    return request.param, _run(logdir, request.param)


def archive_table(experiment):
    data = experiment.scheduler.result_archive.data(return_type="pandas")
    return data.sort_values("index").reset_index(drop=True)


def assert_same_run(expected, actual):
    """Same archive, metrics (but elapsed time) and history."""
    pd.testing.assert_frame_equal(archive_table(expected), archive_table(actual), check_exact=True)
    pd.testing.assert_frame_equal(
        expected.metrics.drop(columns="elapsed_s"),
        actual.metrics.drop(columns="elapsed_s"),
        check_exact=True,
    )
    pd.testing.assert_frame_equal(expected.history, actual.history, check_exact=True)


def test_run_directory_contents(finished):
    loop, experiment = finished
    path = experiment.directory.path
    for name in (
        "config.yaml",
        "run.json",
        "run.log",
        "metrics.csv",
        "metrics.json",
        "history.parquet",
        "plots/metrics.png",
    ):
        assert (path / name).is_file(), name
    for itr in (3, 6, 7):
        assert (path / "snapshots" / f"archive_{itr:08d}.parquet").is_file()
        assert (path / "snapshots" / f"heatmap_{itr:08d}.png").is_file()
    config = yaml.safe_load((path / "config.yaml").read_text())
    assert config["loop"] == loop and config["budget"]["iterations"] == 7
    assert config["logdir"] == str(path)
    run = json.loads((path / "run.json").read_text())
    assert run["seed"] == 0
    assert run["versions"]["jax"] and run["versions"]["orbax-checkpoint"]
    assert run["devices"]
    assert "checkpoint at iteration 3" in (path / "run.log").read_text()


def test_metrics_files_hold_one_row_per_iteration(finished):
    _, experiment = finished
    path = experiment.directory.path
    table = pd.read_csv(path / "metrics.csv")
    assert list(table.columns) == list(METRIC_COLUMNS)
    assert table["iteration"].tolist() == list(range(1, 8))
    assert table["evaluations"].tolist() == [30 * i for i in range(1, 8)]
    assert np.all(np.diff(table["elapsed_s"]) >= 0)
    stats = experiment.scheduler.result_archive.stats
    assert table["qd_score"].iloc[-1] == pytest.approx(float(stats.qd_score))
    assert table["coverage"].iloc[-1] == pytest.approx(float(stats.coverage))
    assert table["norm_qd_score"].iloc[-1] == pytest.approx(float(stats.norm_qd_score))
    rows = json.loads((path / "metrics.json").read_text())["rows"]
    assert [r["iteration"] for r in rows] == table["iteration"].tolist()


def test_snapshot_and_history_match_the_archive(finished):
    _, experiment = finished
    path = experiment.directory.path
    snapshot = pd.read_parquet(path / "snapshots" / "archive_00000007.parquet")
    pd.testing.assert_frame_equal(
        snapshot.sort_values("index").reset_index(drop=True),
        pd.DataFrame(archive_table(experiment)),
        check_exact=True,
    )
    history = pd.read_parquet(path / "history.parquet")
    assert list(history.columns) == [
        "iteration",
        "index",
        "status",
        "objective",
        "measures_0",
        "measures_1",
    ]
    pd.testing.assert_frame_equal(history, experiment.history)
    # Every insertion is a new cell or an improvement, the first into a cell is
    # new, and the best insertion into each cell is the cell's elite.
    assert set(history["status"]) == {1, 2}
    first = history.groupby("index")["status"].first()
    assert (first == 2).all()
    best = history.groupby("index")["objective"].max()
    elites = archive_table(experiment).set_index("index")
    assert sorted(best.index) == sorted(elites.index)
    np.testing.assert_allclose(best, elites.loc[best.index, "objective"])
    assert history["iteration"].min() == 1 and history["iteration"].max() <= 7
    # The cells are those of the recorded measures.
    np.testing.assert_array_equal(
        history["index"],
        experiment.scheduler.result_archive.index_of(
            history[["measures_0", "measures_1"]].to_numpy()
        ),
    )


def test_checkpoints_keep_the_last_n(finished):
    _, experiment = finished
    assert Checkpointer(experiment.directory.checkpoint_dir).steps == [3, 6, 7]


def test_resume_from_an_earlier_checkpoint_equals_uninterrupted(finished, tmp_path):
    loop, expected = finished
    logdir = tmp_path / "run"
    shutil.copytree(expected.directory.path, logdir)
    # Roll the run back to its checkpoint at iteration 3 (as if it died at 5).
    for step in (6, 7):
        shutil.rmtree(logdir / "checkpoints" / str(step))
    resumed = Experiment.resume(logdir, quiet=True)
    assert resumed.iteration == 3 and resumed.evaluations == 90
    resumed.run()
    assert_same_run(expected, resumed)
    pd.testing.assert_frame_equal(
        pd.read_csv(logdir / "metrics.csv").drop(columns="elapsed_s"),
        expected.metrics.drop(columns="elapsed_s"),
    )
    assert loop == resumed.config.loop.value


def test_resume_past_an_unreadable_checkpoint_equals_uninterrupted(finished, tmp_path):
    _, expected = finished
    logdir = tmp_path / "run"
    shutil.copytree(expected.directory.path, logdir)
    # The run died at 7 and a disk fault damaged its checkpoint at 6.
    shutil.rmtree(logdir / "checkpoints" / "7")
    truncate_checkpoint(logdir / "checkpoints" / "6")
    with pytest.warns(
        UnreadableCheckpointWarning, match=r"checkpoint 6 \(.*checkpoints/6\) cannot be read"
    ):
        resumed = Experiment.resume(logdir, quiet=True)
    assert resumed.iteration == 3 and resumed.evaluations == 90
    assert "checkpoint 6" in (logdir / "run.log").read_text()
    moved = logdir / "checkpoints_unreadable" / "6"
    assert moved.is_dir()
    resumed.run()
    assert_same_run(expected, resumed)
    # The continued run saved iteration 6 again, past the moved-aside copy.
    assert Checkpointer(logdir / "checkpoints").steps == [3, 6, 7]
    assert moved.is_dir()
    again = Experiment.resume(logdir, quiet=True)
    assert again.iteration == 7
    assert_same_run(expected, again)


def test_resume_without_a_readable_checkpoint_fails_naming_the_run(finished, tmp_path):
    _, expected = finished
    logdir = tmp_path / "run"
    shutil.copytree(expected.directory.path, logdir)
    for step in (3, 6, 7):
        truncate_checkpoint(logdir / "checkpoints" / str(step))
    with pytest.raises(
        UnreadableCheckpointError,
        match=rf"{re.escape(str(logdir))}: none of its checkpoints "
        r"can be read \(checkpoint 7: \w+.*checkpoint 3: .*aside to "
        r"start",
    ):
        Experiment.resume(logdir, quiet=True)
    assert Checkpointer(logdir / "checkpoints").steps == [3, 6, 7]
    assert "none of its checkpoints can be read" in (logdir / "run.log").read_text()


def test_resume_without_checkpoint_starts_over(finished, tmp_path):
    _, expected = finished
    logdir = tmp_path / "run"
    shutil.copytree(expected.directory.path, logdir)
    shutil.rmtree(logdir / "checkpoints")
    resumed = Experiment.resume(logdir, quiet=True)
    assert resumed.iteration == 0
    resumed.run()
    assert_same_run(expected, resumed)


def test_resume_of_a_finished_run_changes_nothing(finished, tmp_path):
    _, expected = finished
    logdir = tmp_path / "run"
    shutil.copytree(expected.directory.path, logdir)
    resumed = Experiment.resume(logdir, quiet=True)
    assert resumed.iteration == 7
    resumed.run()
    assert_same_run(expected, resumed)


def test_new_run_refuses_a_directory_holding_a_run(finished):
    _, experiment = finished
    with pytest.raises(FileExistsError, match="--resume"):
        Experiment("sphere_map_elites_test", logdir=experiment.directory.path)


def test_resume_needs_a_run_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.yaml"):
        Experiment.resume(tmp_path)


def test_evaluation_budget_sets_the_iterations(tmp_path):
    experiment = Experiment(
        "sphere_map_elites_test",
        ["budget.iterations=null", "budget.evaluations=65", "emitters.0.batch_size=30"],
        logdir=tmp_path / "run",
        quiet=True,
    )
    assert experiment.total_iterations == 3
    assert experiment.evaluations_per_iteration == 30


def test_rejected_value_fails_before_the_run_directory_exists(tmp_path):
    with pytest.raises(ConfigError, match=r"emitters\.0"):
        Experiment(
            "sphere_map_elites_test", ["emitters.0.sigma=big"], logdir=tmp_path / "run", quiet=True
        )
    assert not (tmp_path / "run").exists()


def test_run_whose_archive_stays_empty_checkpoints_and_resumes(tmp_path):
    overrides = ["archive.threshold_min=1000000", "archive.learning_rate=0.5"]
    experiment = _run(tmp_path / "run", "fused", overrides)
    assert experiment.scheduler.result_archive.empty
    assert len(experiment.history) == 0
    resumed = Experiment.resume(tmp_path / "run", quiet=True)
    assert resumed.iteration == experiment.iteration
    assert len(resumed.history) == 0


def test_non_finite_option(tmp_path):
    with pytest.raises(ConfigError, match="non_finite: expected 'skip' or 'raise'"):
        Experiment(
            "sphere_map_elites_test", ["non_finite=ignore"], logdir=tmp_path / "bad", quiet=True
        )
    experiment = _run(tmp_path / "run", "fused", ["non_finite=raise"])
    assert experiment.config.non_finite == "raise"
    assert experiment.metrics["evaluations"].tolist() == [30 * i for i in range(1, 8)]


def test_progress_bar_shows_qd_score_coverage_and_rate(tmp_path, capsys):
    experiment = Experiment(
        "sphere_map_elites_test",
        ["budget.iterations=2", "emitters.0.batch_size=30"],
        logdir=tmp_path / "run",
    )
    experiment.run()
    err = capsys.readouterr().err
    assert "qd_score=" in err and "coverage=" in err and "evals_per_s=" in err
    assert "2/2" in err


def test_quiet_prints_no_progress(tmp_path, capsys):
    Experiment(
        "sphere_map_elites_test",
        ["budget.iterations=2", "emitters.0.batch_size=30"],
        logdir=tmp_path / "run",
        quiet=True,
    ).run()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("loop", ["ask_tell", "fused"])
def test_metrics_every_thins_the_rows(tmp_path, loop):
    experiment = Experiment(
        "sphere_map_elites_test",
        [
            "budget.iterations=7",
            "emitters.0.batch_size=30",
            "logging.metrics_every=3",
            f"loop={loop}",
            "fused_chunk=4",
        ],
        logdir=tmp_path / "run",
        quiet=True,
    )
    metrics = experiment.run()
    # Every third iteration, the end, and (fused) the chunk ends.
    expected = [3, 6, 7] if loop == "ask_tell" else [3, 4, 6, 7]
    assert metrics["iteration"].tolist() == expected
    assert metrics["evaluations"].tolist() == [30 * i for i in expected]


def test_checkpoints_by_minutes_keep_the_last_n(tmp_path):
    experiment = Experiment(
        "sphere_map_elites_test",
        [
            "budget.iterations=4",
            "emitters.0.batch_size=30",
            "checkpoint.every_iterations=null",
            "checkpoint.every_minutes=1e-9",
            "checkpoint.keep=2",
        ],
        logdir=tmp_path / "run",
        quiet=True,
    )
    experiment.run()
    assert Checkpointer(tmp_path / "run" / "checkpoints").steps == [3, 4]
    assert (tmp_path / "run" / "run.log").read_text().count("checkpoint at") == 4


def test_figures_are_skipped_with_a_notice_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    experiment = Experiment(
        "sphere_map_elites_test",
        ["budget.iterations=2", "emitters.0.batch_size=30"],
        logdir=tmp_path / "run",
        quiet=True,
    )
    experiment.run()
    path = tmp_path / "run"
    assert not list(path.rglob("*.png"))
    assert (path / "snapshots" / "archive_00000002.parquet").is_file()
    log = (path / "run.log").read_text()
    assert "matplotlib is not installed; plots/metrics.png not written" in log


def test_history_every_keeps_those_iterations(finished, tmp_path):
    loop, full = finished
    sampled = _run(tmp_path / "run", loop, ["logging.history_every=3"])
    expected = full.history[full.history["iteration"].isin([3, 6, 7])]
    pd.testing.assert_frame_equal(
        sampled.history, expected.reset_index(drop=True), check_exact=True
    )


def test_history_and_metrics_are_the_same_in_both_loops(tmp_path):
    ask_tell = _run(tmp_path / "ask_tell", "ask_tell")
    fused = _run(tmp_path / "fused", "fused")
    # Each loop's last metric record is its result archive's stats, exactly (the
    # ask/tell loop reads archive.stats, the fused one computes them in the scan).
    for experiment in (ask_tell, fused):
        final = experiment.metrics.iloc[-1]
        stats = stats_metrics(experiment.scheduler.result_archive.stats)
        assert stats["num_elites"] > 0
        for name in STAT_NAMES:
            assert final[name] == stats[name], name
    # Across loops, up to the float32 task's rounding (see below).
    pd.testing.assert_frame_equal(
        ask_tell.metrics.drop(columns="elapsed_s"),
        fused.metrics.drop(columns="elapsed_s"),
        check_exact=False,
        rtol=1e-5,
    )
    assert len(ask_tell.history) > 30
    # float32 task: the compiled scan may round measures differently (1 ulp).
    pd.testing.assert_frame_equal(
        ask_tell.history, fused.history, check_exact=False, rtol=1e-5, atol=1e-6
    )


def test_resume_refuses_a_checkpoint_of_the_former_history_format(finished, tmp_path):
    _, expected = finished
    logdir = tmp_path / "run"
    shutil.copytree(expected.directory.path, logdir)
    checkpointer = Checkpointer(logdir / "checkpoints", keep=5)
    arrays, objects, meta = checkpointer.restore()
    checkpointer.save(8, arrays, objects, {**meta, "format": 1})
    checkpointer.close()
    with pytest.raises(ValueError, match="older ribsax"):
        Experiment.resume(logdir, quiet=True)


def test_fused_loop_starts_with_the_initial_solutions_through_ask_tell(tmp_path):
    # Iteration 1 asks the task's initial solutions on the host; the fused chunks
    # follow. The run equals the ask/tell loop's and resumes to the same end.
    initial = ["emitters.0.initial_solutions=task", "logging.metrics_every=2"]
    ask_tell = _run(tmp_path / "ask_tell", "ask_tell", initial)
    fused = _run(tmp_path / "fused", "fused", initial)
    # Every second iteration, the end and (fused) the chunk ends (3, 6).
    assert fused.metrics["iteration"].tolist() == [2, 3, 4, 6, 7]
    assert fused.metrics["evaluations"].tolist() == [60, 90, 120, 180, 210]
    assert (fused.history["iteration"] == 1).sum() > 1
    pd.testing.assert_frame_equal(
        ask_tell.metrics.drop(columns="elapsed_s"),
        fused.metrics.drop(columns="elapsed_s").iloc[[0, 2, 3, 4]].reset_index(drop=True),
        check_exact=False,
        rtol=1e-5,
    )
    pd.testing.assert_frame_equal(
        ask_tell.history, fused.history, check_exact=False, rtol=1e-5, atol=1e-6
    )
    logdir = tmp_path / "resumed"
    shutil.copytree(fused.directory.path, logdir)
    for step in (6, 7):
        shutil.rmtree(logdir / "checkpoints" / str(step))
    resumed = Experiment.resume(logdir, quiet=True)
    assert resumed.iteration == 3
    resumed.run()
    assert_same_run(fused, resumed)
