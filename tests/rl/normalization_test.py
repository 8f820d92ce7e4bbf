"""Tests of ribsax.rl.RunningMeanStd."""

import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.rl import RunningMeanStd


def test_matches_numpy_over_batches():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=(n, 4)) for n in (5, 17, 1, 40)]
    stats = RunningMeanStd.init(4, dtype=jnp.float64)
    for b in batches:
        stats = RunningMeanStd.update(stats, jnp.asarray(b))
    data = np.concatenate(batches)
    np.testing.assert_allclose(stats.mean, data.mean(0), rtol=1e-10)
    np.testing.assert_allclose(stats.var, data.var(0), rtol=1e-10)
    assert float(stats.count) == len(data)
    x = rng.normal(size=(3, 4))
    np.testing.assert_allclose(
        RunningMeanStd.normalize(stats, jnp.asarray(x)),
        (x - data.mean(0)) / (data.std(0) + 1e-8),
        rtol=1e-8,
    )


def test_leading_axes_and_identity_before_update():
    stats = RunningMeanStd.init(2)
    x = jnp.arange(12.0, dtype=jnp.float32).reshape(3, 2, 2)
    np.testing.assert_allclose(RunningMeanStd.normalize(stats, x), x, rtol=1e-6)
    stats = RunningMeanStd.update(stats, x)
    np.testing.assert_allclose(stats.mean, x.reshape(-1, 2).mean(0), rtol=1e-6)
    assert float(stats.count) == 6


def test_bad_size():
    with pytest.raises(ValueError, match="size"):
        RunningMeanStd.init(0)


def test_mask_counts_only_selected_rows():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 5, 2))
    mask = rng.integers(0, 2, size=(3, 5))
    mask[0, 0] = 1
    stats = RunningMeanStd.update(
        RunningMeanStd.init(2, dtype=jnp.float64), jnp.asarray(x), jnp.asarray(mask)
    )
    kept = x[mask.astype(bool)]
    np.testing.assert_allclose(stats.mean, kept.mean(0), rtol=1e-10)
    np.testing.assert_allclose(stats.var, kept.var(0), rtol=1e-10)
    assert float(stats.count) == mask.sum()
    empty = RunningMeanStd.update(RunningMeanStd.init(2), jnp.ones((4, 2)), jnp.zeros((4,)))
    assert float(empty.count) == 0 and np.all(np.isfinite(empty.mean))
