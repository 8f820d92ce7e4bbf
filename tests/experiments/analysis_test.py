"""Tests for ribsax plot and ribsax batch-sizes (ribsax.experiments._analysis)."""

import numpy as np
import pandas as pd
import pytest
import yaml

from ribsax.experiments import load_config
from ribsax.experiments._analysis import final_table, load_runs
from ribsax.experiments.cli import main


def _fixture_run(root, name, seed, population, scale):
    """A run directory as the runner writes it (config.yaml and metrics.csv)."""
    run = root / f"2026-01-01_00-00-0{seed}_{name}_seed{seed}"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "name": name,
                "seed": seed,
                "emitters": [{"class": "GaussianEmitter", "batch_size": population}],
            }
        )
    )
    iterations = np.arange(1, 11)
    pd.DataFrame(
        {
            "iteration": iterations,
            "evaluations": iterations * population,
            "qd_score": scale * iterations + seed,
            "norm_qd_score": iterations / 100,
            "coverage": iterations / 20,
            "obj_max": 90 + iterations / 10,
            "obj_mean": 50.0,
            "num_elites": iterations,
            "elapsed_s": iterations * 0.1,
        }
    ).to_csv(run / "metrics.csv", index=False)


@pytest.fixture(name="results")
def fixture_results(tmp_path):
    for seed in range(3):
        _fixture_run(tmp_path, "me_small", seed, 10, 1.0)
        _fixture_run(tmp_path, "me_large", seed, 40, 2.0)
    _fixture_run(tmp_path, "other", 0, 10, 5.0)
    return tmp_path


def test_load_runs_filters_by_prefix_and_groups(results):
    runs = load_runs(results, "me_", "emitters.0.batch_size")
    assert len(runs) == 6
    assert sorted(runs["group"].unique()) == [10, 40]


def test_final_table_means_over_seeds(results):
    table = final_table(load_runs(results, "me_", "name"))
    small = table.set_index("group").loc["me_small"]
    assert small["runs"] == 3
    assert small["qd_score"] == pytest.approx(10 + 1)  # 10 + mean seed (0, 1, 2)
    assert small["qd_score_ci95"] > 0


def test_plot_command_writes_figure_and_table(results, tmp_path, capsys):
    figure, table = tmp_path / "fig.png", tmp_path / "final.csv"
    assert (
        main(
            [
                "plot",
                str(results),
                "--exp-name",
                "me_",
                "--attribute",
                "emitters.0.batch_size",
                "--save",
                str(figure),
                "--table",
                str(table),
            ]
        )
        == 0
    )
    assert figure.stat().st_size > 10_000
    final = pd.read_csv(table)
    assert final["group"].tolist() == [10, 40]
    assert "qd_score_ci95" in capsys.readouterr().out


def test_plot_without_matching_runs_fails(results, tmp_path, capsys):
    assert (
        main(["plot", str(results), "--exp-name", "nothing", "--save", str(tmp_path / "f.png")])
        == 2
    )
    assert "no run directory" in capsys.readouterr().err


def test_unknown_attribute_names_it(results, tmp_path):
    with pytest.raises(KeyError, match="archive.dims"):
        load_runs(results, "me_", "archive.dims")


def test_batch_sizes_command_runs_each_size_and_seed(tmp_path, capsys):
    results = tmp_path / "bs"
    assert (
        main(
            [
                "batch-sizes",
                "sphere_map_elites_test",
                "--batch-sizes",
                "10",
                "20",
                "-n",
                "2",
                "--results-dir",
                str(results),
                "--quiet",
                "budget.iterations=null",
                "budget.evaluations=60",
                "checkpoint.every_iterations=null",
                "logging.heatmaps=false",
            ]
        )
        == 0
    )
    runs = load_runs(results, "sphere_map_elites_bs", "batch_size")
    assert sorted(runs["group"]) == [10, 10, 20, 20]
    # Same evaluation budget at both sizes.
    finals = {g: int(m.iloc[-1]["evaluations"]) for g, m in zip(runs["group"], runs["metrics"])}
    assert finals == {10: 60, 20: 60}
    assert (results / "batch_sizes.png").stat().st_size > 10_000
    assert "qd_score" in capsys.readouterr().out


BS_ARGS = [
    "--batch-sizes",
    "10",
    "20",
    "-n",
    "2",
    "--quiet",
    "budget.iterations=null",
    "budget.evaluations=60",
    "checkpoint.every_iterations=null",
    "logging.heatmaps=false",
    "logging.plots=false",
]


def _finals(results):
    runs = load_runs(results, "sphere_map_elites_bs", "batch_size")
    return {
        (g, s): m.drop(columns="elapsed_s")
        for g, s, m in zip(runs["group"], runs["seed"], runs["metrics"])
    }


