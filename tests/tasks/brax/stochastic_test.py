"""Random resets and transition output on a brax task (hopper, one compilation)."""

import jax
import jax.numpy as jnp
import numpy as np

from tests.tasks.brax._helpers import BATCH, random_policies, task_and_jit


def test_stochastic_resets_and_transitions():
    task, evaluate = task_and_jit("hopper_uni", deterministic=False, return_transitions=True)
    x = random_policies(task, seed=3)
    key = jax.random.key(11)
    objective, measures, extras = evaluate(x, key)
    # Same key: same resets, same results; another key: other resets.
    again = evaluate(x, key)
    np.testing.assert_array_equal(objective, again[0])
    other = evaluate(x, jax.random.key(12))
    assert not np.allclose(objective, other[0])
    # Each row gets its own reset: one policy repeated gives different returns.
    same_policy = jnp.repeat(x[:1], BATCH, axis=0)
    repeated = evaluate(same_policy, key)[0]
    assert np.ptp(np.asarray(repeated)) > 0

    t = extras["transitions"]
    steps = task.episode_length
    assert t.obs.shape == (BATCH, steps, task.env.observation_size)
    assert t.action.shape == (BATCH, steps, task.env.action_size)
    assert t.state_desc.shape == (BATCH, steps, 1)
    np.testing.assert_array_equal(t.valid.sum(1), extras["num_steps"])
    np.testing.assert_allclose(t.reward.sum(1), objective, rtol=1e-6)
    mean_contact = t.state_desc.sum(1) / t.valid.sum(1, keepdims=True)
    np.testing.assert_allclose(mean_contact, measures, rtol=1e-6)
    # Consecutive transitions chain: next_obs[t] == obs[t + 1] while valid.
    chained = np.asarray(t.next_obs[:, :-1] == t.obs[:, 1:]).all(-1)
    assert np.all(chained | (np.asarray(t.valid[:, 1:]) == 0))
    assert np.all(np.abs(np.asarray(t.action)) <= 1.0)
