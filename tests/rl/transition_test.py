"""Tests of ribsax.rl.Transition."""

import jax.numpy as jnp
import pytest

from ribsax.rl import Transition


def test_zeros_shapes_and_dtypes():
    t = Transition.zeros(5, 3, 2, batch_shape=(4, 7))
    assert t.obs.shape == t.next_obs.shape == (4, 7, 5)
    assert t.actions.shape == (4, 7, 3)
    assert t.state_desc.shape == t.next_state_desc.shape == (4, 7, 2)
    assert t.rewards.shape == t.dones.shape == t.truncations.shape == (4, 7)
    assert all(x.dtype == jnp.float32 for x in t)
    assert all(float(jnp.abs(x).sum()) == 0.0 for x in t)
    assert (t.observation_size, t.action_size) == (5, 3)


def test_flatten_merges_leading_axes():
    t = Transition.zeros(5, 3, 0, batch_shape=(4, 7)).flatten()
    assert t.obs.shape == (28, 5) and t.rewards.shape == (28,)
    assert t.state_desc.shape == (28, 0)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"observation_size": -1, "action_size": 2}, "observation_size"),
        ({"observation_size": 2, "action_size": 1.5}, "action_size"),
        (
            {"observation_size": 2, "action_size": 1, "state_descriptor_size": -2},
            "state_descriptor_size",
        ),
    ],
)
def test_zeros_rejects_bad_sizes(kwargs, name):
    with pytest.raises(ValueError, match=name):
        Transition.zeros(**kwargs)
