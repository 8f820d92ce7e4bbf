"""Tests for ribsax.archives._kernels pieces that the archive tests reach only
indirectly: result packing, row finiteness, the two stamp updates of
``store_write`` and the flat form of the add kernel. (JAX x64 is on in the test
session, see conftest.py.)"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.archives._kernels import (
    CELL_PASS_RATIO,
    finite_rows,
    flat_threshold_add,
    grid_index,
    indexed_threshold_add,
    init_stats,
    init_store,
    pack_add_result,
    store_from_leaves,
    store_leaves,
    store_write,
    threshold_add,
    unpack_add_result,
)


def _packed(batch, dtype, with_rows, seed=0):
    """A packed result from random parts, and the parts."""
    rng = np.random.default_rng(seed)
    parts = {
        "value": rng.normal(size=batch).astype(dtype),
        "new_threshold": rng.normal(size=batch).astype(dtype),
        "status": rng.integers(0, 3, batch).astype(np.int32),
        "inserted": rng.integers(0, 2, batch).astype(bool),
        "indices": rng.integers(0, 50, batch).astype(np.int32),
        "delta": np.asarray(rng.normal(), dtype),
        "best_pos": min(batch - 1, 2) if batch else 0,
    }
    out = {name: jnp.asarray(parts[name])
           for name in ("value", "new_threshold", "status", "inserted")}
    packed = pack_add_result(out, jnp.asarray(parts["indices"]), jnp.asarray(parts["delta"]),
                             jnp.asarray(7, jnp.int32), jnp.asarray(parts["best_pos"]),
                             jnp.asarray(batch > 0), jnp.asarray(True), with_rows)
    return np.asarray(packed), parts


@pytest.mark.parametrize("with_rows", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("batch", [0, 1, 5])
def test_pack_round_trip(batch, dtype, with_rows):
    packed, parts = _packed(batch, dtype, with_rows)
    result = unpack_add_result(packed, batch, np.dtype(dtype), with_rows)
    np.testing.assert_array_equal(result.value, parts["value"])
    assert result.value.dtype == dtype
    np.testing.assert_array_equal(result.status, parts["status"])
    if with_rows:
        np.testing.assert_array_equal(result.index, parts["indices"])
        np.testing.assert_array_equal(result.inserted, parts["inserted"].astype(np.int32))
    else:
        assert result.index is None and result.inserted is None
    assert result.objective_delta == parts["delta"]
    assert result.n_occupied == 7 and result.all_finite
    if batch:
        pos = parts["best_pos"]
        assert result.best_pos == pos
        assert result.best_cell == parts["indices"][pos]
        assert result.best_threshold == parts["new_threshold"][pos]
    else:
        assert result.best_pos == -1


def test_without_rows_the_result_is_smaller():
    with_rows, _ = _packed(6, np.float32, True)
    without, _ = _packed(6, np.float32, False)
    assert len(with_rows) - len(without) == 12


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_finite_rows(bad):
    objective = np.ones(5, np.float32)
    measures = np.ones((5, 2, 3), np.float32)
    objective[1] = bad
    measures[3, 1, 2] = bad
    np.testing.assert_array_equal(finite_rows(jnp.asarray(objective), jnp.asarray(measures)),
                                  [True, False, True, False, True])
    np.testing.assert_array_equal(finite_rows(jnp.asarray(objective), None),
                                  [True, False, True, True, True])
    ints = finite_rows(jnp.arange(3), jnp.ones((3, 2), jnp.int32))
    np.testing.assert_array_equal(ints, [True, True, True])
    assert finite_rows(jnp.zeros(0), jnp.zeros((0, 2))).shape == (0,)


def test_store_write_cell_pass_matches_the_scatter():
    """Stamps, counts and fields agree between the scatters and the passes over the
    cells."""
    capacity = 8
    shapes = {"solution": (3,), "objective": ()}
    dtypes = {"solution": np.float32, "objective": np.float32}
    rng = np.random.default_rng(1)
    stores = [init_store(capacity, shapes, dtypes) for _ in range(2)]
    for _ in range(4):
        indices = rng.integers(0, capacity, 6).astype(np.int32)
        mask = np.zeros(6, bool)
        mask[np.unique(indices, return_index=True)[1]] = rng.integers(0, 2, len(
            np.unique(indices))).astype(bool)
        cell_rows = np.full(capacity, len(indices), np.int32)
        cell_rows[indices[mask]] = np.flatnonzero(mask)
        data = {"solution": jnp.asarray(rng.normal(size=(6, 3)).astype(np.float32)),
                "objective": jnp.asarray(rng.normal(size=6).astype(np.float32))}
        stores[0] = store_write(stores[0], jnp.asarray(indices), jnp.asarray(mask), data)
        stores[1] = store_write(stores[1], jnp.asarray(indices), jnp.asarray(mask), data,
                                jnp.asarray(cell_rows))
        a, b = jax.device_get(stores)
        np.testing.assert_array_equal(a.stamp, b.stamp)
        assert int(a.n_occupied) == int(b.n_occupied) == int((a.stamp >= 0).sum())
        for name in shapes:
            np.testing.assert_array_equal(a.fields[name], b.fields[name])


@pytest.mark.parametrize("batch", [1, 2, 5])
def test_threshold_add_stops_on_a_non_finite_row(batch):
    """With ``row_finite``, one bad row (in either stamp regime) writes nothing."""
    capacity = CELL_PASS_RATIO * 2  # A batch of 1 takes the scatter, 2 and 5 the pass.
    shapes = {"solution": (2,), "objective": (), "threshold": ()}
    dtypes = {name: np.float32 for name in shapes}
    store = init_store(capacity, shapes, dtypes)
    indices = jnp.arange(batch, dtype=jnp.int32)
    data = {"solution": jnp.ones((batch, 2)), "objective": jnp.arange(batch) + 1.0}
    row_finite = jnp.ones(batch, bool)
    for ok in (row_finite, row_finite.at[batch - 1].set(False)):
        new, _, out = threshold_add(store, init_stats(np.float32), indices, data, 1.0,
                                    -np.inf, True, row_finite=ok)
        expected = bool(ok.all())
        assert bool(out["all_finite"]) == expected
        assert int(new.n_occupied) == (batch if expected else 0)
        assert bool((new.stamp >= 0).any()) == expected
        assert bool(out["inserted"].any()) == expected
        for name in shapes:  # Written rows, by scatter or by the pass over cells.
            changed = not np.array_equal(new.fields[name], np.zeros((capacity, *shapes[name])))
            assert changed == expected, name


def _leaves_equal(a, b):
    a, b = jax.device_get(jax.tree.leaves(a)), jax.device_get(jax.tree.leaves(b))
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("neg_inf", [True, False])
def test_flat_add_kernel_equals_the_pytree_kernel(neg_inf):
    # 32 values per solution get a block of their own: the store has two blocks.
    shapes = {"solution": (32,), "objective": (), "measures": (1,), "threshold": ()}
    store = init_store(6, shapes, {name: np.float32 for name in shapes})
    assert len(store.fields.blocks) == 2
    rng = np.random.default_rng(8)
    index_args = (jnp.asarray([6], jnp.int32), jnp.asarray([0.0], jnp.float32),
                  jnp.asarray([1.0], jnp.float32), jnp.asarray(1e-6, jnp.float32))
    scalars = jnp.asarray([1.0 if neg_inf else 0.5, -np.inf if neg_inf else 0.0],
                          jnp.float32)
    statics = {"index_fn": grid_index, "threshold_min_is_neg_inf": neg_inf,
               "with_rows": True}
    pytree_kernel = jax.jit(indexed_threshold_add, static_argnames=list(statics))
    flat_store = jax.tree.map(jnp.copy, store)
    for _ in range(3):
        data = {"solution": jnp.asarray(rng.normal(size=(5, 32)), jnp.float32),
                "objective": jnp.asarray(rng.normal(size=5), jnp.float32),
                "measures": jnp.asarray(rng.uniform(size=(5, 1)), jnp.float32)}
        store, packed = pytree_kernel(store, index_args, data, scalars, **statics)
        leaves, treedef = jax.tree.flatten((index_args, data, scalars))
        kernel = flat_threshold_add(flat_store.fields.layout, treedef, **statics)
        # One function per layout and argument structure, shared by all archives.
        assert flat_threshold_add(flat_store.fields.layout, treedef, **statics) is kernel
        *new_leaves, flat_packed = kernel(*store_leaves(flat_store), *leaves)
        flat_store = store_from_leaves(new_leaves, flat_store.fields.layout)
        np.testing.assert_array_equal(np.asarray(flat_packed), np.asarray(packed))
        _leaves_equal(flat_store, store)
    assert int(store.n_occupied) > 0


def test_store_leaves_round_trip():
    shapes = {"solution": (2,), "objective": (), "threshold": ()}
    store = init_store(4, shapes, {name: np.float64 for name in shapes})
    leaves = store_leaves(store)
    assert len(leaves) == 3 + len(store.fields.blocks)
    again = store_from_leaves(leaves, store.fields.layout)
    assert jax.tree.structure(again) == jax.tree.structure(store)
    _leaves_equal(again, store)
