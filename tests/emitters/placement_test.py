"""Tests of the placement of compiled emitter steps' arguments on a kernel's
device mesh (ribsax.emitters._placement), on this process's first device (the
two-device runs are in pbt_me_emitter_test.py)."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec

from ribsax.emitters._placement import kernels_mesh, on_mesh
from ribsax.rl import population_mesh


def test_on_mesh_keeps_mesh_leaves_and_replicates_the_others():
    mesh = population_mesh(jax.devices()[:1])
    sharded = jax.device_put(jnp.arange(4.0), NamedSharding(mesh, PartitionSpec("population")))
    host = np.arange(3)
    tree = {"sharded": sharded, "device": jnp.ones(2), "host": host, "none": None}
    placed = on_mesh(tree, mesh)
    assert placed["sharded"] is sharded
    assert placed["none"] is None
    for name in ("device", "host"):
        assert placed[name].sharding == NamedSharding(mesh, PartitionSpec())
        assert placed[name].committed
    host[0] = 7  # The placed copy does not share the NumPy array's memory.
    np.testing.assert_array_equal(placed["host"], [0, 1, 2])
    assert on_mesh(tree, None) is tree


def test_kernels_mesh_finds_the_one_mesh():
    mesh = population_mesh(jax.devices()[:1])
    kernels = [None, SimpleNamespace(), SimpleNamespace(mesh=None), SimpleNamespace(mesh=mesh)]
    assert kernels_mesh(kernels) is mesh
    assert kernels_mesh(kernels[:3]) is None
    other = SimpleNamespace(mesh=population_mesh(jax.devices()[:1] * 2))
    i = jax.devices()[0].id
    with pytest.raises(ValueError, match=rf"different device meshes .* devices \[{i}, {i}\]"):
        kernels_mesh(kernels + [other])
