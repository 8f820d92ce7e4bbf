"""Runs a PBT population on every visible device; used by pbt tests in a subprocess.

Usage: ``python _population_devices.py PROGRAM OUT.npz`` with ``XLA_FLAGS`` setting
the number of forced host devices. Prints ``devices=N`` and saves the final
population (every leaf) to ``OUT.npz``.
"""
import functools
import sys

import jax

jax.config.update("jax_enable_x64", True)

# pylint: disable=wrong-import-position
import flax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from ribsax.rl._pbt import (PBT, population_map, population_mesh,  # noqa: E402
                            shard_population)


@flax.struct.dataclass
class _Agent:
    params: jax.Array
    hyperparams: dict


def toy():
    """A population minimising a noisy quadratic with per-member learning rates."""
    n = 8
    pbt = PBT(n, 2, 3, (("lr", 0.01, 0.5),), explore="perturb")
    mesh = population_mesh()
    agents = _Agent(params=jax.random.normal(jax.random.key(0), (n, 4)),
                    hyperparams=pbt.sample_hyperparams(jax.random.key(1), n))
    buffers = jnp.zeros((n, 16, 4))
    agents, buffers = shard_population((agents, buffers), mesh)

    def train(agent, buffer, key):
        def step(carry, k):
            p, buf, i = carry
            noise = jax.random.normal(k, p.shape) * 0.1
            grad = 2 * (p - 1.0) + noise
            buf = buf.at[i % buf.shape[0]].set(grad)
            return (p - agent.hyperparams["lr"] * grad, buf, i + 1), None

        (p, buffer, _), _ = jax.lax.scan(step, (agent.params, buffer, 0),
                                         jax.random.split(key, 5))
        return agent.replace(params=p), buffer, -jnp.sum((p - 1.0) ** 2)

    train_all = jax.jit(population_map(train, mesh))
    update = jax.jit(pbt.update_states_and_buffer)
    key = jax.random.key(2)
    replaced = []
    for _ in range(4):
        key, k1, k2 = jax.random.split(key, 3)
        agents, buffers, fitness = train_all(agents, buffers, jax.random.split(k1, n))
        before = np.asarray(agents.hyperparams["lr"])
        agents, buffers = update(k2, fitness, agents, buffers)
        replaced.append(int(np.sum(np.asarray(agents.hyperparams["lr"]) != before)))
    return {"params": agents.params, "lr": agents.hyperparams["lr"],
            "buffers": buffers, "num_replaced": np.asarray(replaced)}


def pbt_sac():
    """PBT-SAC on the point-mass env, on one device and sharded over four."""
    # pylint: disable-next = import-outside-toplevel
    from ribsax.rl import PBTSAC, PBTSacConfig
    from tests.rl._point_env import make_point_env

    config = PBTSacConfig(batch_size=8, episode_length=10,
                          policy_hidden_layer_size=(8, 8),
                          critic_hidden_layer_size=(8, 8))
    out = {}
    for label, devices in (("one", jax.devices()[:1]), ("four", jax.devices()[:4])):
        mesh = population_mesh(devices)
        trainer = PBTSAC(config, make_point_env(2, 10), population_size=4,
                         num_best_to_replace_from=1, num_worse_to_replace=2,
                         buffer_size=64, mesh=mesh)
        population = trainer.init(jax.random.key(0))
        key = jax.random.key(1)
        for _ in range(2):
            key, eval_key, pbt_key = jax.random.split(key, 3)
            population, _ = trainer.train(population, 6)
            fitness = trainer.evaluate(population, eval_key)
            population = trainer.update(population, pbt_key, fitness)
        leaf = jax.tree.leaves(population.agents.policy_params)[0]
        assert len(leaf.sharding.device_set) == len(devices), leaf.sharding
        leaves = jax.tree.leaves((population.agents, population.buffers.experience))
        for i, x in enumerate(leaves):
            if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
                x = jax.random.key_data(x)
            out[f"{label}_{i}"] = np.asarray(x)
        out[f"{label}_fitness"] = np.asarray(fitness)
    return out


PROGRAMS = {"toy": toy, "pbt_sac": pbt_sac}


def main():
    program, out = sys.argv[1], sys.argv[2]
    print(f"devices={len(jax.devices())}")
    result = PROGRAMS[program]()
    np.savez(out, **{k: np.asarray(v) for k, v in result.items()})


if __name__ == "__main__":
    main()
