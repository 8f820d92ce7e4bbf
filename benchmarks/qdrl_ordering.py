"""Do PGA-ME and CMA-MEGA (TD3, ES) beat MAP-Elites (and CMA-MEGA (ES)) on brax
walker2d_uni at a small budget, as dqd-rl reports at 1M evaluations?

Runs, with equal evaluation budgets and the same seeds, on walker2d_uni
(feet-contact measures, a 16×16 grid, short episodes, small tanh policies):

* MAP-Elites: ``IsoLineEmitter`` (Iso+LineDD, σ1 0.005, σ2 0.05) from the task's
  initial policies;
* PGA-ME: ``PGAMEEmitter`` (half Iso+LineDD, half TD3 policy-gradient offspring and
  the greedy actor; dqd-rl's 10 policy-gradient steps, fewer critic steps to fit the
  budget);
* CMA-MEGA (ES): ``GradientArborescenceEmitter`` on OpenAI-ES Jacobians (dqd-rl's
  settings, fewer samples and branches; the ES samples count in the budget);
* CMA-MEGA (TD3, ES): ``CMAMEGATD3Emitter`` (objective gradient from the TD3
  critic, measure gradients from as many ES samples as CMA-MEGA (ES), the greedy
  actor in one branch slot; as many critic steps as PGA-ME).

Every algorithm makes ``--batch`` evaluations per iteration (for the CMA-MEGA
variants: the solution point, the ES samples and the branches).

All three run in the fused loop (``Scheduler.run``). Prints, per algorithm, the final
QD score (mean, std, min, max over seeds; offset: the task's per-step reward offset
× episode length) and the per-seed values, and writes the curves to a JSON file.

Usage::

    python benchmarks/qdrl_ordering.py [--seeds 3] [--evaluations 20000]
        [--episode-length 100] [--algorithms MAP-Elites "CMA-MEGA (TD3, ES)"]
        [--out benchmarks/figures/qdrl_ordering.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine_info

from ribsax.archives import GridArchive
from ribsax.emitters import (
    CMAMEGATD3Emitter,
    GradientArborescenceEmitter,
    IsoLineEmitter,
    PGAMEEmitter,
)
from ribsax.schedulers import Scheduler
from ribsax.tasks import brax as brax_tasks
from ribsax.tasks import es_jacobian_fn, with_jacobian

CELLS = [16, 16]
HIDDEN = (16, 16)


def make_task(episode_length, transitions=False):
    return brax_tasks.create(
        "walker2d_uni",
        episode_length=episode_length,
        hidden_layer_sizes=HIDDEN,
        return_transitions=transitions,
    )


def archive_of(task, seed):
    return GridArchive(
        solution_dim=task.solution_dim,
        dims=CELLS,
        ranges=task.measure_ranges,
        dtype=np.float32,
        qd_score_offset=task.qd_score_offset,
        seed=seed,
    )


def map_elites(task, seed, batch):
    """MAP-Elites; its first batch (the task's initial policies, evaluated here) is
    added to the archive before the fused loop, which counts the rest."""
    archive = archive_of(task, seed)
    initial = task.initial_solutions(batch, jax.random.key(seed), dtype=np.float32)
    objective, measures, _ = task.jit_evaluate(initial, jax.random.key(seed))
    archive.add(np.asarray(initial), np.asarray(objective), np.asarray(measures))
    emitter = IsoLineEmitter(
        archive,
        iso_sigma=0.005,
        line_sigma=0.05,
        x0=np.asarray(initial)[0],
        batch_size=batch,
        seed=seed,
    )
    return Scheduler(archive, [emitter]), task, batch


def pga_me(task, seed, batch):
    archive = archive_of(task, seed)
    emitter = PGAMEEmitter(
        archive,
        policy=task.policy,
        batch_size=batch,
        num_pg_training_steps=10,
        num_critic_training_steps=100,
        replay_buffer_size=200_000,
        seed=seed,
    )
    return Scheduler(archive, [emitter]), task, batch


def cma_mega_es(task, seed, batch, samples=20):
    task = with_jacobian(
        task, es_jacobian_fn(task.evaluate, sample_sigma=0.02, sample_batch_size=samples)
    )
    archive = archive_of(task, seed)
    x0 = np.asarray(task.initial_solutions(1, jax.random.key(seed), dtype=np.float32))[0]
    branches = batch - 1 - samples
    emitter = GradientArborescenceEmitter(
        archive,
        x0=x0,
        sigma0=1.0,
        lr=1.0,
        grad_opt="gradient_ascent",
        normalize_grad=True,
        selection_rule="mu",
        restart_rule="no_improvement",
        ranker="2imp",
        batch_size=branches,
        seed=seed,
    )
    return Scheduler(archive, [emitter]), task, batch


def cma_mega_td3_es(task, seed, batch, samples=20):
    """``task`` returns transitions; the solution point is evaluated without a
    Jacobian (the emitter estimates its own gradients)."""
    task = with_jacobian(task, CMAMEGATD3Emitter.jacobian_free(task))
    archive = archive_of(task, seed)
    emitter = CMAMEGATD3Emitter(
        archive,
        policy=task.policy,
        evaluate=task,
        batch_size=batch - 1 - samples,
        sample_sigma=0.02,
        sample_batch_size=samples,
        gradient_batch_size=8192,
        num_critic_training_steps=100,
        replay_buffer_size=200_000,
        seed=seed,
    )
    return Scheduler(archive, [emitter]), task, batch


ALGORITHMS = {
    "MAP-Elites": map_elites,
    "PGA-ME": pga_me,
    "CMA-MEGA (ES)": cma_mega_es,
    "CMA-MEGA (TD3, ES)": cma_mega_td3_es,
}
NEEDS_TRANSITIONS = ("PGA-ME", "CMA-MEGA (TD3, ES)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--evaluations", type=int, default=20_000)
    parser.add_argument(
        "--batch", type=int, default=100, help="evaluations per iteration (every algorithm)"
    )
    parser.add_argument("--episode-length", type=int, default=100)
    parser.add_argument(
        "--algorithms", nargs="+", choices=list(ALGORITHMS), default=list(ALGORITHMS)
    )
    parser.add_argument("--out", default="benchmarks/figures/qdrl_ordering.json")
    args = parser.parse_args(argv)
    iterations = args.evaluations // args.batch
    print(json.dumps(machine_info(), indent=1))
    plain = make_task(args.episode_length)
    with_transitions = make_task(args.episode_length, transitions=True)
    curves = {}
    for name in args.algorithms:
        build = ALGORITHMS[name]
        curves[name] = []
        for seed in range(args.seeds):
            task = with_transitions if name in NEEDS_TRANSITIONS else plain
            start = time.perf_counter()
            scheduler, task, _ = build(task, seed, args.batch)
            first = args.batch if name == "MAP-Elites" else 0
            result = scheduler.run(task, iterations - (first > 0), seed=seed)
            elapsed = time.perf_counter() - start
            evaluations = np.asarray(result.metrics["evaluations"]) + first
            score = np.asarray(result.metrics["qd_score"])
            curves[name].append(
                {
                    "seed": seed,
                    "evaluations": evaluations.tolist(),
                    "qd_score": score.tolist(),
                    "seconds": elapsed,
                }
            )
            print(
                f"{name:14s} seed {seed}: {int(evaluations[-1])} evaluations, "
                f"QD score {score[-1]:.1f}, coverage "
                f"{float(result.metrics['coverage'].iloc[-1]):.3f}, {elapsed:.0f} s",
                flush=True,
            )
    print(
        "\n| algorithm | final QD score, mean ± std (min–max) over "
        f"{args.seeds} seeds | evaluations |"
    )
    print("|---|---|---|")
    for name, runs in curves.items():
        finals = np.array([run["qd_score"][-1] for run in runs])
        print(
            f"| {name} | {finals.mean():.0f} ± {finals.std(ddof=1):.0f} "
            f"({finals.min():.0f}–{finals.max():.0f}) | "
            f"{runs[0]['evaluations'][-1]} |"
        )
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as file:
        json.dump({"args": vars(args), "curves": curves}, file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
