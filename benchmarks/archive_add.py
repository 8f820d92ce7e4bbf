"""ribsax vs pyribs: ``archive.add`` from float64 NumPy batches, back to back in one
process.

Cases: GridArchive 100x100 and CVTArchive with 10,000 centroids, 100-D solutions and
2-D measures, at batch sizes 540 and 10,000, in two JAX modes:

- ``x64_off`` (JAX's default): ribsax's default archive dtype, float32;
- ``x64_on``: float64 archives, pyribs' default.

pyribs always runs with its defaults (float64). Both libraries get identical inputs,
always float64 NumPy arrays, as a pyribs user's code produces them: solutions ~ N(0,
1), measures uniform over the ranges, for CVT the same centroids (uniform, seed 0),
and fresh objectives every call (uniform in [0, 1) plus ``--drift`` times the call
number; the default drift of 1 makes each call replace the elite of every cell it
reaches), so insertions keep happening. The share inserted in steady state is
reported.

Two measurements per case:

1. **first calls**: a fresh archive of each library; the first ``add`` (for ribsax:
   trace + compile + run) is timed on its own, then the mean of the next 30 calls,
   with no other warm-up. A kernel that compiled again inside those calls (a new
   input layout, fill level, ...) shows here.
2. **steady state**: after warm-up, ``--repeats`` rounds of ``add`` calls on each
   library, alternating between rounds; the median over rounds of the mean per-call
   time.

Ratios are ``pyribs time / ribsax time`` (above 1 means ribsax is faster); the
target is >= 1.5x for both measurements in every case.

Usage::

    python benchmarks/archive_add.py            # full run (a few minutes)
    python benchmarks/archive_add.py --quick    # smoke run (seconds; numbers noisy)
    python benchmarks/archive_add.py --archives GridArchive   # grid cases only
    python benchmarks/archive_add.py --json results.json

Run it on an otherwise idle machine: other processes on the cores make wall-clock
numbers meaningless. On a shared machine, ``--clock cpu`` times the CPU time of this
process instead; the load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import jax
import numpy as np
from _common import machine_info, print_header, report

SOLUTION_DIM = 100
GRID_DIMS = (100, 100)
CVT_CELLS = 10_000
RANGES = [(-1.0, 1.0), (-1.0, 1.0)]
BATCHES = (540, 10_000)
#: Target speed-up (pyribs time / ribsax time), first calls
#: and steady state alike.
TARGET = 1.5
#: Calls averaged after the first one ("first calls").
FIRST_CALLS = 30


def make_archives(kind, centroids):
    """A (ribsax, ribs) pair of archives with each library's default dtypes."""
    import ribs.archives

    import ribsax.archives

    if kind == "GridArchive":
        kwargs = {"solution_dim": SOLUTION_DIM, "dims": GRID_DIMS, "ranges": RANGES, "seed": 0}
        return ribsax.archives.GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)
    kwargs = {"solution_dim": SOLUTION_DIM, "centroids": centroids, "ranges": RANGES, "seed": 0}
    return ribsax.archives.CVTArchive(**kwargs), ribs.archives.CVTArchive(**kwargs)


class Inputs:
    """A pool of pre-generated float64 batches; objectives rise with the call
    number."""

    def __init__(self, batch, pool=4, seed=0, drift=1.0):
        rng = np.random.default_rng(seed)
        lo = np.array([r[0] for r in RANGES])
        hi = np.array([r[1] for r in RANGES])
        self.solutions = [rng.normal(size=(batch, SOLUTION_DIM)) for _ in range(pool)]
        self.measures = [rng.uniform(lo, hi, size=(batch, len(RANGES))) for _ in range(pool)]
        self.objectives = [rng.uniform(size=batch) for _ in range(pool)]
        self.offsets = drift * np.arange(1_000_000, dtype=np.float64)
        self.calls = 0

    def next(self):
        """Arguments for the next ``add`` call."""
        i = self.calls % len(self.solutions)
        offset = self.offsets[self.calls % len(self.offsets)]
        self.calls += 1
        return (self.solutions[i], self.objectives[i] + offset, self.measures[i])


