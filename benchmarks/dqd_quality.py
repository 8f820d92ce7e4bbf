"""CMA-MEGA quality on the 100-D sphere: exact vs ES-estimated gradients, vs pyribs.

Issue 4 asks that CMA-MEGA with ES-estimated Jacobians reach at least 90% of the QD
score of CMA-MEGA with exact Jacobians at equal iterations. This script runs, for
each seed, the ``cma_mega`` configuration of ``ribsax.examples.sphere`` (GridArchive
100x100, 15 GradientArborescenceEmitters: sigma0 10, lr 1, gradient_ascent, mu,
batch 35) three ways:

- ``ribsax exact``: ribsax, pyribs' sphere gradients (``sphere_jacobian``);
- ``ribsax ES``: ribsax, Jacobians estimated by
  :func:`ribsax.tasks.es_jacobian` (OpenAI-ES as in dqd-rl: mirrored samples,
  centred ranks, ``--sample_sigma`` 0.02, ``--sample_batch_size`` 100 per solution
  point; the samples are evaluated but not inserted, dqd-rl's setting; they are not
  counted as iterations);
- ``pyribs exact``: ribs 0.12 with the same configuration and gradients.

and prints the QD score and coverage of each, the mean over seeds, and the ratio
``ribsax ES / ribsax exact``.

Usage::

    nice -n 10 python benchmarks/dqd_quality.py --seeds 0 1 2 --itrs 1000
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np


def run_one(kind, seed, itrs, dim, sample_sigma, sample_batch_size):
    """Runs one variant; returns (qd_score, coverage, seconds)."""
    # pylint: disable=import-outside-toplevel
    import jax
    import ribs.archives
    import ribs.emitters
    import ribs.schedulers
    from sphere import build_scheduler

    import ribsax.archives
    import ribsax.emitters
    import ribsax.schedulers
    from ribsax.examples.sphere import sphere, sphere_jacobian
    from ribsax.tasks import es_jacobian
    from ribsax.tasks import sphere as sphere_task

    lib = ribs if kind == "pyribs exact" else ribsax
    scheduler = build_scheduler(lib, "cma_mega", dim=dim, grid_dims=(100, 100),
                                es=None, es_kwargs=None, seed=seed,
                                dtype=np.dtype("float64"))
    if kind == "ribsax ES":
        task = sphere_task(dim)
        estimate = jax.jit(lambda x, k: es_jacobian(
            task.evaluate, x, k, sample_sigma=sample_sigma,
            sample_batch_size=sample_batch_size)[:3])
        key = jax.random.key(seed)

        def gradients(solutions, itr):
            objective, measures, jacobian = estimate(solutions,
                                                     jax.random.fold_in(key, itr))
            return np.asarray(objective), np.asarray(measures), np.asarray(jacobian)
    else:
        def gradients(solutions, itr):
            del itr
            return sphere_jacobian(solutions)

    start = time.perf_counter()
    for itr in range(itrs):
        solutions = scheduler.ask_dqd()
        objective, measures, jacobian = gradients(solutions, itr)
        scheduler.tell_dqd(objective, measures, jacobian)
        solutions = scheduler.ask()
        objective, measures = sphere(solutions)
        scheduler.tell(objective, measures)
    seconds = time.perf_counter() - start
    stats = scheduler.result_archive.stats
    return float(stats.qd_score), float(stats.coverage), seconds


KINDS = ("ribsax exact", "ribsax ES", "pyribs exact")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--itrs", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--sample_sigma", type=float, default=0.02)
    parser.add_argument("--sample_batch_size", type=int, default=100)
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help="comma-separated subset of: " + ", ".join(KINDS))
    args = parser.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]

    import jax  # pylint: disable=import-outside-toplevel
    jax.config.update("jax_enable_x64", True)
    from threadpoolctl import threadpool_limits  # pylint: disable=import-outside-toplevel

    print(f"CMA-MEGA on the {args.dim}-D sphere, {args.itrs} iterations, seeds "
          f"{args.seeds}; ES: sigma {args.sample_sigma}, "
          f"{args.sample_batch_size} samples per solution point", flush=True)
    results = {kind: [] for kind in kinds}
    with threadpool_limits(limits=1, user_api="blas"):
        for seed in args.seeds:
            for kind in kinds:
                qd, cov, secs = run_one(kind, seed, args.itrs, args.dim,
                                        args.sample_sigma, args.sample_batch_size)
                results[kind].append((qd, cov))
                print(f"  seed {seed} {kind:13s}: QD score {qd:12,.2f}  coverage "
                      f"{cov:7.2%}  ({secs:.1f} s)", flush=True)

    lines = ["| variant | QD score (mean ± std) | coverage (mean) | per seed |",
             "|---|---:|---:|---|"]
    for kind in kinds:
        scores = [qd for qd, _ in results[kind]]
        std = statistics.stdev(scores) if len(scores) > 1 else 0.0
        covs = [c for _, c in results[kind]]
        lines.append(f"| {kind} | {statistics.mean(scores):,.2f} ± {std:,.2f} "
                     f"| {statistics.mean(covs):.2%} | "
                     + ", ".join(f"{s:,.0f}" for s in scores) + " |")
    print()
    print("\n".join(lines))
    if "ribsax ES" in results and "ribsax exact" in results:
        ratios = [es[0] / ex[0] for es, ex in zip(results["ribsax ES"],
                                                  results["ribsax exact"])]
        print(f"\nribsax ES / ribsax exact QD score: mean {statistics.mean(ratios):.4f}"
              f", min {min(ratios):.4f} (target >= 0.90: "
              f"{'ok' if min(ratios) >= 0.9 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
