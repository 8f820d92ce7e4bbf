"""The PRNG implementation of the emitters' keys: JAX's key implementations side by
side on pyribs' sphere configurations.

ribsax's emitters, rankers and optimizers derive their keys with
``ribsax._utils.kernel_key``, whose implementation is
``ribsax._utils.KERNEL_PRNG_IMPL``: ``ribsax._philox.PHILOX4X32`` (named
``ribsax_philox4x32`` here; bit for bit JAX's ``philox4x32``). This script measures
what that choice buys against JAX's default ``threefry2x32`` (and any other JAX
implementation named with ``--impls``, e.g. ``philox4x32``), in one process, so the
machine's drift hits every variant alike:

1. **Draws**: jitted ``jax.random.normal`` of the shapes the configurations draw
   (540x100: a Gaussian emitter's batch; 15 stacked 36x100: a fused group of 15
   CMA-ES emitters) and ``jax.random.randint`` of 540 parent indices, per
   implementation, alternating, median of ``--repeats`` timings each.
2. **Loops**: for every configuration of ``--configs``, one ribsax scheduler per
   implementation (``KERNEL_PRNG_IMPL`` set before it is built; the same seeds,
   so the same key words) and one pyribs scheduler. After ``--warmup`` iterations
   each, ``--rounds`` rounds of ``--iterations`` iterations alternate between them:
   the Python ask/tell loop with pyribs' NumPy sphere (``benchmarks/sphere.py``'s
   loop; DQD configurations run ``ask_dqd``/``tell_dqd`` first), then, for the
   ribsax schedulers, the fused loop (``Scheduler.run`` on ``ribsax.tasks.sphere``).
   It prints iterations/s, the ratio to pyribs, the fused loop's milliseconds per
   iteration and compile seconds, and the QD score after all iterations (the random
   streams differ between implementations, so QD scores agree only statistically).

Float64 with JAX x64 on (pyribs' default) unless ``--dtype float32``. BLAS is
limited to one thread for both libraries, as in ``sphere.py``.

Usage::

    python benchmarks/prng_impl.py                      # defaults below
    python benchmarks/prng_impl.py --configs map_elites --iterations 20 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine_info, print_header
from sphere import build_scheduler, run_iterations

DEFAULT_CONFIGS = (
    "map_elites,line_map_elites,me_map_elites,cma_me_imp,cma_mae,og_map_elites,omg_mega,cma_mega"
)
OURS = "ribsax_philox4x32"


def impl_object(name):
    """The ``impl`` argument for ``jax.random`` of an ``--impls`` name."""
    if name == OURS:
        from ribsax._philox import PHILOX4X32

        return PHILOX4X32
    return name


def time_draws(impls, repeats):
    """Median microseconds of each draw per implementation."""
    import jax

    cases = {
        "normal 540x100": lambda k: jax.random.normal(k, (540, 100)),
        "normal 15x36x100 (vmap)": lambda k: jax.vmap(lambda kk: jax.random.normal(kk, (36, 100)))(
            jax.random.split(k, 15)
        ),
        "randint 540": lambda k: jax.random.randint(k, (540,), 0, 3000),
    }
    calls = {}
    for impl in impls:
        key = jax.random.key(0, impl=impl_object(impl))
        for name, fn in cases.items():
            compiled = jax.jit(fn)
            jax.block_until_ready(compiled(key))
            calls[(name, impl)] = (compiled, key)
    times = {k: [] for k in calls}
    for _ in range(repeats):
        for k, (compiled, key) in calls.items():
            start = time.perf_counter()
            jax.block_until_ready(compiled(key))
            times[k].append(time.perf_counter() - start)
    return {
        name: {impl: float(np.median(times[(name, impl)]) * 1e6) for impl in impls}
        for name in cases
    }


def ask_tell(scheduler, n, dqd):
    """Seconds for ``n`` iterations of ``sphere.py``'s Python loop."""
    times = []
    run_iterations(scheduler, n, times, dqd)
    return sum(times)


