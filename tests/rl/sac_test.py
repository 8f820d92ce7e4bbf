"""Tests of ribsax.rl.SAC (tiny networks, fixed batches)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.rl import SAC, SacConfig, SacState
from tests.rl._rl_helpers import random_batch, tree_allclose, tree_equal

CFG = SacConfig(
    batch_size=16,
    episode_length=5,
    critic_hidden_layer_size=(8, 8),
    policy_hidden_layer_size=(8, 8),
)
OBS, ACT = 3, 2


@pytest.fixture(scope="module")
def sac():
    return SAC(CFG, action_size=ACT)


@pytest.fixture(scope="module")
def state(sac):
    return sac.init(jax.random.key(0), observation_size=OBS)


@pytest.fixture(scope="module")
def batch():
    return random_batch(jax.random.key(1), 16, OBS, ACT)


def test_config_defaults_match_qdax():
    fields = {f.name: f.default for f in dataclasses.fields(SacConfig)}
    expected = {
        "tau": 0.005,
        "normalize_observations": False,
        "learning_rate": 3e-4,
        "alpha_init": 1.0,
        "discount": 0.97,
        "reward_scaling": 1.0,
        "critic_hidden_layer_size": (256, 256),
        "policy_hidden_layer_size": (256, 256),
        "fix_alpha": False,
    }
    for name, value in expected.items():
        assert fields[name] == value, name
    assert fields["batch_size"] is dataclasses.MISSING
    assert fields["episode_length"] is dataclasses.MISSING


def test_init_state(state):
    assert isinstance(state, SacState)
    assert float(state.log_alpha) == pytest.approx(np.log(CFG.alpha_init))
    assert tree_equal(state.critic_params, state.target_critic_params)
    assert int(state.steps) == 0
    assert float(state.hyperparams.discount) == pytest.approx(0.97)
    kernel = state.policy_params["params"]["MLP_0"]["Dense_0"]["kernel"]
    assert kernel.shape == (OBS, 8) and kernel.dtype == jnp.float32


def test_select_action(sac, state):
    obs = jax.random.normal(jax.random.key(2), (5, OBS))
    a1 = sac.select_action(state, obs, jax.random.key(0))
    a2 = sac.select_action(state, obs, jax.random.key(1))
    assert a1.shape == (5, ACT) and float(jnp.max(jnp.abs(a1))) < 1.0
    assert not jnp.allclose(a1, a2)
    d1 = sac.select_action(state, obs, jax.random.key(0), deterministic=True)
    d2 = sac.select_action(state, obs, jax.random.key(1), deterministic=True)
    np.testing.assert_array_equal(d1, d2)
    loc, _ = sac.policy.apply(state.policy_params, obs)
    np.testing.assert_allclose(d1, jnp.tanh(loc), rtol=1e-6)


def test_update_moves_targets_by_tau_and_temperature(sac, state, batch):
    new, metrics = sac.update(state, batch, jax.random.key(3))
    assert set(metrics) == {"policy_loss", "critic_loss", "alpha_loss", "alpha"}
    assert all(np.isfinite(float(v)) for v in metrics.values())
    assert not tree_allclose(new.critic_params, state.critic_params)
    expected = jax.tree.map(
        lambda t, c: CFG.tau * c + (1 - CFG.tau) * t, state.target_critic_params, new.critic_params
    )
    assert tree_allclose(new.target_critic_params, expected, rtol=1e-6, atol=1e-9)
    assert float(new.log_alpha) != float(state.log_alpha)
    assert float(metrics["alpha"]) == pytest.approx(float(jnp.exp(new.log_alpha)))
    assert int(new.steps) == 1


def test_fixed_temperature(batch):
    sac = SAC(dataclasses.replace(CFG, fix_alpha=True, alpha_init=0.2), ACT)
    state = sac.init(jax.random.key(0), observation_size=OBS)
    new, metrics = sac.update(state, batch, jax.random.key(3))
    assert float(new.log_alpha) == float(state.log_alpha) == pytest.approx(np.log(0.2))
    assert float(metrics["alpha"]) == pytest.approx(0.2)
    assert not tree_allclose(new.policy_params, state.policy_params)


def _run(sac, state, batch, steps):
    def body(s, k):
        return sac.update(s, batch, k)

    return jax.jit(lambda s: jax.lax.scan(body, s, jax.random.split(jax.random.key(4), steps)))(
        state
    )


def test_losses_finite_and_decreasing(sac, state, batch):
    # discount 0 makes the critic target the (fixed) reward: a regression.
    state = state._replace(
        hyperparams=state.hyperparams._replace(
            discount=jnp.float32(0.0),
            critic_learning_rate=jnp.float32(3e-3),
            policy_learning_rate=jnp.float32(3e-3),
        )
    )
    final, metrics = _run(sac, state, batch, 300)
    critic = np.asarray(metrics["critic_loss"])
    assert np.all(np.isfinite(critic)) and np.all(np.isfinite(metrics["policy_loss"]))
    assert critic[-20:].mean() < 0.5 * critic[:20].mean()
    # Against the final critics, the final policy beats the initial one.
    alpha = jnp.exp(final.log_alpha)
    obs = batch.obs
    before, _ = sac.policy_loss(
        state.policy_params, final.critic_params, alpha, obs, jax.random.key(5)
    )
    after, _ = sac.policy_loss(
        final.policy_params, final.critic_params, alpha, obs, jax.random.key(5)
    )
    assert float(after) < float(before)


def test_deterministic_under_fixed_key(sac, state, batch):
    a, _ = sac.update(state, batch, jax.random.key(7))
    b, _ = sac.update(state, batch, jax.random.key(7))
    c, _ = sac.update(state, batch, jax.random.key(8))
    assert tree_equal(a, b)
    assert not tree_equal(a.policy_params, c.policy_params)
    s1 = sac.init(jax.random.key(11), observation_size=OBS)
    s2 = sac.init(jax.random.key(11), observation_size=OBS)
    assert tree_equal(s1, s2)


def test_no_recompilation_after_warm_up(sac, state):
    s = state
    sizes = []
    for i in range(4):
        b = random_batch(jax.random.key(20 + i), 16, OBS, ACT)
        s, _ = sac.update(s, b, jax.random.key(i))
        sac.select_action(s, b.obs, jax.random.key(i))
        sizes.append((sac.update._cache_size(), sac.select_action._cache_size()))
    assert sizes[1:] == sizes[:1] * 3  # nothing compiled after the first round


def test_skill_augmented_observations(sac):
    # obs ⊕ skill: the observation size is an argument of init.
    state = sac.init(jax.random.key(0), observation_size=OBS + 4)
    batch = random_batch(jax.random.key(1), 16, OBS + 4, ACT)
    new, metrics = sac.update(state, batch, jax.random.key(2))
    assert np.isfinite(float(metrics["critic_loss"]))


def test_bad_arguments():
    with pytest.raises(ValueError, match="batch_size"):
        SacConfig(batch_size=0, episode_length=5)
    with pytest.raises(ValueError, match="tau"):
        SacConfig(batch_size=4, episode_length=5, tau=2.0)
    with pytest.raises(ValueError, match="policy_hidden_layer_size"):
        SacConfig(batch_size=4, episode_length=5, policy_hidden_layer_size=(8, -1))
    with pytest.raises(TypeError, match="SacConfig"):
        SAC({"batch_size": 4}, 2)
    with pytest.raises(ValueError, match="action_size"):
        SAC(CFG, 0)
