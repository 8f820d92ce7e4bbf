"""ribsax vs pyribs: time to the end of iteration 20 in a fresh process.

For each configuration (pyribs' sphere settings, 100-D, float64 with JAX x64 on for
both libraries, built by ``sphere.py``'s ``build_scheduler``), three fresh Python
processes run 20 ask/tell iterations of the plain loop a pyribs user writes:

1. pyribs;
2. ribsax with a **cold** persistent compilation cache (a new, empty cache folder);
3. ribsax with a **warm** cache (the same folder, filled by run 2).

Each process reports the seconds from its first line (before ``import jax`` /
``import ribs``) to the end of iteration 20; the parent also times the whole
process. The targets: cold <= 1.5x pyribs and warm <= 1.0x pyribs.
DQD configurations (``cma_mega``) run ``ask_dqd -> jacobian -> tell_dqd`` before each
``ask -> evaluate -> tell``.

Usage::

    python benchmarks/first_results.py
    python benchmarks/first_results.py --configs map_elites,cma_mae --repeats 3
    python benchmarks/first_results.py --json results.json

Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _common import machine_info, print_header, report

DEFAULT_CONFIGS = ("map_elites", "cma_me_imp", "cma_mae", "cma_mega")
ITERATIONS = 20
TARGETS = {"cold": 1.5, "warm": 1.0}

_CHILD = r"""
import time
_start = time.perf_counter()
import sys, json
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
sys.path.insert(0, {bench_dir!r})
lib_name, config, iterations = {lib!r}, {config!r}, {iterations}
if lib_name == "ribs":
    import ribs as lib
else:
    import ribsax as lib
from sphere import build_scheduler
from ribsax.examples.sphere import CONFIG, sphere, sphere_jacobian
dqd = bool(CONFIG[config].get("dqd"))
scheduler = build_scheduler(lib, config, dim=100, grid_dims=(100, 100), es=None,
                            es_kwargs=None, seed=42, dtype=np.float64)
for _ in range(iterations):
    if dqd:
        solutions = scheduler.ask_dqd()
        objective, measures, jacobian = sphere_jacobian(solutions)
        scheduler.tell_dqd(objective, measures, jacobian)
    solutions = scheduler.ask()
    objective, measures = sphere(solutions)
    scheduler.tell(objective, measures)
elapsed = time.perf_counter() - _start
print(json.dumps({{"seconds": elapsed,
                   "qd_score": float(scheduler.archive.stats.qd_score)}}))
"""


def run_child(lib, config, cache_dir):
    """Runs one fresh process; returns (in-process seconds, process seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env.pop("RIBSAX_COMPILATION_CACHE", None)
    if cache_dir is not None:
        env["RIBSAX_CACHE_DIR"] = cache_dir
    code = _CHILD.format(
        bench_dir=os.path.dirname(os.path.abspath(__file__)),
        lib=lib,
        config=config,
        iterations=ITERATIONS,
    )
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{lib} {config} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["seconds"], wall


def bench_config(config, repeats):
    """Median times over ``repeats`` of (pyribs, ribsax cold, ribsax warm)."""
    times = {"pyribs": [], "cold": [], "warm": []}
    walls = {"pyribs": [], "cold": [], "warm": []}
    for _ in range(repeats):
        cache = tempfile.mkdtemp(prefix="ribsax-cache-")
        try:
            for label, lib, folder in (
                ("pyribs", "ribs", None),
                ("cold", "ribsax", cache),
                ("warm", "ribsax", cache),
            ):
                seconds, wall = run_child(lib, config, folder)
                times[label].append(seconds)
                walls[label].append(wall)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "config": config,
        "repeats": repeats,
        **{f"{k}_s": v for k, v in med.items()},
        **{f"{k}_process_s": statistics.median(v) for k, v in walls.items()},
        "cold_ratio": med["cold"] / med["pyribs"],
        "warm_ratio": med["warm"] / med["pyribs"],
        "all_s": times,
    }


def format_table(results) -> str:
    """Markdown table (ratios: ribsax time / pyribs time, lower is better)."""
    lines = [
        "| config | pyribs s | ribsax cold s | cold / pyribs | ribsax warm s "
        "| warm / pyribs | targets (<= 1.5x cold, <= 1.0x warm) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        ok_cold = r["cold_ratio"] <= TARGETS["cold"]
        ok_warm = r["warm_ratio"] <= TARGETS["warm"]
        lines.append(
            f"| {r['config']} | {r['pyribs_s']:.2f} | {r['cold_s']:.2f} "
            f"| {r['cold_ratio']:.2f}x | {r['warm_s']:.2f} | {r['warm_ratio']:.2f}x "
            f"| cold {'ok' if ok_cold else 'MISSED'}, warm "
            f"{'ok' if ok_warm else 'MISSED'} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--configs", default=",".join(DEFAULT_CONFIGS))
    parser.add_argument(
        "--repeats", type=int, default=1, help="processes per library and cache state (median)"
    )
    parser.add_argument("--json", default=None, help="also write results here")
    args = parser.parse_args(argv)
    info = machine_info()
    print_header(f"time to the end of iteration {ITERATIONS} in a fresh process", info)
    print(
        "- load average at start (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    results = []
    for config in [c.strip() for c in args.configs.split(",") if c.strip()]:
        res = bench_config(config, args.repeats)
        results.append(res)
        print(
            f"  {config:12s}: pyribs {res['pyribs_s']:.2f} s, ribsax cold "
            f"{res['cold_s']:.2f} s (x{res['cold_ratio']:.2f}), warm "
            f"{res['warm_s']:.2f} s (x{res['warm_ratio']:.2f})",
            flush=True,
        )
    print("- load average at end (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    report(format_table(results), info, results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
