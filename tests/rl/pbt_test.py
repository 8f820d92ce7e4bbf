"""Tests for ribsax.rl._pbt: the PBT exploit/explore step and population sharding."""

import flax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.rl._pbt import PBT, population_map, population_mesh, shard_population
from tests.rl._population_devices import run_program


@flax.struct.dataclass
class _Agent:
    params: jax.Array
    opt_count: jax.Array
    hyperparams: dict


RANGES = (("lr", 1e-3, 1e-1), ("discount", 0.9, 1.0))


def _population(n=8):
    pbt = PBT(n, 3, 2, RANGES)
    hyper = pbt.sample_hyperparams(jax.random.key(0), n)
    agents = _Agent(
        params=jnp.arange(n * 3, dtype=float).reshape(n, 3),
        opt_count=jnp.arange(n),
        hyperparams=hyper,
    )
    buffers = {
        "obs": jnp.arange(n * 4 * 2, dtype=float).reshape(n, 4, 2),
        "position": jnp.arange(n) * 10,
    }
    return pbt, agents, buffers


FITNESS = jnp.array([3.0, -1.0, 7.0, 0.5, 9.0, -4.0, 5.0, 1.0])
# Ranking: 4 (9), 2 (7), 6 (5), 0 (3), 7 (1), 3 (0.5), 1 (-1), 5 (-4).
BEST, WORST = {4, 2, 6}, [1, 5]


@pytest.mark.parametrize("explore", ["resample", "perturb"])
def test_worst_members_become_copies_of_best(explore):
    pbt, agents, buffers = _population()
    pbt = PBT(8, 3, 2, RANGES, explore=explore)
    update = jax.jit(pbt.update_states_and_buffer)
    for seed in range(6):
        key = jax.random.key(seed)
        targets, sources = pbt.select(jax.random.split(key)[0], FITNESS)
        assert sorted(np.asarray(targets).tolist()) == sorted(WORST)
        assert set(np.asarray(sources).tolist()) <= BEST
        new, new_buf = update(key, FITNESS, agents, buffers)
        for t, s in zip(np.asarray(targets), np.asarray(sources)):
            np.testing.assert_array_equal(new.params[t], agents.params[s])
            assert new.opt_count[t] == agents.opt_count[s]
            np.testing.assert_array_equal(new_buf["obs"][t], buffers["obs"][s])
            assert new_buf["position"][t] == buffers["position"][s]
            for name, low, high in RANGES:
                value = float(new.hyperparams[name][t])
                assert low <= value <= high
                source = float(agents.hyperparams[name][s])
                assert value != source
                if explore == "perturb":
                    candidates = np.clip(np.array([0.8, 1.2]) * source, low, high)
                    assert np.min(np.abs(candidates - value)) < 1e-6 * abs(value)
        keep = np.array([i for i in range(8) if i not in WORST])
        np.testing.assert_array_equal(new.params[keep], agents.params[keep])
        np.testing.assert_array_equal(new_buf["obs"][keep], buffers["obs"][keep])
        for name, _, _ in RANGES:
            np.testing.assert_array_equal(
                new.hyperparams[name][keep], agents.hyperparams[name][keep]
            )


def test_update_is_deterministic_and_key_dependent():
    pbt, agents, buffers = _population()
    a = pbt.update_states_and_buffer(jax.random.key(5), FITNESS, agents, buffers)
    b = pbt.update_states_and_buffer(jax.random.key(5), FITNESS, agents, buffers)
    jax.tree.map(np.testing.assert_array_equal, a, b)
    hypers = {
        float(
            pbt.update_states_and_buffer(jax.random.key(s), FITNESS, agents, buffers)[
                0
            ].hyperparams["lr"][1]
        )
        for s in range(4)
    }
    assert len(hypers) > 1


def test_nan_fitness_ranks_last_and_no_buffer_is_allowed():
    pbt = PBT(4, 1, 1)
    targets, sources = pbt.select(jax.random.key(0), jnp.array([1.0, jnp.nan, 3.0, 0]))
    assert targets.tolist() == [1] and sources.tolist() == [2]
    agents = _Agent(params=jnp.arange(4.0), opt_count=jnp.zeros(4), hyperparams={})
    new, buf = pbt.update_states_and_buffer(jax.random.key(0), jnp.array([1.0, 0, 3, 2]), agents)
    assert buf is None and new.params.tolist() == [0.0, 2.0, 2.0, 3.0]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_best_to_replace_from": 0}, "num_best_to_replace_from"),
        ({"num_worse_to_replace": 9}, "num_worse_to_replace"),
        ({"num_best_to_replace_from": 5, "num_worse_to_replace": 4}, "must not exceed"),
        ({"explore": "mutate"}, "explore"),
        ({"hyperparameter_ranges": (("lr", 1.0, 0.1),)}, "low < high"),
    ],
)
def test_pbt_rejects_bad_arguments(kwargs, match):
    args = {
        "population_size": 8,
        "num_best_to_replace_from": 2,
        "num_worse_to_replace": 2,
        **kwargs,
    }
    with pytest.raises(ValueError, match=match):
        PBT(**args)
    with pytest.raises(ValueError, match="fitnesses must have shape"):
        PBT(8, 2, 2).update_states_and_buffer(jax.random.key(0), jnp.zeros(7), None)


def test_population_map_without_mesh_is_vmap():
    fn = population_map(lambda x, k: x * 2 + jax.random.normal(k))
    keys = jax.random.split(jax.random.key(0), 4)
    expected = jnp.stack([jnp.arange(4.0)[i] * 2 + jax.random.normal(keys[i]) for i in range(4)])
    np.testing.assert_allclose(fn(jnp.arange(4.0), keys), expected, rtol=1e-12)
    mesh = population_mesh()
    with pytest.raises(ValueError, match="multiple of the number of devices"):
        shard_population(jnp.zeros(3), population_mesh(jax.devices() * 2))
    assert shard_population(jnp.zeros(4), mesh).shape == (4,)


def test_pbt_sac_population_is_the_same_on_one_and_four_devices(tmp_path):
    """PBT-SAC trained and PBT-updated twice in a process with 4 forced host
    devices (XLA_FLAGS must be set before JAX starts, hence the subprocess): once
    on a one-device mesh, once sharded over all four. Members were replaced, so
    the copies crossed devices."""
    result = run_program("pbt_sac", 4, tmp_path / "sac.npz")
    names = sorted(k[len("one_") :] for k in result if k.startswith("one_"))
    assert len(names) > 10
    for name in names:
        np.testing.assert_allclose(
            result["one_" + name], result["four_" + name], rtol=1e-6, atol=1e-8, err_msg=name
        )
