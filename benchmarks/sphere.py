"""ribsax vs pyribs: iterations/s on pyribs' sphere configurations, back to back.

Configurations (the speed cases of the ask/tell targets; all use the linear-projection sphere of
``ribsax.examples.sphere``, 540 evaluations per iteration):

- ``map_elites``: GridArchive 100x100, 1 GaussianEmitter (sigma 0.5, batch 540), 100-D.
- ``cma_me_imp``: GridArchive 100x100, 15 EvolutionStrategyEmitters (CMA-ES, "2imp",
  filter, no_improvement, batch 36), 100-D.
- ``cma_mae``: GridArchive 100x100 (threshold_min 0, learning_rate 0.01) plus a plain
  100x100 result archive, 15 ES emitters (CMA-ES, "imp", mu, basic, batch 36), 100-D.
- ``cma_mega`` and ``omg_mega`` (DQD): GridArchive 100x100, 15
  GradientArborescenceEmitters (sigma0 10, lr 1, gradient_ascent, mu, batch 35),
  resp. 1 GradientOperatorEmitter (sigma 0, sigma_g 10, measure gradients, batch
  270); the loop is pyribs' DQD loop ``ask_dqd -> sphere_jacobian -> tell_dqd ->
  ask -> sphere -> tell`` (not in the default set; pass ``--configs``).
- ``scalable_cma_mae:sep_cma_es`` and ``scalable_cma_mae:lm_ma_es``: pyribs' scalable
  CMA-MAE tutorial, i.e. ``cma_mae`` in 1000-D on 250x250 grids with
  ``es="sep_cma_es"``, resp. ``es="lm_ma_es", es_kwargs={"n_vectors": 20}``
  (``--configs scalable_cma_mae`` selects both).

Any other grid-archive name of ``ribsax.examples.sphere.CONFIG`` (e.g.
``line_map_elites``, ``me_map_elites``) is accepted by ``--configs`` too, and so are
the novelty-search configurations ``ns_cma``, ``nslc`` and ``nslc_cma_imp``
(ProximityArchive plus a 100x100 result grid; their target is 5x), the
Density Descent configurations ``dds`` and ``dds_kde_sklearn``, and the CVT
configurations ``cvt_map_elites`` and ``line_cvt_map_elites``: both libraries'
CVTArchives then take the same 10,000 centroids, computed once per process by
pyribs' k-means (a pyribs ``CVTArchive(centroids=10000)`` with the run's seed;
not timed).

Both libraries are built by one function from the same description
(``ribsax.examples.sphere.CONFIG``): same archive, emitter and scheduler classes and
keyword arguments, ``x0 = zeros(dim)``, one ``SeedSequence(seed)`` child per emitter,
the same archive seed and dtype (float64 by default, pyribs' default; JAX x64 is
turned on for it). Each library runs the plain Python loop a pyribs user writes::

    solutions = scheduler.ask()
    objective, measures = sphere(solutions)   # the same NumPy function for both
    scheduler.tell(objective, measures)

Method, per configuration:

1. Warm-up: ``--warmup`` iterations per library, timed separately and not part of
   the throughput. For ribsax this is the trace + compile cost (its first iteration
   is also printed on its own); pyribs' warm-up includes its numba compilation.
   Both libraries cache compiled code per process, so a later case in the same
   run may warm up faster than it would alone.
2. Steady state: ``--iterations`` further iterations per library, split into
   ``--rounds`` rounds that alternate between the libraries (so slow drifts of the
   machine hit both). Only ``ask``, the sphere evaluation and ``tell`` are inside
   the timer. Iterations/s = iterations / summed iteration time; ratio = ribsax
   it/s / pyribs it/s (above 1 means ribsax is faster). The median and the slowest
   single iteration are printed too (a slow outlier on the ribsax side would point
   to a recompilation).
3. Sanity check: the QD score and coverage of each library's result archive after
   all iterations. The two runs use different random streams, so these agree only
   statistically; they are here to show that both libraries did the same kind of
   work, not to compare quality (``sphere_quality.py`` compares it over seeds).

BLAS threads: the warm-up and the timed loops of BOTH libraries run inside
``threadpoolctl.threadpool_limits(limits=1, user_api="blas")``, as pyribs does itself
inside its CMA-ES ``ask``/``tell`` (small matrices are faster single-threaded and this
keeps NumPy from competing for the cores). threadpoolctl does not control XLA's own
CPU thread pool, so ribsax's compiled kernels keep JAX's default threading.

Usage::

    python benchmarks/sphere.py                      # full run (several minutes)
    python benchmarks/sphere.py --quick              # smoke run (numbers noisy)
    python benchmarks/sphere.py --configs cma_mae,map_elites --iterations 2000
    python benchmarks/sphere.py --json results.json

Fused mode (``--fused``): after the ask/tell measurement, a fresh ribsax
scheduler of the same configuration runs the same number of iterations through
``Scheduler.run(sphere_task, n)``, i.e. ask -> evaluate -> tell compiled into one
``lax.scan`` with the JAX sphere task (the same function as the NumPy one; DQD
configurations use pyribs' objective gradient). Its warm-up run (``--warmup``
iterations) includes the one compilation, reported separately; the timed iterations
run in ``--rounds`` calls alternating with nothing else. The fused ratio is fused
it/s over the pyribs ask/tell it/s measured just before (targets: cma_mae >= 50x,
map_elites >= 20x).

Kernel floor (``--fused``): the time per iteration that ribsax's ask/tell loop
would take if it ran the same kernels with no Python and no host copies at all,
estimated as the fused loop's time per iteration minus its own JAX evaluation
(the task, and its Jacobian for DQD configurations, jitted alone on batches of the
same sizes) plus the user's NumPy evaluation (timed inside pyribs' loop). pyribs'
time per iteration over that floor is the largest ask/tell speed-up these kernels
allow on the machine.

Run it on an otherwise idle machine: other processes on the cores make the numbers
meaningless.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
from _common import machine_info, print_header, report

#: Target speed-ups of the ask/tell loop (ribsax it/s / pyribs it/s).
TARGETS = {
    "map_elites": 3.0,
    "cma_me_imp": 10.0,
    "cma_mae": 10.0,
    "scalable_cma_mae": 5.0,
    "cma_mega": 10.0,
    "omg_mega": 10.0,
    # Novelty search and Density Descent.
    "ns_cma": 5.0,
    "nslc": 5.0,
    "nslc_cma_imp": 5.0,
    "dds": 5.0,
}
DEFAULT_CONFIGS = ("map_elites", "cma_me_imp", "cma_mae", "scalable_cma_mae")
#: Target speed-ups of the fused loop over pyribs' ask/tell loop.
FUSED_TARGETS = {"map_elites": 20.0, "cma_mae": 50.0}
#: Variants of the scalable CMA-MAE tutorial: (es, es_kwargs).
SCALABLE_VARIANTS = {
    "sep_cma_es": ("sep_cma_es", None),
    "lm_ma_es": ("lm_ma_es", {"n_vectors": 20}),
}


def sphere_machine_info() -> dict:
    """:func:`_common.machine_info` plus threadpoolctl's version and JAX x64."""
    import jax
    import threadpoolctl

    info = machine_info({"threadpoolctl": threadpoolctl.__version__})
    info["jax_x64"] = bool(jax.config.jax_enable_x64)
    return info


