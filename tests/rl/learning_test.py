"""Learning checks (slow): SAC and TD3 beat a random policy on a brax task.

Run with ``pytest tests/rl/learning_test.py -m slow -n 0``. Each trains through
the ``python -m ribsax.rl.train`` entry point on brax's ``inverted_pendulum``
(200-step episodes: the return is the number of steps the pole stays up, 200 at
most) and compares the deterministic policy's evaluation return with a uniform
random policy's: "well above" is more than three times the random return (a
random policy keeps the pole up about 23 steps).
"""

import json

import pytest

from ribsax.rl import train


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["sac", "td3"])
def test_learns_well_above_random(algorithm, tmp_path):
    rows = train.main(
        [
            algorithm,
            "--env",
            "inverted_pendulum",
            "--steps",
            "12000",
            "--episode-length",
            "200",
            "--num-envs",
            "4",
            "--eval-envs",
            "8",
            "--eval-every",
            "4000",
            "--warmup-steps",
            "1000",
            "--grad-updates-per-step",
            "4",
            "--batch-size",
            "128",
            "--hidden",
            "64,64",
            "--buffer-size",
            "100000",
            "--outdir",
            str(tmp_path),
        ]
    )
    random_return = rows[0]["random_return"]
    best = max(row["eval_return"] for row in rows[1:])
    final = max(row["eval_return"] for row in rows[-2:])  # last two evaluations
    print(
        json.dumps({"algorithm": algorithm, "random": random_return, "best": best, "final": final})
    )
    assert (tmp_path / "curves.csv").exists() and (tmp_path / "curves.json").exists()
    assert final > 3 * random_return
