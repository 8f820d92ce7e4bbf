"""Tests of ribsax.rl.TD3 (tiny networks, fixed batches)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.rl import TD3, TD3Config, TD3State
from ribsax.tasks.brax import MLPPolicy
from tests.rl._rl_helpers import random_batch, tree_allclose, tree_equal

CFG = TD3Config(
    episode_length=5,
    batch_size=16,
    policy_delay=3,
    critic_hidden_layer_size=(8, 8),
    policy_hidden_layer_size=(8, 8),
)
OBS, ACT = 3, 2


@pytest.fixture(scope="module")
def td3():
    return TD3(CFG, action_size=ACT)


@pytest.fixture(scope="module")
def state(td3):
    return td3.init(jax.random.key(0), observation_size=OBS)


@pytest.fixture(scope="module")
def batch():
    return random_batch(jax.random.key(1), 16, OBS, ACT)


def test_config_defaults_match_qdax():
    assert dataclasses.asdict(TD3Config()) == {
        "episode_length": 1000,
        "batch_size": 256,
        "policy_delay": 2,
        "soft_tau_update": 0.005,
        "expl_noise": 0.1,
        "critic_hidden_layer_size": (256, 256),
        "policy_hidden_layer_size": (256, 256),
        "critic_learning_rate": 3e-4,
        "policy_learning_rate": 3e-4,
        "discount": 0.99,
        "noise_clip": 0.5,
        "policy_noise": 0.2,
        "reward_scaling": 1.0,
    }


def test_init_state(state):
    assert isinstance(state, TD3State)
    assert tree_equal(state.policy_params, state.target_policy_params)
    assert tree_equal(state.critic_params, state.target_critic_params)
    assert float(state.hyperparams.expl_noise) == pytest.approx(0.1)


def test_select_action(td3, state):
    obs = jax.random.normal(jax.random.key(2), (2000, OBS))
    mu = td3.select_action(state, obs, jax.random.key(0), deterministic=True)
    np.testing.assert_allclose(mu, td3.policy.apply(state.policy_params, obs))
    noisy = td3.select_action(state, obs, jax.random.key(0))
    assert noisy.shape == (2000, ACT) and float(jnp.max(jnp.abs(noisy))) <= 1.0
    inside = jnp.abs(mu) < 0.6  # far from the clip: the noise is N(0, 0.1^2).
    assert float(jnp.std((noisy - mu)[inside])) == pytest.approx(0.1, rel=0.1)


def test_actor_updated_every_policy_delay_steps(td3, state, batch):
    s = state
    changed = []
    for i in range(7):
        new, metrics = td3.update(s, batch, jax.random.key(i))
        actor = not tree_allclose(new.policy_params, s.policy_params, rtol=0, atol=0)
        target = not tree_allclose(new.target_policy_params, s.target_policy_params, rtol=0, atol=0)
        target_critic = not tree_allclose(
            new.target_critic_params, s.target_critic_params, rtol=0, atol=0
        )
        assert not tree_allclose(new.critic_params, s.critic_params, rtol=0, atol=0)
        assert actor == target == target_critic
        assert (float(metrics["policy_loss"]) != 0.0) == actor
        changed.append(actor)
        s = new
    assert changed == [True, False, False, True, False, False, True]


def test_targets_move_by_tau(td3, state, batch):
    new, _ = td3.update(state, batch, jax.random.key(0))  # steps 0: actor step
    tau = CFG.soft_tau_update
    mix = lambda t, o: tau * o + (1 - tau) * t  # noqa: E731
    assert tree_allclose(
        new.target_policy_params,
        jax.tree.map(mix, state.target_policy_params, new.policy_params),
        rtol=1e-6,
        atol=1e-9,
    )
    assert tree_allclose(
        new.target_critic_params,
        jax.tree.map(mix, state.target_critic_params, new.critic_params),
        rtol=1e-6,
        atol=1e-9,
    )


def test_losses_finite_and_decreasing(td3, state, batch):
    state = state._replace(
        hyperparams=state.hyperparams._replace(
            discount=jnp.float32(0.0), critic_learning_rate=jnp.float32(3e-3)
        )
    )

    def body(s, k):
        return td3.update(s, batch, k)

    final, metrics = jax.jit(
        lambda s: jax.lax.scan(body, s, jax.random.split(jax.random.key(4), 300))
    )(state)
    critic = np.asarray(metrics["critic_loss"])
    assert np.all(np.isfinite(critic)) and np.all(np.isfinite(metrics["policy_loss"]))
    assert critic[-20:].mean() < 0.5 * critic[:20].mean()
    before = td3.policy_loss(state.policy_params, final.critic_params, batch.obs)
    after = td3.policy_loss(final.policy_params, final.critic_params, batch.obs)
    assert float(after) < float(before)


def test_deterministic_and_no_recompilation(td3, state):
    b = random_batch(jax.random.key(9), 16, OBS, ACT)
    x, _ = td3.update(state, b, jax.random.key(1))
    y, _ = td3.update(state, b, jax.random.key(1))
    assert tree_equal(x, y)
    s, _ = td3.update(state, b, jax.random.key(0))
    warm = td3.update._cache_size()
    for i in range(3):
        s, _ = td3.update(s, random_batch(jax.random.key(i), 16, OBS, ACT), jax.random.key(i))
    assert td3.update._cache_size() == warm


def test_bad_arguments():
    with pytest.raises(ValueError, match="policy_delay"):
        TD3Config(policy_delay=0)
    with pytest.raises(ValueError, match="soft_tau_update"):
        TD3Config(soft_tau_update=-0.1)
    with pytest.raises(ValueError, match="policy_noise"):
        TD3Config(policy_noise=-1.0)
    with pytest.raises(TypeError, match="TD3Config"):
        TD3(CFG.__dict__, 2)
    with pytest.raises(TypeError, match="policy must be a flax module"):
        TD3(CFG, 2, policy=lambda obs: obs)


def test_custom_policy_module_is_the_actor(batch):
    task_policy = MLPPolicy(OBS, ACT, hidden_layer_sizes=(4,))
    agent = TD3(CFG, action_size=ACT, policy=task_policy.module)
    state = agent.init(jax.random.key(0), observation_size=OBS)
    flat = task_policy.ravel(state.policy_params)
    assert flat.shape == (task_policy.num_params,)
    np.testing.assert_allclose(
        agent.select_action(state, batch.obs, jax.random.key(1), deterministic=True),
        task_policy.apply(flat, batch.obs),
        rtol=1e-6,
    )
    state, metrics = agent.update(state, batch, jax.random.key(2))
    assert np.isfinite(float(metrics["critic_loss"]))