def expand_configs(names, parser):
    """Benchmark cases from ``--configs``: a list of (label, settings dict)."""
    from ribsax.examples.sphere import CONFIG

    cases = []
    for name in names:
        base, _, variant = name.partition(":")
        if base == "scalable_cma_mae":
            variants = [variant] if variant else list(SCALABLE_VARIANTS)
            for var in variants:
                if var not in SCALABLE_VARIANTS:
                    parser.error(
                        f"unknown scalable_cma_mae variant {var!r}; choose "
                        f"from {', '.join(SCALABLE_VARIANTS)}"
                    )
                es, es_kwargs = SCALABLE_VARIANTS[var]
                cases.append(
                    (
                        f"scalable_cma_mae:{var}",
                        {
                            "config": "cma_mae",
                            "target_key": "scalable_cma_mae",
                            "dim": 1000,
                            "grid_dims": (250, 250),
                            "es": es,
                            "es_kwargs": es_kwargs,
                        },
                    )
                )
        elif base in CONFIG and not variant:
            if CONFIG[base]["archive"][0] not in (
                "GridArchive",
                "ProximityArchive",
                "DensityArchive",
                "CVTArchive",
            ):
                parser.error(
                    f"{base}: only grid, CVT, proximity and density archive "
                    "configurations are supported"
                )
            cases.append(
                (
                    base,
                    {
                        "config": base,
                        "target_key": base,
                        "dim": 100,
                        "grid_dims": (100, 100),
                        "es": None,
                        "es_kwargs": None,
                    },
                )
            )
        else:
            parser.error(
                f"unknown configuration {name!r}; choose from "
                f"{', '.join(list(CONFIG) + ['scalable_cma_mae'])} or "
                "scalable_cma_mae:{sep_cma_es,lm_ma_es}"
            )
    return cases


