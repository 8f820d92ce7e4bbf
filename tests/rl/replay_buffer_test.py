"""Tests of ribsax.rl.ReplayBuffer."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.rl import ReplayBuffer, Transition


def _items(values):
    values = jnp.asarray(values, jnp.float32)
    t = Transition.zeros(2, 1, 0, batch_shape=values.shape)
    return t._replace(rewards=values, obs=jnp.stack([values, -values], -1))


def test_insert_and_sample_shapes():
    buf = ReplayBuffer(max_size=10, sample_size=6)
    state = buf.init(Transition.zeros(2, 1))
    state = buf.insert(state, _items(np.ones((2, 3))))  # (T, B) leading axes.
    batch = buf.sample(state, jax.random.key(0))
    assert batch.obs.shape == (6, 2) and batch.rewards.shape == (6,)
    assert batch.obs.dtype == jnp.float32
    assert int(buf.size(state)) == 6


def test_wrap_around_overwrites_oldest():
    buf = ReplayBuffer(max_size=10, sample_size=4)
    state = buf.init(Transition.zeros(2, 1))
    state = buf.insert(state, _items(np.arange(1, 8)))     # 1..7
    state = buf.insert(state, _items(np.arange(8, 13)))    # 8..12 wraps
    stored = np.asarray(state.experience.rewards[0])
    np.testing.assert_array_equal(stored, [11, 12, 3, 4, 5, 6, 7, 8, 9, 10])
    assert int(buf.size(state)) == 10


def test_samples_only_filled_slots():
    buf = ReplayBuffer(max_size=600, sample_size=512)
    state = buf.init(Transition.zeros(2, 1))
    state = buf.insert(state, _items(np.arange(1, 6)))
    batch = buf.sample(state, jax.random.key(3))
    values = set(np.asarray(batch.rewards).tolist())
    assert values == {1.0, 2.0, 3.0, 4.0, 5.0}  # never an empty (zero) slot
    np.testing.assert_array_equal(batch.obs[:, 1], -batch.obs[:, 0])


def test_vmapped_population_of_buffers():
    buf = ReplayBuffer(max_size=8, sample_size=5)
    states = jax.vmap(buf.init)(Transition.zeros(2, 1, batch_shape=(3,)))
    items = _items(np.arange(3)[:, None] * 10.0 + np.arange(1, 5)[None])  # (3, 4)
    states = jax.vmap(buf.insert)(states, items)
    batches = jax.vmap(buf.sample)(states, jax.random.split(jax.random.key(0), 3))
    assert batches.rewards.shape == (3, 5)
    for member in range(3):
        vals = np.asarray(batches.rewards[member])
        assert np.all((vals >= member * 10 + 1) & (vals <= member * 10 + 4))


def test_insert_casts_dtype():
    buf = ReplayBuffer(max_size=8, sample_size=2)
    state = buf.init(Transition.zeros(2, 1))
    items = jax.tree.map(lambda x: x.astype(jnp.float64), _items([1.0, 2.0]))
    state = buf.insert(state, items)
    assert state.experience.rewards.dtype == jnp.float32


def test_errors():
    with pytest.raises(ValueError, match="max_size"):
        ReplayBuffer(max_size=0, sample_size=1)
    with pytest.raises(ValueError, match="sample_size"):
        ReplayBuffer(max_size=4, sample_size=2.0)
    with pytest.raises(ValueError, match="must not exceed max_size"):
        ReplayBuffer(max_size=4, sample_size=5)
    buf = ReplayBuffer(max_size=4, sample_size=2)
    state = buf.init(Transition.zeros(2, 1))
    with pytest.raises(ValueError, match="max_size=4"):
        buf.insert(state, _items(np.arange(5)))
