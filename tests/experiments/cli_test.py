"""Tests for the ribsax command (ribsax.experiments.cli.main, python -m ribsax)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ribsax.experiments import list_configs
from ribsax.experiments.cli import main
from tests.checkpointer_test import truncate_checkpoint

REPO = Path(__file__).resolve().parents[2]
TINY = [
    "budget.iterations=3",
    "emitters.0.batch_size=20",
    "checkpoint.every_iterations=2",
    "logging.snapshot_every=2",
]


def test_list_shows_every_config_and_its_smoke_variant(capsys):
    assert main(["run", "--list"]) == 0
    out = capsys.readouterr().out
    for name in list_configs():
        assert f"{name}  (smoke: {name}_test)" in out


def test_python_dash_m_ribsax_runs_the_command():
    proc = subprocess.run(
        [sys.executable, "-m", "ribsax", "run", "--list"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "sphere_map_elites" in proc.stdout


def test_run_then_resume(tmp_path, capsys):
    logdir = tmp_path / "run"
    assert main(["run", "sphere_map_elites_test", f"logdir={logdir}", "--quiet", *TINY]) == 0
    out = capsys.readouterr().out
    assert "3 iterations, 60 evaluations" in out and str(logdir) in out
    first = pd.read_csv(logdir / "metrics.csv")
    assert main(["run", "--resume", str(logdir), "--quiet"]) == 0
    pd.testing.assert_frame_equal(first, pd.read_csv(logdir / "metrics.csv"))


def test_overrides_may_follow_the_options(tmp_path, capsys):
    logdir = tmp_path / "run"
    assert main(["run", "sphere_map_elites", "--smoke", "--quiet", f"logdir={logdir}", *TINY]) == 0
    assert "3 iterations" in capsys.readouterr().out


def test_bad_config_exits_2_naming_the_key_before_any_work(tmp_path, capsys):
    logdir = tmp_path / "run"
    status = main(["run", "sphere_map_elites_test", f"logdir={logdir}", "archive.dimz=[3,3]"])
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


def test_resume_past_unreadable_checkpoints_warns_then_fails_when_none_is_left(tmp_path, capsys):
    logdir = tmp_path / "run"
    assert main(["run", "sphere_map_elites_test", f"logdir={logdir}", "--quiet", *TINY]) == 0
    first = pd.read_csv(logdir / "metrics.csv")
    capsys.readouterr()
    # Checkpoints 2 and 3: the damaged 3 is skipped, the run continues from 2.
    broken = tmp_path / "broken"
    shutil.copytree(logdir, broken)
    truncate_checkpoint(logdir / "checkpoints" / "3")
    assert main(["run", "--resume", str(logdir), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert re.search(
        r"^ribsax: warning: checkpoint 3 \(.*checkpoints/3\) cannot be "
        r"read \(\w+.*\); moved it to .*checkpoints_unreadable/3 and "
        r"restored checkpoint 2 instead$",
        err,
        re.MULTILINE,
    ), err
    pd.testing.assert_frame_equal(
        first.drop(columns="elapsed_s"),
        pd.read_csv(logdir / "metrics.csv").drop(columns="elapsed_s"),
    )
    # Both damaged: a one-line error naming the run directory, exit status 2.
    for step in (2, 3):
        truncate_checkpoint(broken / "checkpoints" / str(step))
    assert main(["run", "--resume", str(broken), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert re.search(
        rf"^ribsax: error: {re.escape(str(broken))}: none of its "
        r"checkpoints can be read \(checkpoint 3: .*checkpoint 2: "
        r".*\); move .* aside",
        err,
        re.MULTILINE,
    ), err


@pytest.mark.parametrize(
    "text, where, problem",
    [
        (
            "name: tiny\ntask: {name: sphere\narchive: {dims: [5, 5]}\n",
            "line 3, column 8",
            r"expected ',' or '}'.*\(while parsing a flow mapping started at line 2, "
            r"column 7\)",
        ),
        ("name: tiny\n  seed: 3\n", "line 2, column 7", "mapping values are not allowed"),
        ('name: "tiny\n', "line 2, column 1", "unexpected end of stream"),
    ],
)
def test_malformed_yaml_exits_2_naming_the_file_line_and_column(
    tmp_path, capsys, text, where, problem
):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main(["run", str(path), f"logdir={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(
        rf"ribsax: error: {re.escape(str(path))}: not valid YAML at "
        rf"{where}: .*{problem}.*\n",
        err,
    ), err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "text, kind",
    [
        ("- name: tiny\n- seed: 3\n", "a list"),
        ("sphere_map_elites\n", "a single str value"),
        ("3\n", "a single int value"),
    ],
)
def test_yaml_whose_top_level_is_not_a_mapping_exits_2(tmp_path, capsys, text, kind):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main(["run", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"ribsax: error: {path}: the top level of a config must be a mapping of keys "
        f"(name: ..., task: ...), got {kind}\n"
    )