def build_scheduler(lib, config, *, dim, grid_dims, es, es_kwargs, seed, dtype):
    """Builds one configuration with ``lib`` (the ``ribs`` or ``ribsax`` package).

    The same code builds both sides: the archive, optional result archive, emitters
    and scheduler named by ``ribsax.examples.sphere.CONFIG[config]``, taken from
    ``lib.archives`` / ``lib.emitters`` / ``lib.schedulers`` with identical
    arguments (mirrors ``ribsax.examples.sphere.create_scheduler``, plus
    ``es_kwargs``, which the scalable tutorial needs).
    """
    from ribsax.examples.sphere import BOUND, CONFIG

    spec = CONFIG[config]
    ranges = [(-dim / 2 * BOUND, dim / 2 * BOUND)] * 2
    archive_cls, archive_kwargs = spec["archive"]
    result_archive = None
    if spec.get("result_archive"):
        result_archive = lib.archives.GridArchive(
            solution_dim=dim, dims=grid_dims, ranges=ranges, seed=seed, dtype=dtype
        )
    if archive_cls == "DiscountArchive":
        archive = discount_archive(lib, dim, ranges, result_archive, archive_kwargs, seed, dtype)
    elif archive_cls == "DensityArchive":
        archive = lib.archives.DensityArchive(
            measure_dim=2, seed=seed, dtype=dtype, **archive_kwargs
        )
    elif archive_cls == "ProximityArchive":
        archive = lib.archives.ProximityArchive(
            solution_dim=dim, measure_dim=2, seed=seed, dtype=dtype, **archive_kwargs
        )
    elif archive_cls == "CVTArchive":
        archive = lib.archives.CVTArchive(
            solution_dim=dim,
            centroids=shared_centroids(grid_dims, ranges, seed),
            ranges=ranges,
            seed=seed,
            dtype=dtype,
            **archive_kwargs,
        )
    else:
        archive = getattr(lib.archives, archive_cls)(
            solution_dim=dim,
            dims=grid_dims,
            ranges=ranges,
            seed=seed,
            dtype=dtype,
            **archive_kwargs,
        )
    emitter_archive = result_archive if spec.get("emitters_use_result_archive") else archive
    count = sum(n for _, _, n in spec["emitters"])
    seeds = iter(np.random.SeedSequence(seed).spawn(count))
    emitters = []
    for cls_name, kwargs, n in spec["emitters"]:
        kwargs = dict(kwargs)
        if cls_name == "EvolutionStrategyEmitter":
            if es is not None:
                kwargs["es"] = es
            if es_kwargs is not None:
                kwargs["es_kwargs"] = dict(es_kwargs)
        cls = getattr(lib.emitters, cls_name)
        for _ in range(n):
            emitters.append(cls(emitter_archive, x0=np.zeros(dim), seed=next(seeds), **kwargs))
    scheduler_cls, scheduler_kwargs = spec["scheduler"]
    return getattr(lib.schedulers, scheduler_cls)(
        archive, emitters, result_archive, **scheduler_kwargs
    )


