"""DQD quality on the 100-D sphere: ES-estimated vs exact gradients, ribsax vs pyribs.

Two studies of DQD quality, both on the configurations of
``ribsax.examples.sphere`` (GridArchive 100x100, 540 evaluations per iteration):

1. ``--es N:SIGMA ...`` (the default study, ``100:0.02``): CMA-MEGA (``cma_mega``: 15
   GradientArborescenceEmitters, sigma0 10, lr 1, gradient_ascent, mu, batch 35) with
   Jacobians estimated by OpenAI-ES (:func:`ribsax.tasks.es_jacobian_fn`: mirrored
   samples, centred ranks, ``N`` samples per solution point with perturbation
   ``SIGMA``; samples evaluated but not inserted and not counted as iterations,
   dqd-rl's setting) against the same configuration with exact Jacobians (pyribs'
   sphere gradients, ``ribsax.tasks.sphere(100, pyribs_objective_grad=True)``), per
   seed. Prints the ratio ``QD score (ES) / QD score (exact)`` per seed, its mean and
   minimum; the target is >= 0.90 (a setting passes here when every seed
   reaches it).
2. ``--configs NAME,...``: each DQD configuration (``og_map_elites``, ``omg_mega``,
   ``cma_mega``, ``cma_mega_adam``, ``cma_maega``) on ribsax and on pyribs (ribs
   0.12) with the same settings: final QD score and coverage of the result archive,
   mean ± sample std over seeds, and the verdict "within seed spread" when
   ``|mean_ribsax - mean_pyribs| <= 2 * max(std_ribsax, std_pyribs)`` or
   ``<= 0.5%`` of the pyribs mean.

Both libraries are built by ``benchmarks/sphere.py::build_scheduler`` from
``ribsax.examples.sphere.CONFIG`` (same classes, arguments, ``x0 = 0``, one
``SeedSequence(seed)`` child per emitter, archive seed ``seed``, float64). pyribs
runs its ask/tell DQD loop (``ask_dqd -> sphere_jacobian -> tell_dqd -> ask ->
sphere -> tell`` with the NumPy functions of ``ribsax.examples.sphere``, BLAS limited
to one thread). ribsax runs every trial through the fused loop
(:func:`ribsax.run_trials` with ``vectorize=False``: one compiled ``lax.scan`` per
configuration, the trials one after the other), which is checked equal to its
ask/tell loop by the scheduler tests; the JAX sphere task is the same function as
the NumPy one.

Usage::

    nice -n 10 python benchmarks/dqd_quality.py --seeds 0 1 2 --itrs 1000 \\
        --es 100:0.02 1000:0.02 --json /tmp/dqd_es.json
    nice -n 10 python benchmarks/dqd_quality.py --seeds 0 1 2 --itrs 1000 \\
        --configs og_map_elites,omg_mega,cma_mega,cma_mega_adam,cma_maega \\
        --json /tmp/dqd_configs.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

DQD_CONFIGS = ("og_map_elites", "omg_mega", "cma_mega", "cma_mega_adam", "cma_maega")
LIBS = ("ribsax", "pyribs")
#: Target for ES / exact QD score.
ES_TARGET = 0.90
#: Verdict tolerance: a relative difference of the means at most this is a match.
REL_TOL = 0.005


def parse_es_setting(text):
    """``"N:SIGMA"`` -> ``(N, SIGMA)``; raises ValueError on bad input."""
    n, sep, sigma = text.partition(":")
    if not sep:
        raise ValueError(f"ES setting must be N:SIGMA, got {text!r}")
    n, sigma = int(n), float(sigma)
    if n < 2 or n % 2 or not sigma > 0:
        raise ValueError(f"ES setting needs an even N >= 2 and SIGMA > 0, got {text!r}")
    return n, sigma


def build(lib_name, config, seed, dim):
    """One configuration built with ``ribs`` or ``ribsax`` (see the module doc)."""
    import ribs.archives
    import ribs.emitters
    import ribs.schedulers
    from sphere import build_scheduler

    import ribsax.archives
    import ribsax.emitters
    import ribsax.schedulers

    lib = ribs if lib_name == "pyribs" else ribsax
    return build_scheduler(
        lib,
        config,
        dim=dim,
        grid_dims=(100, 100),
        es=None,
        es_kwargs=None,
        seed=seed,
        dtype=np.dtype("float64"),
    )


def run_ribsax(config, seeds, itrs, dim, jacobian=None):
    """ribsax fused-loop trials; returns ``(per-seed results, compile_s)``."""
    import ribsax
    from ribsax.tasks import sphere as sphere_task

    task = sphere_task(dim, pyribs_objective_grad=True)
    result = ribsax.run_trials(
        lambda seed: build("ribsax", config, seed, dim),
        task,
        itrs,
        seeds,
        jacobian=jacobian,
        vectorize=False,
        metrics_every=itrs,
    )
    final = result.final
    per_seed = [
        {
            "seed": int(final.loc[i, "seed"]),
            "qd_score": float(final.loc[i, "qd_score"]),
            "coverage": float(final.loc[i, "coverage"]),
            "seconds": result.run_time / len(seeds),
        }
        for i in range(len(seeds))
    ]
    return per_seed, result.compile_time


def run_pyribs(config, seed, itrs, dim):
    """One pyribs ask/tell DQD trial; returns its result dict."""
    from sphere import run_iterations
    from threadpoolctl import threadpool_limits

    scheduler = build("pyribs", config, seed, dim)
    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        run_iterations(scheduler, itrs, [], dqd=True)
    stats = scheduler.result_archive.stats
    return {
        "seed": seed,
        "qd_score": float(stats.qd_score),
        "coverage": float(stats.coverage),
        "seconds": time.perf_counter() - start,
    }


def mean_std(values):
    """Mean and sample standard deviation (0 for one value)."""
    values = list(values)
    return (statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0)


def verdict(ours, theirs):
    """ "within seed spread" or "DIFFERENT" for two lists of values (see module)."""
    (m1, s1), (m2, s2) = mean_std(ours), mean_std(theirs)
    diff = abs(m1 - m2)
    ok = diff <= 2 * max(s1, s2) or diff <= REL_TOL * abs(m2)
    return "within seed spread" if ok else "DIFFERENT"


def es_study(settings, seeds, itrs, dim):
    """Exact vs ES CMA-MEGA (ribsax, fused); prints and returns the results."""
    from ribsax.tasks import es_jacobian_fn
    from ribsax.tasks import sphere as sphere_task

    task = sphere_task(dim, pyribs_objective_grad=True)
    exact, compile_s = run_ribsax("cma_mega", seeds, itrs, dim)
    out = {"exact": {"per_seed": exact, "compile_s": compile_s}, "es": []}
    for r in exact:
        print(
            f"  exact            seed {r['seed']}: QD score {r['qd_score']:12,.2f} "
            f"coverage {r['coverage']:7.2%}",
            flush=True,
        )
    for n, sigma in settings:
        source = es_jacobian_fn(task.evaluate, sample_sigma=sigma, sample_batch_size=n)
        start = time.perf_counter()
        per_seed, compile_s = run_ribsax("cma_mega", seeds, itrs, dim, jacobian=source)
        ratios = [es["qd_score"] / ex["qd_score"] for es, ex in zip(per_seed, exact)]
        for r, ratio in zip(per_seed, ratios):
            print(
                f"  ES N={n:5d} s={sigma:<6g} seed {r['seed']}: QD score "
                f"{r['qd_score']:12,.2f} coverage {r['coverage']:7.2%} ratio "
                f"{ratio:.4f}",
                flush=True,
            )
        out["es"].append(
            {
                "sample_batch_size": n,
                "sample_sigma": sigma,
                "per_seed": per_seed,
                "ratios": ratios,
                "compile_s": compile_s,
                "wall_s": time.perf_counter() - start,
            }
        )
    return out


def es_table(study):
    """Markdown table of :func:`es_study`'s results."""
    exact = study["exact"]["per_seed"]
    m, s = mean_std(r["qd_score"] for r in exact)
    cov = statistics.mean(r["coverage"] for r in exact)
    lines = [
        "| gradients | samples N | sigma | QD score (mean ± std) "
        "| coverage (mean) | ratio per seed | ratio mean | ratio min "
        "| >= 0.90 on every seed |",
        "|---|---:|---:|---:|---:|---|---:|---:|---|",
        f"| exact | - | - | {m:,.0f} ± {s:,.0f} | {cov:.2%} | - | 1 | 1 | - |",
    ]
    for entry in study["es"]:
        m, s = mean_std(r["qd_score"] for r in entry["per_seed"])
        cov = statistics.mean(r["coverage"] for r in entry["per_seed"])
        ratios = entry["ratios"]
        lines.append(
            f"| ES | {entry['sample_batch_size']} | {entry['sample_sigma']:g} "
            f"| {m:,.0f} ± {s:,.0f} | {cov:.2%} | "
            + ", ".join(f"{r:.4f}" for r in ratios)
            + f" | {statistics.mean(ratios):.4f} | {min(ratios):.4f} | "
            + ("yes" if min(ratios) >= ES_TARGET else "no")
            + " |"
        )
    return "\n".join(lines)


