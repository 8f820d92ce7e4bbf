"""MAP-Elites on a brax QD locomotion task (neural policies), into a run directory.

Solutions are flat parameter vectors of an MLP policy
(:class:`ribsax.tasks.brax.MLPPolicy`); the archive is a
:class:`ribsax.archives.GridArchive` over the task's measures (feet-contact
proportions for ``*_uni`` tasks). Each iteration samples ``2 * batch_size`` elites,
makes ``batch_size`` children with QDax's iso-line variation
(``x1 + iso_sigma * N(0, I) + line_sigma * N(0, 1) * (x2 - x1)``), evaluates them with
vmapped ``lax.scan`` rollouts (variation and evaluation are one jitted function)
and adds them to the archive.

Usage::

    python -m ribsax.examples.brax_map_elites --task walker2d_uni --outdir runs/walker

Outputs in ``--outdir``:

* ``config.json``: the resolved arguments and library versions;
* ``metrics.csv`` / ``metrics.json``: per iteration ``qd_score``, ``coverage``,
  ``obj_max``, ``obj_mean``, ``num_elites``, ``elapsed_s``; the JSON also holds the
  timing summary (compile time, evaluations per second of the whole loop and of the
  jitted variation + evaluation alone);
* ``archive.csv``: index, objective and measures of every elite (the policy
  parameters are left out: tens of thousands of columns);
* ``heatmap.png``: :func:`ribsax.visualize.grid_archive_heatmap` for tasks with 1 or
  2 measures (needs matplotlib).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ribsax.archives import GridArchive
from ribsax.examples._io import (
    library_versions,
    metrics_row,
    write_heatmap,
    write_metrics_csv,
)
from ribsax.experiments._presets import BRAX_CELLS
from ribsax.tasks import brax as brax_tasks

__all__ = ["run", "main", "METRIC_FIELDS", "DEFAULT_CELLS"]

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

#: Default cells per measure dimension, by number of measures (dqd-rl's archives:
#: hopper 1000, walker / half-cheetah 32 x 32, ant 6^4; shared with the runner's
#: ``brax_*`` configs).
DEFAULT_CELLS = BRAX_CELLS


@functools.partial(jax.jit, static_argnames=("evaluate",))
def _vary_and_evaluate(evaluate, key, parents1, parents2, iso_sigma, line_sigma):
    """Iso-line variation of parent pairs followed by the task's evaluation.

    Returns:
        ``(children, objective, measures)``.
    """
    k_iso, k_line, k_eval = jax.random.split(key, 3)
    iso = jax.random.normal(k_iso, parents1.shape, parents1.dtype)
    line = jax.random.normal(k_line, (parents1.shape[0], 1), parents1.dtype)
    children = parents1 + iso_sigma * iso + line_sigma * line * (parents2 - parents1)
    objective, measures, _ = evaluate(children, k_eval)
    return children, objective, measures


def _versions() -> dict:
    out = library_versions()
    try:
        import brax

        out["brax"] = brax.__version__
    except ImportError:  # pragma: no cover - the task import would fail first.
        pass
    return out


def _measure_labels(task) -> list:
    """Axis labels: the foot of each contact measure, or the final torso x / y."""
    if task.feet_links:
        names = task.env.sys.link_names
        return [f"contact fraction of link {i} ({names[i] or 'unnamed'})" for i in task.feet_links]
    return ["final torso x", "final torso y"]


def _write_heatmap(archive, path: Path, title: str, labels) -> bool:
    """Saves a heatmap PNG; returns False (with a warning) when it cannot."""
    if archive.measure_dim > 2:
        warnings.warn(
            f"heatmap.png was not written: the archive has "
            f"{archive.measure_dim} measures (heatmaps need 1 or 2)."
        )
        return False
    return write_heatmap(archive, path, title, labels)


def run(
    *,
    outdir,
    task="walker2d_uni",
    iterations=100,
    batch_size=100,
    episode_length=100,
    hidden=(64, 64),
    cells=None,
    iso_sigma=0.005,
    line_sigma=0.05,
    backend="spring",
    deterministic=True,
    seed=0,
    log_every=10,
    quiet=False,
) -> dict:
    """Runs MAP-Elites on a brax task and writes the run directory.

    Args:
        outdir: Directory for the outputs (created if missing).
        task: A name from :data:`ribsax.tasks.brax.TASK_NAMES`.
        iterations: Iterations after the initial population (each evaluates
            ``batch_size`` policies).
        batch_size: Policies evaluated per iteration.
        episode_length: Steps per episode.
        hidden: Hidden layer sizes of the MLP policy (QDax's notebooks: (64, 64)).
        cells: Cells per measure dimension (default from :data:`DEFAULT_CELLS`).
        iso_sigma: Iso-line isotropic noise (QDax's brax default 0.005).
        line_sigma: Iso-line directional noise (QDax's brax default 0.05).
        backend: brax backend.
        deterministic: Fixed (True) or random (False) initial states.
        seed: Seed of the policies, the variation and the archive's sampler.
        log_every: Print progress every this many iterations (0: never).
        quiet: Print nothing.

    Returns:
        The summary written to ``metrics.json`` (final metrics and timings).
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    config = {
        "task": task,
        "iterations": iterations,
        "batch_size": batch_size,
        "episode_length": episode_length,
        "hidden": list(hidden),
        "cells": cells,
        "iso_sigma": iso_sigma,
        "line_sigma": line_sigma,
        "backend": backend,
        "deterministic": deterministic,
        "seed": seed,
    }

    qd_task = brax_tasks.create(
        task,
        episode_length=episode_length,
        backend=backend,
        hidden_layer_sizes=tuple(hidden),
        deterministic=deterministic,
    )
    cells = cells or DEFAULT_CELLS.get(qd_task.measure_dim, 10)
    config["cells"] = cells
    config["solution_dim"] = qd_task.solution_dim
    config["qd_score_offset"] = qd_task.qd_score_offset
    config["versions"] = _versions()
    (outdir / "config.json").write_text(json.dumps(config, indent=2))

    archive = GridArchive(
        solution_dim=qd_task.solution_dim,
        dims=[cells] * qd_task.measure_dim,
        ranges=qd_task.measure_ranges,
        qd_score_offset=qd_task.qd_score_offset,
        seed=seed,
        dtype=np.float32,
    )
    key = jax.random.key(seed)
    key, k_init, k_eval = jax.random.split(key, 3)
    dtype = jnp.float32

    # Initial population: the same jitted function with zero variation, so the
    # whole run compiles once (this first call is trace + compile + evaluation).
    start = time.perf_counter()
    solutions = qd_task.initial_solutions(batch_size, k_init, dtype=dtype)
    solutions, objective, measures = _vary_and_evaluate(
        qd_task.evaluate, k_eval, solutions, solutions, 0.0, 0.0
    )
    jax.block_until_ready(objective)
    init_s = time.perf_counter() - start
    archive.add(np.asarray(solutions), np.asarray(objective), np.asarray(measures))

    rows = []
    eval_s = 0.0
    first_s = None
    loop_start = time.perf_counter()
    steady_start = None
    for itr in range(1, iterations + 1):
        parents = archive.sample_elites(2 * batch_size)["solution"]
        key, sub = jax.random.split(key)
        t0 = time.perf_counter()
        children, objective, measures = _vary_and_evaluate(
            qd_task.evaluate,
            sub,
            jnp.asarray(parents[:batch_size]),
            jnp.asarray(parents[batch_size:]),
            iso_sigma,
            line_sigma,
        )
        jax.block_until_ready(objective)
        t1 = time.perf_counter()
        if itr == 1:
            first_s = t1 - t0  # Warm-up iteration, excluded from the rates.
            steady_start = time.perf_counter()
        else:
            eval_s += t1 - t0
        archive.add(np.asarray(children), np.asarray(objective), np.asarray(measures))
        stats = archive.stats
        rows.append(metrics_row(itr, stats, time.perf_counter() - loop_start))
        if not quiet and log_every and (itr % log_every == 0 or itr == iterations):
            print(
                f"iter {itr:5d}  qd_score {stats.qd_score:12.2f}  "
                f"coverage {stats.coverage:6.3f}  obj_max {stats.obj_max:9.3f}",
                flush=True,
            )
    steady_iters = max(iterations - 1, 0)
    steady_s = (time.perf_counter() - steady_start) if steady_start else 0.0

    write_metrics_csv(outdir / "metrics.csv", METRIC_FIELDS, rows)
    df = archive.data(["index", "objective", "measures"], return_type="pandas")
    df.to_csv(outdir / "archive.csv", index=False)
    heatmap = _write_heatmap(
        archive,
        outdir / "heatmap.png",
        f"MAP-Elites on {task} ({iterations} iterations)",
        _measure_labels(qd_task),
    )

    evaluations = steady_iters * batch_size
    summary = {
        "config": config,
        "final": rows[-1] if rows else None,
        "timing": {
            "compile_and_initial_population_s": init_s,
            "first_iteration_s": first_s,
            "steady_iterations": steady_iters,
            "steady_loop_s": steady_s,
            "evals_per_s_loop": evaluations / steady_s if steady_s > 0 else None,
            "evals_per_s_evaluation": evaluations / eval_s if eval_s > 0 else None,
            "env_steps_per_s_evaluation": (
                evaluations * episode_length / eval_s if eval_s > 0 else None
            ),
        },
        "heatmap": heatmap,
    }
    (outdir / "metrics.json").write_text(json.dumps(summary, indent=2))
    if not quiet:
        timing = summary["timing"]
        print(
            f"compile + initial population {init_s:.1f} s; "
            f"loop {timing['evals_per_s_loop'] or 0:.1f} evals/s; "
            f"evaluation alone {timing['evals_per_s_evaluation'] or 0:.1f} evals/s",
            flush=True,
        )
    return summary


def main(argv=None) -> int:
    """Command-line entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outdir", required=True)
    parser.add_argument("--task", default="walker2d_uni")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--episode-length", type=int, default=100)
    parser.add_argument("--hidden", type=int, nargs="*", default=[64, 64])
    parser.add_argument("--cells", type=int, default=None)
    parser.add_argument("--iso-sigma", type=float, default=0.005)
    parser.add_argument("--line-sigma", type=float, default=0.05)
    parser.add_argument("--backend", default="spring")
    parser.add_argument(
        "--stochastic", action="store_true", help="random initial state per evaluation"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    run(
        outdir=args.outdir,
        task=args.task,
        iterations=args.iterations,
        batch_size=args.batch_size,
        episode_length=args.episode_length,
        hidden=tuple(args.hidden),
        cells=args.cells,
        iso_sigma=args.iso_sigma,
        line_sigma=args.line_sigma,
        backend=args.backend,
        deterministic=not args.stochastic,
        seed=args.seed,
        log_every=args.log_every,
        quiet=args.quiet,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
