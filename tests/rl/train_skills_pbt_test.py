"""Tests for the DIAYN/DADS/SMERL/PBT runners of ``python -m ribsax.rl.train``."""

import json

import pytest

from ribsax.rl import _train_skills_pbt, train
from tests.rl._point_env import make_point_env


@pytest.fixture
def point_env(monkeypatch):
    def fake_make_env(name, batch_size=1, episode_length=1000, backend="spring", auto_reset=True):
        del name, backend
        return make_point_env(batch_size, episode_length, auto_reset)

    monkeypatch.setattr(_train_skills_pbt, "make_env", fake_make_env)


def test_skill_and_pbt_algorithms_are_registered():
    for name in ("diayn", "dads", "diayn_smerl", "dads_smerl", "pbt_sac", "pbt_td3"):
        assert name in train.ALGORITHMS and name in train.EXTRA_ARGUMENTS


def test_dads_smerl_writes_learning_curves(point_env, tmp_path):
    del point_env
    rows = train.main(
        [
            "dads_smerl",
            "--outdir",
            str(tmp_path),
            "--steps",
            "160",
            "--num-envs",
            "4",
            "--episode-length",
            "10",
            "--eval-every",
            "80",
            "--warmup-steps",
            "40",
            "--hidden",
            "8,8",
            "--batch-size",
            "16",
            "--buffer-size",
            "500",
            "--per-env-skills",
            "--smerl-target",
            "9",
        ]
    )
    assert [row["env_steps"] for row in rows] == [40, 120, 200]
    assert rows[-1]["grad_steps"] == 2 * 2 * 10  # 2 iterations x 1 update x unroll 10.
    assert all(-1e9 < row["eval_return"] <= 10.0 for row in rows)
    saved = json.loads((tmp_path / "curves.json").read_text())
    assert len(saved) == 3 and "training_reward" in saved[-1]
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["smerl_target"] == 9 and config["per_env_skills"] is True
