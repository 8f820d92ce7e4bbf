"""Tests for ribsax.rl._skills: priors, per-environment sampling, DIAYN/DADS/SMERL."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.rl._skills import (
    SkillDiscriminator,
    SkillDynamics,
    SkillPrior,
    dads_reward,
    diayn_reward,
    dynamics_inputs,
    initial_skills,
    resample_finished,
    smerl_reward,
)

RNG = np.random.default_rng(0)


def _log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


# --- priors and sampling ------------------------------------------------------------
@pytest.mark.parametrize("kind", ["one_hot", "gaussian", "sphere"])
def test_prior_samples_have_kind_shape(kind):
    prior = SkillPrior(kind, 3)
    z = np.asarray(prior.sample(jax.random.key(1), 2000))
    assert z.shape == (2000, 3)
    if kind == "one_hot":
        assert set(np.unique(z)) == {0.0, 1.0} and np.all(z.sum(1) == 1)
        assert np.all(np.abs(z.mean(0) - 1 / 3) < 0.05)
    elif kind == "sphere":
        np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, rtol=1e-6)
        assert np.all(np.abs(z.mean(0)) < 0.06)
    else:
        assert np.all(np.abs(z.mean(0)) < 0.1)
        assert np.all(np.abs(z.std(0) - 1) < 0.1)


def test_prior_log_prob_matches_closed_forms():
    z = RNG.normal(size=(4, 3))
    gauss = SkillPrior("gaussian", 3).log_prob(jnp.asarray(z))
    np.testing.assert_allclose(gauss, -0.5 * (z**2).sum(1) - 1.5 * np.log(2 * np.pi), rtol=1e-10)
    sphere = SkillPrior("sphere", 3).log_prob(jnp.asarray(z))
    np.testing.assert_allclose(sphere, -np.log(4 * np.pi), rtol=1e-10)  # Area of S^2.
    onehot = SkillPrior("one_hot", 5).log_prob(jnp.eye(5))
    np.testing.assert_allclose(onehot, -np.log(5), rtol=1e-10)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kind": "categorical"}, "skill kind"),
        ({"num_skills": 1}, "num_skills"),
        ({"kind": "sphere", "num_skills": 1}, "num_skills"),
        ({"concentration": 0.0}, "concentration"),
    ],
)
def test_prior_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SkillPrior(**kwargs)


def test_tiled_skills_follow_qdax_order_and_need_a_multiple():
    prior = SkillPrior("one_hot", 3)
    z = np.asarray(initial_skills(prior, jax.random.key(0), 6, per_env=False))
    np.testing.assert_array_equal(z.argmax(1), [0, 1, 2, 0, 1, 2])
    with pytest.raises(ValueError, match=r"num_envs \(7\) must be a multiple"):
        initial_skills(prior, jax.random.key(0), 7, per_env=False)


def test_per_env_skills_work_for_any_number_of_envs():
    prior = SkillPrior("one_hot", 3)
    z = np.asarray(initial_skills(prior, jax.random.key(0), 7, per_env=True))
    assert z.shape == (7, 3) and np.all(z.sum(1) == 1)
    # Each environment draws its own skill: over many envs all skills appear, in
    # no fixed pattern, and another key gives another assignment.
    many = np.asarray(initial_skills(prior, jax.random.key(0), 301, per_env=True))
    counts = np.bincount(many.argmax(1), minlength=3)
    assert np.all(counts > 70)
    assert not np.array_equal(many.argmax(1)[:6], [0, 1, 2, 0, 1, 2])
    other = np.asarray(initial_skills(prior, jax.random.key(1), 7, per_env=True))
    assert not np.array_equal(z, other)
    np.testing.assert_array_equal(z, initial_skills(prior, jax.random.key(0), 7, per_env=True))


@pytest.mark.parametrize("kind", ["one_hot", "sphere"])
def test_resample_finished_changes_only_finished_envs(kind):
    prior = SkillPrior(kind, 4)
    z = initial_skills(prior, jax.random.key(0), 5, per_env=True)
    finished = jnp.array([0.0, 1.0, 0.0, 0.0, 1.0])
    keys = jax.random.split(jax.random.key(3), 20)
    outs = np.stack([np.asarray(resample_finished(prior, k, z, finished, True)) for k in keys])
    z = np.asarray(z)
    for i in (0, 2, 3):
        assert np.all(outs[:, i] == z[i])
    for i in (1, 4):
        assert len({tuple(row) for row in outs[:, i]}) > 1
    fixed = resample_finished(prior, keys[0], jnp.asarray(z), finished, False)
    np.testing.assert_array_equal(fixed, z)


# --- DIAYN ----------------------------------------------------------------------------
def test_diayn_reward_one_hot_matches_hand_computation():
    prior = SkillPrior("one_hot", 4)
    logits = RNG.normal(size=(6, 4))
    idx = RNG.integers(0, 4, size=6)
    z = np.eye(4)[idx]
    expected = _log_softmax(logits)[np.arange(6), idx] + np.log(4)
    got = diayn_reward(prior, jnp.asarray(logits), jnp.asarray(z))
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_diayn_reward_gaussian_matches_hand_computation():
    prior = SkillPrior("gaussian", 3)
    mean, z = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 3))
    # log N(z; mean, I) - log N(z; 0, I): the normalisers cancel.
    expected = -0.5 * ((z - mean) ** 2).sum(1) + 0.5 * (z**2).sum(1)
    got = diayn_reward(prior, jnp.asarray(mean), jnp.asarray(z))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dim, kappa", [(2, 0.7), (3, 4.0)])
def test_diayn_reward_sphere_matches_von_mises_fisher(dim, kappa):
    prior = SkillPrior("sphere", dim, concentration=kappa)
    out = RNG.normal(size=(6, dim)) * 3
    z = RNG.normal(size=(6, dim))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    cosine = ((out / np.linalg.norm(out, axis=1, keepdims=True)) * z).sum(1)
    if dim == 2:  # vMF on the circle: exp(k cos) / (2 pi I0(k)); prior 1 / (2 pi).
        expected = kappa * cosine - np.log(np.i0(kappa))
    else:  # On S^2: k exp(k cos) / (4 pi sinh k); prior 1 / (4 pi).
        expected = kappa * cosine + np.log(kappa / np.sinh(kappa))
    got = diayn_reward(prior, jnp.asarray(out), jnp.asarray(z))
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_discriminator_and_dynamics_shapes():
    disc = SkillDiscriminator((8, 8), 5)
    params = disc.init(jax.random.key(0), jnp.zeros((1, 2)))
    assert disc.apply(params, jnp.zeros((7, 2))).shape == (7, 5)
    dyn = SkillDynamics((8, 8), 2)
    inputs = dynamics_inputs(jnp.zeros((7, 6)), jnp.zeros((7, 5)), 2)
    assert inputs.shape == (7, 9)
    params = dyn.init(jax.random.key(0), inputs)
    assert dyn.apply(params, inputs).shape == (7, 2)


# --- DADS -----------------------------------------------------------------------------
def _linear_dynamics(params, inputs):
    return inputs @ params


def _dads_by_hand(w, desc, z, target, alternatives, omit):
    def log_q(skill):
        x = np.concatenate([desc[omit:], skill])
        mean = x @ w
        return -0.5 * ((target - mean) ** 2).sum() - 0.5 * len(target) * np.log(2 * np.pi)

    others = [np.exp(log_q(a)) for a in alternatives]
    return log_q(z) - np.log(np.mean(others))


@pytest.mark.parametrize("kind", ["one_hot", "sphere"])
def test_dads_reward_matches_hand_computation(kind):
    omit, k, num_skills, batch = 1, 3, 4, 5
    prior = SkillPrior(kind, num_skills)
    w = RNG.normal(size=(k - omit + num_skills, k)) * 0.5
    desc = RNG.normal(size=(batch, k))
    target = RNG.normal(size=(batch, k))
    if kind == "one_hot":
        z = np.eye(num_skills)[RNG.integers(0, num_skills, batch)]
        alternatives = np.eye(num_skills)  # The exact prior expectation.
    else:
        z = np.asarray(prior.sample(jax.random.key(2), batch))
        alternatives = np.asarray(prior.sample(jax.random.key(3), 7))
    got = dads_reward(
        _linear_dynamics,
        jnp.asarray(w),
        jnp.asarray(desc),
        jnp.asarray(z),
        jnp.asarray(target),
        jnp.asarray(alternatives),
        omit,
    )
    expected = [
        _dads_by_hand(w, desc[i], z[i], target[i], alternatives, omit) for i in range(batch)
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_dads_reward_is_zero_when_skill_does_not_matter():
    # Dynamics ignoring the skill: every alternative explains delta equally.
    w = np.zeros((2 + 3, 2))
    w[:2] = RNG.normal(size=(2, 2))
    got = dads_reward(
        _linear_dynamics,
        jnp.asarray(w),
        jnp.asarray(RNG.normal(size=(4, 2))),
        jnp.eye(3)[jnp.array([0, 1, 2, 0])],
        jnp.asarray(RNG.normal(size=(4, 2))),
        jnp.eye(3),
        0,
    )
    np.testing.assert_allclose(got, 0.0, atol=1e-12)


# --- SMERL ----------------------------------------------------------------------------
def test_smerl_gate_switches_exactly_at_the_margin():
    reward = jnp.array([1.0, 1.0, 1.0, 1.0, 1.0])
    diversity = jnp.array([2.0, 2.0, 2.0, 2.0, 2.0])
    returns = jnp.array([899.0, np.nextafter(900.0, 0.0), 900.0, 1500.0, np.nan])
    got = smerl_reward(
        reward, diversity, returns, smerl_target=1e3, smerl_margin=1e2, diversity_reward_scale=0.5
    )
    np.testing.assert_array_equal(got, [1.0, 1.0, 2.0, 2.0, 1.0])
    assert math.isclose(
        float(smerl_reward(jnp.float64(0.0), jnp.float64(3.0), jnp.float64(5.0), 5.0, 0.0, 2.0)),
        6.0,
    )
