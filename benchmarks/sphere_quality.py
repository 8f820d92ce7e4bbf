"""ribsax vs pyribs: QD score and coverage on pyribs' sphere configurations, many seeds.

Quality check: for each sphere configuration, ribsax and pyribs run with the
same settings over several seeds, and ribsax's mean QD score and coverage must lie
within the seed-to-seed spread of pyribs'.

Settings (pyribs' ``examples/sphere.py``, see ``ribsax.examples.sphere.CONFIG``): the
100-D linear-projection sphere, 540 evaluations per iteration, 100x100 grids (CVT:
10,000 centroids), float64 archives (pyribs' default; JAX x64 is turned on). Both
libraries are built by ``benchmarks/sphere.py::build_scheduler`` from the same
description, with the same seed value handed to the same objects in the same way
(archive ``seed=seed``, one ``SeedSequence(seed)`` child per emitter,
``x0 = zeros(dim)``). CVT configurations pass ``centroids=10000`` and the seed, so
each library generates its own centroids with its own k-means, as a user of either
library would (the centroid sets differ; their quality is part of what is compared).
Each run is the plain Python loop a pyribs user writes::

    solutions = scheduler.ask()
    objective, measures = sphere(solutions)   # the same NumPy function for both
    scheduler.tell(objective, measures)

for ``--itrs`` iterations (default 1,000). Recorded per run: the final QD score and
coverage of ``scheduler.result_archive`` (what pyribs' sphere example reports; for
``cma_mae`` this is the plain result archive), the number of elites, a curve of both
metrics every ``--log-every`` iterations, the build time and the loop time (ask +
evaluation + tell; BLAS limited to one thread for both libraries, as in
``benchmarks/sphere.py``).

Criterion. For each configuration and metric (QD score, coverage), with ``m`` the
mean and ``s`` the sample standard deviation (ddof=1) over the seeds::

    |m_ribsax - m_pyribs| <= max(2 s_pyribs, 2 s_ribsax, rel_tol |m_pyribs|)

with ``rel_tol = 0.01`` by default (``--rel-tol``). The verdict is "within spread" when
both metrics pass. Why this form:

- "Within the seed-to-seed spread of pyribs'" is read as: the difference of the means
  is no larger than two seed-to-seed standard deviations. For two samples of n = 3
  runs with the same true standard deviation, the difference of the means has
  standard deviation sqrt(2/3) s ~ 0.82 s, so 2 s is about 2.4 standard errors of
  the difference: a real difference of that size would be noticed, while two
  identically-behaving implementations pass nearly always.
- With 3 seeds a standard deviation is itself very uncertain (its 95 % interval spans
  roughly 0.5x to 6x the estimate), and one side can show a tiny spread by chance,
  so the larger of the two libraries' spreads is used.
- The relative floor keeps the test from demanding more than three seeds can
  resolve when both libraries happen to show very small spreads. 1 % is below every
  relative spread in pyribs' published 20-trial table for these configurations
  (0.2 %-5 % of the mean, 10,000 iterations), so it never hides a difference larger
  than what pyribs itself varies by.

A Welch t-test p-value is printed as extra information only; it is not the verdict.

Results are written to ``--json`` after every run; rerunning with the same file skips
the runs already there (matching configuration, seed, library, iterations, dimension
and grid), so an interrupted protocol continues where it stopped, and runs made with
other ``--seeds`` / ``--configs`` merge into one file.

Usage::

    python benchmarks/sphere_quality.py --json /tmp/sphere_quality.json
    python benchmarks/sphere_quality.py --configs map_elites,cma_mae --seeds 0,1,2,3,4
    python benchmarks/sphere_quality.py --itrs 2 --configs map_elites --seeds 0  # smoke
    python benchmarks/sphere_quality.py --json FILE --report-only   # table from FILE
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_info, print_header
from sphere import build_scheduler

#: All configurations, cheapest first (single-emitter grids, then CVT — whose
#: k-means takes ~15 s per build —, then the 15-emitter CMA-ES ones, then the
#: 60-emitter bandit and the two-archive CMA-MAE).
ALL_CONFIGS = (
    "map_elites",
    "line_map_elites",
    "cvt_map_elites",
    "line_cvt_map_elites",
    "cma_me_imp",
    "cma_me_imp_mu",
    "cma_me_basic",
    "cma_me_rd",
    "cma_me_rd_mu",
    "cma_me_opt",
    "cma_me_mixed",
    "me_map_elites",
    "cma_mae",
)
#: The diversity-optimisation configurations (not in the default set; pass
#: ``--configs novelty`` for these four). ``dms`` is not among them: pyribs' side
#: needs torch (``--configs dms`` runs it where torch is installed).
NOVELTY_CONFIGS = ("ns_cma", "nslc", "nslc_cma_imp", "dds")
LIBRARIES = ("ribs", "ribsax")
METRICS = ("qd_score", "coverage")
DEFAULT_REL_TOL = 0.01


def _cvt_from_dims(cvt_cls, *, dims, **kwargs):
    """``CVTArchive`` called the way ``build_scheduler`` calls a grid archive."""
    return cvt_cls(centroids=int(np.prod(dims)), **kwargs)


def library_view(lib):
    """``lib`` (``ribs`` or ``ribsax``) as ``build_scheduler`` expects it.

    ``build_scheduler`` passes ``dims=grid_dims`` to every grid archive class; here
    ``CVTArchive`` turns that into ``centroids=prod(dims)``, pyribs' sphere setting
    (10,000 centroids for 100x100), so CVT configurations reuse the same builder.
    ``ProximityArchive`` (novelty search), ``DensityArchive`` (DDS) and
    ``DiscountArchive`` (DMS) are passed through unchanged.
    """
    import importlib

    archives = importlib.import_module(f"{lib}.archives")
    return SimpleNamespace(
        archives=SimpleNamespace(
            GridArchive=archives.GridArchive,
            CVTArchive=partial(_cvt_from_dims, archives.CVTArchive),
            ProximityArchive=archives.ProximityArchive,
            DensityArchive=archives.DensityArchive,
            DiscountArchive=archives.DiscountArchive,
        ),
        emitters=importlib.import_module(f"{lib}.emitters"),
        schedulers=importlib.import_module(f"{lib}.schedulers"),
    )


def run_key(run) -> tuple:
    """Identity of a run for resuming: everything that changes its result."""
    return (
        run["config"],
        run["seed"],
        run["library"],
        run["itrs"],
        run["dim"],
        tuple(run["grid_dims"]),
    )


def run_one(library, config, seed, *, itrs, dim=100, grid_dims=(100, 100), log_every=100):
    """Runs one configuration with one library and seed; returns the run record.

    Args:
        library: ``"ribs"`` or ``"ribsax"``.
        config: A key of ``ribsax.examples.sphere.CONFIG``.
        seed: Seed handed to ``build_scheduler`` (archives and emitters).
        itrs: Iterations of the ask/evaluate/tell loop.
        dim: Solution dimension.
        grid_dims: Grid cells per measure (CVT: ``prod(grid_dims)`` centroids).
        log_every: Record QD score and coverage every this many iterations.

    Returns:
        dict: settings, final ``qd_score``, ``coverage``, ``norm_qd_score``,
        ``num_elites``, ``curve`` (``[iteration, qd_score, coverage]`` rows),
        ``build_s`` and ``loop_s``.
    """
    import jax
    from threadpoolctl import threadpool_limits

    from ribsax.examples.sphere import CONFIG, sphere

    jax.config.update("jax_enable_x64", True)

    start = time.perf_counter()
    scheduler = build_scheduler(
        library_view(library),
        config,
        dim=dim,
        grid_dims=tuple(grid_dims),
        es=None,
        es_kwargs=None,
        seed=seed,
        dtype=np.dtype("float64"),
    )
    build_s = time.perf_counter() - start
    result_archive = scheduler.result_archive
    # Discount Model Search trains its model before the run and after every tell.
    discount = CONFIG[config].get("discount", False)
    curve, loop_s = [], 0.0
    with threadpool_limits(limits=1, user_api="blas"):
        if discount:
            scheduler.archive.init_discount_model()
        for itr in range(1, itrs + 1):
            start = time.perf_counter()
            solutions = scheduler.ask()
            objective, measures = sphere(solutions)
            scheduler.tell(objective, measures)
            if discount:
                scheduler.archive.train_discount_model()
            loop_s += time.perf_counter() - start
            if itr % log_every == 0 or itr == itrs:
                stats = result_archive.stats
                curve.append([itr, float(stats.qd_score), float(stats.coverage)])
    stats = result_archive.stats
    return {
        "config": config,
        "seed": seed,
        "library": library,
        "itrs": itrs,
        "dim": dim,
        "grid_dims": list(grid_dims),
        "qd_score": float(stats.qd_score),
        "coverage": float(stats.coverage),
        "norm_qd_score": float(stats.norm_qd_score),
        "num_elites": int(stats.num_elites),
        "curve": curve,
        "build_s": build_s,
        "loop_s": loop_s,
    }


def load_runs(path) -> list:
    """Runs stored in ``path`` (empty if the file does not exist)."""
    if path is None or not Path(path).exists():
        return []
    with open(path, encoding="utf-8") as file:
        return json.load(file).get("runs", [])


def save_runs(path, info, runs) -> None:
    """Writes machine info and runs to ``path`` atomically (temp file + rename)."""
    if path is None:
        return
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as file:
        json.dump({"machine": info, "runs": runs}, file, indent=1)
    os.replace(tmp, path)


def spread_check(ours, theirs, rel_tol=DEFAULT_REL_TOL):
    """Applies the criterion of the module docstring to one metric.

    Args:
        ours: ribsax's per-seed values (at least 2).
        theirs: pyribs' per-seed values (at least 2).
        rel_tol: Relative floor of the allowed difference (fraction of pyribs' mean).

    Returns:
        dict with ``diff`` (ribsax mean - pyribs mean), ``allowed`` and ``ok``.

    Raises:
        ValueError: Fewer than 2 values on a side.
    """
    if len(ours) < 2 or len(theirs) < 2:
        raise ValueError("need at least 2 seeds per library")
    m_ours, m_theirs = statistics.fmean(ours), statistics.fmean(theirs)
    allowed = max(2 * statistics.stdev(theirs), 2 * statistics.stdev(ours), rel_tol * abs(m_theirs))
    diff = m_ours - m_theirs
    return {"diff": diff, "allowed": allowed, "ok": abs(diff) <= allowed}


def welch_p(ours, theirs) -> float:
    """Two-sided Welch t-test p-value (nan when undefined, e.g. zero spread)."""
    import warnings

    from scipy import stats

    if statistics.stdev(ours) == 0 and statistics.stdev(theirs) == 0:
        return float("nan")
    with warnings.catch_warnings():  # near-identical samples: precision warning
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_ind(ours, theirs, equal_var=False).pvalue)


def summarize(runs, configs, seeds, itrs, dim, grid_dims, rel_tol=DEFAULT_REL_TOL):
    """Per-configuration summary of the runs that match the settings.

    Returns:
        list of dicts (one per configuration in ``configs``): ``values``
        (``{library: {metric: [per-seed values]}}``), ``loop_s`` (per library mean
        loop time), ``checks`` (``{metric: spread_check result}``, empty if
        incomplete), ``verdict`` and ``seeds_done`` (``{library: n}``).
    """
    wanted = set(seeds)
    summary = []
    for config in configs:
        picked = {
            lib: sorted(
                (
                    r
                    for r in runs
                    if r["config"] == config
                    and r["library"] == lib
                    and r["seed"] in wanted
                    and r["itrs"] == itrs
                    and r["dim"] == dim
                    and tuple(r["grid_dims"]) == tuple(grid_dims)
                ),
                key=lambda r: r["seed"],
            )
            for lib in LIBRARIES
        }
        values = {lib: {m: [r[m] for r in picked[lib]] for m in METRICS} for lib in LIBRARIES}
        loop_s = {
            lib: (
                statistics.fmean(r["loop_s"] for r in picked[lib]) if picked[lib] else float("nan")
            )
            for lib in LIBRARIES
        }
        done = {lib: len(picked[lib]) for lib in LIBRARIES}
        entry = {
            "config": config,
            "values": values,
            "loop_s": loop_s,
            "seeds_done": done,
            "checks": {},
        }
        if min(done.values()) < 2:
            entry["verdict"] = (
                f"incomplete ({done['ribs']} pyribs, {done['ribsax']} ribsax seeds of {len(seeds)})"
            )
        else:
            for metric in METRICS:
                check = spread_check(values["ribsax"][metric], values["ribs"][metric], rel_tol)
                check["welch_p"] = welch_p(values["ribsax"][metric], values["ribs"][metric])
                entry["checks"][metric] = check
            failed = [m for m in METRICS if not entry["checks"][m]["ok"]]
            entry["verdict"] = (
                "within spread" if not failed else "OUTSIDE spread (" + ", ".join(failed) + ")"
            )
            if min(done.values()) < len(seeds):
                entry["verdict"] += f" ({min(done.values())} of {len(seeds)} seeds)"
        summary.append(entry)
    return summary


def _mean_std(values, fmt):
    if not values:
        return "-"
    if len(values) == 1:
        return f"{fmt(values[0])} (1 seed)"
    return f"{fmt(statistics.fmean(values))} ± {fmt(statistics.stdev(values))}"


def format_table(summary) -> str:
    """Markdown table: per configuration, both libraries' mean ± std, verdict."""

    def qd(value):
        return f"{value:,.0f}"

    def cov(value):
        return f"{value:.2%}"

    def diff_text(check, metric):
        if not check:
            return "-"
        fmt = qd if metric == "qd_score" else cov
        sign = "+" if check["diff"] >= 0 else "-"
        p_value = "n/a" if math.isnan(check["welch_p"]) else f"{check['welch_p']:.2f}"
        return f"{sign}{fmt(abs(check['diff']))} (≤ {fmt(check['allowed'])}; p {p_value})"

    def loop_text(seconds):
        return "-" if math.isnan(seconds) else f"{seconds:.1f}"

    lines = [
        "| config | pyribs QD score | ribsax QD score | Δ QD (allowed; Welch p) "
        "| pyribs coverage | ribsax coverage | Δ coverage (allowed; Welch p) "
        "| verdict | loop s/run pyribs / ribsax |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for entry in summary:
        vals, checks = entry["values"], entry["checks"]
        lines.append(
            f"| {entry['config']} | {_mean_std(vals['ribs']['qd_score'], qd)} "
            f"| {_mean_std(vals['ribsax']['qd_score'], qd)} "
            f"| {diff_text(checks.get('qd_score'), 'qd_score')} "
            f"| {_mean_std(vals['ribs']['coverage'], cov)} "
            f"| {_mean_std(vals['ribsax']['coverage'], cov)} "
            f"| {diff_text(checks.get('coverage'), 'coverage')} "
            f"| {entry['verdict']} "
            f"| {loop_text(entry['loop_s']['ribs'])} "
            f"/ {loop_text(entry['loop_s']['ribsax'])} |"
        )
    return "\n".join(lines)


def _parse_list(text, parser, kind):
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        parser.error(f"empty --{kind}")
    return items


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--configs",
        default=",".join(ALL_CONFIGS),
        help="comma-separated configurations, run in this order "
        "(default: all 13, cheapest first; 'novelty' stands for "
        f"{','.join(NOVELTY_CONFIGS)})",
    )
    parser.add_argument(
        "--libraries",
        default=",".join(LIBRARIES),
        help="comma-separated libraries to run (default: "
        "%(default)s); the table needs both, e.g. from two "
        "invocations writing one --json",
    )
    parser.add_argument(
        "--seeds", default="0,1,2", help="comma-separated integer seeds (default: %(default)s)"
    )
    parser.add_argument(
        "--itrs", type=int, default=1000, help="iterations per run (default: %(default)s)"
    )
    parser.add_argument(
        "--dim", type=int, default=100, help="solution dimension (default: %(default)s)"
    )
    parser.add_argument(
        "--grid-dims",
        type=int,
        nargs=2,
        default=(100, 100),
        help="grid cells per measure; CVT gets their product as centroids (default: 100 100)",
    )
    parser.add_argument(
        "--log-every", type=int, default=100, help="record the curve every this many iterations"
    )
    parser.add_argument(
        "--rel-tol",
        type=float,
        default=DEFAULT_REL_TOL,
        help="relative floor of the criterion (default: %(default)s)",
    )
    parser.add_argument(
        "--json",
        default=None,
        help="raw per-run results; written after every run, and "
        "runs already in it are skipped (resume / merge)",
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="parallel worker processes (default 1: in-process)"
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="print the table from --json without running anything",
    )
    args = parser.parse_args(argv)

    from ribsax.examples.sphere import CONFIG

    configs = []
    for config in _parse_list(args.configs, parser, "configs"):
        configs.extend(NOVELTY_CONFIGS if config == "novelty" else [config])
    libraries = _parse_list(args.libraries, parser, "libraries")
    for lib in libraries:
        if lib not in LIBRARIES:
            parser.error(f"unknown library {lib!r}; choose from {', '.join(LIBRARIES)}")
    for config in configs:
        if config not in CONFIG:
            parser.error(f"unknown configuration {config!r}; choose from {', '.join(CONFIG)}")
        if (
            CONFIG[config]["archive"][0] == "DiscountArchive"
            and "ribs" in libraries
            and importlib.util.find_spec("torch") is None
        ):
            parser.error(f"{config}: pyribs' DiscountArchive needs torch, which is not installed")
    try:
        seeds = [int(s) for s in _parse_list(args.seeds, parser, "seeds")]
    except ValueError:
        parser.error("--seeds must be comma-separated integers")
    if args.itrs < 1 or args.workers < 1 or args.log_every < 1:
        parser.error("--itrs, --workers and --log-every must be >= 1")
    if args.report_only and not args.json:
        parser.error("--report-only needs --json")

    import jax

    jax.config.update("jax_enable_x64", True)
    info = machine_info()
    info["jax_x64"] = bool(jax.config.jax_enable_x64)
    print_header("sphere quality: ribsax vs pyribs over seeds", info)
    print(
        f"- settings: configs={','.join(configs)}, seeds={seeds}, itrs={args.itrs}, "
        f"dim={args.dim}, grid_dims={tuple(args.grid_dims)}, float64, 540 "
        f"evaluations/iteration, rel_tol={args.rel_tol}",
        flush=True,
    )

    runs = load_runs(args.json)
    done = {run_key(r) for r in runs}
    jobs = [
        (lib, config, seed)
        for config in configs
        for seed in seeds
        for lib in libraries
        if (config, seed, lib, args.itrs, args.dim, tuple(args.grid_dims)) not in done
    ]
    if args.report_only:
        jobs = []
    elif len(jobs) < len(configs) * len(seeds) * len(libraries):
        print(
            f"- resuming: {len(configs) * len(seeds) * len(libraries) - len(jobs)} "
            "runs already "
            f"in {args.json}, {len(jobs)} to go",
            flush=True,
        )
    kwargs = {
        "itrs": args.itrs,
        "dim": args.dim,
        "grid_dims": tuple(args.grid_dims),
        "log_every": args.log_every,
    }

    def record(run):
        runs.append(run)
        save_runs(args.json, info, runs)
        print(
            f"  {run['config']:20s} seed {run['seed']:<3d} {run['library']:6s}: "
            f"QD {run['qd_score']:12,.0f}  coverage {run['coverage']:7.2%}  "
            f"loop {run['loop_s']:7.1f} s  build {run['build_s']:5.1f} s",
            flush=True,
        )

    if args.workers == 1:
        for lib, config, seed in jobs:
            record(run_one(lib, config, seed, **kwargs))
    elif jobs:
        import multiprocessing

        with ProcessPoolExecutor(
            max_workers=args.workers, mp_context=multiprocessing.get_context("spawn")
        ) as pool:
            futures = [
                pool.submit(run_one, lib, config, seed, **kwargs) for lib, config, seed in jobs
            ]
            for future in as_completed(futures):
                record(future.result())

    summary = summarize(runs, configs, seeds, args.itrs, args.dim, args.grid_dims, args.rel_tol)
    print()
    print(format_table(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
