"""Tests of RL configs (an ``rl`` section): checks, and a run through ``ribsax run``."""

import json
import re

import pandas as pd
import pytest
import yaml

from ribsax.experiments import ConfigError, Experiment, load_config, run_rl_config
from ribsax.experiments.cli import main
from tests.checkpointer_test import truncate_checkpoint


def _write(tmp_path, text):
    path = tmp_path / "rl.yaml"
    path.write_text(text)
    return path


def test_rl_section_is_checked_against_the_algorithms_options(tmp_path):
    path = _write(
        tmp_path,
        "name: mine\nrl: {algorithm: td3, env: hopper_uni, steps: 500, hidden: [16, 16]}\n",
    )
    cfg = load_config(path, ["rl.num_envs=4", "seed=3"])
    assert cfg.rl.num_envs == 4 and cfg.seed == 3 and list(cfg.rl.hidden) == [16, 16]


@pytest.mark.parametrize(
    "overrides, match",
    [
        (["rl.algorithm=ppo"], r"rl\.algorithm: expected one of sac, td3"),
        (["rl.not_an_option=1"], r"rl\.not_an_option: not an option of sac"),
        (["rl.steps=many"], r"rl\.steps: expected a value of type int"),
        (["rl.num_skills=3"], r"rl\.num_skills: not an option of sac"),
        (["rl.outdir=somewhere"], r"rl\.outdir: not an option"),
        (["rl.backend=7", "rl.skill_kind=x"], r"rl\.skill_kind"),
    ],
)
def test_bad_rl_option_names_the_key(overrides, match):
    with pytest.raises(ConfigError, match=match):
        load_config("rl_sac_inverted_pendulum", overrides)


def test_skill_options_and_choices_are_checked():
    cfg = load_config("rl_dads_ant_omni", ["rl.skill_kind=gaussian", "rl.per_env_skills=true"])
    assert cfg.rl.skill_kind == "gaussian" and cfg.rl.per_env_skills is True
    with pytest.raises(ConfigError, match=r"rl\.skill_kind: expected one of one_hot"):
        load_config("rl_dads_ant_omni", ["rl.skill_kind=cube"])
    with pytest.raises(
        ConfigError,
        match=r"rl\.per_env_skills: expected true or "
        "false",
    ):
        load_config("rl_dads_ant_omni", ["rl.per_env_skills=3"])


def test_an_rl_config_is_not_a_qd_experiment(tmp_path):
    with pytest.raises(ConfigError, match="is an RL config"):
        Experiment("rl_sac_inverted_pendulum_test", logdir=tmp_path / "x")
    with pytest.raises(ConfigError, match="is not an RL config"):
        run_rl_config("sphere_map_elites_test", logdir=tmp_path / "y")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_ribsax_run_trains_an_rl_config_into_a_run_directory(tmp_path, capsys):
    logdir = tmp_path / "sac"
    assert main(["run", "rl_sac_inverted_pendulum_test", f"logdir={logdir}", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert (
        "rl_sac_inverted_pendulum: sac on inverted_pendulum, 40 environment steps" in out
        and str(logdir) in out
    )
    assert not any(line.startswith("{") for line in out.splitlines())  # --quiet
    config = yaml.safe_load((logdir / "config.yaml").read_text())
    assert config["rl"]["steps"] == 40 and config["logdir"] == str(logdir)
    assert json.loads((logdir / "run.json").read_text())["seed"] == 0
    options = json.loads((logdir / "config.json").read_text())
    assert options["algorithm"] == "sac" and options["hidden"] == [8]
    assert options["outdir"] == str(logdir)
    curves = pd.read_csv(logdir / "curves.csv")
    assert curves["env_steps"].iloc[-1] == 40 and len(curves) == 3
    assert curves["eval_return"].notna().all()
    assert (logdir / "curves.png").stat().st_size > 0
    assert "final evaluation return" in (logdir / "run.log").read_text()
    assert not (logdir / "checkpoints").exists()
    # The run directory now holds a run.
    assert main(["run", "rl_sac_inverted_pendulum_test", f"logdir={logdir}"]) == 2
    assert "already holds a run" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "rl_td3_inverted_pendulum",
        "rl_pbt_sac_inverted_pendulum",
        "rl_pbt_td3_inverted_pendulum",
        "rl_diayn_ant_omni",
        "rl_dads_ant_omni",
        "rl_diayn_smerl_ant_omni",
        "rl_dads_smerl_ant_omni",
    ],
)
def test_every_rl_smoke_config_runs(name, tmp_path):
    path, rows = run_rl_config(f"{name}_test", logdir=tmp_path / "run", quiet=True)
    assert rows and rows[-1]["env_steps"] >= 40
    assert (path / "curves.csv").exists()


