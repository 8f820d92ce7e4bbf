"""Tests for ribsax.rl.DIAYN on a 2-D point-mass environment (tiny networks)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.rl import DIAYN, DiaynConfig, Transition
from tests.rl._point_env import make_point_env

NUM_ENVS, NUM_SKILLS, EPISODE = 7, 3, 10


def _config(**kwargs):
    args = dict(
        batch_size=16,
        episode_length=EPISODE,
        num_skills=NUM_SKILLS,
        critic_hidden_layer_size=(8, 8),
        policy_hidden_layer_size=(8, 8),
        discriminator_hidden_layer_size=(8, 8),
        per_env_skills=True,
    )
    args.update(kwargs)
    return DiaynConfig(**args)


@pytest.fixture(scope="module")
def run():
    """Per-environment one-hot skills with 7 envs (not a multiple of 3 skills)."""
    agent = DIAYN(_config(), make_point_env(NUM_ENVS, EPISODE), buffer_size=400)
    state0 = agent.init(jax.random.key(0))
    skills0 = np.asarray(state0.skills)
    state, metrics = agent.train(state0, 2, unroll_length=EPISODE, grad_updates_per_step=2)
    return agent, skills0, state, metrics


def test_per_env_skills_and_shapes(run):
    agent, skills0, state, metrics = run
    assert skills0.shape == (NUM_ENVS, NUM_SKILLS)
    np.testing.assert_array_equal(skills0.sum(1), 1.0)
    assert len(np.unique(skills0.argmax(1))) > 1
    # Every environment finished two episodes: each drew new skills at each end.
    assert not np.array_equal(np.asarray(state.skills), skills0)
    assert int(agent.buffer.size(state.buffer)) == 2 * EPISODE * NUM_ENVS
    items = jax.tree.map(lambda x: np.asarray(x[0, : EPISODE * NUM_ENVS]), state.buffer.experience)
    obs = items.transition.obs.reshape(EPISODE, NUM_ENVS, -1)
    assert obs.shape[-1] == 2 + NUM_SKILLS
    # Within an episode each environment keeps its skill; the skill is its own.
    np.testing.assert_array_equal(obs[:, :, 2:], np.broadcast_to(skills0, obs[:, :, 2:].shape))
    for name, value in metrics.items():
        assert np.isfinite(value), name
    np.testing.assert_allclose(metrics["training_reward"], metrics["diversity_reward"])


def test_tiled_skills_need_a_multiple_and_bad_arguments_raise():
    with pytest.raises(ValueError, match=r"num_envs \(7\) must be a multiple"):
        DIAYN(_config(per_env_skills=False), make_point_env(7, EPISODE))
    with pytest.raises(TypeError, match="DiaynConfig"):
        DIAYN(object(), make_point_env(6, EPISODE))
    with pytest.raises(ValueError, match="skill_kind"):
        _config(skill_kind="uniform")
    with pytest.raises(ValueError, match="discriminator_hidden_layer_size"):
        _config(discriminator_hidden_layer_size=(8, 0))
    env = make_point_env(6, EPISODE)
    no_desc = type(env)(**{**env.__dict__, "state_descriptor_size": 0})
    with pytest.raises(ValueError, match="no state descriptor"):
        DIAYN(_config(), no_desc)


def test_rewards_match_hand_computation(run):
    agent, _, state, _ = run
    items = agent.buffer.sample(state.buffer, jax.random.key(3))
    diversity, training = agent.rewards(state, items, jax.random.key(4))
    tr = jax.tree.map(np.asarray, items.transition)
    logits = np.asarray(
        agent.model.network.apply(state.model.params, jnp.asarray(tr.next_state_desc))
    )
    logits = logits - logits.max(1, keepdims=True)
    log_q = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    skill = tr.obs[:, 2:].argmax(1)
    expected = log_q[np.arange(len(skill)), skill] + np.log(NUM_SKILLS)
    np.testing.assert_allclose(diversity, expected, rtol=1e-6)
    np.testing.assert_array_equal(training, diversity)


def test_discriminator_loss_decreases_on_a_fixed_batch(run):
    agent, _, state, _ = run
    items = agent.buffer.sample(state.buffer, jax.random.key(5))
    update = jax.jit(agent.model.update)
    model, losses = state.model, []
    for _ in range(40):
        model, metrics = update(model, items.transition, jax.random.key(0))
        losses.append(float(metrics["discriminator_loss"]))
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0] - 1e-3


def test_evaluate_returns_true_and_diversity_returns(run):
    agent, _, state, _ = run
    skills = jax.nn.one_hot(jnp.arange(NUM_ENVS) % NUM_SKILLS, NUM_SKILLS)
    ev = agent.evaluate(state, jax.random.key(7), skills)
    assert ev.returns.shape == ev.diversity_returns.shape == (NUM_ENVS,)
    assert ev.state_descriptors.shape == (EPISODE, NUM_ENVS, 2)
    valid = np.asarray(ev.valid)
    last = valid.sum(0).astype(int) - 1
    np.testing.assert_array_equal(
        ev.final_state_descriptors, np.asarray(ev.state_descriptors)[last, np.arange(NUM_ENVS)]
    )
    # Point-mass reward is 1 - 0.1 |a|^2 per step, |a| <= 1 per coordinate.
    assert np.all(np.asarray(ev.returns) <= valid.sum(0) + 1e-9)
    assert np.all(np.asarray(ev.returns) >= 0.8 * valid.sum(0) - 1e-9)
    assert np.all(np.isfinite(ev.diversity_returns))
    again = agent.evaluate(state, jax.random.key(7), skills)
    jax.tree.map(np.testing.assert_array_equal, ev, again)
    default = agent.evaluate(state, jax.random.key(7))
    np.testing.assert_array_equal(default.skills, skills)


def test_training_is_deterministic_under_a_fixed_key(run):
    agent, _, state, _ = run
    other, _ = agent.train(
        agent.init(jax.random.key(0)), 2, unroll_length=EPISODE, grad_updates_per_step=2
    )
    jax.tree.map(np.testing.assert_array_equal, state.sac.policy_params, other.sac.policy_params)
    jax.tree.map(np.testing.assert_array_equal, state.model.params, other.model.params)
    third, _ = agent.train(
        agent.init(jax.random.key(1)), 2, unroll_length=EPISODE, grad_updates_per_step=2
    )
    assert not np.array_equal(state.skills, third.skills) or not np.array_equal(
        state.model.params["params"]["MLP_0"]["Dense_0"]["kernel"],
        third.model.params["params"]["MLP_0"]["Dense_0"]["kernel"],
    )


def test_full_state_discriminator_reads_the_observation():
    # descriptor_full_state: the discriminator reads the next observation (without
    # the skill), not the state descriptor. A batch where the two differ.
    agent = DIAYN(_config(descriptor_full_state=True), make_point_env(NUM_ENVS, EPISODE))
    model = agent.init(jax.random.key(0)).model
    rng = np.random.default_rng(1)
    skills = np.eye(NUM_SKILLS)[rng.integers(0, NUM_SKILLS, 8)]
    obs, next_obs, desc, next_desc = rng.normal(size=(4, 8, 2))
    tr = Transition(
        obs=np.concatenate([obs, skills], 1),
        next_obs=np.concatenate([next_obs, skills], 1),
        rewards=np.zeros(8),
        dones=np.zeros(8),
        truncations=np.zeros(8),
        actions=np.zeros((8, 2)),
        state_desc=desc,
        next_state_desc=next_desc,
    )
    got = np.asarray(agent.model.reward(model, jax.tree.map(jnp.asarray, tr), jax.random.key(2)))

    def by_hand(inputs):
        logits = np.asarray(agent.model.network.apply(model.params, jnp.asarray(inputs)))
        logits = logits - logits.max(1, keepdims=True)
        log_q = logits - np.log(np.exp(logits).sum(1, keepdims=True))
        return log_q[np.arange(8), skills.argmax(1)] + np.log(NUM_SKILLS)

    np.testing.assert_allclose(got, by_hand(next_obs), rtol=1e-6)
    assert not np.allclose(got, by_hand(next_desc))
