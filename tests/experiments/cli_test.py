"""Tests for the ribsax command (ribsax.experiments.cli.main, python -m ribsax)."""
import subprocess
import sys
from pathlib import Path

import pandas as pd

from ribsax.experiments import list_configs
from ribsax.experiments.cli import main

REPO = Path(__file__).resolve().parents[2]
TINY = ["budget.iterations=3", "emitters.0.batch_size=20",
        "checkpoint.every_iterations=2", "logging.snapshot_every=2"]


def test_list_shows_every_config_and_its_smoke_variant(capsys):
    assert main(["run", "--list"]) == 0
    out = capsys.readouterr().out
    for name in list_configs():
        assert f"{name}  (smoke: {name}_test)" in out


def test_python_dash_m_ribsax_runs_the_command():
    proc = subprocess.run([sys.executable, "-m", "ribsax", "run", "--list"],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=True)
    assert "sphere_map_elites" in proc.stdout


def test_run_then_resume(tmp_path, capsys):
    logdir = tmp_path / "run"
    assert main(["run", "sphere_map_elites_test", f"logdir={logdir}", "--quiet",
                 *TINY]) == 0
    out = capsys.readouterr().out
    assert "3 iterations, 60 evaluations" in out and str(logdir) in out
    first = pd.read_csv(logdir / "metrics.csv")
    assert main(["run", "--resume", str(logdir), "--quiet"]) == 0
    pd.testing.assert_frame_equal(first, pd.read_csv(logdir / "metrics.csv"))


def test_overrides_may_follow_the_options(tmp_path, capsys):
    logdir = tmp_path / "run"
    assert main(["run", "sphere_map_elites", "--smoke", "--quiet", f"logdir={logdir}",
                 *TINY]) == 0
    assert "3 iterations" in capsys.readouterr().out


def test_bad_config_exits_2_naming_the_key_before_any_work(tmp_path, capsys):
    logdir = tmp_path / "run"
    status = main(["run", "sphere_map_elites_test", f"logdir={logdir}",
                   "archive.dimz=[3,3]"])
    assert status == 2
    err = capsys.readouterr().err
    assert "archive.dimz: unknown key" in err and "dims" in err
    assert not logdir.exists()


def test_resume_rejects_a_config(tmp_path, capsys):
    try:
        main(["run", "sphere_map_elites", "--resume", str(tmp_path)])
    except SystemExit as err:
        assert err.code == 2
    assert "--resume takes no CONFIG" in capsys.readouterr().err