_CENTROIDS = {}


def shared_centroids(grid_dims, ranges, seed):
    """The centroids both libraries' CVT archives take: those of a pyribs
    ``CVTArchive`` with ``prod(grid_dims)`` centroids (its k-means) and ``seed``,
    computed once per process (the CVT configurations of
    ``ribsax.examples.sphere`` have as many centroids as their result grid has
    cells)."""
    key = (tuple(grid_dims), tuple(map(tuple, ranges)), seed)
    if key not in _CENTROIDS:
        import ribs

        _CENTROIDS[key] = np.array(
            ribs.archives.CVTArchive(
                solution_dim=1, centroids=int(np.prod(grid_dims)), ranges=ranges, seed=seed
            ).centroids
        )
    return _CENTROIDS[key]


def discount_archive(lib, dim, ranges, result_archive, archive_kwargs, seed, dtype):
    """The ``dms`` archive of ``lib``: ribsax's from ``ribsax.examples.sphere``, and
    for pyribs the same model and manager written with torch (an MLP 2-128-128-1
    with ReLU, Adam with lr 1e-3; torch's initialisation seeded with ``seed``)."""
    if lib.archives.DiscountArchive.__module__.startswith("ribsax."):
        from ribsax.examples.sphere import _discount_archive

        return _discount_archive(dim, ranges, result_archive, archive_kwargs, seed, dtype)
    import torch
    from ribs.discount_models import MLP, DiscountModelManager

    torch.manual_seed(seed)
    model = MLP([(2, 128), (128, 128), (128, 1)], torch.nn.ReLU)
    manager = DiscountModelManager(
        model,
        torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999)),
        torch.device("cpu"),
        train_epochs=5,
        train_cutoff_loss=0.05,
        train_batch_size=32,
        normalize_measures="negative_one_one",
        measures_low=[low for low, _ in ranges],
        measures_high=[high for _, high in ranges],
        normalize_discount="zero_one",
        discount_low=0.0,
        discount_high=100.0,
    )
    return lib.archives.DiscountArchive(
        solution_dim=dim,
        measure_dim=2,
        discount_model_manager=manager,
        result_archive=result_archive,
        seed=seed,
        dtype=dtype,
        **archive_kwargs,
    )


def build_from_settings(lib, settings, seed, dtype):
    """:func:`build_scheduler` for one case of :func:`expand_configs` (``settings``
    holds ``config``, ``dim``, ``grid_dims``, ``es`` and ``es_kwargs``)."""
    return build_scheduler(
        lib,
        settings["config"],
        dim=settings["dim"],
        grid_dims=settings["grid_dims"],
        es=settings["es"],
        es_kwargs=settings["es_kwargs"],
        seed=seed,
        dtype=dtype,
    )


def run_iterations(scheduler, n, times, dqd=False, eval_times=None):
    """Runs ``n`` ask/evaluate/tell iterations (preceded by ``ask_dqd`` /
    ``tell_dqd`` when ``dqd``), appending each one's seconds (and, to
    ``eval_times`` if given, the seconds spent in the NumPy evaluation)."""
    from ribsax.examples.sphere import sphere, sphere_jacobian

    for _ in range(n):
        start = time.perf_counter()
        evaluating = 0.0
        if dqd:
            solutions = scheduler.ask_dqd()
            mark = time.perf_counter()
            objective, measures, jacobian = sphere_jacobian(solutions)
            evaluating += time.perf_counter() - mark
            scheduler.tell_dqd(objective, measures, jacobian)
        solutions = scheduler.ask()
        mark = time.perf_counter()
        objective, measures = sphere(solutions)
        evaluating += time.perf_counter() - mark
        scheduler.tell(objective, measures)
        times.append(time.perf_counter() - start)
        if eval_times is not None:
            eval_times.append(evaluating)


