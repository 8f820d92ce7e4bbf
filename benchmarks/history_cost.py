"""Per-iteration cost of the runner's archive-history record, in one process.

Workload: pyribs' map_elites (``sphere_map_elites``: 100x100 grid, one
GaussianEmitter of 540, 100-D sphere, float32), ask/tell iterations. After each
iteration the script times (1) the runner's record, which keeps the solutions whose
result-archive add status is above 0 (``Experiment._record_insertions``), and (2)
the alternative, a record that reads the archive's index, objective and measures
and compares them with the previous record. Timing both on
the same iterations makes the comparison robust to a loaded machine. Then the fused
loop: ``Scheduler.run`` of all the iterations with and without ``history=True``
(the scan then also outputs every solution's status, objective and measures),
three alternating repeats on the same compiled loops.

Usage::

    python benchmarks/history_cost.py [--iterations 1000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ribsax.experiments import Experiment


def former_record(archive, prev):
    """The former history record: archive read and comparison with ``prev``."""
    data = archive.data(["index", "objective", "measures"])
    index = np.asarray(data["index"], dtype=np.int64)
    objective = np.asarray(data["objective"], dtype=np.float64)
    measures = np.asarray(data["measures"], dtype=np.float64).reshape(len(index), -1)
    prev_objective, prev_measures = prev
    changed = (prev_objective[index] != objective) | np.any(
        prev_measures[index] != measures, axis=1
    )
    prev_objective[index[changed]] = objective[changed]
    prev_measures[index[changed]] = measures[changed]
    return np.column_stack([index[changed], objective[changed], measures[changed]])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as root:
        experiment = Experiment("sphere_map_elites", logdir=Path(root) / "run", quiet=True)
        scheduler, task = experiment.scheduler, experiment.task
        archive = scheduler.result_archive
        prev = (
            np.full(archive.cells, np.nan),
            np.full((archive.cells, archive.measure_dim), np.nan),
        )
        key = jax.random.key(0)
        times = {
            "iteration (ask, evaluate, tell)": [],
            "history from the add statuses (now)": [],
            "history by archive comparison (former)": [],
        }
        for i in range(1, args.iterations + 1):
            start = time.perf_counter()
            solutions = scheduler.ask()
            objective, measures, _ = jax.device_get(
                task.jit_evaluate(solutions, jax.random.fold_in(key, i))
            )
            scheduler.tell(objective, measures)
            told = time.perf_counter()
            experiment._record_insertions(
                i, scheduler.result_add_info["status"], objective, measures
            )
            recorded = time.perf_counter()
            former_record(archive, prev)
            compared = time.perf_counter()
            if i > 20:  # After compilation.
                for name, seconds in zip(
                    times, (told - start, recorded - told, compared - recorded)
                ):
                    times[name].append(seconds)
    fused = {False: [], True: []}
    with tempfile.TemporaryDirectory() as root:
        experiment = Experiment(
            "sphere_map_elites", ["loop=fused"], logdir=Path(root) / "fused", quiet=True
        )
        for history in (False, True):  # Compile both.
            experiment.scheduler.run(experiment.task, 5, seed=0, history=history)
        for _ in range(3):
            for history in (False, True):
                result = experiment.scheduler.run(
                    experiment.task, args.iterations, seed=0, history=history
                )
                fused[history].append(result.run_time)
    print(
        f"jax {jax.__version__} on {jax.default_backend()}, {args.iterations} "
        f"iterations, {archive.stats.num_elites} elites at the end"
    )
    print("\n| per iteration | median ms | fastest ms |\n|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values) * 1e3:.3f} | {min(values) * 1e3:.3f} |")
    print("\n| fused Scheduler.run | median s | runs (s) |\n|---|---|---|")
    for history, values in fused.items():
        print(
            f"| history={history} | {statistics.median(values):.2f} | "
            f"{', '.join(f'{v:.2f}' for v in values)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