def bench_config(config, impls, args, dtype):
    """Ask/tell and fused timings of one configuration for every implementation."""
    import ribs

    import ribsax
    import ribsax._utils
    from ribsax.examples.sphere import CONFIG
    from ribsax.tasks import sphere

    dqd = bool(CONFIG[config].get("dqd"))
    build = {
        "dim": 100,
        "grid_dims": (100, 100),
        "es": None,
        "es_kwargs": None,
        "seed": args.seed,
        "dtype": dtype,
    }
    told = {"pyribs": build_scheduler(ribs, config, **build)}
    fused = {}
    default_impl = ribsax._utils.KERNEL_PRNG_IMPL
    try:
        for impl in impls:
            ribsax._utils.KERNEL_PRNG_IMPL = impl_object(impl)
            told[impl] = build_scheduler(ribsax, config, **build)
            fused[impl] = build_scheduler(ribsax, config, **build)
    finally:
        ribsax._utils.KERNEL_PRNG_IMPL = default_impl
    task = sphere(100, pyribs_objective_grad=True)
    for scheduler in told.values():
        ask_tell(scheduler, args.warmup, dqd)
    compile_s = {
        impl: s.run(task, args.warmup, seed=args.seed).compile_time for impl, s in fused.items()
    }
    told_s = dict.fromkeys(told, 0.0)
    fused_s = dict.fromkeys(fused, 0.0)
    for _ in range(args.rounds):
        for name, scheduler in told.items():
            told_s[name] += ask_tell(scheduler, args.iterations, dqd)
        for impl, scheduler in fused.items():
            fused_s[impl] += scheduler.run(task, args.iterations).run_time
    n = args.rounds * args.iterations
    pyribs_its = n / told_s["pyribs"]
    rows = []
    for impl in impls:
        its = n / told_s[impl]
        rows.append(
            {
                "impl": impl,
                "ask_tell_its": its,
                "ratio": its / pyribs_its,
                "fused_ms": fused_s[impl] / n * 1e3,
                "fused_ratio": (n / fused_s[impl]) / pyribs_its,
                "compile_s": compile_s[impl],
                "qd_ask_tell": float(told[impl].result_archive.stats.qd_score),
                "qd_fused": float(fused[impl].result_archive.stats.qd_score),
            }
        )
    return pyribs_its, float(told["pyribs"].result_archive.stats.qd_score), rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--configs",
        default=DEFAULT_CONFIGS,
        help="comma-separated sphere configurations (default: %(default)s)",
    )
    parser.add_argument(
        "--impls",
        default=f"threefry2x32,{OURS}",
        help=f"key implementations: JAX's names, or {OURS} for ribsax's (default: %(default)s)",
    )
    parser.add_argument(
        "--iterations", type=int, default=40, help="iterations per round and scheduler (default 40)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument(
        "--warmup", type=int, default=20, help="iterations before timing (default 20)"
    )
    parser.add_argument("--repeats", type=int, default=200, help="timings per draw (default 200)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    args = parser.parse_args(argv)
    if min(args.iterations, args.rounds, args.warmup, args.repeats) < 1:
        parser.error("--iterations, --rounds, --warmup and --repeats must be >= 1")
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]

    import jax
    import threadpoolctl

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    for impl in impls:
        try:
            jax.random.key(0, impl=impl_object(impl))
        except (ValueError, KeyError, TypeError) as error:
            parser.error(f"--impls: {impl!r} is not a JAX key implementation ({error})")
    print_header("PRNG implementation of the emitters' keys", machine_info())
    print(
        f"- settings: dtype={args.dtype}, warmup={args.warmup}, "
        f"rounds={args.rounds} x {args.iterations} iterations, "
        f"repeats={args.repeats}, seed={args.seed}"
    )

    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        draws = time_draws(impls, args.repeats)
        print("\n| draw | " + " | ".join(f"{i} us" for i in impls) + " |")
        print("|---|" + "---:|" * len(impls))
        for name, row in draws.items():
            print(f"| {name} | " + " | ".join(f"{row[i]:.0f}" for i in impls) + " |")

        print(
            "\n| config | impl | ask/tell it/s | / pyribs | fused ms/it | fused / "
            "pyribs | fused compile s | QD ask/tell | QD fused | QD pyribs |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for config in [c.strip() for c in args.configs.split(",") if c.strip()]:
            pyribs_its, pyribs_qd, rows = bench_config(config, impls, args, np.dtype(args.dtype))
            for row in rows:
                print(
                    f"| {config} | {row['impl']} | {row['ask_tell_its']:.1f} | "
                    f"{row['ratio']:.2f}x | {row['fused_ms']:.3f} | "
                    f"{row['fused_ratio']:.2f}x | {row['compile_s']:.2f} | "
                    f"{row['qd_ask_tell']:,.0f} | {row['qd_fused']:,.0f} | "
                    f"{pyribs_qd:,.0f} |",
                    flush=True,
                )
            print(f"|  | pyribs | {pyribs_its:.1f} | | | | | | | |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