#: Clock used by :func:`time_calls` (``--clock``).
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = CLOCKS["wall"]


def time_calls(archive, inputs, n):
    """Mean seconds per ``add`` over ``n`` calls (objectives prepared outside)."""
    args = [inputs.next() for _ in range(n)]
    start = _clock()
    for solution, objective, measures in args:
        archive.add(solution, objective, measures)
    return (_clock() - start) / n


def calls_for(archive, inputs, min_round_s):
    """Number of calls that makes a round last about ``min_round_s``."""
    per_call = time_calls(archive, inputs, 3)
    return max(3, int(np.ceil(min_round_s / max(per_call, 1e-7))))


def first_calls(archive, inputs):
    """``(first call seconds, mean seconds of the next FIRST_CALLS calls)`` on a
    fresh archive, with no other warm-up."""
    args = inputs.next()
    start = time.perf_counter()
    archive.add(*args)
    first = time.perf_counter() - start
    return first, time_calls(archive, inputs, FIRST_CALLS)


def bench_case(kind, batch, mode, centroids, repeats, warmup, min_round_s, drift):
    """Times one (archive kind, batch size, x64 mode) case; returns a result dict."""
    ours, theirs = make_archives(kind, centroids)
    our_inputs = Inputs(batch, drift=drift)
    their_inputs = Inputs(batch, drift=drift)
    ours_first, ours_next = first_calls(ours, our_inputs)
    theirs_first, theirs_next = first_calls(theirs, their_inputs)

    for _ in range(warmup):
        ours.add(*our_inputs.next())
        theirs.add(*their_inputs.next())

    # Sanity: both libraries gave the same statuses on the same first batch.
    check = Inputs(batch, pool=1, seed=123)
    args = check.next()
    pair = make_archives(kind, centroids)
    same_status = np.array_equal(pair[0].add(*args)["status"], pair[1].add(*args)["status"])

    n_ours = calls_for(ours, our_inputs, min_round_s)
    n_theirs = calls_for(theirs, their_inputs, min_round_s)
    ours_t, theirs_t = [], []
    for _ in range(repeats):
        ours_t.append(time_calls(ours, our_inputs, n_ours))
        theirs_t.append(time_calls(theirs, their_inputs, n_theirs))

    status = ours.add(*our_inputs.next())["status"]
    ribsax_s = statistics.median(ours_t)
    ribs_s = statistics.median(theirs_t)
    return {
        "archive": kind,
        "batch": batch,
        "mode": mode,
        "ribsax_dtype": np.dtype(ours.dtypes["solution"]).name,
        "ribsax_first_call_ms": ours_first * 1e3,
        "ribs_first_call_ms": theirs_first * 1e3,
        "ribsax_next30_ms": ours_next * 1e3,
        "ribs_next30_ms": theirs_next * 1e3,
        "first_calls_ratio": theirs_next / ours_next,
        "ribsax_ms": ribsax_s * 1e3,
        "ribs_ms": ribs_s * 1e3,
        "ratio": ribs_s / ribsax_s,
        "target": TARGET,
        "ribsax_spread_ms": (min(ours_t) * 1e3, max(ours_t) * 1e3),
        "ribs_spread_ms": (min(theirs_t) * 1e3, max(theirs_t) * 1e3),
        "calls_per_round": (n_ours, n_theirs),
        "inserted_fraction": float(np.mean(status > 0)),
        "first_batch_statuses_match": bool(same_status),
    }


