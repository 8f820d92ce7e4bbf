"""ribsax's fused MAP-Elites loop against the memory roofline of the accelerator.

Measures ``Scheduler.run(task, iterations, fused=True)`` (ask -> evaluate -> tell of
many iterations in one compiled loop) on two configurations and compares its time
per iteration with the time the iteration's unavoidable device-memory traffic takes
at the accelerator's bandwidth. Written for an NVIDIA H200 (HBM3e, about 4.8 TB/s)
at batch 65,536 with 100-D solutions; it runs anywhere (on a CPU the bandwidth
given with ``--bandwidth-gbs`` should be the machine's, the default is the H200's).

Configurations (``--configs``; the grid and CVT cases of ``benchmarks/qdax.py`` at
its GPU batch, but on the sphere with Gaussian variation):

- ``grid``: ``GridArchive(dims=(100, 100))`` over the 2-D measures of the
  ``--dim``-D sphere (``ribsax.tasks.sphere``; its ``measure_ranges`` and
  ``qd_score_offset``), one ``GaussianEmitter`` with ``--batch`` solutions per
  iteration, ``x0 = zeros``, sigma from the ``map_elites`` configuration of
  ``ribsax.examples.sphere`` (0.5).
- ``cvt``: the same on a ``CVTArchive`` of 10,000 centroids drawn uniformly over
  the measure ranges (seed 0). They are NOT k-means centroids: k-means over
  100,000 samples would take longer than the measurement, and the cost of an
  iteration should barely depend on where the centroids are (the archive finds
  cells through its bucket grid either way; uniform centroids may give a few more
  candidates per bucket). The emitter's sigma comes from ``cvt_map_elites`` (0.5).

Everything is float32 (JAX's default without x64). No initial population: the
warm-up run fills the archive.

**1. The fused loop.** A first ``Scheduler.run(task, --iterations, seed=--seed)``
compiles the loop (its ``compile_time`` is reported) and warms up; then
``--rounds`` runs of ``--iterations`` each continue the same run; ms/iter is the
median over rounds of ``run_time / iterations``. A JAX monitoring listener counts
backend compilations during the timed rounds: it must stay at 0 (the fused loop
compiles one chunk of iterations per configuration; see ``_loop_runner.CHUNK``).

**2. Byte model.** The bytes one iteration must move through device memory at
least, with ``B`` = batch, ``D`` = solution dim, ``m`` = measure dim (2), ``C`` =
cells, ``s`` = 4 (float32), index and occupancy entries of 4 B, and ``W = min(B,
C)`` the largest number of solutions an iteration can insert:

====================  ======================================================
``ask_parents``        read the sampled parents: ``B * D * s`` (plus the
                       parents' cell indices, ``B * 4``)
``ask_offspring``      write the offspring: ``B * D * s``
``eval_read``          the evaluation reads the offspring: ``B * D * s``
``eval_write``         it writes objective and measures: ``B * (1 + m) * s``
``add_rows``           the insertion reads them back (``B * (1 + m) * s``) and
                       each row's cell threshold and occupancy (``B * (s + 4)``)
``add_cells``          per-cell arrays (objective, threshold, occupancy) read
                       and written once: ``2 * C * (2 s + 4)``; CVT also
                       reads its centroids once, ``C * m * s`` (the grid's cell
                       is arithmetic; the bucket grid ribsax builds over the
                       centroids speeds the search up but is not needed, so it
                       is not counted)
``add_winners``        at most ``W`` winning rows read from the offspring
                       (``W * D * s``) and written to the archive with their
                       objective, measures and threshold (``W * (D + 2 + m) *
                       s``)
``metrics``            statistics read the per-cell objective and occupancy
                       once: ``C * (s + 4)`` (ribsax keeps them incrementally
                       and reads only scalars, so this over-counts it)
====================  ======================================================

Roofline time = total bytes / ``--bandwidth-gbs`` (GB/s, 1 GB = 1e9 B); ratio =
measured ms/iter / roofline ms (1 would be a loop running at the bandwidth; the
ratio says how far from it the loop is). The model is generous to the loop in
two ways, so the ratio is if anything an underestimate of the gap: ``W`` is an upper
bound (the inserted rows per iteration actually measured are printed beside it),
and parents are counted as HBM reads although a sparse archive serves them from
cache. Arithmetic is not modelled: the sphere costs ``O(B * D)`` flops and the CVT
cell search a few distance evaluations per solution, far below the bytes' time
on a GPU.

**3. Attribution.** After the timed rounds, the scheduler's state is read with
``ribsax.functional.init`` and each part of an iteration runs alone, jitted, in a
loop of the same structure as the fused loop (a ``lax.fori_loop`` with a run-time
trip count, i.e. a while loop), ``--iterations`` per round, ``--rounds`` rounds,
median, after a warm-up call (their compile times are reported too):

- (a) ``ask``: ``ribsax.functional.ask`` (the emitter samples parents from the
  archive and mutates them; the emitter state and the offspring are the loop
  state, the archive an input);
- (b) ``evaluate``: the task's ``evaluate`` on two batches of offspring taken
  from (a), alternating (so the compiler cannot hoist it out of the loop), the
  outputs summed into the loop state;
- (c) ``archive add``: ``ribsax.functional.loop_add`` (the fused loop's insertion)
  of one of those batches with their evaluated objectives and measures,
  alternating, into the archive carried by the loop (later passes of the same
  batches insert nothing; the insertions of the first pass are the ones printed
  as "measured inserted rows");
- (d) ``metrics``: ``ribsax.functional.loop_stats`` of the archive (alternating
  between two copies, for the same reason as in (b));
- (e) ``loop``: the same loop with an empty body (the per-iteration cost of the
  loop itself, which each of (a)-(d) pays once too).

Shares are of the fused loop's ms/iter; (a)-(d) are shown net of (e)
(``net = component - loop``) so that the shares of (a)-(e) and "rest" add up
to 100 %. "rest" is what the separate parts do not explain: the emitters' tell,
the fused loop's bookkeeping (keys, metrics output), and fusion effects (negative
when the fused loop runs the parts faster together than apart).

Run it on an otherwise idle machine: the rounds are short (a fraction of a second
on a GPU), so anything else running shows in the numbers.

**4. Profile.** ``--profile DIR`` writes a ``jax.profiler`` trace of 5 fused
iterations per configuration (open it with TensorBoard or Perfetto).

Usage::

    python benchmarks/fused_roofline.py                               # H200 defaults
    python benchmarks/fused_roofline.py --json roofline.json --profile /tmp/trace
    python benchmarks/fused_roofline.py --batch 512 --dim 10 --iterations 20 \\
        --rounds 2                                                    # CPU smoke run
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from _common import machine_info, print_header, report

CONFIGS = ("grid", "cvt")
#: The cells of ``benchmarks/qdax.py``'s grid and CVT cases.
GRID_DIMS = (100, 100)
CVT_CELLS = 10_000
#: The sphere configurations whose Gaussian emitter settings are used.
SPHERE_CONFIG = {"grid": "map_elites", "cvt": "cvt_map_elites"}
#: Batches of offspring cycled through by the evaluation and add timings.
POOL = 2
#: Fused iterations traced with ``--profile``.
PROFILE_ITERATIONS = 5
COMPONENTS = ("ask", "evaluate", "add", "metrics", "loop")
COMPONENT_LABELS = {
    "ask": "(a) ask",
    "evaluate": "(b) evaluate",
    "add": "(c) archive add",
    "metrics": "(d) metrics",
    "loop": "(e) loop",
    "rest": "rest",
}
_BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


# ---------------------------------------------------------------------------
# Compilation counter.
# ---------------------------------------------------------------------------
class _CompileCounter:
    """Counts XLA backend compilations (a JAX monitoring listener, registered
    once per process)."""

    count = 0
    _registered = False

    @classmethod
    def start(cls) -> int:
        """Registers the listener if needed; returns the current count."""
        if not cls._registered:
            jax.monitoring.register_event_duration_secs_listener(cls._listen)
            cls._registered = True
        return cls.count

    @classmethod
    def _listen(cls, event, duration, **kwargs):
        del duration, kwargs
        if event == _BACKEND_COMPILE_EVENT:
            cls.count += 1


# ---------------------------------------------------------------------------
# Setup.
# ---------------------------------------------------------------------------
def uniform_centroids(ranges, cells, seed=0):
    """``cells`` centroids drawn uniformly over ``ranges`` (float32)."""
    rng = np.random.default_rng(seed)
    low = np.array([r[0] for r in ranges])
    high = np.array([r[1] for r in ranges])
    return rng.uniform(low, high, size=(cells, len(ranges))).astype(np.float32)


def build_scheduler(config, task, batch, seed):
    """The scheduler of ``config`` (see the module docstring)."""
    from ribsax.archives import CVTArchive, GridArchive
    from ribsax.emitters import GaussianEmitter
    from ribsax.examples.sphere import CONFIG
    from ribsax.schedulers import Scheduler

    common = {
        "solution_dim": task.solution_dim,
        "ranges": task.measure_ranges,
        "qd_score_offset": task.qd_score_offset,
        "seed": seed,
        "dtype": np.float32,
    }
    if config == "grid":
        archive = GridArchive(dims=GRID_DIMS, **common)
    else:
        archive = CVTArchive(centroids=uniform_centroids(task.measure_ranges, CVT_CELLS), **common)
    ((name, kwargs, count),) = CONFIG[SPHERE_CONFIG[config]]["emitters"]
    assert name == "GaussianEmitter" and count == 1, (name, count)
    emitter = GaussianEmitter(
        archive,
        sigma=kwargs["sigma"],
        x0=np.zeros(task.solution_dim, np.float32),
        batch_size=batch,
        seed=seed,
    )
    return Scheduler(archive, [emitter])


# ---------------------------------------------------------------------------
# Byte model.
# ---------------------------------------------------------------------------
def byte_model(batch, dim, cells, measure_dim=2, itemsize=4, index_bytes=0):
    """Bytes one fused iteration must move at least (see the module docstring).

    Args:
        batch: Solutions per iteration (``B``).
        dim: Solution dimension (``D``).
        cells: Archive cells (``C``).
        measure_dim: Measure dimension (``m``).
        itemsize: Bytes per float (``s``).
        index_bytes: Bytes of the data the cell index must read (CVT: the
            centroids).

    Returns:
        dict term -> bytes, in the docstring's order.
    """
    b, d, c, m, s = batch, dim, cells, measure_dim, itemsize
    w = min(b, c)
    return {
        "ask_parents": b * d * s + b * 4,
        "ask_offspring": b * d * s,
        "eval_read": b * d * s,
        "eval_write": b * (1 + m) * s,
        "add_rows": b * (1 + m) * s + b * (s + 4),
        "add_cells": 2 * c * (2 * s + 4) + index_bytes,
        "add_winners": w * d * s + w * (d + 2 + m) * s,
        "metrics": c * (s + 4),
    }


def roofline_ms(total_bytes, bandwidth_gbs) -> float:
    """Milliseconds to move ``total_bytes`` at ``bandwidth_gbs`` GB/s."""
    return total_bytes / (bandwidth_gbs * 1e9) * 1e3


# ---------------------------------------------------------------------------
# Timing.
# ---------------------------------------------------------------------------
def time_loop(body, carry, consts, iterations, rounds):
    """Times ``body(i, carry, consts) -> carry`` in a jitted ``fori_loop`` with a
    run-time trip count (a while loop, as in the fused loop).

    Returns:
        ``(compile_s, ms_per_iteration, compiled)``: the median over ``rounds``
        calls of ``iterations`` iterations each, after one untimed call, and the
        compiled loop ``(carry, consts, n) -> carry``.
    """

    def loop(carry, consts, n):
        return jax.lax.fori_loop(0, n, lambda i, c: body(i, c, consts), carry)

    n = jnp.asarray(iterations, jnp.int32)
    start = time.perf_counter()
    compiled = jax.jit(loop).lower(carry, consts, n).compile()
    compile_s = time.perf_counter() - start
    carry = jax.block_until_ready(compiled(carry, consts, n))
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        carry = jax.block_until_ready(compiled(carry, consts, n))
        samples.append((time.perf_counter() - start) / iterations)
    return compile_s, statistics.median(samples) * 1e3, compiled


def time_components(scheduler, task, iterations, rounds, seed):
    """Times (a)-(e) of the module docstring on the scheduler's current state.

    Returns:
        ``(ms, compile_s, inserted)``: dicts component -> ms per iteration and
        component -> compile seconds, and the rows the first pass of (c) inserted
        per iteration (from offspring of the current state).
    """
    from ribsax import functional as F

    config, state = F.init(scheduler)
    archive = state.carry[0]
    ms, compile_s = {}, {}

    # (a) ask; the offspring of its first calls feed (b) and (c). The ask only
    # reads the archive, so the loop carries the emitters' states and the
    # offspring, and the archive is a constant argument.
    pool, st = [], state
    for _ in range(POOL):
        st, solutions = F.ask(config, st)
        pool.append(solutions)
    pool = jnp.stack(pool)
    _, result, emitter_states, bandit = state.carry

    def ask_body(i, carry, arch):
        del i
        st = F.State((arch, result, carry[0], bandit), carry[1], None)
        st, solutions = F.ask(config, st)
        return st.carry[2], solutions

    compile_s["ask"], ms["ask"], _ = time_loop(
        ask_body, (emitter_states, state.solutions), archive, iterations, rounds
    )

    # (b) evaluate.
    evaluate = jax.jit(task.evaluate)
    key = jax.random.key(seed)
    outs = [evaluate(pool[k], jax.random.fold_in(key, k)) for k in range(POOL)]
    objectives = jnp.stack([o[0] for o in outs]).astype(config.objective_dtype)
    measures = jnp.stack([o[1] for o in outs]).astype(config.measures_dtype)

    def eval_body(i, acc, consts):
        sols, key = consts
        out = task.evaluate(sols[i % POOL], jax.random.fold_in(key, i))
        return (acc[0] + out[0].astype(acc[0].dtype), acc[1] + out[1].astype(acc[1].dtype))

    compile_s["evaluate"], ms["evaluate"], _ = time_loop(
        eval_body,
        (jnp.zeros_like(objectives[0]), jnp.zeros_like(measures[0])),
        (pool, key),
        iterations,
        rounds,
    )

    # (c) archive add.
    spec = config.archive_spec
    extra = set(spec.field_names) - {"solution", "objective", "measures"}
    if extra:
        raise ValueError(f"archives with extra fields are not supported: {extra}")

    def add_body(i, carry, consts):
        arch, inserted = carry
        sols, objs, meas = consts
        data = {"solution": sols[i % POOL], "objective": objs[i % POOL], "measures": meas[i % POOL]}
        arch, info = F.loop_add(spec, arch, data)
        return arch, inserted + jnp.sum(info["status"] > 0).astype(jnp.int32)

    add_consts = (pool, objectives, measures)
    zero = jnp.zeros((), jnp.int32)
    compile_s["add"], ms["add"], add_loop = time_loop(
        add_body, (archive, zero), add_consts, iterations, rounds
    )
    # Insertions of the fresh batches into the state the fused loop left (the same
    # executable: the trip count is a run-time argument).
    _, count = add_loop((archive, zero), add_consts, jnp.asarray(POOL, jnp.int32))
    inserted = int(count) / POOL

    # (d) metrics, alternating between two copies of the archive.
    stacked = jax.tree.map(lambda x: jnp.stack([x, x]), archive)
    stats_shape = jax.eval_shape(F.loop_stats, archive)
    acc0 = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), stats_shape)

    def metrics_body(i, acc, arch):
        stats = F.loop_stats(jax.tree.map(lambda x: x[i % 2], arch))
        return jax.tree.map(lambda a, v: a + v.astype(a.dtype), acc, stats)

    compile_s["metrics"], ms["metrics"], _ = time_loop(
        metrics_body, acc0, stacked, iterations, rounds
    )

    # (e) the loop alone.
    compile_s["loop"], ms["loop"], _ = time_loop(
        lambda i, x, _: x * 0.5 + i.astype(x.dtype),
        jnp.zeros((), jnp.float32),
        (),
        iterations,
        rounds,
    )
    return ms, compile_s, inserted


def attribute(ms, fused_ms) -> dict:
    """Per component: measured ms, net ms (minus the loop's own cost for (a)-(d))
    and net share of the fused iteration; plus "rest"."""
    out = {}
    loop = ms["loop"]
    for name in COMPONENTS:
        net = ms[name] if name == "loop" else ms[name] - loop
        out[name] = {"ms": ms[name], "net_ms": net, "share": net / fused_ms}
    rest = fused_ms - sum(v["net_ms"] for v in out.values())
    out["rest"] = {"ms": rest, "net_ms": rest, "share": rest / fused_ms}
    return out


def run_config(config, args):
    """Builds, times and models one configuration; returns a result dict."""
    from ribsax.tasks import sphere

    task = sphere(args.dim)
    print(
        f"\n## {config}: batch {args.batch}, dim {args.dim}, "
        f"{args.iterations} iterations x {args.rounds} rounds",
        flush=True,
    )
    start = time.perf_counter()
    scheduler = build_scheduler(config, task, args.batch, args.seed)
    build_s = time.perf_counter() - start
    cells = scheduler.archive.cells
    print(f"- build (archive + emitter): {build_s:.2f} s, {cells} cells")

    start = time.perf_counter()
    first = scheduler.run(task, args.iterations, seed=args.seed)
    warmup_s = time.perf_counter() - start
    print(
        f"- fused loop compile: {first.compile_time:.2f} s (warm-up run {warmup_s:.2f} s in all)",
        flush=True,
    )

    compiles_before = _CompileCounter.start()
    samples, late_compile = [], 0.0
    for rnd in range(args.rounds):
        result = scheduler.run(task, args.iterations)
        late_compile += result.compile_time
        samples.append(result.run_time / args.iterations)
        print(f"  round {rnd + 1}: {samples[-1] * 1e3:.4f} ms/iter", flush=True)
    recompiles = _CompileCounter.count - compiles_before
    fused_ms = statistics.median(samples) * 1e3
    if recompiles or late_compile:
        print(
            f"  WARNING: {recompiles} compilations after warm-up "
            f"(Scheduler.run compile_time {late_compile:.2f} s)"
        )
    stats = scheduler.archive.stats

    if args.profile:
        with jax.profiler.trace(f"{args.profile}/{config}", create_perfetto_trace=True):
            scheduler.run(task, PROFILE_ITERATIONS)
        print(f"- profile of {PROFILE_ITERATIONS} iterations: {args.profile}/{config}")
        print_kernel_summary(f"{args.profile}/{config}", PROFILE_ITERATIONS)

    ms, comp_compile, inserted = time_components(
        scheduler, task, args.iterations, args.rounds, args.seed
    )
    parts = attribute(ms, fused_ms)

    itemsize = np.dtype(np.float32).itemsize
    index_bytes = cells * task.measure_dim * itemsize if config == "cvt" else 0
    terms = byte_model(args.batch, args.dim, cells, task.measure_dim, itemsize, index_bytes)
    total = sum(terms.values())
    roof = roofline_ms(total, args.bandwidth_gbs)
    return {
        "config": config,
        "batch": args.batch,
        "dim": args.dim,
        "cells": cells,
        "iterations": args.iterations,
        "rounds": args.rounds,
        "build_s": build_s,
        "compile_s": first.compile_time,
        "ms_per_iter": fused_ms,
        "ms_per_iter_rounds": [s * 1e3 for s in samples],
        "recompiles_after_warmup": recompiles,
        "late_compile_s": late_compile,
        "coverage": float(stats.coverage),
        "num_elites": int(stats.num_elites),
        "bytes": terms,
        "bytes_total": total,
        "max_inserted_rows": min(args.batch, cells),
        "measured_inserted_rows": inserted,
        "bandwidth_gbs": args.bandwidth_gbs,
        "roofline_ms": roof,
        "ratio": fused_ms / roof,
        "components": parts,
        "component_compile_s": comp_compile,
    }


# ---------------------------------------------------------------------------
# Output.
# ---------------------------------------------------------------------------
def format_table(results, device_kind) -> str:
    """The summary table, the byte model and the breakdown (markdown)."""
    lines = [
        f"Device: {device_kind}; roofline at {results[0]['bandwidth_gbs']:g} GB/s.",
        "",
        "| config | batch | dim | cells | ms/iter | compile s | recompiles | "
        "MB/iter (model) | roofline ms | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['config']} | {r['batch']} | {r['dim']} | {r['cells']} | "
            f"{r['ms_per_iter']:.4f} | {r['compile_s']:.1f} | "
            f"{r['recompiles_after_warmup']} | {r['bytes_total'] / 1e6:.2f} | "
            f"{r['roofline_ms']:.4f} | {r['ratio']:.1f}x |"
        )
    for r in results:
        lines += [
            "",
            f"Byte model, {r['config']} (inserted rows: model "
            f"<= {r['max_inserted_rows']}, measured "
            f"{r['measured_inserted_rows']:.0f} per iteration):",
            "",
            "| term | MB | share | roofline ms |",
            "|---|---|---|---|",
        ]
        for name, value in r["bytes"].items():
            lines.append(
                f"| {name} | {value / 1e6:.3f} | "
                f"{100 * value / r['bytes_total']:.1f} % | "
                f"{roofline_ms(value, r['bandwidth_gbs']):.5f} |"
            )
        lines += [
            "",
            f"Breakdown, {r['config']} (fused {r['ms_per_iter']:.4f} ms/iter; (a)-(d) net of (e)):",
            "",
            "| part | ms (alone) | net ms | share |",
            "|---|---|---|---|",
        ]
        for name, part in r["components"].items():
            alone = "" if name == "rest" else f"{part['ms']:.4f}"
            lines.append(
                f"| {COMPONENT_LABELS[name]} | {alone} | "
                f"{part['net_ms']:.4f} | {100 * part['share']:.1f} % |"
            )
    return "\n".join(lines)


def parse_args(argv):
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--batch", type=int, default=65_536, help="solutions per iteration (default 65536)"
    )
    parser.add_argument("--dim", type=int, default=100, help="solution dimension")
    parser.add_argument(
        "--iterations", type=int, default=200, help="iterations per timed run (default 200)"
    )
    parser.add_argument(
        "--rounds", type=int, default=5, help="timed runs; the median is reported (default 5)"
    )
    parser.add_argument(
        "--configs", default=",".join(CONFIGS), help="comma-separated among " + ", ".join(CONFIGS)
    )
    parser.add_argument(
        "--bandwidth-gbs",
        type=float,
        default=4800.0,
        help="memory bandwidth in GB/s for the roofline (default 4800, an H200's HBM3e)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument(
        "--profile",
        default=None,
        metavar="DIR",
        help="write a jax.profiler trace of a few fused iterations per configuration under DIR",
    )
    args = parser.parse_args(argv)
    args.configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    for config in args.configs:
        if config not in CONFIGS:
            parser.error(f"unknown configuration {config!r}; choose among {', '.join(CONFIGS)}")
    if not args.configs:
        parser.error("no configuration given")
    for name in ("batch", "dim", "iterations", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.dim < 2:
        parser.error("--dim must be at least 2 (the sphere has two measures)")
    if args.bandwidth_gbs <= 0:
        parser.error("--bandwidth-gbs must be positive")
    return args


def kernel_times(trace_dir):
    """Total duration (µs) of each op in the perfetto trace under ``trace_dir``,
    summed by name: the device's kernels when the trace has a device process
    (a GPU's streams), otherwise every complete event (the CPU's XLA ops and the
    host's calls). Returns ``(times, where)``."""
    paths = sorted(glob.glob(f"{trace_dir}/**/perfetto_trace.json.gz", recursive=True))
    if not paths:
        return {}, "no perfetto trace found"
    with gzip.open(paths[-1], "rt") as handle:
        events = json.load(handle)
    events = events.get("traceEvents", events)
    names = {
        e["pid"]: e.get("args", {}).get("name", "")
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    device = {pid for pid, name in names.items() if "/device:" in name and "CPU" not in name}
    times = collections.Counter()
    for event in events:
        if event.get("ph") != "X" or (device and event.get("pid") not in device):
            continue
        times[event.get("name", "?")] += float(event.get("dur", 0.0))
    return times, ("device kernels" if device else "all events (no device process)")


def print_kernel_summary(trace_dir, iterations, top=15):
    """Prints the ``top`` ops of the trace by total time, per iteration."""
    times, where = kernel_times(trace_dir)
    if not times:
        print(f"  (profile summary: {where})")
        return
    total = sum(times.values())
    print(
        f"  profile, {where}: {total / iterations / 1e3:.4f} ms per iteration in all; the largest:"
    )
    print("  | op | µs/iter | share |")
    print("  |---|---|---|")
    for name, dur in times.most_common(top):
        print(f"  | {name[:60]} | {dur / iterations:.2f} | {100 * dur / total:.1f} % |")


def main(argv=None) -> int:
    """Runs the configurations and prints the tables."""
    args = parse_args(argv)
    device_kind = jax.devices()[0].device_kind
    try:
        info = machine_info()
    except ImportError:  # pyribs (listed there) is not needed by this script.
        import ribsax

        info = {
            "ribsax": ribsax.__version__,
            "jax": jax.__version__,
            "numpy": np.__version__,
            "jax_devices": [str(d) for d in jax.devices()],
        }
    info["device_kind"] = device_kind
    print_header("ribsax fused loop vs the memory roofline", info)
    print(f"- command: {' '.join(sys.argv if argv is None else argv)}")
    results = [run_config(config, args) for config in args.configs]
    report(format_table(results, device_kind), info, results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