def jax_eval_seconds(task, scheduler, dqd, repeats=200):
    """Seconds per iteration of the fused loop's own evaluation: the task (and its
    Jacobian, for DQD configurations) jitted on batches of the scheduler's sizes,
    timed alone with synchronisation."""
    import jax
    import jax.numpy as jnp

    pool = getattr(scheduler, "emitter_pool", None)
    emitters = list(scheduler.emitters if pool is None else pool)
    sizes = sorted(e.batch_size for e in emitters)
    # A bandit scheduler evaluates its active emitters' rows only.
    batch = sum(sizes[-getattr(scheduler, "_num_active", len(sizes)) :])
    dtype = scheduler.archive.dtypes["solution"]
    key = jax.random.key(0)
    calls = [(jax.jit(task.evaluate), jnp.zeros((batch, task.solution_dim), dtype))]
    if dqd:
        dqd_batch = sum(getattr(e, "batch_size_dqd", 1) for e in emitters)
        calls.append(
            (jax.jit(task.evaluate_with_jacobian), jnp.zeros((dqd_batch, task.solution_dim), dtype))
        )
    total = 0.0
    for fn, solutions in calls:
        jax.block_until_ready(fn(solutions, key))
        start = time.perf_counter()
        for _ in range(repeats):
            jax.block_until_ready(fn(solutions, key))
        total += (time.perf_counter() - start) / repeats
    return total


def bench_fused(settings, *, warmup, iterations, rounds, seed, dtype):
    """Times ribsax's fused loop (``Scheduler.run``) on one configuration."""
    import ribsax
    from ribsax.tasks import sphere

    task = sphere(settings["dim"], pyribs_objective_grad=True)
    scheduler = build_from_settings(ribsax, settings, seed, dtype)
    start = time.perf_counter()
    first = scheduler.run(task, warmup, seed=seed)
    warmup_s = time.perf_counter() - start
    run_s = 0.0
    per_round = [
        iterations // rounds + (1 if r < iterations % rounds else 0) for r in range(rounds)
    ]
    for n in per_round:
        run_s += scheduler.run(task, n).run_time
    stats = scheduler.result_archive.stats
    from ribsax.examples.sphere import CONFIG

    dqd = bool(CONFIG[settings["config"]].get("dqd"))
    return {
        "compile_s": first.compile_time,
        "warmup_s": warmup_s,
        "its_per_s": iterations / run_s,
        "qd_score": float(stats.qd_score),
        "coverage": float(stats.coverage),
        "jax_eval_ms": jax_eval_seconds(task, scheduler, dqd) * 1e3,
    }


def bench_case(label, settings, *, warmup, iterations, rounds, seed, dtype):
    """Times one configuration on both libraries; returns a result dict."""
    import ribs.archives
    import ribs.emitters
    import ribs.schedulers
    from threadpoolctl import threadpool_limits

    import ribsax.archives
    import ribsax.emitters
    import ribsax.schedulers
    from ribsax.examples.sphere import CONFIG

    dqd = bool(CONFIG[settings["config"]].get("dqd"))
    libs = {"ribsax": ribsax, "ribs": ribs}
    schedulers, build_s = {}, {}
    for name, lib in libs.items():
        start = time.perf_counter()
        schedulers[name] = build_from_settings(lib, settings, seed, dtype)
        build_s[name] = time.perf_counter() - start

    warm = {name: [] for name in libs}
    steady = {name: [] for name in libs}
    eval_times = []
    per_round = [
        iterations // rounds + (1 if r < iterations % rounds else 0) for r in range(rounds)
    ]
    with threadpool_limits(limits=1, user_api="blas"):
        for name in libs:
            run_iterations(schedulers[name], warmup, warm[name], dqd)
        for n in per_round:
            for name in libs:
                run_iterations(
                    schedulers[name], n, steady[name], dqd, eval_times if name == "ribs" else None
                )

    result = {
        "config": label,
        "dim": settings["dim"],
        "grid_dims": list(settings["grid_dims"]),
        "es": settings["es"],
        "es_kwargs": settings["es_kwargs"],
        "target": TARGETS.get(settings["target_key"], float("nan")),
        "warmup_iterations": warmup,
        "iterations": iterations,
        "rounds": rounds,
    }
    for name in libs:
        times = steady[name]
        stats = schedulers[name].result_archive.stats
        result[name] = {
            "build_s": build_s[name],
            "first_iteration_s": warm[name][0] if warm[name] else None,
            "warmup_s": sum(warm[name]),
            "its_per_s": len(times) / sum(times) if times else float("nan"),
            "median_iteration_ms": statistics.median(times) * 1e3 if times else None,
            "max_iteration_ms": max(times) * 1e3 if times else None,
            "qd_score": float(stats.qd_score),
            "norm_qd_score": float(stats.norm_qd_score),
            "coverage": float(stats.coverage),
            "num_elites": int(stats.num_elites),
        }
    result["ratio"] = result["ribsax"]["its_per_s"] / result["ribs"]["its_per_s"]
    result["numpy_eval_ms"] = statistics.mean(eval_times) * 1e3
    return result


