"""Do the QD-RL algorithms beat MAP-Elites, and DCRL-ME PGA-ME, on brax tasks at a
small CPU budget, as dqd-rl and the DCRL papers report at 1M evaluations?

Runs, with equal evaluation budgets and the same seeds, on ``--env``
(walker2d_uni: feet-contact measures; ant_omni: final (x, y) position within
``--position-range``) on a 16×16 grid, short episodes and small tanh policies:

* MAP-Elites: ``IsoLineEmitter`` (Iso+LineDD, σ1 0.005, σ2 0.05) from the task's
  initial policies;
* PGA-ME: ``PGAMEEmitter`` (half Iso+LineDD, half TD3 policy-gradient offspring and
  the greedy actor; dqd-rl's 10 policy-gradient steps, ``--critic-steps`` critic
  steps to fit the budget);
* CMA-MEGA (ES): ``GradientArborescenceEmitter`` on OpenAI-ES Jacobians (dqd-rl's
  settings, fewer samples and branches; the ES samples count in the budget);
* CMA-MEGA (TD3, ES): ``CMAMEGATD3Emitter`` (objective gradient from the TD3
  critic, measure gradients from as many ES samples as CMA-MEGA (ES), the greedy
  actor in one branch slot; as many critic steps as PGA-ME);
* DCRL-ME: ``DCRLMEEmitter`` (the DCRL paper's 2 : 1 : 1 split of Iso+LineDD,
  descriptor-conditioned policy-gradient and actor-injection offspring, as many
  critic and policy-gradient steps as PGA-ME).

``--conventions dcrl`` evaluates every algorithm on the DCRL papers' form of the
task (every step's reward clipped at 0, the ant omni task's per-step bonus of
3.03, a QD-score offset of 0), which DCRL-ME needs (its reward relabelling assumes
non-negative rewards); ``qdax`` (the default) keeps QDax's task and offsets.

Every algorithm makes ``--batch`` evaluations per iteration (for the CMA-MEGA
variants: the solution point, the ES samples and the branches).

All three run in the fused loop (``Scheduler.run``). Prints, per algorithm, the final
QD score (mean, std, min, max over seeds; offset: the task's per-step reward offset
× episode length) and the per-seed values, and writes the curves to a JSON file.

Usage::

    python benchmarks/qdrl_ordering.py [--seeds 3] [--evaluations 20000]
        [--episode-length 100] [--algorithms MAP-Elites "CMA-MEGA (TD3, ES)"]
        [--env ant_omni --position-range 5 --conventions dcrl]
        [--critic-steps 100] [--out benchmarks/figures/qdrl_ordering.json]
        [--plot benchmarks/figures/qdrl_ordering.png]
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
    DCRLMEEmitter,
    GradientArborescenceEmitter,
    IsoLineEmitter,
    PGAMEEmitter,
)
from ribsax.schedulers import Scheduler
from ribsax.tasks import brax as brax_tasks
from ribsax.tasks import es_jacobian_fn, with_jacobian

CELLS = [16, 16]
HIDDEN = (16, 16)
#: The DCRL papers' per-step reward bonus of each task (omni ant only).
DCRL_REWARD_BONUS = {"ant_omni": 3.03}
#: Critic steps per iteration of the TD3-based emitters (``--critic-steps``).
SETTINGS = {"critic_steps": 100}


def make_task(
    episode_length, transitions=False, env="walker2d_uni", conventions="qdax", position_range=None
):
    options = {}
    if conventions == "dcrl":
        options = dict(
            reward_bonus=DCRL_REWARD_BONUS.get(env, 0.0),
            reward_clip_min=0.0,
            qd_score_offset=0.0,
        )
    if position_range is not None:
        options["position_range"] = (-position_range, position_range)
    return brax_tasks.create(
        env,
        episode_length=episode_length,
        hidden_layer_sizes=HIDDEN,
        return_transitions=transitions,
        **options,
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
        num_critic_training_steps=SETTINGS["critic_steps"],
        replay_buffer_size=200_000,
        seed=seed,
    )
    return Scheduler(archive, [emitter]), task, batch


def dcrl_me(task, seed, batch):
    """DCRL-ME with the DCRL paper's 2 : 1 : 1 split of the batch."""
    archive = archive_of(task, seed)
    pg = ai = batch // 4
    emitter = DCRLMEEmitter(
        archive,
        policy=task.policy,
        ga_batch_size=batch - pg - ai,
        pg_batch_size=pg,
        ai_batch_size=ai,
        num_pg_training_steps=10,
        num_critic_training_steps=SETTINGS["critic_steps"],
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
        num_critic_training_steps=SETTINGS["critic_steps"],
        replay_buffer_size=200_000,
        seed=seed,
    )
    return Scheduler(archive, [emitter]), task, batch


