"""ribsax vs QDax: evaluation throughput of a brax QD task, alternating in one process.

Both libraries roll out the same number of policies (``--batch``) for the same
number of steps (``--steps``) on the same brax task (default ``walker2d_uni``, spring
backend, feet-contact measures) with MLP policies of the same hidden sizes. The time
to create ribsax's task and the first call of each (trace + compile + run) are
reported separately; then ``--rounds`` rounds alternate the two libraries,
``--calls`` calls each per round, with a fresh key per call; the reported figure is
the median time per batch.

QDax is optional: it pulls in many packages, so it is not a ribsax dependency.
Install it beside ribsax (e.g. ``pip install --target /tmp/qdax_site qdax chex toolz``
and ``PYTHONPATH=/tmp/qdax_site``); without it, only ribsax is timed.

Usage::

    python benchmarks/brax_eval.py                     # walker2d_uni, batch 100, 100 steps
    python benchmarks/brax_eval.py --hidden 128 128 --batch 1024
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import jax
import jax.numpy as jnp

from ribsax.tasks import brax as brax_tasks


def _qdax_scoring(task_name, key, steps, hidden, batch):
    """QDax's scoring function and initial policy parameters, or None without QDax."""
    try:
        from qdax.tasks.brax.v2.env_creators import (
            create_default_brax_task_components,
        )
    except ImportError:
        return None
    env, network, scoring = create_default_brax_task_components(
        task_name, key, episode_length=steps, mlp_policy_hidden_layer_sizes=hidden
    )
    params = jax.vmap(network.init)(
        jax.random.split(key, batch), jnp.zeros((batch, env.observation_size))
    )
    return scoring, params


def main():
    """Runs the comparison and prints evaluations/s and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="walker2d_uni")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--hidden", type=int, nargs="+", default=[64, 64])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()
    hidden = tuple(args.hidden)

    print(
        f"# brax evaluation: ribsax vs QDax ({args.task}, batch {args.batch}, "
        f"{args.steps} steps, MLP {hidden})"
    )
    print(
        f"- machine: {platform.machine()}, {platform.processor() or 'cpu'}; "
        f"jax {jax.__version__}; devices {jax.devices()}"
    )

    key = jax.random.key(0)
    start = time.perf_counter()
    task = brax_tasks.create(args.task, episode_length=args.steps, hidden_layer_sizes=hidden)
    print(f"- ribsax task creation: {time.perf_counter() - start:.1f} s")
    solutions = task.initial_solutions(args.batch, key, dtype=jnp.float32)
    contenders = {"ribsax": (task.jit_evaluate, solutions)}
    qdax = _qdax_scoring(args.task, key, args.steps, hidden, args.batch)
    if qdax is None:
        print("- QDax not importable: timing ribsax only")
    else:
        import qdax as qdax_module

        print(f"- qdax {getattr(qdax_module, '__version__', '?')}")
        contenders["qdax"] = qdax

    for name, (fn, inputs) in contenders.items():
        start = time.perf_counter()
        jax.block_until_ready(fn(inputs, key)[0])
        print(f"- {name} first call (trace + compile + run): {time.perf_counter() - start:.1f} s")

    times = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, (fn, inputs) in contenders.items():
            for _ in range(args.calls):
                key, sub = jax.random.split(key)
                start = time.perf_counter()
                jax.block_until_ready(fn(inputs, sub)[0])
                times[name].append(time.perf_counter() - start)
    for name, samples in times.items():
        median = statistics.median(samples)
        print(
            f"  {name:7s} median {median * 1e3:8.1f} ms/batch -> "
            f"{args.batch / median:8.0f} evaluations/s"
        )
    if "qdax" in times:
        ratio = statistics.median(times["qdax"]) / statistics.median(times["ribsax"])
        print(f"  ratio (ribsax evaluations/s / QDax evaluations/s): {ratio:.2f}")


if __name__ == "__main__":
    main()