def format_table(results) -> str:
    """Markdown tables: throughput, then warm-up and final archive metrics."""
    lines = [
        "| config | ribsax it/s | pyribs it/s | speed-up | target "
        "| ribsax warm-up s (first it.) | pyribs warm-up s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        mark = (
            "n/a" if r["target"] != r["target"] else "ok" if r["ratio"] >= r["target"] else "MISSED"
        )
        ours, theirs = r["ribsax"], r["ribs"]
        lines.append(
            f"| {r['config']} | {ours['its_per_s']:.1f} | {theirs['its_per_s']:.1f} "
            f"| {r['ratio']:.2f}x | >= {r['target']:g}x ({mark}) "
            f"| {ours['warmup_s']:.2f} ({ours['first_iteration_s']:.2f}) "
            f"| {theirs['warmup_s']:.2f} |"
        )
    lines += [
        "",
        "| config | iterations | ribsax QD score | pyribs QD score | ribsax coverage "
        "| pyribs coverage |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        total = r["warmup_iterations"] + r["iterations"]
        lines.append(
            f"| {r['config']} | {total:,} | {r['ribsax']['qd_score']:,.0f} "
            f"| {r['ribs']['qd_score']:,.0f} | {r['ribsax']['coverage']:.2%} "
            f"| {r['ribs']['coverage']:.2%} |"
        )
    fused = [r for r in results if "fused" in r]
    if fused:
        lines += [
            "",
            "| config | ribsax fused it/s | pyribs it/s | fused speed-up | target "
            "| compile s | fused QD score | fused coverage |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in fused:
            f = r["fused"]
            ratio = f["its_per_s"] / r["ribs"]["its_per_s"]
            target = FUSED_TARGETS.get(r["config"])
            mark = (
                "n/a"
                if target is None
                else f">= {target:g}x ({'ok' if ratio >= target else 'MISSED'})"
            )
            lines.append(
                f"| {r['config']} | {f['its_per_s']:.1f} "
                f"| {r['ribs']['its_per_s']:.1f} | {ratio:.2f}x | {mark} "
                f"| {f['compile_s']:.2f} | {f['qd_score']:,.0f} "
                f"| {f['coverage']:.2%} |"
            )
        lines += [
            "",
            "Kernel floor of the ask/tell loop: the fused loop's time per iteration "
            "(every kernel, no Python, no host copies) minus its JAX evaluation, "
            "plus the user's NumPy evaluation.",
            "",
            "| config | fused ms/it | JAX eval ms/it | NumPy eval ms/it "
            "| kernel floor ms/it | pyribs ms/it | max ask/tell speed-up "
            "| ask/tell speed-up |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in fused:
            f = r["fused"]
            fused_ms = 1e3 / f["its_per_s"]
            floor_ms = fused_ms - f["jax_eval_ms"] + r["numpy_eval_ms"]
            pyribs_ms = 1e3 / r["ribs"]["its_per_s"]
            lines.append(
                f"| {r['config']} | {fused_ms:.3f} | {f['jax_eval_ms']:.3f} "
                f"| {r['numpy_eval_ms']:.3f} | {floor_ms:.3f} | {pyribs_ms:.3f} "
                f"| {pyribs_ms / floor_ms:.2f}x | {r['ratio']:.2f}x |"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--quick", action="store_true", help="short smoke run (few iterations; numbers noisy)"
    )
    parser.add_argument(
        "--configs",
        default=",".join(DEFAULT_CONFIGS),
        help="comma-separated configurations (default: %(default)s)",
    )
    parser.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="timed iterations per library after warm-up (default 1000, quick 10)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="untimed-for-throughput iterations per library first (default 20, quick 3)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="alternating rounds the timed iterations are split into (default 5, quick 2)",
    )
    parser.add_argument("--seed", type=int, default=42, help="default: %(default)s")
    parser.add_argument(
        "--dtype",
        choices=["float64", "float32"],
        default="float64",
        help="archive dtype for both libraries (default: %(default)s, "
        "pyribs' default; float64 turns on JAX x64)",
    )
    parser.add_argument("--json", default=None, help="also write results here")
    parser.add_argument(
        "--fused", action="store_true", help="also time ribsax's fused loop (Scheduler.run)"
    )
    args = parser.parse_args(argv)
    iterations = args.iterations if args.iterations is not None else (10 if args.quick else 1000)
    warmup = args.warmup if args.warmup is not None else (3 if args.quick else 20)
    rounds = args.rounds if args.rounds is not None else (2 if args.quick else 5)
    if iterations < 1 or warmup < 1 or not 1 <= rounds <= iterations:
        parser.error("need --iterations >= --rounds >= 1 and --warmup >= 1")

    import jax

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    cases = expand_configs([c.strip() for c in args.configs.split(",") if c.strip()], parser)

    info = sphere_machine_info()
    print_header("sphere ask/tell loop: ribsax vs pyribs", info)
    print(
        f"- settings: warmup={warmup}, iterations={iterations}, rounds={rounds}, "
        f"seed={args.seed}, dtype={args.dtype}, "
        "540 evaluations/iteration, "
        "BLAS limited to 1 thread (threadpoolctl) for both libraries"
    )

    results = []
    for label, settings in cases:
        res = bench_case(
            label,
            settings,
            warmup=warmup,
            iterations=iterations,
            rounds=rounds,
            seed=args.seed,
            dtype=np.dtype(args.dtype),
        )
        if args.fused:
            res["fused"] = bench_fused(
                settings,
                warmup=warmup,
                iterations=iterations,
                rounds=rounds,
                seed=args.seed,
                dtype=np.dtype(args.dtype),
            )
            print(
                f"  {label:28s}: fused {res['fused']['its_per_s']:8.1f} it/s "
                f"(compile {res['fused']['compile_s']:.2f} s)",
                flush=True,
            )
        results.append(res)
        ours, theirs = res["ribsax"], res["ribs"]
        print(
            f"  {label:28s}: ribsax {ours['its_per_s']:8.1f} it/s (median "
            f"{ours['median_iteration_ms']:.2f} ms, max {ours['max_iteration_ms']:.1f}"
            f" ms), pyribs {theirs['its_per_s']:7.1f} it/s (median "
            f"{theirs['median_iteration_ms']:.2f} ms, max "
            f"{theirs['max_iteration_ms']:.1f} ms), x{res['ratio']:.2f}; ribsax "
            f"warm-up {ours['warmup_s']:.2f} s over {warmup} it. (first "
            f"{ours['first_iteration_s']:.2f} s, build {ours['build_s']:.2f} s), "
            f"pyribs warm-up {theirs['warmup_s']:.2f} s (build "
            f"{theirs['build_s']:.2f} s)",
            flush=True,
        )
    report(format_table(results), info, results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