ALGORITHMS = {
    "MAP-Elites": map_elites,
    "PGA-ME": pga_me,
    "CMA-MEGA (ES)": cma_mega_es,
    "CMA-MEGA (TD3, ES)": cma_mega_td3_es,
    "DCRL-ME": dcrl_me,
}
NEEDS_TRANSITIONS = ("PGA-ME", "CMA-MEGA (TD3, ES)", "DCRL-ME")
DEFAULT_ALGORITHMS = ["MAP-Elites", "PGA-ME", "CMA-MEGA (ES)", "CMA-MEGA (TD3, ES)"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--evaluations", type=int, default=20_000)
    parser.add_argument(
        "--batch", type=int, default=100, help="evaluations per iteration (every algorithm)"
    )
    parser.add_argument("--episode-length", type=int, default=100)
    parser.add_argument(
        "--algorithms", nargs="+", choices=list(ALGORITHMS), default=DEFAULT_ALGORITHMS
    )
    parser.add_argument("--env", choices=["walker2d_uni", "ant_omni"], default="walker2d_uni")
    parser.add_argument(
        "--position-range",
        type=float,
        default=None,
        help="omni tasks: measures clipped to [-R, R] (default the task's 30)",
    )
    parser.add_argument("--conventions", choices=["qdax", "dcrl"], default="qdax")
    parser.add_argument("--critic-steps", type=int, default=100)
    parser.add_argument("--out", default="benchmarks/figures/qdrl_ordering.json")
    parser.add_argument("--plot", default=None, help="PNG of the QD-score curves")
    args = parser.parse_args(argv)
    SETTINGS["critic_steps"] = args.critic_steps
    iterations = args.evaluations // args.batch
    print(json.dumps(machine_info(), indent=1))
    print(json.dumps(vars(args)))
    task_options = dict(
        env=args.env, conventions=args.conventions, position_range=args.position_range
    )
    plain = make_task(args.episode_length, **task_options)
    with_transitions = make_task(args.episode_length, transitions=True, **task_options)
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
    if args.plot:
        plot_curves(curves, args, args.plot)
    return 0


def plot_curves(curves, args, path):
    """QD score against evaluations: each algorithm's mean and seed range."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for index, (name, runs) in enumerate(curves.items()):
        evaluations = np.asarray(runs[0]["evaluations"], float)
        score = np.array([run["qd_score"] for run in runs])
        color = f"C{index}"
        ax.plot(evaluations, score.mean(axis=0), color=color, label=name)
        ax.fill_between(evaluations, score.min(axis=0), score.max(axis=0), color=color, alpha=0.2)
    where = f", positions in ±{args.position_range:g}" if args.position_range else ""
    ax.set_title(
        f"{args.env}{where}, {args.episode_length}-step episodes, {len(runs)} seeds (mean, range)",
        fontsize=9,
    )
    ax.set_xlabel("evaluations")
    ax.set_ylabel("QD score")
    ax.legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=100)
    print(f"plot: {path}")


if __name__ == "__main__":
    sys.exit(main())
