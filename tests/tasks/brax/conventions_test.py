"""The brax tasks' optional conventions (those of the DCRL papers): remaining time
in the observations, a per-step reward bonus, clipped rewards and the QD-score
offset."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.tasks import brax as brax_tasks

EPISODE = 6
BONUS, CLIP = 0.5, 1.2


@pytest.fixture(scope="module", name="tasks")
def fixture_tasks():
    common = dict(episode_length=EPISODE, hidden_layer_sizes=(4,), return_transitions=True)
    plain = brax_tasks.create("hopper_uni", **common)
    dcrl = brax_tasks.create(
        "hopper_uni",
        time_remaining=True,
        reward_bonus=BONUS,
        reward_clip_min=CLIP,
        qd_score_offset=0.0,
        **common,
    )
    return plain, dcrl


def test_policy_sees_the_remaining_time(tasks):
    plain, dcrl = tasks
    assert dcrl.policy.obs_dim == plain.policy.obs_dim + 1
    x = dcrl.initial_solutions(3, jax.random.key(0), dtype=jnp.float64)
    _, _, extras = dcrl.evaluate(x, jax.random.key(1))
    tr = extras["transitions"]
    left = (EPISODE - np.arange(EPISODE)) / EPISODE
    valid = np.asarray(tr.valid) > 0
    obs_time = np.asarray(tr.obs)[..., -1]
    next_time = np.asarray(tr.next_obs)[..., -1]
    np.testing.assert_allclose(obs_time[valid], np.broadcast_to(left, valid.shape)[valid])
    np.testing.assert_allclose(
        next_time[valid], np.broadcast_to(left - 1 / EPISODE, valid.shape)[valid]
    )


def test_rewards_get_the_bonus_and_the_floor(tasks):
    """Zero policies act the same whatever they observe, so both tasks play the
    same episodes: the adjusted rewards are max(reward + bonus, clip)."""
    plain, dcrl = tasks
    key = jax.random.key(2)
    obj_p, meas_p, ext_p = plain.evaluate(jnp.zeros((2, plain.solution_dim)), key)
    obj_d, meas_d, ext_d = dcrl.evaluate(jnp.zeros((2, dcrl.solution_dim)), key)
    np.testing.assert_allclose(meas_d, meas_p)
    valid = np.asarray(ext_p["transitions"].valid) > 0
    np.testing.assert_array_equal(np.asarray(ext_d["transitions"].valid) > 0, valid)
    expected = np.where(
        valid, np.maximum(np.asarray(ext_p["transitions"].reward) + BONUS, CLIP), 0.0
    )
    np.testing.assert_allclose(ext_d["transitions"].reward, expected, rtol=1e-6)
    np.testing.assert_allclose(obj_d, expected.sum(1), rtol=1e-6)
    assert np.all(np.asarray(obj_d) >= CLIP * valid.sum(1) - 1e-9)


def test_qd_score_offset_and_description(tasks):
    plain, dcrl = tasks
    assert plain.qd_score_offset == -brax_tasks.REWARD_OFFSETS["hopper_uni"] * EPISODE
    assert dcrl.qd_score_offset == 0.0
    assert (dcrl.time_remaining, dcrl.reward_bonus, dcrl.reward_clip_min) == (True, BONUS, CLIP)
    assert "remaining time" in dcrl.description and "clipped" in dcrl.description
    assert "remaining time" not in plain.description


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"reward_bonus": float("nan")}, ValueError, "reward_bonus must be finite"),
        ({"reward_clip_min": float("-inf")}, ValueError, "reward_clip_min must be finite"),
        ({"qd_score_offset": "zero"}, TypeError, "qd_score_offset must be a number"),
    ],
)
def test_bad_conventions_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        brax_tasks.create("hopper_uni", episode_length=EPISODE, **kwargs)
