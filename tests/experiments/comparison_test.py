"""Tests for comparing algorithms: ``ribsax plot``'s figure, table of final values
and pairwise rank tests (ribsax.experiments._analysis, _statistics)."""

import json

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import yaml

from ribsax.experiments import compare_runs, holm_bonferroni, load_runs
from ribsax.experiments.cli import main

#: Final (QD score, coverage, best objective) of each seed, per algorithm.
FINALS = {
    "alg_a": [(10.0, 0.5, 95.0), (11.0, 0.5, 97.0), (12.0, 0.5, 99.0)],
    "alg_b": [(20.0, 0.5, 96.0), (21.0, 0.5, 98.0), (22.0, 0.5, 93.0)],
    "alg_c": [(30.0, 0.5, 90.0), (31.0, 0.5, 91.0), (32.0, 0.5, 92.0)],
}


def _write_run(root, name, seed, finals, robustness=None, iteration=None):
    """A run directory as the runner writes it (config.yaml, metrics.csv), its
    curves rising linearly to ``finals``; with ``robustness``, the summary.json of
    ``ribsax analyze`` for ``iteration`` (default: the last one)."""
    qd, coverage, best = finals
    run = root / f"2026-01-01_00-00-0{seed}_{name}_seed{seed}"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump({"name": name, "seed": seed}))
    steps = np.arange(1, 11)
    pd.DataFrame(
        {
            "iteration": steps,
            "evaluations": steps * 10,
            "qd_score": qd * steps / 10,
            "norm_qd_score": qd * steps / 1000,
            "coverage": coverage * steps / 10,
            "obj_max": best - 10 + steps,
            "obj_mean": 50.0,
            "num_elites": steps,
            "elapsed_s": steps * 0.1,
        }
    ).to_csv(run / "metrics.csv", index=False)
    if robustness is not None:
        (run / "summary.json").write_text(
            json.dumps(
                {"iteration": 10 if iteration is None else iteration, "mean_robustness": robustness}
            )
        )
    return run


def _results(root, algorithms, robustness=False):
    for name in algorithms:
        for seed, finals in enumerate(FINALS[name]):
            _write_run(
                root,
                name,
                seed,
                finals,
                robustness=-seed - 3.0 * (name == "alg_b") if robustness else None,
            )
    return root


def _auc(qd):
    return sum(qd * step / 10 * 10 for step in range(1, 11))


def test_holm_bonferroni_matches_a_hand_computation():
    # Sorted: 0.01, 0.03, 0.04, 0.5 -> 4 * 0.01, 3 * 0.03, max(0.09, 2 * 0.04),
    # max(0.09, 0.5); returned in the order given.
    np.testing.assert_allclose(holm_bonferroni([0.01, 0.04, 0.03, 0.5]), [0.04, 0.09, 0.09, 0.5])
    # Capped at 1; NaN stays NaN and does not count.
    np.testing.assert_allclose(holm_bonferroni([0.6, np.nan, 0.2]), [0.6, np.nan, 0.4])
    assert holm_bonferroni([]).shape == (0,)


def test_plot_command_writes_figure_table_and_tests(tmp_path, capsys):
    results = _results(tmp_path / "results", ["alg_a", "alg_b"])
    figure, table_path = tmp_path / "fig.png", tmp_path / "final.csv"
    tests_path, markdown = tmp_path / "tests.csv", tmp_path / "report.md"
    assert (
        main(
            [
                "plot",
                str(results),
                "--save",
                str(figure),
                "--table",
                str(table_path),
                "--tests",
                str(tests_path),
                "--markdown",
                str(markdown),
            ]
        )
        == 0
    )
    assert figure.stat().st_size > 10_000
    out = capsys.readouterr().out
    assert "Mann-Whitney" in out and "p_holm" in out

    table = pd.read_csv(table_path).set_index("group")
    assert table.index.tolist() == ["alg_a", "alg_b"]
    assert table.loc["alg_a", "runs"] == 3
    assert table.loc["alg_a", "qd_score"] == pytest.approx(11.0)
    # 95% Student-t half-width of (10, 11, 12): t(0.975, 2) * 1 / sqrt(3).
    assert table.loc["alg_a", "qd_score_ci95"] == pytest.approx(
        scipy.stats.t.ppf(0.975, 2) / np.sqrt(3)
    )
    assert table.loc["alg_b", "qd_score_auc"] == pytest.approx(
        np.mean([_auc(q) for q, _, _ in FINALS["alg_b"]])
    )
    assert table.loc["alg_a", "norm_qd_score"] == pytest.approx(0.11)
    assert "mean_robustness" not in table

    tests = pd.read_csv(tests_path)
    assert tests["metric"].tolist() == ["qd_score", "qd_score_auc", "coverage", "obj_max"]
    for _, row in tests.iterrows():
        a, b = _values("alg_a", row["metric"]), _values("alg_b", row["metric"])
        expected = scipy.stats.mannwhitneyu(a, b, alternative="two-sided")
        assert (row["group_a"], row["group_b"]) == ("alg_a", "alg_b")
        assert row["u_statistic"] == pytest.approx(expected.statistic)
        assert row["p_value"] == pytest.approx(expected.pvalue)
        # One pair per metric: Holm-Bonferroni leaves the p-value as it is.
        assert row["p_holm"] == pytest.approx(expected.pvalue)
        assert not row["significant"]
    by_metric = tests.set_index("metric")
    # Separated samples of 3: the exact two-sided p-value 2 / C(6, 3) = 0.1.
    assert by_metric.loc["qd_score", "p_value"] == pytest.approx(0.1)
    assert by_metric.loc["qd_score", "u_statistic"] == 0
    # Equal values in both groups.
    assert by_metric.loc["coverage", "p_value"] == 1.0
    text = markdown.read_text()
    assert "| group | runs | evaluations | QD score |" in text
    assert "| alg_a | 3 | 100 | 11 ± 2.484 |" in text
    assert "| QD score | alg_a | alg_b | 3 | 3 | 11 | 21 | 0 | 0.1 | 0.1 | no |" in text