@pytest.mark.parametrize("vmap", [True, False], ids=["vmapped", "one_by_one"])
def test_batch_sizes_as_trials_equal_the_sequential_runs(tmp_path, vmap):
    trials, sequential = tmp_path / "trials", tmp_path / "sequential"
    assert (
        main(
            [
                "batch-sizes",
                "sphere_map_elites_test",
                "--results-dir",
                str(trials),
                *BS_ARGS,
                *([] if vmap else ["--no-vmap"]),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "batch-sizes",
                "sphere_map_elites_test",
                "--results-dir",
                str(sequential),
                "--sequential",
                *BS_ARGS,
            ]
        )
        == 0
    )
    expected, actual = _finals(sequential), _finals(trials)
    assert sorted(actual) == sorted(expected) == [(10, 0), (10, 1), (20, 0), (20, 1)]
    for key, metrics in expected.items():
        assert len(metrics) == {10: 6, 20: 3}[key[0]]
        pd.testing.assert_frame_equal(actual[key], metrics, check_exact=False, rtol=1e-5)
    # The trials' run directories: no checkpoints, a log naming run_trials.
    run_dirs = [p.parent for p in trials.glob("*/config.yaml")]
    assert len(run_dirs) == 4
    for run_dir in run_dirs:
        assert not any((run_dir / "checkpoints").iterdir())
        assert "run_trials" in (run_dir / "run.log").read_text()
        assert [p.name for p in (run_dir / "snapshots").iterdir()] == [
            "archive_00000006.parquet" if "_bs10_" in run_dir.name else "archive_00000003.parquet"
        ]


def test_batch_sizes_trials_start_with_the_initial_solutions(tmp_path):
    # Each trial evaluates its emitter's initial solutions through ask/tell, as the
    # fused loop of `ribsax run` does, and then runs vmapped; both give the same
    # metrics (every second iteration and the last).
    extra = [
        "loop=fused",
        "fused_chunk=2",
        "emitters.0.initial_solutions=task",
        "logging.metrics_every=2",
    ]
    trials, sequential = tmp_path / "trials", tmp_path / "sequential"
    assert (
        main(
            [
                "batch-sizes",
                "sphere_map_elites_test",
                "--results-dir",
                str(trials),
                *BS_ARGS,
                *extra,
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "batch-sizes",
                "sphere_map_elites_test",
                "--results-dir",
                str(sequential),
                "--sequential",
                *BS_ARGS,
                *extra,
            ]
        )
        == 0
    )
    expected, actual = _finals(sequential), _finals(trials)
    assert sorted(actual) == sorted(expected) == [(10, 0), (10, 1), (20, 0), (20, 1)]
    for key, metrics in expected.items():
        assert metrics["iteration"].tolist() == {10: [2, 4, 6], 20: [2, 3]}[key[0]]
        pd.testing.assert_frame_equal(actual[key], metrics, check_exact=False, rtol=1e-5)
    for run_dir in (p.parent for p in trials.glob("*/config.yaml")):
        assert "run_trials" in (run_dir / "run.log").read_text()


def test_batch_sizes_falls_back_to_runs_for_a_python_evaluator(tmp_path):
    from ribsax.experiments._trials import run_config_trials

    cfg = load_config(
        "sphere_map_elites_test",
        ["evaluator={function: 'ribsax.examples.sphere:sphere', n_workers: 1}"],
    )
    assert run_config_trials([cfg], [tmp_path / "x"]) is None
    assert not (tmp_path / "x").exists()


def test_batch_sizes_refuses_an_emitter_without_a_batch(tmp_path, capsys):
    args = ["batch-sizes", "brax_walker2d_uni_me_es", "--smoke", "--batch-sizes", "4"]
    assert main([*args, "-n", "1", "--results-dir", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "emitters.0.class: MEESEmitter has no batch size to set" in err
    assert not list(tmp_path.iterdir())


def test_batch_sizes_needs_one_solution_per_part_of_a_split_batch(tmp_path, capsys):
    # DCG-ME's batch is its Iso+LineDD and policy-gradient offspring (no injection).
    args = ["batch-sizes", "brax_walker2d_uni_dcg_me", "--smoke", "--batch-sizes", "4", "1"]
    assert main([*args, "-n", "1", "--results-dir", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "DCRLMEEmitter needs at least 2 solutions per iteration" in err
    assert "ga_batch_size, pg_batch_size)" in err
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_batch_sizes_scale_the_parts_of_a_split_batch(tmp_path):
    # DCG-ME's smoke config: 2 Iso+LineDD + 2 policy-gradient offspring, no actor
    # injection, 2 actor evaluations per iteration.
    results = tmp_path / "bs"
    overrides = ["budget.evaluations=40", "emitters.0.ga_batch_size=3"]
    args = ["batch-sizes", "brax_walker2d_uni_dcg_me", "--smoke", *overrides]
    assert main([*args, "--batch-sizes", "5", "10", "-n", "1", "--results-dir", str(results)]) == 0
    emitters = {}
    for path in results.glob("*/config.yaml"):
        cfg = yaml.safe_load(path.read_text())
        emitters[cfg["name"].rsplit("_bs", 1)[1]] = cfg["emitters"][0]
    parts = ("ga_batch_size", "pg_batch_size", "ai_batch_size", "actor_evaluations")
    # 3:2:0 in proportion (largest remainder), the actor evaluations by 5/5 and 10/5.
    assert {size: tuple(e[k] for k in parts) for size, e in emitters.items()} == {
        "5": (3, 2, 0, 2),
        "10": (6, 4, 0, 4),
    }
    runs = load_runs(results, "brax_walker2d_uni_dcg_me_bs", "batch_size")
    per_iteration = {
        int(m["evaluations"].iloc[0] // m["iteration"].iloc[0]) for m in runs["metrics"]
    }
    assert per_iteration == {5 + 2, 10 + 4}
    assert all(int(m["evaluations"].iloc[-1]) >= 40 for m in runs["metrics"])
