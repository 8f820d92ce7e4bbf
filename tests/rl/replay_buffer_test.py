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
    state = buf.insert(state, _items(np.arange(1, 8)))  # 1..7
    state = buf.insert(state, _items(np.arange(8, 13)))  # 8..12 wraps
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


def test_masked_insert_stores_only_kept_items_in_order():
    buf = ReplayBuffer(max_size=6, sample_size=6)
    state = buf.init(Transition.zeros(2, 1))
    values = np.arange(1, 9, dtype=np.float32).reshape(2, 4)  # (B, T)
    mask = np.array([[1, 1, 0, 0], [1, 0, 0, 0]], bool)  # 3 kept
    state = buf.insert(state, _items(values), mask=mask)
    assert int(buf.size(state)) == 3
    np.testing.assert_array_equal(np.asarray(state.experience.rewards[0])[:3], [1, 2, 5])
    for seed in range(4):
        sampled = np.asarray(buf.sample(state, jax.random.key(seed)).rewards)
        assert set(sampled.tolist()) <= {1.0, 2.0, 5.0}
    # The pointer moves by the kept count and wraps around, overwriting the oldest.
    more = np.arange(10, 15, dtype=np.float32)
    state = buf.insert(state, _items(more), mask=np.array([1, 0, 1, 1, 1], bool))
    np.testing.assert_array_equal(np.asarray(state.experience.rewards[0]), [14, 2, 5, 10, 12, 13])
    assert int(buf.size(state)) == 6 and int(state.current_index) == 1


def test_masked_insert_is_traceable_and_checks_the_mask_shape():
    buf = ReplayBuffer(max_size=8, sample_size=2)
    state = buf.init(Transition.zeros(2, 1))
    insert = jax.jit(buf.insert, donate_argnums=0)
    state = insert(state, _items(np.arange(1, 5)), jnp.array([0, 1, 0, 1], bool))
    assert int(buf.size(state)) == 2
    with pytest.raises(ValueError, match="mask must have the items' batch shape"):
        buf.insert(state, _items(np.arange(1, 5)), mask=np.ones(3, bool))


def test_masked_insert_of_more_items_than_slots_keeps_the_last():
    buf = ReplayBuffer(max_size=4, sample_size=2)
    state = buf.init(Transition.zeros(2, 1))
    state = buf.insert(
        state, _items(np.arange(1, 8)), mask=np.array([1, 1, 1, 0, 1, 1, 1], bool)
    )  # kept: 1 2 3 5 6 7
    assert sorted(np.asarray(state.experience.rewards[0]).tolist()) == [3, 5, 6, 7]
    assert int(buf.size(state)) == 4 and int(state.current_index) == 2