def format_table(results) -> str:
    """Markdown table of the results."""
    lines = [
        "| archive | batch | mode (ribsax dtype) | first call ribsax / pyribs (ms) "
        "| next 30: ribsax / pyribs (ms) | ratio | steady: ribsax / pyribs (ms) "
        "| ratio | target |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        ok = min(r["ratio"], r["first_calls_ratio"]) >= r["target"]
        lines.append(
            f"| {r['archive']} | {r['batch']:,} | {r['mode']} ({r['ribsax_dtype']}) "
            f"| {r['ribsax_first_call_ms']:.0f} / {r['ribs_first_call_ms']:.1f} "
            f"| {r['ribsax_next30_ms']:.3f} / {r['ribs_next30_ms']:.3f} "
            f"| {r['first_calls_ratio']:.2f}x "
            f"| {r['ribsax_ms']:.3f} / {r['ribs_ms']:.3f} | {r['ratio']:.2f}x "
            f"| >= {r['target']:g}x ({'ok' if ok else 'MISSED'}) |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--quick", action="store_true", help="short smoke run (few repeats, short rounds)"
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed rounds per library (default 7, quick 2)"
    )
    parser.add_argument(
        "--round-seconds",
        type=float,
        default=None,
        help="approximate length of one round (default 0.5, quick 0.05)",
    )
    parser.add_argument(
        "--modes", default="x64_off,x64_on", help="comma-separated subset of x64_off,x64_on"
    )
    parser.add_argument(
        "--archives",
        default="GridArchive,CVTArchive",
        help="comma-separated subset of GridArchive,CVTArchive",
    )
    parser.add_argument(
        "--drift",
        type=float,
        default=1.0,
        help="objective offset added per call (default: %(default)s)",
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall: elapsed time (needs an idle machine); cpu: CPU "
        "time of this process, which other processes on the cores "
        "disturb much less (default: %(default)s)",
    )
    parser.add_argument("--json", default=None, help="also write results here")
    args = parser.parse_args(argv)
    global _clock
    _clock = CLOCKS[args.clock]
    repeats = args.repeats or (2 if args.quick else 7)
    round_s = args.round_seconds or (0.05 if args.quick else 0.5)
    warmup = 2 if args.quick else 5
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    kinds = [k.strip() for k in args.archives.split(",") if k.strip()]
    if not set(kinds) <= {"GridArchive", "CVTArchive"}:
        parser.error("--archives must name GridArchive and/or CVTArchive")
    if not set(modes) <= {"x64_off", "x64_on"} or modes != sorted(
        modes, key=["x64_off", "x64_on"].index
    ):
        parser.error("--modes must list x64_off before x64_on")

    info = machine_info()
    print_header("archive add: ribsax vs pyribs", info)
    print(
        f"- settings: repeats={repeats}, round~{round_s}s, warmup={warmup}, "
        f"drift={args.drift}, clock={args.clock}, "
        f"solution_dim={SOLUTION_DIM}, "
        f"grid={GRID_DIMS}, cvt_cells={CVT_CELLS}, inputs float64 NumPy"
    )
    print(
        "- load average at start (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    centroids = np.random.default_rng(0).uniform(
        [r[0] for r in RANGES], [r[1] for r in RANGES], size=(CVT_CELLS, len(RANGES))
    )

    results = []
    for mode in modes:
        jax.config.update("jax_enable_x64", mode == "x64_on")
        for kind in kinds:
            for batch in BATCHES:
                res = bench_case(kind, batch, mode, centroids, repeats, warmup, round_s, args.drift)
                results.append(res)
                print(
                    f"  {kind:12s} batch {batch:6d} {mode}: first call "
                    f"{res['ribsax_first_call_ms']:.0f} ms, next 30 "
                    f"x{res['first_calls_ratio']:.2f}, steady ribsax "
                    f"{res['ribsax_ms']:8.3f} ms, pyribs {res['ribs_ms']:8.3f} ms, "
                    f"x{res['ratio']:.2f} (inserted {res['inserted_fraction']:.0%}; "
                    f"statuses match: {res['first_batch_statuses_match']})",
                    flush=True,
                )
    print("- load average at end (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    report(format_table(results), info, results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
