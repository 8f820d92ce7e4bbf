"""Tests of the training entry point's plumbing (training itself: learning_test)."""

import csv
import json

import pytest

from ribsax.rl import train


def test_write_curves(tmp_path):
    rows = [
        {"env_steps": 0, "eval_return": 1.0, "random_return": 0.5},
        {"env_steps": 10, "eval_return": 3.0, "random_return": 0.5, "critic_loss": 0.1},
    ]
    train.write_curves(rows, str(tmp_path), "t")
    assert json.loads((tmp_path / "curves.json").read_text()) == rows
    with open(tmp_path / "curves.csv", encoding="utf-8") as f:
        read = list(csv.DictReader(f))
    assert [float(r["eval_return"]) for r in read] == [1.0, 3.0]
    assert read[0]["critic_loss"] == "" and read[1]["critic_loss"] == "0.1"
    pytest.importorskip("matplotlib")
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_registry_and_parser(capsys):
    assert {"sac", "td3"} <= set(train.ALGORITHMS)
    with pytest.raises(SystemExit):
        train.main(["nope", "--outdir", "x"])
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        train.main(["sac"])  # --outdir is required