def _final_training_state(logdir):
    """The agent, environment and buffer states of the last checkpoint."""
    from ribsax.experiments import Checkpointer

    reader = Checkpointer(logdir / "checkpoints")
    try:
        _, objects, meta = reader.restore()
    finally:
        reader.close()
    return objects["training"][:3], meta


# SAC and TD3 share the checkpointed training loop; TD3's run (another minute of
# compilation) goes with the slow tests.
@pytest.mark.parametrize("algorithm", ["sac", pytest.param("td3", marks=pytest.mark.slow)])
def test_rl_resume_equals_uninterrupted(tmp_path, capsys, algorithm):
    import shutil

    import jax
    import numpy as np

    # 70 steps: the warm-up, then whole chunks of 20 (one training program fewer
    # to compile than with a shorter last chunk).
    overrides = ["rl.steps=70", "rl.checkpoint_every=1", "rl.checkpoint_keep=5"]
    expected_dir = tmp_path / "full"
    _, expected = run_rl_config(
        f"rl_{algorithm}_inverted_pendulum_test", overrides, logdir=expected_dir, quiet=True
    )
    steps = sorted(int(p.name) for p in (expected_dir / "checkpoints").iterdir())
    assert steps == [30, 50, 70]  # 10 warm-up steps, then 20 per evaluation.
    # A run that died after its second checkpoint, which a disk fault then
    # damaged: it resumes from the first one.
    logdir = tmp_path / "resumed"
    shutil.copytree(expected_dir, logdir)
    shutil.rmtree(logdir / "checkpoints" / "70")
    truncate_checkpoint(logdir / "checkpoints" / "50")
    capsys.readouterr()
    assert main(["run", "--resume", str(logdir), "--quiet"]) == 0
    assert re.search(
        r"^ribsax: warning: checkpoint 50 .* cannot be read .* restored "
        r"checkpoint 30 instead$",
        capsys.readouterr().err,
        re.MULTILINE,
    )
    assert sorted(int(p.name) for p in (logdir / "checkpoints").iterdir()) == [30, 50, 70]
    assert (logdir / "checkpoints_unreadable" / "50").is_dir()
    resumed = pd.read_csv(logdir / "curves.csv")
    full = pd.DataFrame(expected)[list(resumed.columns)]
    assert len(resumed) == 4
    pd.testing.assert_frame_equal(
        resumed.drop(columns="wall_s"), full.drop(columns="wall_s"), check_exact=True
    )
    (expected_states, expected_meta), (states, meta) = (
        _final_training_state(expected_dir),
        _final_training_state(logdir),
    )
    assert meta["env_steps"] == expected_meta["env_steps"] == 70
    leaves, expected_leaves = jax.tree.leaves(states), jax.tree.leaves(expected_states)
    assert len(leaves) == len(expected_leaves) > 10
    for leaf, expected_leaf in zip(leaves, expected_leaves):
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf, expected_leaf = (jax.random.key_data(leaf), jax.random.key_data(expected_leaf))
        np.testing.assert_array_equal(np.asarray(leaf), np.asarray(expected_leaf))
    assert "resumed" in (logdir / "run.log").read_text()


def test_rl_resume_of_an_algorithm_without_checkpoints_is_refused(tmp_path):
    logdir = tmp_path / "dads"
    logdir.mkdir()
    from omegaconf import OmegaConf

    cfg = load_config("rl_dads_ant_omni_test")
    (logdir / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    with pytest.raises(ConfigError, match="dads runs write no checkpoints"):
        from ribsax.experiments import resume_rl

        resume_rl(logdir)
