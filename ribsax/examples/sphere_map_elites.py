"""MAP-Elites on the 100-D sphere benchmark, written into a run directory.

This is the ``map_elites`` configuration of pyribs' ``examples/sphere.py``
(Fontaine et al. 2020's linear-projection sphere): a 100x100
:class:`ribsax.archives.GridArchive` over the two measures, and each iteration 540
children made by adding Gaussian noise (sigma 0.5) to elites drawn uniformly with
:meth:`~ribsax.archives.GridArchive.sample_elites` (from ``x0 = 0`` while the archive
is empty). Mutation and evaluation run as one jitted JAX function.

Usage::

    python -m ribsax.examples.sphere_map_elites --outdir runs/quickstart

Outputs in ``--outdir``:

* ``config.json``: the resolved arguments and library versions;
* ``metrics.csv`` and ``metrics.json``: per iteration ``qd_score``, ``coverage``,
  ``obj_max``, ``obj_mean``, ``num_elites`` and ``elapsed_s`` (seconds since the
  start of the loop); the JSON also holds the config and the final row;
* ``archive.csv``: ``archive.data(return_type="pandas")``;
* ``heatmap.png``: :func:`ribsax.visualize.grid_archive_heatmap` of the archive
  (needs matplotlib, i.e. ``pip install ribsax[visualize]``; skipped with a warning
  otherwise).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
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

__all__ = ["sphere", "run", "main", "METRIC_FIELDS"]

#: Domain half-width of the sphere benchmark; measures clip to it.
BOUND = 5.12
#: Location of the optimum in every coordinate (0.4 * BOUND).
SHIFT = 0.4 * BOUND

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


def sphere(solutions):
    """Normalised shifted sphere with linear-projection measures.

    The objective ``100 * (1 - sum((x - 2.048)^2) / worst)`` is 100 at the optimum
    ``x_i = 2.048`` and 0 at ``x_i = -5.12`` (``worst = (5.12 + 2.048)^2 * dim``).
    Coordinates outside ``[-5.12, 5.12]`` are folded to ``5.12 / x_i`` for the
    measures, which are the sums of the first and second halves of the folded
    vector. Traceable by JAX; works on NumPy and JAX arrays.

    Args:
        solutions: (batch_size, dim) array.

    Returns:
        ``(objective[batch_size], measures[batch_size, 2])``.
    """
    dim = solutions.shape[1]
    worst = (-BOUND - SHIFT) ** 2 * dim
    raw = jnp.sum(jnp.square(solutions - SHIFT), axis=1)
    objective = (raw - worst) / (0.0 - worst) * 100.0
    outside = (solutions < -BOUND) | (solutions > BOUND)
    folded = jnp.where(outside, BOUND / jnp.where(outside, solutions, 1.0), solutions)
    half = dim // 2
    measures = jnp.stack(
        [jnp.sum(folded[:, :half], axis=1), jnp.sum(folded[:, half:], axis=1)], axis=1
    )
    return objective.astype(solutions.dtype), measures.astype(solutions.dtype)


@functools.partial(jax.jit, static_argnames=("sigma",))
def _mutate_and_evaluate(key, parents, sigma):
    """Gaussian mutation of ``parents`` followed by :func:`sphere`.

    Returns:
        ``(next_key, children, objective, measures)``.
    """
    key, sub = jax.random.split(key)
    noise = jax.random.normal(sub, parents.shape, dtype=parents.dtype)
    children = parents + sigma * noise
    objective, measures = sphere(children)
    return key, children, objective, measures


def run(
    *,
    outdir,
    iterations=1000,
    batch_size=540,
    dim=100,
    sigma=0.5,
    grid=100,
    seed=0,
    dtype="float32",
    log_every=100,
    quiet=False,
) -> dict:
    """Runs MAP-Elites on the sphere and writes the run directory.

    Args:
        outdir: Directory for the outputs (created if missing).
        iterations: Number of ask/evaluate/add iterations.
        batch_size: Children per iteration.
        dim: Solution dimension.
        sigma: Standard deviation of the Gaussian mutation.
        grid: Cells per measure (the archive is ``grid x grid``).
        seed: Seed of the archive's sampler and of the mutation key.
        dtype: ``"float32"`` or ``"float64"`` (the latter turns on JAX x64).
        log_every: Print progress every this many iterations (0: never).
        quiet: Print nothing.

    Returns:
        The final metrics row (a dict keyed by :data:`METRIC_FIELDS`).
    """
    if dtype == "float64" and not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)
    np_dtype = np.dtype(dtype)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    config = {
        "algorithm": "map_elites",
        "task": "sphere",
        "iterations": iterations,
        "batch_size": batch_size,
        "dim": dim,
        "sigma": sigma,
        "grid": [grid, grid],
        "seed": seed,
        "dtype": dtype,
        "versions": library_versions(),
    }
    (outdir / "config.json").write_text(json.dumps(config, indent=2) + "\n")

    half_range = dim / 2 * BOUND
    archive = GridArchive(
        solution_dim=dim,
        dims=(grid, grid),
        ranges=[(-half_range, half_range)] * 2,
        seed=seed,
        dtype=np_dtype,
    )
    key = jax.random.key(seed)
    x0 = np.zeros((batch_size, dim), dtype=np_dtype)

    history = []
    start = time.perf_counter()
    for itr in range(1, iterations + 1):
        if archive.empty:
            parents = x0
        else:
            parents = archive.sample_elites(batch_size)["solution"]
        key, *evaluated = _mutate_and_evaluate(key, parents, sigma=float(sigma))
        children, objective, measures = jax.device_get(evaluated)
        archive.add(children, objective, measures)

        stats = archive.stats
        row = metrics_row(itr, stats, time.perf_counter() - start)
        history.append(row)
        if not quiet and log_every and (itr % log_every == 0 or itr == iterations):
            print(
                f"iter {itr:6d} | qd_score {row['qd_score']:12.2f} | coverage "
                f"{row['coverage']:6.2%} | obj_max {row['obj_max']:7.3f} | "
                f"{row['elapsed_s']:7.2f} s",
                flush=True,
            )

    write_metrics_csv(outdir / "metrics.csv", METRIC_FIELDS, history)
    final = history[-1]
    (outdir / "metrics.json").write_text(
        json.dumps({"config": config, "final": final, "history": history}, indent=1) + "\n"
    )
    archive.data(return_type="pandas").to_csv(outdir / "archive.csv", index=False)
    write_heatmap(
        archive,
        outdir / "heatmap.png",
        f"MAP-Elites, {dim}-D sphere, {iterations} iterations",
        ["measure 0 (sum of first half)", "measure 1 (sum of second half)"],
        vmin=0,
        vmax=100,
    )
    if not quiet:
        print(
            f"QD score {final['qd_score']:.2f}, coverage {final['coverage']:.2%}, "
            f"{iterations / final['elapsed_s']:.0f} it/s; outputs in {outdir}"
        )
    return final


def main(argv=None) -> int:
    """Command-line entry point; see ``--help``."""
    parser = argparse.ArgumentParser(
        prog="python -m ribsax.examples.sphere_map_elites",
        description="MAP-Elites (pyribs' sphere map_elites settings) with ribsax.",
    )
    parser.add_argument(
        "--iterations", type=int, default=1000, help="iterations to run (default: %(default)s)"
    )
    parser.add_argument(
        "--batch-size", type=int, default=540, help="children per iteration (default: %(default)s)"
    )
    parser.add_argument(
        "--dim", type=int, default=100, help="solution dimension (default: %(default)s)"
    )
    parser.add_argument(
        "--sigma", type=float, default=0.5, help="Gaussian mutation std (default: %(default)s)"
    )
    parser.add_argument(
        "--grid", type=int, default=100, help="cells per measure (default: %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    parser.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        default="float32",
        help="float precision; float64 enables JAX x64 (default: %(default)s)",
    )
    parser.add_argument(
        "--outdir", default="runs/sphere_map_elites", help="output directory (default: %(default)s)"
    )
    parser.add_argument(
        "--log-every",
        type=int,
        default=100,
        help="progress line every N iterations, 0 for none (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")
    run(
        outdir=args.outdir,
        iterations=args.iterations,
        batch_size=args.batch_size,
        dim=args.dim,
        sigma=args.sigma,
        grid=args.grid,
        seed=args.seed,
        dtype=args.dtype,
        log_every=args.log_every,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
