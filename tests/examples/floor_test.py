"""Smoke tests for benchmarks/floor.py (floor arithmetic, draw counts, eigh counter,
one tiny run)."""

import json
import math

import numpy as np
import pytest

from ribsax.examples.sphere import CONFIG
from tests.examples._benchmarks import load_benchmark

floor = load_benchmark("floor")

_COMPONENTS = {
    "eval_s": 0.2,
    "noise_s": 0.3,
    "eigh_s": 4.0,
    "read_call_s": 0.03,
    "write_call_s": 0.05,
}


def test_floor_for_ask_tell_sums_everything_once():
    total, parts = floor.floor_for("ask/tell", _COMPONENTS)
    assert parts == pytest.approx({"eval": 0.2, "noise": 0.3, "eigh": 4.0, "calls": 0.08})
    assert total == pytest.approx(4.58)


def test_floor_for_dqd_counts_two_call_pairs():
    total, parts = floor.floor_for("dqd", _COMPONENTS)
    assert parts["calls"] == pytest.approx(0.16)
    assert total == pytest.approx(0.2 + 0.3 + 4.0 + 0.16)


def test_floor_for_fused_drops_eval_and_calls():
    total, parts = floor.floor_for("fused", _COMPONENTS)
    assert set(parts) == {"noise", "eigh"}
    assert total == pytest.approx(4.3)


def test_floor_for_unknown_mode():
    with pytest.raises(ValueError, match="unknown mode"):
        floor.floor_for("async", _COMPONENTS)


def test_judge_verdicts():
    # pyribs 10 ms, target 5x -> budget 2 ms.
    res = floor.judge(10.0, 5.0, 3.0, cores=2)
    assert res["budget_s"] == pytest.approx(2.0)
    assert res["max_speedup"] == pytest.approx(10 / 3)
    assert res["verdict"] == "infeasible"
    # Spread over 2 cores: 1.5 ms <= 2 ms.
    assert res["max_speedup_all_cores"] == pytest.approx(20 / 3)
    assert res["verdict_all_cores"] == "not excluded"
    assert floor.judge(10.0, 5.0, 2.0)["verdict"] == "not excluded"  # equal: ok
    assert floor.judge(10.0, 5.0, 5.0, cores=2)["verdict_all_cores"] == "infeasible"
    assert math.isinf(floor.judge(10.0, 5.0, 0.0)["max_speedup"])


def test_best_candidate_uses_floor_time():
    name, cost = floor.best_candidate(
        {"a": {"raw_s": 1.0, "floor_s": 0.9}, "b": {"raw_s": 0.8, "floor_s": 0.85}}
    )
    assert (name, cost) == ("b", 0.85)


def test_noise_draws_per_configuration():
    assert floor.noise_draws(CONFIG["map_elites"], 100) == [("GaussianEmitter", 540, 100)]
    assert floor.noise_draws(CONFIG["cma_mae"], 1000) == [("EvolutionStrategyEmitter", 540, 1000)]
    assert floor.noise_draws(CONFIG["cma_mega"], 100) == [("GradientArborescenceEmitter", 525, 3)]
    # sigma = 0: only the arborescence coefficients are drawn.
    assert floor.noise_draws(CONFIG["omg_mega"], 100) == [("GradientOperatorEmitter", 270, 3)]
    # og_map_elites: sigma > 0, no measure gradients.
    assert floor.noise_draws(CONFIG["og_map_elites"], 100) == [
        ("GradientOperatorEmitter", 270, 100)
    ]
    with pytest.raises(ValueError, match="unknown emitter"):
        floor.noise_draws({"emitters": [("Foo", {"batch_size": 1}, 1)]}, 3)


def test_eval_batches():
    assert floor.eval_batches(CONFIG["cma_me_imp"]) == (0, 540)
    assert floor.eval_batches(CONFIG["cma_mega"]) == (15, 525)
    assert floor.eval_batches(CONFIG["omg_mega"]) == (270, 270)


def test_select_targets():
    assert floor.select_targets("fused:cma_mae, map_elites") == ["map_elites", "fused:cma_mae"]
    assert floor.select_targets("scalable_cma_mae") == [
        "scalable_cma_mae:sep_cma_es",
        "scalable_cma_mae:lm_ma_es",
    ]
    with pytest.raises(ValueError, match="unknown target"):
        floor.select_targets("cma_me_rd")
    with pytest.raises(ValueError, match="no target"):
        floor.select_targets(" , ")


def test_eigh_counter_counts_only_pyribs_cma_es():
    from ribs.emitters.opt._cma_es import DecompMatrix

    orig = np.linalg.eigh
    decomp = DecompMatrix(3, np.float64)
    with floor.EighCounter() as counter:
        decomp.update_eigensystem(current_eval=10, lazy_gap_evals=0)
        np.linalg.eigh(np.eye(4))  # not pyribs' CMA-ES: not counted
        decomp.update_eigensystem(current_eval=11, lazy_gap_evals=5)  # not due
    assert counter.calls == {3: 1}
    assert np.linalg.eigh is orig


def test_main_quick_run(tmp_path, capsys):
    path = tmp_path / "floor.json"
    assert (
        floor.main(
            [
                "--quick",
                "--targets",
                "map_elites",
                "--no-ribsax",
                "--repeats",
                "2",
                "--json",
                str(path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "| map_elites (>= 3x) | ask/tell |" in out
    (row,) = json.loads(path.read_text())["results"]["targets"]
    assert row["ribsax_s"] is None
    assert set(row["parts"]) == {"eval", "noise", "eigh", "calls"}
    assert row["parts"]["eigh"] == 0.0
    assert row["floor_s"] == pytest.approx(sum(row["parts"].values()))
    assert row["pyribs_s"] > 0 and row["floor_s"] > 0
    assert row["budget_s"] == pytest.approx(row["pyribs_s"] / 3)
    assert row["verdict"] == ("infeasible" if row["floor_s"] > row["budget_s"] else "not excluded")