def configs_study(configs, libs, seeds, itrs, dim):
    """Each configuration on each library; prints and returns the results."""
    out = {}
    for config in configs:
        out[config] = {}
        if "ribsax" in libs:
            per_seed, compile_s = run_ribsax(config, seeds, itrs, dim)
            out[config]["ribsax"] = {"per_seed": per_seed, "compile_s": compile_s}
            for r in per_seed:
                print(
                    f"  {config:14s} ribsax seed {r['seed']}: QD score "
                    f"{r['qd_score']:12,.2f} coverage {r['coverage']:7.2%} "
                    f"({r['seconds']:.1f} s; compile {compile_s:.1f} s)",
                    flush=True,
                )
        if "pyribs" in libs:
            per_seed = []
            for seed in seeds:
                r = run_pyribs(config, seed, itrs, dim)
                per_seed.append(r)
                print(
                    f"  {config:14s} pyribs seed {seed}: QD score "
                    f"{r['qd_score']:12,.2f} coverage {r['coverage']:7.2%} "
                    f"({r['seconds']:.1f} s)",
                    flush=True,
                )
            out[config]["pyribs"] = {"per_seed": per_seed}
    return out


def configs_table(study):
    """Markdown table of :func:`configs_study`'s results."""
    lines = [
        "| config | metric | ribsax mean ± std | pyribs mean ± std | difference | verdict |",
        "|---|---|---:|---:|---:|---|",
    ]
    for config, libs in study.items():
        for metric, fmt in (("qd_score", "{:,.1f}"), ("coverage", "{:.4%}")):
            values = {
                lib: [r[metric] for r in libs[lib]["per_seed"]] for lib in LIBS if lib in libs
            }
            cells = []
            for lib in LIBS:
                if lib in values:
                    m, s = mean_std(values[lib])
                    cells.append(f"{fmt.format(m)} ± {fmt.format(s)}")
                else:
                    cells.append("-")
            diff, judged = "-", "-"
            if len(values) == 2:
                m1, m2 = (statistics.mean(values[lib]) for lib in LIBS)
                diff = f"{(m1 - m2) / abs(m2):+.3%}" if m2 else "nan"
                judged = verdict(values["ribsax"], values["pyribs"])
            lines.append(f"| {config} | {metric} | {cells[0]} | {cells[1]} | {diff} | {judged} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--itrs", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument(
        "--es",
        nargs="*",
        default=None,
        metavar="N:SIGMA",
        help="ES settings compared with exact gradients on cma_mega "
        "(default 100:0.02, dqd-rl's, when --configs is not given)",
    )
    parser.add_argument(
        "--configs",
        default=None,
        help="comma-separated DQD configurations to compare between "
        "ribsax and pyribs (choose from " + ", ".join(DQD_CONFIGS) + ")",
    )
    parser.add_argument(
        "--libs", default=",".join(LIBS), help="libraries for --configs (default: %(default)s)"
    )
    parser.add_argument("--json", default=None, help="also write results here")
    args = parser.parse_args(argv)
    if args.es is None and args.configs is None:
        args.es = ["100:0.02"]
    try:
        es_settings = [parse_es_setting(s) for s in args.es or []]
    except ValueError as error:
        parser.error(str(error))
    configs = [c.strip() for c in (args.configs or "").split(",") if c.strip()]
    libs = [lib.strip() for lib in args.libs.split(",") if lib.strip()]
    for config in configs:
        if config not in DQD_CONFIGS:
            parser.error(f"unknown configuration {config!r}; choose from " + ", ".join(DQD_CONFIGS))
    for lib in libs:
        if lib not in LIBS:
            parser.error(f"unknown library {lib!r}; choose from " + ", ".join(LIBS))

    import jax

    jax.config.update("jax_enable_x64", True)
    from _common import machine_info, print_header

    info = machine_info()
    print_header("DQD quality on the sphere", info)
    print(f"- seeds {args.seeds}, {args.itrs} iterations, dim {args.dim}", flush=True)
    results = {"machine": info, "seeds": args.seeds, "itrs": args.itrs, "dim": args.dim}
    tables = []
    if es_settings:
        results["es"] = es_study(es_settings, args.seeds, args.itrs, args.dim)
        tables.append(es_table(results["es"]))
    if configs:
        results["configs"] = configs_study(configs, libs, args.seeds, args.itrs, args.dim)
        tables.append(configs_table(results["configs"]))
    print()
    print("\n\n".join(tables))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
