"""Runs a PBT population on every visible device; used by pbt tests in a subprocess.

Usage: ``python _population_devices.py PROGRAM OUT.npz`` with ``XLA_FLAGS`` setting
the number of forced host devices. Prints ``devices=N`` and saves the final
population (every leaf) to ``OUT.npz``.
"""

import sys

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

from ribsax.rl._pbt import population_mesh  # noqa: E402


def pbt_sac():
    """PBT-SAC on the point-mass env, on one device and sharded over four."""
    from ribsax.rl import PBTSAC, PBTSacConfig
    from tests.rl._point_env import make_point_env

    config = PBTSacConfig(
        batch_size=8,
        episode_length=10,
        policy_hidden_layer_size=(8, 8),
        critic_hidden_layer_size=(8, 8),
    )
    out = {}
    for label, devices in (("one", jax.devices()[:1]), ("four", jax.devices()[:4])):
        mesh = population_mesh(devices)
        trainer = PBTSAC(
            config,
            make_point_env(2, 10),
            population_size=4,
            num_best_to_replace_from=1,
            num_worse_to_replace=2,
            buffer_size=64,
            mesh=mesh,
        )
        population = trainer.init(jax.random.key(0))
        key = jax.random.key(1)
        for _ in range(2):
            key, pbt_key = jax.random.split(key)
            population, metrics = trainer.train(population, 6)
            # Any per-member fitness exercises the exploit step; the training
            # reward avoids compiling the evaluation twice more.
            fitness = metrics["reward"]
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


PROGRAMS = {"pbt_sac": pbt_sac}


def main():
    program, out = sys.argv[1], sys.argv[2]
    print(f"devices={len(jax.devices())}")
    result = PROGRAMS[program]()
    np.savez(out, **{k: np.asarray(v) for k, v in result.items()})


if __name__ == "__main__":
    main()
