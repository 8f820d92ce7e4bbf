"""CMA-ME on Gymnasium's LunarLander, episodes evaluated on Dask workers.

pyribs' lunar lander set-up: a linear policy (``action = argmax(W @ observation)``,
``W`` of shape 4 x 8, so 32 parameters) is scored by the return of one episode; its
measures are the lander's x position and y velocity when a leg first touches the
ground (the last step's values if it never does). A 50 x 50
:class:`ribsax.archives.GridArchive` over ``[-1, 1] x [-3, 0]`` with
``qd_score_offset=-600`` and five :class:`ribsax.emitters.EvolutionStrategyEmitter`
(``sigma0=1``, ``ranker="2imp"``, 30 solutions each) run in the ask/tell loop; each
batch of 150 episodes is spread over Dask workers by
:class:`ribsax.distributed.DaskEvaluator` (one episode per task).

Needs ``pip install ribsax[dask,gymnasium]``. Usage::

    python -m ribsax.examples.lunar_lander --workers 4 --iterations 300 \\
        --outdir runs/lunar_lander
    python -m ribsax.examples.lunar_lander --scheduler-address tcp://host:8786

Outputs in ``--outdir``: ``metrics.csv`` (per iteration: ``qd_score``, ``coverage``,
``obj_max``, ``obj_mean``, ``num_elites``, ``elapsed_s``) and ``heatmap.png``.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np

from ribsax.archives import GridArchive
from ribsax.distributed import DaskEvaluator
from ribsax.emitters import EvolutionStrategyEmitter
from ribsax.examples._io import metrics_row, write_heatmap, write_metrics_csv
from ribsax.schedulers import Scheduler

__all__ = ["simulate", "run", "main", "METRIC_FIELDS"]

#: Columns of metrics.csv, in order.
METRIC_FIELDS = (
    "iteration",
    "qd_score",
    "coverage",
    "obj_max",
    "obj_mean",
    "num_elites",
    "elapsed_s",
)
ENV_NAME = "LunarLander-v3"
OBSERVATION_DIM, ACTION_COUNT = 8, 4


def simulate(solution, seed=0):
    """Return and measures of one LunarLander episode of a linear policy.

    Args:
        solution: 32 policy parameters (a 4 x 8 matrix, row-major).
        seed: Seed of the episode's initial state.

    Returns:
        ``(episode_return, (impact_x, impact_y_velocity))``.
    """
    import gymnasium

    env = gymnasium.make(ENV_NAME)
    weights = np.asarray(solution, dtype=np.float64).reshape(ACTION_COUNT, OBSERVATION_DIM)
    observation, _ = env.reset(seed=int(seed))
    total, impact, done = 0.0, None, False
    while not done:
        action = int(np.argmax(weights @ observation))
        observation, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        done = terminated or truncated
        if impact is None and (observation[6] or observation[7]):
            impact = (float(observation[0]), float(observation[3]))
    env.close()
    if impact is None:
        impact = (float(observation[0]), float(observation[3]))
    return total, impact


def run(
    *,
    outdir,
    iterations=300,
    workers=None,
    batch_size=30,
    emitters=5,
    seed=0,
    scheduler_address=None,
    client=None,
    log_every=25,
    quiet=False,
) -> dict:
    """Runs CMA-ME with Dask evaluation and writes metrics and a heatmap.

    Args:
        outdir: Output directory (created if missing).
        iterations: Iterations of ``emitters * batch_size`` episodes.
        workers: Local Dask worker processes (None: Dask's default); ignored with
            ``scheduler_address``.
        batch_size: Solutions per emitter per iteration.
        emitters: Number of emitters.
        seed: Seed of the archive, the emitters and the episodes.
        scheduler_address: Address of a running Dask scheduler to use instead of a
            local cluster.
        client: A ``distributed.Client`` to use instead (left open).
        log_every: Print progress every this many iterations (0: never).
        quiet: Print nothing.

    Returns:
        The final metrics row.
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    solution_dim = OBSERVATION_DIM * ACTION_COUNT
    archive = GridArchive(
        solution_dim=solution_dim,
        dims=(50, 50),
        ranges=[(-1.0, 1.0), (-3.0, 0.0)],
        qd_score_offset=-600,
        seed=seed,
        dtype=np.float64,
    )
    seeds = np.random.SeedSequence(seed).spawn(emitters)
    scheduler = Scheduler(
        archive,
        [
            EvolutionStrategyEmitter(
                archive,
                x0=np.zeros(solution_dim),
                sigma0=1.0,
                ranker="2imp",
                batch_size=batch_size,
                seed=s,
            )
            for s in seeds
        ],
    )
    evaluate = functools.partial(simulate, seed=seed)
    if client is not None:
        evaluator = DaskEvaluator(
            evaluate, client, batched=False, chunk_size=1, print_dashboard=not quiet
        )
    elif scheduler_address is not None:
        evaluator = DaskEvaluator.from_config(
            evaluate,
            cluster="address",
            scheduler_address=scheduler_address,
            batched=False,
            chunk_size=1,
            print_dashboard=not quiet,
        )
    else:
        evaluator = DaskEvaluator(
            evaluate, n_workers=workers, batched=False, chunk_size=1, print_dashboard=not quiet
        )
    rows = []
    start = time.perf_counter()
    with evaluator:
        for itr in range(1, iterations + 1):
            solutions = scheduler.ask()
            objective, measures = evaluator(solutions)
            scheduler.tell(objective, measures)
            row = metrics_row(itr, archive.stats, time.perf_counter() - start)
            rows.append(row)
            if not quiet and log_every and (itr % log_every == 0 or itr == iterations):
                print(
                    f"iter {itr:4d} | qd_score {row['qd_score']:12.1f} | coverage "
                    f"{row['coverage']:6.2%} | best {row['obj_max']:8.1f}",
                    flush=True,
                )
    write_metrics_csv(outdir / "metrics.csv", METRIC_FIELDS, rows)
    write_heatmap(
        archive,
        outdir / "heatmap.png",
        f"LunarLander, {iterations} iterations",
        ["impact x position", "impact y velocity"],
        vmin=-300,
        vmax=300,
    )
    return rows[-1]


def main(argv=None) -> int:
    """Command-line entry point; see ``--help``."""
    parser = argparse.ArgumentParser(
        prog="python -m ribsax.examples.lunar_lander", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scheduler-address", default=None)
    parser.add_argument("--outdir", default="runs/lunar_lander")
    args = parser.parse_args(argv)
    run(
        outdir=args.outdir,
        iterations=args.iterations,
        workers=args.workers,
        batch_size=args.batch_size,
        seed=args.seed,
        scheduler_address=args.scheduler_address,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
