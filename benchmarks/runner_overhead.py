"""The experiment runner's cost: overhead against a bare loop, checkpoints, Dask.

1. Overhead: ``ribsax run sphere_map_elites`` (pyribs' map_elites: 100x100 grid,
   one GaussianEmitter of 540, 100-D sphere, float32, ask/tell loop) for
   ``--iterations`` iterations with checkpoints every 100, against a bare
   ask -> evaluate -> tell loop on the same scheduler configuration and the same
   jitted task (no metrics, files or progress bar). Both are warmed up (compiled)
   first (the scheduler kernels stay compiled in the process); each builds its
   own task, whose evaluation (ask/tell) or whole fused scan then compiles once on
   both sides. Each is timed ``--repeats`` times, alternating, medians compared.
   The runner is timed with history periods 1 (the default), 10 and 100. The same
   for the fused loop: one bare ``Scheduler.run`` of all iterations against the
   runner in chunks of 256.
2. Checkpoints: size on disk and the time of a synchronous write of the last
   checkpoint's state (the runner itself writes in orbax's background thread; the
   log gives the time the loop waited).
3. Dask: solutions per second of :class:`ribsax.distributed.DaskEvaluator` with 1
   and 2 local worker processes on an objective that sleeps 10 ms per solution
   (ideal: 100 and 200 per second).

Usage::

    python benchmarks/runner_overhead.py [--iterations 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import jax.numpy as jnp

from ribsax.experiments import Checkpointer, Experiment, load_config
from ribsax.experiments._components import build_scheduler, build_task


def sleepy_objective(solutions):
    """Sleeps 10 ms per solution, then scores the sphere."""
    time.sleep(0.01 * len(solutions))
    from ribsax.examples.sphere import sphere

    return sphere(solutions)


def bare_loop(cfg, iterations):
    """Seconds of ``iterations`` bare ask/evaluate/tell iterations (a fresh task, as
    the runner builds one: its evaluation compiles in both)."""
    task = build_task(cfg)
    scheduler = build_scheduler(cfg, task)
    key = jax.random.key(0)
    start = time.perf_counter()
    for itr in range(1, iterations + 1):
        solutions = scheduler.ask()
        objective, measures, _ = task.jit_evaluate(
            jnp.asarray(solutions), jax.random.fold_in(jax.random.fold_in(key, itr), 0)
        )
        objective, measures = jax.device_get((objective, measures))
        scheduler.tell(objective, measures)
    return time.perf_counter() - start


def bare_fused(cfg, iterations):
    """Seconds of one ``Scheduler.run`` of ``iterations`` with a fresh task (its
    compilation included, as in the runner, which builds its own task)."""
    task = build_task(cfg)
    scheduler = build_scheduler(cfg, task)
    start = time.perf_counter()
    scheduler.run(task, iterations, seed=0)
    return time.perf_counter() - start


def runner_loop(overrides, logdir):
    """(seconds of Experiment.run, run directory) for the sphere config."""
    experiment = Experiment("sphere_map_elites", overrides, logdir=logdir, quiet=True)
    start = time.perf_counter()
    experiment.run()
    return time.perf_counter() - start, experiment.directory.path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dask-batch", type=int, default=200)
    args = parser.parse_args(argv)
    base = [
        f"budget.iterations={args.iterations}",
        "checkpoint.every_iterations=100",
        "logging.snapshot_every=1000000",
        "logging.heatmaps=false",
        "logging.plots=false",
    ]
    cfg = load_config("sphere_map_elites", base)
    root = Path(tempfile.mkdtemp(prefix="runner_overhead_"))
    print(
        f"jax {jax.__version__} on {jax.default_backend()}, "
        f"{args.iterations} iterations of map_elites (540 per iteration)"
    )

    bare_loop(cfg, 5)  # Compile the scheduler kernels.
    runner_loop([*base, "budget.iterations=5"], root / "warmup")
    runner_loop([*base, "budget.iterations=100", "loop=fused"], root / "warmup_f")
    variants = {
        "ask/tell: bare loop": None,
        "ask/tell: runner, history every 1": base,
        "ask/tell: runner, history every 10": [*base, "logging.history_every=10"],
        "ask/tell: runner, history every 100": [*base, "logging.history_every=100"],
        "ask/tell: runner, metrics and history every 10": [
            *base,
            "logging.history_every=10",
            "logging.metrics_every=10",
        ],
        "fused: bare Scheduler.run": None,
        "fused: runner (chunks of 256)": [*base, "loop=fused"],
    }
    times = {name: [] for name in variants}
    last_dir = None
    for repeat in range(args.repeats):
        for i, (name, overrides) in enumerate(variants.items()):
            if name.startswith("ask/tell: bare"):
                times[name].append(bare_loop(cfg, args.iterations))
            elif name.startswith("fused: bare"):
                times[name].append(bare_fused(cfg, args.iterations))
            else:
                seconds, last_dir = runner_loop(overrides, root / f"{i}_{repeat}")
                times[name].append(seconds)
    print("\n| loop | median s | runs (s) | overhead vs its bare loop |\n|---|---|---|---|")
    for name, values in times.items():
        bare = statistics.median(
            times[
                ("ask/tell: bare loop" if name.startswith("ask") else "fused: bare Scheduler.run")
            ]
        )
        median = statistics.median(values)
        print(
            f"| {name} | {median:.2f} | {', '.join(f'{v:.2f}' for v in values)} | "
            f"{(median / bare - 1) * 100:+.1f}% |"
        )

    # Checkpoints of the last runner run: size, and a synchronous write of its state.
    log = (last_dir / "run.log").read_text()
    waits = [float(s) for s in re.findall(r"checkpoint at iteration \d+ \(([\d.]+) s", log)]
    checkpoint = sorted((last_dir / "checkpoints").iterdir(), key=lambda p: int(p.name))[-1]
    size = sum(f.stat().st_size for f in checkpoint.rglob("*") if f.is_file())
    reader = Checkpointer(last_dir / "checkpoints")
    arrays, objects, meta = reader.restore()
    reader.close()
    writes = []
    for i in range(5):
        writer = Checkpointer(root / f"sync_{i}")
        start = time.perf_counter()
        writer.save(meta["iteration"], arrays, objects, meta)
        writer.close()
        writes.append(time.perf_counter() - start)
    print(
        f"\ncheckpoint: {size / 1e6:.2f} MB on disk; synchronous write (pickle + "
        f"orbax) median {statistics.median(writes) * 1000:.0f} ms over 5; the "
        f"runner's loop waited median {statistics.median(waits) * 1000:.0f} ms per "
        f"checkpoint (background writes)"
    )

    # Dask throughput.
    from ribsax.distributed import DaskEvaluator

    solutions = np.random.default_rng(0).normal(size=(args.dask_batch, 100))
    print("\n| Dask workers | solutions/s | ideal |\n|---|---|---|")
    for workers in (1, 2):
        with DaskEvaluator(
            sleepy_objective,
            n_workers=workers,
            processes=True,
            chunk_size=10,
            print_dashboard=False,
        ) as evaluator:
            evaluator(solutions[:20])  # Start-up.
            start = time.perf_counter()
            for _ in range(3):
                evaluator(solutions)
            rate = 3 * len(solutions) / (time.perf_counter() - start)
        print(f"| {workers} | {rate:.0f} | {100 * workers} |")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
