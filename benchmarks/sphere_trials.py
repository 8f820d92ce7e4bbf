"""pyribs' 10,000-iteration sphere table reproduced with ``ribsax.run_trials``.

For each configuration of ``ribsax.examples.sphere`` (pyribs' ``examples/sphere.py``
settings: 100-D linear-projection sphere, 540 evaluations per iteration, 100x100
result archive), this runs ``--trials`` seeds as one vmapped fused loop and prints
the final QD score and coverage (mean ± sample std over trials) beside pyribs'
published 20-trial numbers (``docs/examples/sphere.md`` in pyribs' repository),
with the compile and run wall times.

Evaluation is the JAX sphere task (:func:`ribsax.tasks.sphere`, identical to the
example's NumPy function); DQD configurations use pyribs' objective gradient
``-2 (x - 2.048)`` as pyribs' example does.

Usage::

    python benchmarks/sphere_trials.py --configs map_elites,cma_mae --trials 5 \\
        --itrs 10000 --json /tmp/sphere_trials.json

With ``--json`` each finished configuration is written at once and configurations
already in the file are skipped, so an interrupted run continues.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax

jax.config.update("jax_enable_x64", True)

from _common import machine_info, print_header  # noqa: E402

#: pyribs' published results: name -> (qd mean, qd std, coverage % mean, std).
PUBLISHED = {
    "map_elites": (416111.64, 2681.37, 50.72, 0.40),
    "line_map_elites": (491013.92, 1118.74, 60.44, 0.17),
    "cvt_map_elites": (416350.11, 3942.42, 50.67, 0.49),
    "line_cvt_map_elites": (490335.42, 4818.54, 60.39, 0.58),
    "me_map_elites": (533477.98, 15041.68, 65.28, 2.05),
    "cma_me_imp": (456678.01, 2882.10, 55.84, 0.41),
    "cma_me_imp_mu": (498464.35, 2214.86, 61.11, 0.34),
    "cma_me_basic": (398192.00, 10174.36, 47.04, 1.30),
    "cma_me_rd": (458403.60, 2739.42, 56.21, 0.42),
    "cma_me_rd_mu": (512692.56, 4070.15, 63.78, 0.61),
    "cma_me_opt": (57517.77, 3042.75, 5.97, 0.33),
    "cma_me_mixed": (458827.27, 2359.05, 56.19, 0.35),
    "og_map_elites": (387800.00, 2760.75, 46.83, 0.41),
    "omg_mega": (753680.67, 3.68, 100.00, 0.00),
    "cma_mega": (753834.86, 2.15, 100.00, 0.00),
    "cma_mega_adam": (753880.12, 1.92, 100.00, 0.00),
    "cma_mae": (633368.55, 1504.43, 81.02, 0.27),
    "cma_maega": (753834.72, 4.45, 100.00, 0.00),
}

#: The configurations run by default.
DEFAULT_CONFIGS = ("map_elites", "line_map_elites", "cma_me_imp", "cma_mae", "cma_mega")


def run_config(name, *, trials, itrs, dim, first_seed, vectorize):
    """Runs ``trials`` seeds of configuration ``name``; returns a result dict."""
    import ribsax
    from ribsax.examples.sphere import CONFIG, create_scheduler
    from ribsax.tasks import sphere

    task = sphere(dim, pyribs_objective_grad=True)
    seeds = list(range(first_seed, first_seed + trials))
    dqd = bool(CONFIG[name].get("dqd"))
    start = time.perf_counter()
    result = ribsax.run_trials(
        lambda seed: create_scheduler(name, dim=dim, seed=seed),
        task,
        itrs,
        seeds,
        metrics_every=max(1, itrs // 10),
        vectorize=vectorize,
    )
    wall = time.perf_counter() - start
    final = result.final
    return {
        "config": name,
        "dqd": dqd,
        "trials": trials,
        "seeds": seeds,
        "iterations": itrs,
        "dim": dim,
        "vectorize": vectorize,
        "qd_score": [float(v) for v in final["qd_score"]],
        "coverage_percent": [float(v) * 100 for v in final["coverage"]],
        "compile_s": result.compile_time,
        "run_s": result.run_time,
        "wall_s": wall,
        "history": result.metrics.to_dict(orient="list"),
    }


def _mean_std(values):
    import numpy as np

    arr = np.asarray(values, dtype=float)
    std = float(arr.std(ddof=1)) if len(arr) > 1 else float("nan")
    return float(arr.mean()), std


def format_table(results) -> str:
    """Markdown table: ribsax mean ± std beside pyribs' published numbers."""
    lines = [
        "| config | trials | ribsax QD score | pyribs QD score (20 trials) | "
        "ribsax coverage % | pyribs coverage % | compile s | run s | "
        "trial-iterations/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for res in results:
        qd_m, qd_s = _mean_std(res["qd_score"])
        cov_m, cov_s = _mean_std(res["coverage_percent"])
        pub = PUBLISHED.get(res["config"])
        pub_qd = f"{pub[0]:,.2f} ± {pub[1]:,.2f}" if pub else "n/a"
        pub_cov = f"{pub[2]:.2f} ± {pub[3]:.2f}" if pub else "n/a"
        rate = res["trials"] * res["iterations"] / res["run_s"]
        lines.append(
            f"| {res['config']} | {res['trials']} | {qd_m:,.2f} ± {qd_s:,.2f} | "
            f"{pub_qd} | {cov_m:.2f} ± {cov_s:.2f} | {pub_cov} | "
            f"{res['compile_s']:.1f} | {res['run_s']:.1f} | {rate:,.0f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--configs", default=",".join(DEFAULT_CONFIGS), help="comma-separated names, or ALL"
    )
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--itrs", type=int, default=10000)
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--sequential",
        action="store_true",
        help="run_trials(vectorize=False): trials one after the "
        "other through one compiled loop (faster on CPU)",
    )
    args = parser.parse_args(argv)

    names = list(PUBLISHED) if args.configs == "ALL" else [c for c in args.configs.split(",") if c]
    unknown = [n for n in names if n not in PUBLISHED]
    if unknown:
        parser.error(f"unknown configurations {unknown}; choose from {', '.join(PUBLISHED)}")

    info = machine_info()
    print_header("sphere_trials: ribsax run_trials vs pyribs' published table", info)
    done = {}
    if args.json and os.path.exists(args.json):
        with open(args.json, encoding="utf-8") as file:
            done = {r["config"]: r for r in json.load(file)["results"]}
    results = []
    for name in names:
        if name in done and done[name]["iterations"] == args.itrs:
            results.append(done[name])
            continue
        res = run_config(
            name,
            trials=args.trials,
            itrs=args.itrs,
            dim=args.dim,
            first_seed=args.first_seed,
            vectorize=not args.sequential,
        )
        results.append(res)
        done[name] = res
        print(format_table([res]).splitlines()[-1], flush=True)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as file:
                json.dump({"machine": info, "results": list(done.values())}, file)
    print()
    print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
