"""Runs a PBT population on every visible device; used by pbt tests in a subprocess.

Usage: ``python _population_devices.py PROGRAM OUT.npz`` with ``XLA_FLAGS`` setting
the number of forced host devices. Prints ``devices=N`` and saves what the program
returns (e.g. the final population, every leaf) to ``OUT.npz``. Tests start it with
:func:`run_program`.
"""

import pickle
import sys

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

from ribsax.rl._pbt import population_mesh  # noqa: E402
from tests.child_env import run_with_host_devices  # noqa: E402

#: XLA flags that make the CPU compiler skip its costly optimisations: the
#: programs compile in about half the time, and both runs a program compares
#: are compiled alike.
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def run_program(program, devices, out, xla_flags=""):
    """Runs ``program`` of this script in a child process with ``devices``
    forced host devices, plus ``xla_flags``, and returns the arrays it saved to
    ``out``."""
    result = run_with_host_devices([__file__, program, out], devices, xla_flags=xla_flags)
    assert f"devices={devices}" in result.stdout
    return dict(np.load(out))


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


def _pbt_me(fused, one_device=True, pickled=True):
    """The same ME-PBT run (4 SAC agents, the emitter tests' settings) with the
    agents on one device (``mesh=None``, unless not ``one_device``) and sharded
    over two devices; the archive, the agents and how the agents' and the
    archive's states are laid out after it.

    ``fused=False``: two iterations of the ask/tell loop (``Scheduler.ask`` and
    ``tell``), then, if ``pickled``, a pickle round trip of the scheduler and one
    more iteration. ``fused=True``: two iterations of the fused loop
    (``Scheduler.run``), then one of :mod:`ribsax.functional` (``init``, ``ask``,
    ``tell``, ``install``), then one of the ask/tell loop; and the metrics of two
    trials of two iterations with :func:`ribsax.run_trials`.
    """
    from ribsax import functional as F
    from ribsax.schedulers import Scheduler, run_trials
    from tests.emitters.pbt_me_emitter_test import archive_of, emitter_of, evaluate

    runs = [("two", population_mesh(jax.devices()[:2]))]
    if one_device:
        runs.insert(0, ("one", None))
    out = {}
    for label, mesh in runs:
        archive = archive_of()
        scheduler = Scheduler(archive, [emitter_of(archive, seed=3, mesh=mesh)])
        scheduler.run(evaluate, 2, seed=2, fused=fused)
        if not fused and pickled:
            scheduler = pickle.loads(pickle.dumps(scheduler))
            scheduler.run(evaluate, 1, seed=5, fused=False)
        elif fused:
            config, state = F.init(scheduler)
            state, solutions = F.ask(config, state)
            objective, measures, _ = evaluate(solutions, jax.random.key(4))
            state, _ = F.tell(config, state, objective, measures)
            F.install(scheduler, config, state)
            scheduler.run(evaluate, 1, seed=5, fused=False)

            def make(seed, mesh=mesh):
                archive = archive_of()
                return Scheduler(archive, [emitter_of(archive, seed=seed, mesh=mesh)])

            metrics = run_trials(make, evaluate, 2, [0, 1]).metrics
            out[f"{label}_trials"] = metrics[["qd_score", "obj_max", "num_elites"]].to_numpy(float)
        archive, emitter = scheduler.archive, scheduler.emitters[0]
        leaves = jax.tree.leaves(emitter.kernel_state.population)
        # Devices each leaf spans, and whether it is split over them (not copied).
        out[f"{label}_spans"] = [len(x.sharding.device_set) for x in leaves]
        out[f"{label}_split"] = [not x.sharding.is_fully_replicated for x in leaves]
        archive_leaves = jax.tree.leaves(archive._loop_state())
        out[f"{label}_archive_spans"] = [len(x.sharding.device_set) for x in archive_leaves]
        for name in ("index", "objective", "measures", "solution"):
            out[f"{label}_{name}"] = archive.data(name)
        out[f"{label}_agents"] = emitter.agents
        out[f"{label}_buffer_sizes"] = emitter.buffer_sizes
        out[f"{label}_evaluations"] = emitter.evaluations
    return out


def pbt_me_sharded():
    """ME-PBT sharded over two devices in the ask/tell loop."""
    return _pbt_me(fused=False, one_device=False, pickled=False)


def pbt_me_ask_tell():
    """ME-PBT on one device and on two, in the ask/tell loop (with a pickle
    round trip)."""
    return _pbt_me(fused=False)


def pbt_me_fused():
    """ME-PBT on one device and on two, in the fused loop and ribsax.functional."""
    return _pbt_me(fused=True)


PROGRAMS = {
    "pbt_sac": pbt_sac,
    "pbt_me_sharded": pbt_me_sharded,
    "pbt_me_ask_tell": pbt_me_ask_tell,
    "pbt_me_fused": pbt_me_fused,
}


def main():
    program, out = sys.argv[1], sys.argv[2]
    print(f"devices={len(jax.devices())}")
    result = PROGRAMS[program]()
    np.savez(out, **{k: np.asarray(v) for k, v in result.items()})


if __name__ == "__main__":
    main()
