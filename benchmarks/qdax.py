"""ribsax vs QDax: whole QD runs, same JAX, same problem, same evaluation budget.

Cases (``--which``, default all four):

- ``grid``: MAP-Elites, 100x100 grid over ``[0, 1]^2``, 100-D rastrigin, iso-line
  variation. ribsax: ``GridArchive`` + one ``IsoLineEmitter(batch_size=B)``; QDax:
  ``MapElitesRepertoire`` on ``compute_euclidean_centroids((100, 100), 0, 1)`` +
  ``MixingEmitter(variation_percentage=1, isoline_variation)``.
- ``cma_me``: CMA-ME with improvement ranking on the same grid and rastrigin.
  ribsax: 15 ``EvolutionStrategyEmitter`` (CMA-ES, ``ranker="2imp"``,
  ``selection_rule="filter"``, ``restart_rule="no_improvement"``, ``B // 15`` each;
  pyribs' CMA-ME). QDax: ``CMAPoolEmitter(15, CMAImprovementEmitter(batch_size=15 *
  (B // 15), min_count=1))`` (QDax's CMA-ME notebook; its pool lets ONE of the 15
  CMA-ES instances emit the whole batch per iteration and updates CMA with all
  samples). Both: ``sigma0 = 0.05``, initial
  mean 0.5 everywhere, no bounds. Evaluations per iteration: ``15 * (B // 15)``.
- ``cvt``: MAP-Elites as ``grid`` but on 10,000 CVT cells (``CVTArchive`` /
  ``MapElitesRepertoire``), the SAME centroid array for both libraries (ribsax's
  ``k_means_centroids`` from 100,000 uniform samples, seed 0; not timed).
- ``brax``: MAP-Elites with iso-line variation (0.005 / 0.05, QDax's brax defaults,
  no clipping) on ``ribsax.tasks.brax.create(--brax-task, episode_length=100,
  hidden_layer_sizes=(64, 64))`` (spring backend, deterministic resets), a
  ``--brax-cells`` grid per measure, ``--brax-batch`` policies per iteration.

Same problem: both libraries call the SAME JAX evaluation function, the ribsax
task's ``evaluate`` (for rastrigin this is QDax's
``qdax.tasks.standard_functions.rastrigin``: the script checks that both give the
same values; for brax, QDax's own scoring function would be a different policy
network and wrappers, see ``benchmarks/brax_eval.py`` for that comparison of the
evaluation alone). Both start from the same initial population (``B`` solutions,
the task's ``initial_solutions``) inserted before the timed run, and then run
``--iterations`` iterations of ``B`` evaluations each.

Drivers (each library's fastest documented pattern, fully compiled):

- ribsax: ``Scheduler.run(task, iterations, seed=s)``, the fused loop (ask ->
  evaluate -> tell of all iterations in one ``lax.scan``; metrics every iteration).
  Its first call compiles (``RunResult.compile_time``); later runs with fresh
  schedulers of the same configuration reuse the executable.
- QDax: ``jax.jit(lax.scan(MAPElites.scan_update, ..., length=iterations))``,
  lowered and compiled ahead of time (the compile is timed on its own), run from
  a fresh ``init_ask_tell`` state for every repeat (metrics every iteration, as
  ``scan_update`` always computes them).

Method: one compile per library and case (reported), ``--warmup`` untimed rounds,
then ``--repeats`` rounds alternating the two libraries (seed = round number for
both), each timing one whole run. Evaluations/s = ``B * iterations`` / run time;
the table shows the median over rounds and the ratio ribsax / QDax. QD score and
coverage: the final archive of each round, averaged over rounds, computed by this
script from the stored objectives with the SAME offset for both libraries:
``QD score = sum over occupied cells of (objective - offset)`` with ``offset`` the
task's ``qd_score_offset`` (pyribs' convention; QDax's ``default_qd_metrics`` with
``qd_offset = -offset`` gives the same number), coverage in [0, 1].

QDax is not a ribsax dependency; install it beside ribsax, e.g. ``pip install
--target /tmp/qdax_site qdax chex toolz`` and run with ``PYTHONPATH=/tmp/qdax_site``.
QDax 0.5.0 imports on jax 0.10.2 for everything used here, so no shims are needed.

Usage::

    PYTHONPATH=/tmp/qdax_site python benchmarks/qdax.py                 # all cases
    PYTHONPATH=/tmp/qdax_site python benchmarks/qdax.py --which grid,cvt --iterations 200
    PYTHONPATH=/tmp/qdax_site python benchmarks/qdax.py --batch 65536 --json gpu.json
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from _common import machine_info, print_header, report

# This script is named like the package it benchmarks: drop its own folder from the
# import path (after importing _common) so that ``import qdax`` finds QDax.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

#: Target ribsax / QDax evaluations/s ratios.
TARGETS = {"grid": 3.0, "cma_me": 1.5, "cvt": 1.5, "brax": 1.5}
CASES = ("grid", "cma_me", "cvt", "brax")
SOLUTION_DIM = 100
GRID_DIMS = (100, 100)
CVT_CELLS = 10_000
CMA_EMITTERS = 15
CMA_SIGMA = 0.05
ISO_SIGMA, LINE_SIGMA = 0.05, 0.1  # rastrigin cases (QDax README values)
BRAX_ISO_SIGMA, BRAX_LINE_SIGMA = 0.005, 0.05  # brax case (QDax brax notebooks)


# ---------------------------------------------------------------------------
# Problems.
# ---------------------------------------------------------------------------
class Problem:
    """One QD problem shared by both libraries.

    Attributes:
        task: The ribsax task (its ``evaluate`` is also QDax's scoring function).
        cells: ``("grid", dims)`` or ``("cvt", centroids)``.
        bounds: ``(low, high)`` for the variation's clipping, or None.
        iso_sigma, line_sigma: Iso-line settings.
        batch: Evaluations per iteration.
    """

    def __init__(self, task, cells, bounds, iso_sigma, line_sigma, batch):
        self.task = task
        self.cells = cells
        self.bounds = bounds
        self.iso_sigma = iso_sigma
        self.line_sigma = line_sigma
        self.batch = batch

    @property
    def offset(self) -> float:
        """The task's QD-score offset (subtracted from each objective)."""
        return float(self.task.qd_score_offset)

    def num_cells(self) -> int:
        """Number of cells of the archive."""
        kind, spec = self.cells
        return int(np.prod(spec)) if kind == "grid" else len(spec)

    def centroids(self):
        """The cell centres QDax searches (grid: QDax's Euclidean centroids)."""
        kind, spec = self.cells
        if kind == "cvt":
            return jnp.asarray(spec, dtype=jnp.float32)
        from qdax.core.containers.mapelites_repertoire import compute_euclidean_centroids

        low = [r[0] for r in self.task.measure_ranges]
        high = [r[1] for r in self.task.measure_ranges]
        return compute_euclidean_centroids(tuple(spec), minval=low, maxval=high)

    def initial_population(self, seed):
        """``(solutions, objective, measures)`` of the shared initial population."""
        key = jax.random.key(10_000 + seed)
        solutions = self.task.initial_solutions(self.batch, key, dtype=jnp.float32)
        objective, measures, _ = jax.jit(self.task.evaluate)(solutions, key)
        return solutions, objective, measures


@functools.cache
def _cvt_centroids():
    from ribsax.archives import k_means_centroids

    start = time.perf_counter()
    centroids = k_means_centroids(
        centroids=CVT_CELLS, ranges=[(0.0, 1.0)] * 2, samples=100_000, seed=0, dtype=np.float32
    )
    if isinstance(centroids, tuple):
        centroids = centroids[0]
    print(
        f"- CVT centroids: {CVT_CELLS} from 100,000 samples in "
        f"{time.perf_counter() - start:.1f} s (not timed)",
        flush=True,
    )
    return np.asarray(centroids, dtype=np.float32)


def make_problem(case, args) -> Problem:
    """The shared problem of ``case``."""
    if case == "brax":
        from ribsax.tasks import brax as brax_tasks

        task = brax_tasks.create(
            args.brax_task, episode_length=args.brax_steps, hidden_layer_sizes=(64, 64)
        )
        return Problem(
            task,
            ("grid", (args.brax_cells,) * task.measure_dim),
            None,
            BRAX_ISO_SIGMA,
            BRAX_LINE_SIGMA,
            args.brax_batch,
        )
    from ribsax.tasks import rastrigin

    task = rastrigin(SOLUTION_DIM)
    if case == "cvt":
        cells = ("cvt", _cvt_centroids())
    else:
        cells = ("grid", GRID_DIMS)
    batch = args.batch
    if case == "cma_me":
        batch = CMA_EMITTERS * (args.batch // CMA_EMITTERS)
        return Problem(task, cells, None, None, None, batch)
    return Problem(task, cells, (0.0, 1.0), ISO_SIGMA, LINE_SIGMA, batch)


def check_same_rastrigin(problem) -> float:
    """Max |difference| between QDax's rastrigin scoring and the ribsax task."""
    from qdax.tasks.standard_functions import rastrigin_scoring_function

    solutions, objective, measures = problem.initial_population(0)
    q_obj, q_meas, _ = jax.jit(rastrigin_scoring_function)(solutions, jax.random.key(0))
    diff = max(
        float(jnp.max(jnp.abs(q_obj - objective))), float(jnp.max(jnp.abs(q_meas - measures)))
    )
    scale = float(jnp.max(jnp.abs(objective)))
    if diff > 1e-5 * scale:
        raise AssertionError(f"QDax's rastrigin differs from ribsax's by {diff}")
    return diff


# ---------------------------------------------------------------------------
# ribsax.
# ---------------------------------------------------------------------------
def ribsax_scheduler(case, problem, seed):
    """A fresh ribsax scheduler holding the initial population."""
    from ribsax.archives import CVTArchive, GridArchive
    from ribsax.emitters import EvolutionStrategyEmitter, IsoLineEmitter
    from ribsax.schedulers import Scheduler

    task = problem.task
    kind, spec = problem.cells
    common = {
        "solution_dim": task.solution_dim,
        "ranges": task.measure_ranges,
        "qd_score_offset": problem.offset,
        "seed": seed,
        "dtype": np.float32,
    }
    if kind == "grid":
        archive = GridArchive(dims=spec, **common)
    else:
        archive = CVTArchive(centroids=spec, **common)
    dim = task.solution_dim
    if case == "cma_me":
        per = problem.batch // CMA_EMITTERS
        emitters = [
            EvolutionStrategyEmitter(
                archive,
                x0=np.full(dim, 0.5),
                sigma0=CMA_SIGMA,
                ranker="2imp",
                selection_rule="filter",
                restart_rule="no_improvement",
                batch_size=per,
                seed=seed * 100 + i,
            )
            for i in range(CMA_EMITTERS)
        ]
    else:
        bounds = None if problem.bounds is None else [problem.bounds] * dim
        emitters = [
            IsoLineEmitter(
                archive,
                iso_sigma=problem.iso_sigma,
                line_sigma=problem.line_sigma,
                x0=np.full(dim, 0.5),
                bounds=bounds,
                batch_size=problem.batch,
                seed=seed,
            )
        ]
    solutions, objective, measures = problem.initial_population(seed)
    archive.add(np.asarray(solutions), np.asarray(objective), np.asarray(measures))
    return Scheduler(archive, emitters)


def ribsax_run(case, problem, iterations, seed):
    """One ribsax run: ``(compile_s, run_s, qd_score, coverage)``."""
    scheduler = ribsax_scheduler(case, problem, seed)
    result = scheduler.run(problem.task, iterations, seed=seed)
    objective = np.asarray(scheduler.archive.data("objective"))
    qd, cov = _qd(objective, problem)
    return result.compile_time, result.run_time, qd, cov


# ---------------------------------------------------------------------------
# QDax.
# ---------------------------------------------------------------------------
class QDaxRunner:
    """QDax's MAP-Elites driver for one case, compiled once for all repeats."""

    def __init__(self, case, problem, iterations):
        from qdax.core.emitters.mutation_operators import isoline_variation
        from qdax.core.emitters.standard_emitters import MixingEmitter
        from qdax.core.map_elites import MAPElites
        from qdax.utils.metrics import default_qd_metrics

        self.problem = problem
        self.centroids = problem.centroids()
        evaluate = problem.task.evaluate

        def scoring(genotypes, key):
            objective, measures, _ = evaluate(genotypes, key)
            return objective, measures, {}

        if case == "cma_me":
            emitter = self._cma_pool(problem)
        else:
            low, high = problem.bounds if problem.bounds else (None, None)
            variation = functools.partial(
                isoline_variation,
                iso_sigma=problem.iso_sigma,
                line_sigma=problem.line_sigma,
                minval=low,
                maxval=high,
            )
            emitter = MixingEmitter(
                mutation_fn=None,
                variation_fn=variation,
                variation_percentage=1.0,
                batch_size=problem.batch,
            )
        metrics = functools.partial(default_qd_metrics, qd_offset=-problem.offset)
        self.algo = MAPElites(scoring_function=scoring, emitter=emitter, metrics_function=metrics)
        self.init_fn = jax.jit(self.algo.init_ask_tell)
        self.iterations = iterations
        self.compiled = None

    def _cma_pool(self, problem):
        from qdax.core.emitters.cma_improvement_emitter import CMAImprovementEmitter
        from qdax.core.emitters.cma_pool_emitter import CMAPoolEmitter

        dim = problem.task.solution_dim
        inner = CMAImprovementEmitter(
            batch_size=problem.batch,
            genotype_dim=dim,
            centroids=self.centroids,
            sigma_g=CMA_SIGMA,
            min_count=1,
        )
        # The emitter's CMA-ES starts at the origin; start it at 0.5 like ribsax's
        # x0 (restarts use a random elite in both libraries).
        inner._cma_initial_state = inner._cma_initial_state.replace(
            mean=jnp.full(dim, 0.5, dtype=jnp.float32)
        )
        return CMAPoolEmitter(num_states=CMA_EMITTERS, emitter=inner)

    def carry(self, seed):
        """Fresh ``(repertoire, emitter_state, key)`` with the initial population."""
        solutions, objective, measures = self.problem.initial_population(seed)
        key = jax.random.key(seed)
        key, sub = jax.random.split(key)
        repertoire, state, _ = self.init_fn(
            genotypes=solutions,
            fitnesses=objective,
            descriptors=measures,
            centroids=self.centroids,
            key=sub,
        )
        return jax.block_until_ready((repertoire, state, key))

    def compile(self, seed) -> float:
        """AOT-compiles the scan; returns the seconds it took."""
        carry = self.carry(seed)
        algo, iterations = self.algo, self.iterations

        def run(carry):
            return jax.lax.scan(algo.scan_update, carry, None, length=iterations)

        start = time.perf_counter()
        self.compiled = jax.jit(run).lower(carry).compile()
        return time.perf_counter() - start

    def run(self, seed):
        """One timed run: ``(run_s, qd_score, coverage)``."""
        carry = self.carry(seed)
        start = time.perf_counter()
        (repertoire, _, _), metrics = jax.block_until_ready(self.compiled(carry))
        seconds = time.perf_counter() - start
        fitness = np.asarray(repertoire.fitnesses).reshape(-1)
        qd, cov = _qd(fitness[np.isfinite(fitness)], self.problem)
        # Cross-check against QDax's own metric (offset per occupied cell).
        own = float(np.asarray(metrics["qd_score"])[-1])
        if not np.isclose(own, qd, rtol=1e-3, atol=1e-3 * max(1.0, abs(qd))):
            print(f"  warning: QDax qd_score {own} != recomputed {qd}")
        return seconds, qd, cov


# ---------------------------------------------------------------------------
# Driver.
# ---------------------------------------------------------------------------
def _qd(objective, problem):
    """QD score (sum of objective - offset) and coverage of the occupied cells."""
    objective = np.asarray(objective, dtype=np.float64)
    return (float(np.sum(objective - problem.offset)), len(objective) / problem.num_cells())


def run_case(case, args):
    """Compiles, warms up and times both libraries on ``case``; returns a dict."""
    problem = make_problem(case, args)
    iterations = args.brax_iterations if case == "brax" else args.iterations
    print(
        f"\n## {case}: batch {problem.batch}, {iterations} iterations, "
        f"{problem.num_cells()} cells, solution_dim {problem.task.solution_dim}",
        flush=True,
    )
    if case != "brax":
        print(
            f"- QDax rastrigin == ribsax rastrigin (max |diff| {check_same_rastrigin(problem):.2e})"
        )

    qdax = QDaxRunner(case, problem, iterations)
    qdax_compile = qdax.compile(0)
    print(f"- QDax compile (AOT lower + compile of the scan): {qdax_compile:.1f} s", flush=True)
    ribsax_compile, run_s, _, _ = ribsax_run(case, problem, iterations, 0)
    print(
        f"- ribsax compile (Scheduler.run compile_time): {ribsax_compile:.1f} s "
        f"(its run: {run_s:.2f} s)",
        flush=True,
    )
    for _ in range(args.warmup - 1):
        ribsax_run(case, problem, iterations, 0)
    if args.warmup:
        qdax.run(0)

    samples = {"ribsax": [], "qdax": []}
    for rnd in range(1, args.repeats + 1):
        order = ("ribsax", "qdax") if rnd % 2 else ("qdax", "ribsax")
        for name in order:
            if name == "ribsax":
                recompile, seconds, qd, cov = ribsax_run(case, problem, iterations, rnd)
                if recompile:
                    print(f"  note: ribsax recompiled ({recompile:.1f} s)")
            else:
                seconds, qd, cov = qdax.run(rnd)
            samples[name].append((seconds, qd, cov))
            print(
                f"  round {rnd} {name:6s} {seconds:8.2f} s  "
                f"{problem.batch * iterations / seconds:10.0f} evals/s  "
                f"QD {qd:.6g}  coverage {cov:.4f}",
                flush=True,
            )

    evals = problem.batch * iterations
    out = {
        "case": case,
        "batch": problem.batch,
        "iterations": iterations,
        "evaluations": evals,
        "cells": problem.num_cells(),
        "qd_score_offset": problem.offset,
        "target": TARGETS[case],
        "compile_s": {"ribsax": ribsax_compile, "qdax": qdax_compile},
    }
    for name, rows in samples.items():
        out[name] = {
            "run_s": [r[0] for r in rows],
            "evals_per_s": evals / statistics.median(r[0] for r in rows),
            "qd_score": statistics.fmean(r[1] for r in rows),
            "coverage": statistics.fmean(r[2] for r in rows),
            "qd_scores": [r[1] for r in rows],
        }
    out["ratio"] = out["ribsax"]["evals_per_s"] / out["qdax"]["evals_per_s"]
    out["qd_ratio"] = out["ribsax"]["qd_score"] / out["qdax"]["qd_score"]
    return out


def _mean_std(values) -> str:
    """``mean ± std`` (std over the rounds) in 5 significant digits."""
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.5g} ± {std:.2g}"


def format_table(results) -> str:
    """Markdown table of the results."""
    lines = [
        "| case | batch x iters | compile s (ribsax / QDax) | ribsax evals/s | "
        "QDax evals/s | ratio | target | QD score ribsax (mean ± std) | QD score QDax | "
        "coverage ribsax / QDax |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ok = "ok" if r["ratio"] >= r["target"] else "MISSED"
        qd_ok = "" if r["qd_ratio"] >= 1 else " (lower)"
        lines.append(
            f"| {r['case']} | {r['batch']} x {r['iterations']} | "
            f"{r['compile_s']['ribsax']:.1f} / {r['compile_s']['qdax']:.1f} | "
            f"{r['ribsax']['evals_per_s']:,.0f} | {r['qdax']['evals_per_s']:,.0f} | "
            f"{r['ratio']:.2f}x | >= {r['target']}x {ok} | "
            f"{_mean_std(r['ribsax']['qd_scores'])}{qd_ok} | "
            f"{_mean_std(r['qdax']['qd_scores'])} | "
            f"{r['ribsax']['coverage']:.4f} / {r['qdax']['coverage']:.4f} |"
        )
    return "\n".join(lines)


def main():
    """Parses the arguments, runs the cases and prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--which", default=",".join(CASES), help="comma-separated cases among " + ", ".join(CASES)
    )
    parser.add_argument(
        "--iterations", type=int, default=100, help="iterations per run (rastrigin cases)"
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=1024,
        help="evaluations per iteration (rastrigin cases; cma_me uses 15 * (batch // 15))",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--warmup", type=int, default=1, help="untimed runs per library after the compile"
    )
    parser.add_argument("--brax-task", default="walker2d_uni")
    parser.add_argument("--brax-batch", type=int, default=128)
    parser.add_argument("--brax-iterations", type=int, default=10)
    parser.add_argument("--brax-steps", type=int, default=100)
    parser.add_argument(
        "--brax-cells", type=int, default=32, help="grid cells per measure dimension (brax case)"
    )
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args()
    cases = [c.strip() for c in args.which.split(",") if c.strip()]
    for case in cases:
        if case not in CASES:
            parser.error(f"unknown case {case!r}; choose among {', '.join(CASES)}")
    if args.batch < CMA_EMITTERS and "cma_me" in cases:
        parser.error(f"--batch must be at least {CMA_EMITTERS} for cma_me")

    try:
        import qdax
    except ImportError:
        sys.exit(
            "QDax is not importable: install it (see the module docstring) and put it on PYTHONPATH"
        )
    versions = {"qdax": getattr(qdax, "__version__", "?")}
    if "brax" in cases:
        import brax

        versions["brax"] = brax.__version__
    info = machine_info(versions)
    info["load_average_start"] = os.getloadavg()
    print_header("ribsax vs QDax: whole QD runs", info)
    print(f"- command: {' '.join(sys.argv)}")

    results = [run_case(case, args) for case in cases]
    info["load_average_end"] = os.getloadavg()
    print(f"\n- load average at the end: {info['load_average_end']}")
    report(format_table(results), info, results, args.json)


if __name__ == "__main__":
    main()
