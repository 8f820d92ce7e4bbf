"""ProximityArchive.add, ribsax vs pyribs, at growing archive sizes.

Each library's archive (2-D measures, 100-D solutions, k_neighbors=15, novelty
threshold 0.5, float64) is first filled with ``N`` entries with measures uniform in
the unit square (one add: an empty archive accepts everything). Then a batch of 540
solutions (the sphere configurations' batch) is added ``--repeats`` times:

* ``query``: measures drawn among the stored ones plus a small jitter, so none is
  novel: the cost of computing the novelty of 540 points against ``N`` entries
  (pyribs queries its KD-tree; ribsax queries its own KD-tree, or with
  ``nearest_neighbors="jax"`` runs its bucket grid / blocked k-NN kernel).
* ``insert``: a few solutions of the batch are novel (far away), so both archives
  append them (pyribs then rebuilds its KD-tree over all entries).
* ``nslc``: the same ``query`` batch with local competition on (statuses, values,
  local competition, replacement of the nearest neighbours).

ribsax is timed with each neighbour search of ``--searches`` (default: both). The
ribsax timings exclude compilation (one warm-up add per case). All run back to back
in one process; a ratio is pyribs time / ribsax time (above 1: ribsax faster).

Usage::

    python benchmarks/proximity_add.py                 # N = 1,000, 10,000, 100,000
    python benchmarks/proximity_add.py --sizes 1000,200000 --repeats 5
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np
from _common import machine_info, print_header

BATCH = 540
SOLUTION_DIM = 100


def build(lib, n, local_competition, rng, **kwargs):
    """An archive of ``lib`` holding ``n`` entries (threshold 0.5, 15 neighbours).

    The threshold is far above the mean distance to the 15 nearest of 1,000 or more
    points in the unit square, so a measure inside the square is never novel."""
    capacity = 1 << max(7, int(np.ceil(np.log2(max(n, 1) + 4 * BATCH))))
    archive = lib.archives.ProximityArchive(
        solution_dim=SOLUTION_DIM,
        measure_dim=2,
        k_neighbors=15,
        novelty_threshold=0.5,
        local_competition=local_competition,
        initial_capacity=capacity,
        seed=0,
        **kwargs,
    )
    measures = rng.uniform(size=(n, 2))
    archive.add(np.zeros((n, SOLUTION_DIM)), rng.uniform(size=n), measures)
    return archive, measures


def batches(kind, measures, rng, repeats):
    out = []
    for _ in range(repeats + 1):  # The first is the warm-up.
        near = measures[rng.integers(len(measures), size=BATCH)]
        near = near + rng.normal(scale=1e-6, size=near.shape)
        if kind == "insert":
            near[:5] = 10.0 + rng.uniform(size=(5, 2)) * 100
        out.append((rng.normal(size=(BATCH, SOLUTION_DIM)), rng.uniform(size=BATCH), near))
    return out


def time_adds(archive, data):
    archive.add(*data[0])
    times = []
    for batch in data[1:]:
        start = time.perf_counter()
        archive.add(*batch)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--searches",
        default="scipy_kd_tree,jax",
        help="ribsax's nearest_neighbors values to time (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    import ribs

    import ribsax

    print_header("ProximityArchive.add: ribsax vs pyribs", machine_info())
    searches = args.searches.split(",")
    cases = [(f"ribsax {search}", ribsax, {"nearest_neighbors": search}) for search in searches] + [
        ("pyribs", ribs, {})
    ]
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        for kind in ("query", "insert", "nslc"):
            lc = kind == "nslc"
            result = {}
            for name, lib, kwargs in cases:
                rng = np.random.default_rng(n)
                archive, measures = build(lib, n, lc, rng, **kwargs)
                data = batches(kind, measures, np.random.default_rng(1), args.repeats)
                result[name] = time_adds(archive, data)
            rows.append((n, kind, result))
            print(
                f"  N={n:>7} {kind:6}: "
                + ", ".join(f"{name} {t * 1e3:.2f} ms" for name, t in result.items()),
                flush=True,
            )
    print()
    names = [name for name, _, _ in cases]
    print(
        "| entries | case | "
        + " | ".join(f"{name} ms" for name in names)
        + " | "
        + " | ".join(f"speed-up ({name})" for name in names[:-1])
        + " |"
    )
    print("|---:|---|" + "---:|" * (2 * len(names) - 1))
    for n, kind, result in rows:
        times = " | ".join(f"{result[name] * 1e3:.2f}" for name in names)
        ratios = " | ".join(f"{result['pyribs'] / result[name]:.2f}x" for name in names[:-1])
        print(f"| {n:,} | {kind} | {times} | {ratios} |")


if __name__ == "__main__":
    main()
