"""Tests for ribsax._scatter: scatter-add that repeats exactly on every backend."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax._scatter import scatter_add
from ribsax._scatter import sorted_scatter_add as _sorted_eager
from tests.backend import ON_CPU

# Jitted: eagerly, every step of the scan would compile on its own.
sorted_scatter_add = jax.jit(_sorted_eager)


def _add_at(target, indices, updates):
    """NumPy's in-order reference, dropping out-of-range indices."""
    out = np.array(target)
    keep = (indices >= 0) & (indices < len(out))
    np.add.at(out, indices[keep], updates[keep])
    return out


def _case(rng, n=7, m=60, tail=(), high=None):
    target = rng.normal(size=(n, *tail))
    indices = rng.integers(0, high or n + 2, m)  # Some out of range, many repeats.
    updates = rng.normal(size=(m, *tail)) * 10.0 ** rng.integers(-3, 4, (m, *tail))
    return target, indices, updates


@pytest.mark.parametrize("tail", [(), (3,)])
def test_sorted_scatter_add_sums_each_index(tail):
    target, indices, updates = _case(np.random.default_rng(0), tail=tail)
    out = sorted_scatter_add(jnp.asarray(target), jnp.asarray(indices), jnp.asarray(updates))
    assert out.shape == target.shape
    np.testing.assert_allclose(out, _add_at(target, indices, updates), rtol=1e-12, atol=1e-12)


def test_sorted_scatter_add_edge_cases():
    target = jnp.arange(4.0)
    empty = sorted_scatter_add(target, jnp.zeros(0, jnp.int32), jnp.zeros(0))
    np.testing.assert_array_equal(empty, target)
    one_index = sorted_scatter_add(target, jnp.full(5, 2), jnp.arange(1.0, 6.0))
    np.testing.assert_array_equal(one_index, [0.0, 1.0, 17.0, 3.0])
    all_dropped = sorted_scatter_add(target, jnp.full(3, 4), jnp.ones(3))
    np.testing.assert_array_equal(all_dropped, target)
    ints = sorted_scatter_add(
        jnp.zeros(3, jnp.int32), jnp.array([2, 0, 2, 2]), jnp.array([1, 5, 2, 3], jnp.int32)
    )
    np.testing.assert_array_equal(ints, [5, 0, 6])


def test_sorted_scatter_add_adds_in_a_fixed_order():
    """The result depends only on each index's updates in batch order, not on where
    the other indices' updates sit: a tree sum that atomics could not give."""
    rng = np.random.default_rng(1)
    values = rng.normal(size=33) * 10.0 ** rng.integers(-8, 8, 33)
    alone = sorted_scatter_add(jnp.zeros(2), jnp.zeros(33, jnp.int32), jnp.asarray(values))
    mixed_indices = np.zeros(80, np.int64)
    mixed_updates = rng.normal(size=80)
    slots = np.sort(rng.choice(80, 33, replace=False))
    mixed_indices[np.setdiff1d(np.arange(80), slots)] = 1
    mixed_updates[slots] = values
    mixed = sorted_scatter_add(jnp.zeros(2), jnp.asarray(mixed_indices), jnp.asarray(mixed_updates))
    assert mixed[0] == alone[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_add_per_backend_bitwise(dtype):
    """On the CPU it is XLA's in-order scatter: the same bits as ``np.add.at`` (which
    pyribs' batch thresholds use). Elsewhere, the same bits as the sorted sum."""
    target, indices, updates = _case(np.random.default_rng(2), m=500, high=9)
    target, updates = target.astype(dtype), updates.astype(dtype)
    args = (jnp.asarray(target), jnp.asarray(indices), jnp.asarray(updates))
    out = scatter_add(*args)
    if ON_CPU:
        expected = _add_at(target, indices, updates)
        # The order matters at these magnitudes: a tree sum would differ.
        assert not np.array_equal(sorted_scatter_add(*args), expected)
    else:
        expected = sorted_scatter_add(*args)
    np.testing.assert_array_equal(out, expected)


def test_scatter_add_lowering_per_platform():
    """The CPU lowering is one scatter with no sort; the CUDA lowering sorts."""
    args = (jnp.zeros(5), jnp.zeros(8, jnp.int32), jnp.ones(8))
    texts = {}
    for platform in ("cpu", "cuda"):
        exported = jax.export.export(jax.jit(scatter_add), platforms=[platform])(*args)
        texts[platform] = exported.mlir_module()
    assert "stablehlo.sort" not in texts["cpu"] and "stablehlo.scatter" in texts["cpu"]
    assert "stablehlo.sort" in texts["cuda"]


def test_scatter_add_repeats_and_vmaps():
    target, indices, updates = _case(np.random.default_rng(3), m=200, tail=(2,))
    run = jax.jit(scatter_add)
    first = run(target, indices, updates)
    np.testing.assert_array_equal(first, run(target, indices, updates))
    np.testing.assert_allclose(first, _add_at(target, indices, updates), rtol=1e-12, atol=1e-12)
    stacked = jax.vmap(scatter_add)(*(np.stack([a, a]) for a in (target, indices, updates)))
    np.testing.assert_array_equal(stacked[1], first)
