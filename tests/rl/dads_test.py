"""Tests for ribsax.rl.DADS on a 2-D point-mass environment (tiny networks)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.rl import DADS, DadsConfig, Transition
from tests.rl._point_env import make_point_env

NUM_ENVS, NUM_SKILLS, EPISODE, L = 6, 2, 10, 5


def _config(**kwargs):
    args = dict(
        batch_size=16,
        episode_length=EPISODE,
        num_skills=NUM_SKILLS,
        critic_hidden_layer_size=(8, 8),
        policy_hidden_layer_size=(8, 8),
        dynamics_hidden_layer_size=(8, 8),
        skill_kind="sphere",
        num_prior_samples=L,
        omit_input_dynamics_dim=1,
        dynamics_update_freq=2,
    )
    args.update(kwargs)
    return DadsConfig(**args)


@pytest.fixture(scope="module")
def run():
    """Continuous skills on the circle, drawn once per environment."""
    agent = DADS(_config(), make_point_env(NUM_ENVS, EPISODE), buffer_size=400)
    state0 = agent.init(jax.random.key(0))
    skills0 = np.asarray(state0.skills)
    state, metrics = agent.train(state0, 2, unroll_length=EPISODE, grad_updates_per_step=2)
    return agent, skills0, state, metrics


def test_continuous_skills_and_metrics(run):
    agent, skills0, state, metrics = run
    np.testing.assert_allclose(np.linalg.norm(skills0, axis=1), 1.0, rtol=1e-6)
    assert len({tuple(s) for s in skills0}) == NUM_ENVS
    np.testing.assert_array_equal(state.skills, skills0)  # Not per-env: kept.
    for name, value in metrics.items():
        assert np.isfinite(value), name
    # The target statistics saw the training batches.
    assert float(state.model.target_stats.count) == 2 * 2 * 16


def _log_normal(x, mean):
    return -0.5 * ((x - mean) ** 2).sum(-1) - 0.5 * x.shape[-1] * np.log(2 * np.pi)


def test_rewards_match_hand_computation(run):
    agent, _, state, _ = run
    items = agent.buffer.sample(state.buffer, jax.random.key(3))
    key = jax.random.key(4)
    diversity, training = agent.rewards(state, items, key)
    tr = jax.tree.map(np.asarray, items.transition)
    stats = state.model.target_stats
    std = np.maximum(np.sqrt(np.asarray(stats.m2) / float(stats.count)), 1e-6)
    target = (tr.next_state_desc - tr.state_desc - np.asarray(stats.mean)) / (std + 1e-8)
    skills = tr.obs[:, 2:]
    alternatives = np.asarray(agent.model.alternatives(key, skills.dtype))
    assert alternatives.shape == (L, NUM_SKILLS)

    def log_q(z):
        inputs = np.concatenate([tr.state_desc[:, 1:], z], axis=1)  # omit 1 dim.
        mean = np.asarray(agent.model.network.apply(state.model.params, inputs))
        return _log_normal(target, mean)

    others = np.stack([log_q(np.broadcast_to(a, skills.shape)) for a in alternatives])
    expected = log_q(skills) - np.log(np.mean(np.exp(others), axis=0))
    np.testing.assert_allclose(diversity, expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(training, diversity)


def test_dynamics_trains_every_update_freq_and_loss_decreases(run):
    agent, _, state, _ = run
    items = agent.buffer.sample(state.buffer, jax.random.key(5))
    update = jax.jit(agent.model.update)
    model = state.model._replace(steps=state.model.steps * 0)
    losses = []
    for i in range(40):
        new, metrics = update(model, items.transition, jax.random.key(0))
        changed = not np.array_equal(
            new.params["params"]["MLP_0"]["Dense_0"]["kernel"],
            model.params["params"]["MLP_0"]["Dense_0"]["kernel"],
        )
        assert changed == (i % 2 == 0), i  # dynamics_update_freq=2
        losses.append(float(metrics["dynamics_loss"]))
        model = new
    assert losses[-1] < losses[0] - 1e-3


def test_evaluate_and_bad_arguments(run):
    agent, _, state, _ = run
    ev = agent.evaluate(state, jax.random.key(7))
    assert ev.skills.shape == (NUM_ENVS, NUM_SKILLS)
    assert ev.final_state_descriptors.shape == (NUM_ENVS, 2)
    assert np.all(np.isfinite(ev.diversity_returns)) and np.all(ev.returns > 0)
    with pytest.raises(ValueError, match="omit_input_dynamics_dim"):
        DADS(_config(omit_input_dynamics_dim=3), make_point_env(NUM_ENVS, EPISODE))
    with pytest.raises(ValueError, match="num_prior_samples"):
        _config(num_prior_samples=0)
    with pytest.raises(ValueError, match="dynamics_update_freq"):
        _config(dynamics_update_freq=0)
    with pytest.raises(TypeError, match="DadsConfig"):
        DADS(object(), make_point_env(NUM_ENVS, EPISODE))


@pytest.mark.parametrize("full_state, normalize", [(True, True), (False, False)])
def test_full_state_and_unnormalised_targets(full_state, normalize):
    # descriptor_full_state: the dynamics models the observation's change (without
    # the skill), and steps that ended an episode are left out of its statistics;
    # normalize_target=False: the raw change is the target.
    agent = DADS(
        _config(
            skill_kind="one_hot",
            omit_input_dynamics_dim=0,
            descriptor_full_state=full_state,
            normalize_target=normalize,
        ),
        make_point_env(NUM_ENVS, EPISODE),
    )
    model = agent.init(jax.random.key(0)).model
    rng = np.random.default_rng(1)
    n = 8
    skills = np.eye(NUM_SKILLS)[rng.integers(0, NUM_SKILLS, n)]
    obs, next_obs, desc, next_desc = rng.normal(size=(4, n, 2))
    dones = np.zeros(n)
    dones[[2, 5]] = 1.0
    tr = jax.tree.map(
        jnp.asarray,
        Transition(
            obs=np.concatenate([obs, skills], 1),
            next_obs=np.concatenate([next_obs, skills], 1),
            rewards=np.zeros(n),
            dones=dones,
            truncations=np.zeros(n),
            actions=np.zeros((n, 2)),
            state_desc=desc,
            next_state_desc=next_desc,
        ),
    )
    model, _ = agent.model.update(model, tr, jax.random.key(2))
    got = np.asarray(agent.model.reward(model, tr, jax.random.key(3)))

    start, end = (obs, next_obs) if full_state else (desc, next_desc)
    target = end - start
    stats = model.target_stats
    if normalize:
        kept = target[dones == 0]  # The full-state statistics skip episode ends.
        assert float(stats.count) == len(kept)
        np.testing.assert_allclose(stats.mean, kept.mean(0), rtol=1e-6)
        target = (target - kept.mean(0)) / (np.maximum(kept.std(0), 1e-6) + 1e-8)
    else:
        assert float(stats.count) == 0.0
    log_q = np.stack(
        [
            _log_normal(
                target,
                np.asarray(
                    agent.model.network.apply(
                        model.params, jnp.concatenate([start, np.broadcast_to(z, skills.shape)], 1)
                    )
                ),
            )
            for z in np.eye(NUM_SKILLS)
        ]
    )
    expected = log_q[skills.argmax(1), np.arange(n)] - np.log(np.mean(np.exp(log_q), axis=0))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)