def _values(name, metric):
    """Final values of ``metric`` in the runs of ``name``."""
    if metric == "qd_score_auc":
        return [_auc(qd) for qd, _, _ in FINALS[name]]
    column = ("qd_score", "coverage", "obj_max").index(metric)
    return [finals[column] for finals in FINALS[name]]


def test_holm_correction_over_three_algorithms(tmp_path):
    results = _results(tmp_path, ["alg_a", "alg_b", "alg_c"])
    _, tests = compare_runs(load_runs(results))
    qd = tests[tests["metric"] == "qd_score"]
    assert list(zip(qd["group_a"], qd["group_b"])) == [
        ("alg_a", "alg_b"),
        ("alg_a", "alg_c"),
        ("alg_b", "alg_c"),
    ]
    # Three separated pairs, p = 0.1 each: Holm gives 3 * 0.1, then
    # max(0.3, 2 * 0.1), then max(0.3, 0.1).
    np.testing.assert_allclose(qd["p_value"], [0.1, 0.1, 0.1])
    np.testing.assert_allclose(qd["p_holm"], [0.3, 0.3, 0.3])
    best = tests[tests["metric"] == "obj_max"].reset_index(drop=True)
    p = [
        scipy.stats.mannwhitneyu(
            _values(a, "obj_max"), _values(b, "obj_max"), alternative="two-sided"
        ).pvalue
        for a, b in zip(best["group_a"], best["group_b"])
    ]
    np.testing.assert_allclose(best["p_value"], p)
    # By hand: a-b overlap (U = 6 of 9, exact p = 0.7), a-c and b-c are separated
    # (p = 0.1); sorted 0.1, 0.1, 0.7 -> 3 * 0.1, max(0.3, 2 * 0.1),
    # max(0.3, 0.7), in the pairs' order.
    np.testing.assert_allclose(p, [0.7, 0.1, 0.1])
    np.testing.assert_allclose(best["p_holm"], [0.7, 0.3, 0.3])


def test_table_and_tests_add_the_robustness_of_analyzed_runs(tmp_path):
    results = _results(tmp_path, ["alg_a", "alg_b"], robustness=True)
    table, tests = compare_runs(load_runs(results))
    table = table.set_index("group")
    assert table.loc["alg_a", "mean_robustness"] == pytest.approx(-1.0)
    assert table.loc["alg_b", "mean_robustness"] == pytest.approx(-4.0)
    robust = tests[tests["metric"] == "mean_robustness"].iloc[0]
    assert robust["p_value"] == pytest.approx(
        scipy.stats.mannwhitneyu([0, -1, -2], [-3, -4, -5], alternative="two-sided").pvalue
    )
    # A summary of an earlier iteration is stale: the column is left out.
    _write_run(tmp_path / "later", "alg_a", 5, (1.0, 0.5, 90.0), robustness=-1.0, iteration=9)
    table, tests = compare_runs(load_runs(tmp_path))
    assert "mean_robustness" not in table
    assert "mean_robustness" not in set(tests["metric"])


def test_plot_of_a_missing_or_empty_results_directory_fails(tmp_path, capsys):
    assert main(["plot", str(tmp_path / "nowhere"), "--save", str(tmp_path / "f.png")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["plot", str(tmp_path), "--save", str(tmp_path / "f.png")]) == 2
    assert "no run directory under" in capsys.readouterr().err
    assert not (tmp_path / "f.png").exists()
