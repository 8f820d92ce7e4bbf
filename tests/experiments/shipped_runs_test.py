"""The shipped configs' smoke variants run (the quick ones by default, every one
with -m slow)."""

import pytest

from ribsax.experiments import Experiment, list_configs

SPHERE = [name for name in list_configs() if name.startswith("sphere_")]
BRAX = [name for name in list_configs() if name.startswith("brax_")]


def _smoke_run(name, tmp_path, *overrides):
    experiment = Experiment(
        f"{name}_test",
        ["logging.heatmaps=false", "logging.plots=false", *overrides],
        logdir=tmp_path / "run",
        quiet=True,
    )
    metrics = experiment.run()
    budget = experiment.config.budget
    assert len(metrics) == experiment.total_iterations
    if budget.evaluations is not None:
        assert metrics["evaluations"].iloc[-1] >= budget.evaluations
    assert metrics["num_elites"].iloc[-1] >= 1
    return experiment


def test_dqd_config_runs_its_dqd_phase(tmp_path):
    experiment = _smoke_run("sphere_cma_mega", tmp_path, "budget.iterations=2")
    # 15 emitters x (1 gradient solution + 35 children) per iteration.
    assert experiment.metrics["evaluations"].tolist() == [540, 1080]


@pytest.mark.slow
def test_arm_config_runs_fused(tmp_path):
    experiment = _smoke_run("arm_cma_me", tmp_path)
    assert experiment.config.loop.value == "fused"
    assert experiment.metrics["evaluations"].iloc[-1] == 6 * 5 * 30


@pytest.mark.slow
@pytest.mark.parametrize("name", SPHERE)
def test_every_sphere_smoke_config_runs(name, tmp_path):
    _smoke_run(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", BRAX)
def test_every_brax_smoke_config_runs(name, tmp_path):
    _smoke_run(name, tmp_path)
