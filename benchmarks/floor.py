"""Lower bounds ("floors") on ribsax's time per iteration for the speed targets
against pyribs, measured on this machine, and the largest speed-up over pyribs they
leave.

A target asks ribsax to run a sphere configuration (``ribsax.examples.sphere.CONFIG``,
expanded as ``benchmarks/sphere.py`` does) ``ratio`` times as many iterations per
second as pyribs. So ribsax may spend at most ``budget = pyribs time / ratio`` per
iteration. This script measures pyribs' median time per iteration, then sums the
costs that ANY implementation of the same algorithm, built from the ingredients
measured here, must pay every iteration (the "floor"), and prints

- ``max speed-up = pyribs time / floor``: no implementation built from these
  ingredients can be faster than this, and
- the verdict ``infeasible`` when ``floor > budget`` (the target cannot be met with
  these ingredients on this machine) or ``not excluded`` otherwise (which does NOT
  mean reachable: the floor leaves out most of the work).

Targets (pyribs iterations/s ratio on the 2-core CPU):

============================  =====  ==========================================
target                        ratio  loop
============================  =====  ==========================================
map_elites                    3      Python ask/tell, NumPy sphere by the user
cma_me_imp                    10     Python ask/tell
cma_mae                       10     Python ask/tell
scalable_cma_mae:sep_cma_es   5      Python ask/tell (1000-D, 250x250 grids)
scalable_cma_mae:lm_ma_es     5      Python ask/tell (1000-D, 250x250 grids)
cma_mega                      10     Python ask_dqd/tell_dqd + ask/tell
omg_mega                      10     Python ask_dqd/tell_dqd + ask/tell
fused:map_elites              20     fused loop (``Scheduler.run``)
fused:cma_mae                 50     fused loop
ns_cma                        5      Python ask/tell (novelty search, CMA-ES)
nslc                          5      Python ask/tell (NSLC, CMA-ES)
============================  =====  ==========================================

The novelty-search targets' floors leave out the neighbour search itself (pyribs
pays it too); their archive-call component is a grid archive's.

Floor components (each the median over ``--repeats`` timings in this process, with
BLAS limited to one thread by threadpoolctl, as in ``sphere.py``; XLA's own thread
pool is not limited):

a. **User evaluation** (ask/tell and DQD loops only; the fused loop evaluates in JAX
   and counts it as free). The user's NumPy code is the same for both libraries, so
   ribsax cannot make it faster: ``sphere`` on a ``(batch, dim)`` float64 array with
   the configuration's total batch (540), plus, for DQD, ``sphere_jacobian`` on the
   ``ask_dqd`` batch (one row per GradientArborescenceEmitter; ``batch_size`` rows
   per GradientOperatorEmitter, i.e. 270 for omg_mega). Inputs are N(0, 1), so few
   coordinates need folding: the cheap case.
b. **Gaussian noise** the algorithm must draw per iteration, counted from the
   configuration (:func:`noise_draws`): ``batch x dim`` per Gaussian / CMA-ES-family
   emitter, ``batch x (1 + measure_dim)`` coefficients per CMA-MEGA emitter and per
   OMG-MEGA emitter with measure gradients, nothing for a zero sigma. All draws are
   timed as one flat array (the cheapest layout). Candidates: NumPy's
   ``default_rng().standard_normal`` (float64), and jitted ``jax.random.normal``
   (float64), ``jax.random.bits`` (uint32, uint64) with the default threefry key and
   ``jax.random.bits`` (uint32) with an ``unsafe_rbg`` key. Raw bits skip the normal
   transform, so they bound any generator built on those JAX generators from below
   (uint32 bits are one word per draw, which bounds even float32 sampling; a float64
   normal needs 64 bits). For the JAX candidates the floor uses the marginal cost
   ``t(n draws) - t(1 draw)``, because inside ribsax the draw is part of a jitted
   call whose dispatch is counted once, in component d (or amortised by the fused
   loop). The component is the minimum over candidates. It is a lower bound only for
   these generators: a cheaper generator (another counter-based PRNG written by
   hand, a quasi-random stream, fewer bits per draw) is not covered.
c. **CMA-ES eigendecompositions.** pyribs refreshes each CMA-ES emitter's
   eigenbasis with ``numpy.linalg.eigh`` every ``lazy_gap_evals`` evaluations. The
   number per iteration is counted EMPIRICALLY during the pyribs timing run, by
   wrapping ``numpy.linalg.eigh`` and counting the calls made from
   ``ribs.emitters.opt._cma_es`` (with their matrix sizes). The cost of one is the
   minimum over ``numpy.linalg.eigh``, ``scipy.linalg.eigh(driver="evd")`` and a
   jitted batched ``jnp.linalg.eigh`` over the largest number pyribs performed in a
   single iteration (marginal cost, as in b, divided by that number), all on a random
   symmetric positive definite matrix of that size. The component is eigh calls per
   iteration x that cost, summed over matrix sizes. It assumes ribsax keeps pyribs'
   eigendecomposition schedule (which fixes the algorithm's random stream and
   results); a different schedule, or an incremental eigen-update, is not covered.
   sep-CMA-ES and LM-MA-ES need none.
d. **Library calls** (ask/tell and DQD loops only). ribsax keeps the archive on the
   device, so every ``ask`` (reads the archive) and ``tell`` (writes it) is at least
   one jitted JAX call that takes the archive state. The cost of one is timed on the
   cheapest such call: a jitted function that takes the real state pytree of a
   ribsax ``GridArchive`` of the configuration's shape (``archive._store.state``:
   ``StoreState`` with all fields), donated, and returns it with one counter bumped;
   the write call takes the result archive's state too when there is one. It
   contains no transfer of solutions, objectives or measures, no emitter state and
   no work. Per iteration: ``ask + tell`` (1 read + 1 write); DQD: ``ask_dqd +
   tell_dqd + ask + tell`` (2 + 2). This bounds implementations that keep the
   archive in JAX arrays (ribsax's design); a host-side NumPy archive would not pay
   it (but would not be ribsax).

floor = a + b + c + d for the Python loops, b + c for the fused loop (evaluation
free, dispatch amortised over the scan). Everything else (archive insertion, elite
sampling, ranking, the CMA updates, the matrix-vector products that turn noise into
solutions, host<->device copies, Python overhead of the shells) is left out, so the
floor is optimistic: a real implementation is slower.

The sum assumes the components run one after the other, which is how pyribs and
ribsax run them. On a machine with several cores an implementation could overlap
them (e.g. draw the next iteration's noise on one core while the user evaluates on
another, or run the due eigendecompositions in parallel), so the table also gives
the unconditional bound for the work spread perfectly over all ``os.cpu_count()``
cores: ``floor / cores``, with its own largest speed-up and verdict. A target that
is ``infeasible`` there too cannot be met with these ingredients however the work is
scheduled.

For information the script also measures ribsax's current time per iteration on the
same loop (``sphere.run_iterations`` on ``build_scheduler(ribsax, ...)``; for the
fused targets ``sphere.bench_fused``, whose figure is a mean, not a median), so the
table shows pyribs, ribsax now, the budget and the floor side by side.

Usage::

    python benchmarks/floor.py                        # all targets (minutes)
    python benchmarks/floor.py --quick                # smoke run (numbers noisy)
    python benchmarks/floor.py --targets cma_mae,fused:cma_mae --json floor.json
    python benchmarks/floor.py --targets scalable_cma_mae --no-ribsax

Run it on an otherwise idle machine: other processes on the cores make the numbers
meaningless.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_header, report
from sphere import (
    bench_fused,
    build_from_settings,
    expand_configs,
    run_iterations,
    sphere_machine_info,
)

#: The speed targets: key -> (sphere.py case, ratio, mode).
TARGETS = {
    "map_elites": ("map_elites", 3.0, "ask/tell"),
    "cma_me_imp": ("cma_me_imp", 10.0, "ask/tell"),
    "cma_mae": ("cma_mae", 10.0, "ask/tell"),
    "scalable_cma_mae:sep_cma_es": ("scalable_cma_mae:sep_cma_es", 5.0, "ask/tell"),
    "scalable_cma_mae:lm_ma_es": ("scalable_cma_mae:lm_ma_es", 5.0, "ask/tell"),
    "cma_mega": ("cma_mega", 10.0, "dqd"),
    "omg_mega": ("omg_mega", 10.0, "dqd"),
    "fused:map_elites": ("map_elites", 20.0, "fused"),
    "fused:cma_mae": ("cma_mae", 50.0, "fused"),
    "ns_cma": ("ns_cma", 5.0, "ask/tell"),
    "nslc": ("nslc", 5.0, "ask/tell"),
}
#: Archive read + write call pairs per iteration of each loop.
CALL_PAIRS = {"ask/tell": 1, "dqd": 2, "fused": 0}
#: Measures of every sphere configuration (the two projection halves).
MEASURE_DIM = 2


# --------------------------------------------------------------- pure helpers
def select_targets(spec: str) -> list:
    """Target keys named by ``--targets``.

    Args:
        spec: Comma-separated keys of :data:`TARGETS`; ``scalable_cma_mae`` selects
            both of its variants. Empty entries are ignored.

    Returns:
        The keys in :data:`TARGETS` order, without duplicates.

    Raises:
        ValueError: An unknown name, or nothing selected.
    """
    wanted = set()
    for name in (s.strip() for s in spec.split(",")):
        if not name:
            continue
        matches = [
            k
            for k in TARGETS
            if k == name or (name == "scalable_cma_mae" and k.startswith(name + ":"))
        ]
        if not matches:
            raise ValueError(
                f"unknown target {name!r}; choose from "
                f"{', '.join(list(TARGETS) + ['scalable_cma_mae'])}"
            )
        wanted.update(matches)
    if not wanted:
        raise ValueError("no target selected")
    return [k for k in TARGETS if k in wanted]


def noise_draws(spec: dict, dim: int, measure_dim: int = MEASURE_DIM) -> list:
    """Gaussian draws one iteration of a configuration needs at least.

    Args:
        spec: One entry of ``ribsax.examples.sphere.CONFIG``.
        dim: Solution dimension.
        measure_dim: Number of measures.

    Returns:
        list of ``(emitter class, rows, cols)``, one per emitter group that draws
        (rows summed over the group's emitters). Zero sigmas draw nothing.

    Raises:
        ValueError: An emitter class this function does not know.
    """
    draws = []
    for cls, kwargs, count in spec["emitters"]:
        rows = count * kwargs["batch_size"]
        if cls == "GaussianEmitter":
            if np.any(np.asarray(kwargs["sigma"]) > 0):
                draws.append((cls, rows, dim))
        elif cls == "IsoLineEmitter":
            if np.any(np.asarray(kwargs.get("iso_sigma", 0.01)) > 0):
                draws.append((cls, rows, dim))
            if kwargs.get("line_sigma", 0.2) > 0:
                draws.append((cls, rows, 1))
        elif cls == "EvolutionStrategyEmitter":
            draws.append((cls, rows, dim))
        elif cls == "GradientArborescenceEmitter":
            draws.append((cls, rows, 1 + measure_dim))
        elif cls == "GradientOperatorEmitter":
            if np.any(np.asarray(kwargs.get("sigma", 0.0)) > 0):
                draws.append((cls, rows, dim))
            if (
                kwargs.get("operator_type", "isotropic") != "isotropic"
                and kwargs.get("line_sigma", 0.0) > 0
            ):
                draws.append((cls, rows, 1))
            if kwargs.get("measure_gradients", False):
                draws.append((cls, rows, 1 + measure_dim))
        else:
            raise ValueError(f"noise_draws: unknown emitter class {cls!r}")
    return draws


def eval_batches(spec: dict) -> tuple:
    """Rows the user evaluates per iteration: ``(ask_dqd rows, ask rows)``.

    ``ask_dqd`` returns one solution per GradientArborescenceEmitter and
    ``batch_size`` per GradientOperatorEmitter; non-DQD configurations have no
    ``ask_dqd`` (0 rows). ``ask`` returns ``batch_size`` per emitter.
    """
    dqd_rows = ask_rows = 0
    for cls, kwargs, count in spec["emitters"]:
        ask_rows += count * kwargs["batch_size"]
        if spec.get("dqd"):
            dqd_rows += count * (kwargs["batch_size"] if cls == "GradientOperatorEmitter" else 1)
    return dqd_rows, ask_rows


def floor_for(mode: str, components: dict) -> tuple:
    """The floor of one target from its measured components (pure arithmetic).

    Args:
        mode: ``"ask/tell"``, ``"dqd"`` or ``"fused"``.
        components: seconds per iteration ``eval_s`` (user evaluation), ``noise_s``,
            ``eigh_s`` (already multiplied by the eigh calls per iteration), and
            seconds per call ``read_call_s`` and ``write_call_s``.

    Returns:
        ``(floor seconds, {part: seconds})`` with parts ``eval``, ``noise``,
        ``eigh``, ``calls`` (the Python loops) or ``noise``, ``eigh`` (fused).

    Raises:
        ValueError: Unknown mode.
    """
    if mode not in CALL_PAIRS:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(CALL_PAIRS)}")
    parts = {}
    if mode != "fused":
        parts["eval"] = components["eval_s"]
    parts["noise"] = components["noise_s"]
    parts["eigh"] = components["eigh_s"]
    pairs = CALL_PAIRS[mode]
    if pairs:
        parts["calls"] = pairs * (components["read_call_s"] + components["write_call_s"])
    return sum(parts.values()), parts


def judge(pyribs_s: float, ratio: float, floor_s: float, cores: int = 1) -> dict:
    """Budget, largest speed-up and verdict of one target.

    Args:
        pyribs_s: pyribs' seconds per iteration.
        ratio: The speed-up the target asks for.
        floor_s: The floor (seconds per iteration, components run one after the
            other).
        cores: CPU cores an implementation could spread the floor's work over.

    Returns:
        dict with ``budget_s = pyribs_s / ratio``, ``max_speedup = pyribs_s /
        floor_s`` (inf for a zero floor), ``verdict``: ``"infeasible"`` when
        ``floor_s > budget_s``, else ``"not excluded"``, and the same for the work
        spread perfectly over ``cores`` cores (``floor_s / cores``):
        ``max_speedup_all_cores`` and ``verdict_all_cores``.
    """
    budget = pyribs_s / ratio

    def verdict(floor):
        return {
            "max_speedup": pyribs_s / floor if floor > 0 else math.inf,
            "verdict": "infeasible" if floor > budget else "not excluded",
        }

    serial, spread = verdict(floor_s), verdict(floor_s / cores)
    return {
        "budget_s": budget,
        **serial,
        "cores": cores,
        "max_speedup_all_cores": spread["max_speedup"],
        "verdict_all_cores": spread["verdict"],
    }


def best_candidate(candidates: dict) -> tuple:
    """``(name, seconds)`` of the cheapest candidate by its ``floor_s``."""
    name = min(candidates, key=lambda n: candidates[n]["floor_s"])
    return name, candidates[name]["floor_s"]


# --------------------------------------------------------------- measurement
def median_time(fn, repeats: int, warmup: int = 3) -> float:
    """Median seconds of ``fn()`` over ``repeats`` calls after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class EighCounter:
    """Context manager wrapping ``numpy.linalg.eigh`` to count the calls made from
    ``ribs.emitters.opt._cma_es`` (by matrix size); other callers pass through."""

    MODULE = "ribs.emitters.opt._cma_es"

    def __init__(self):
        self.calls = {}  # matrix size -> count
        self._orig = None

    @property
    def total(self) -> int:
        """Calls counted so far."""
        return sum(self.calls.values())

    def __enter__(self):
        self._orig = np.linalg.eigh
        orig = self._orig

        def counting_eigh(a, *args, **kwargs):
            if sys._getframe(1).f_globals.get("__name__") == self.MODULE:
                size = int(np.shape(a)[-1])
                self.calls[size] = self.calls.get(size, 0) + 1
            return orig(a, *args, **kwargs)

        np.linalg.eigh = counting_eigh
        return self

    def __exit__(self, *exc):
        np.linalg.eigh = self._orig
        return False


def measure_loop(lib, settings, dqd, *, warmup, iterations, seed, count_eigh=False):
    """Median seconds per ask/tell iteration of ``lib`` on one configuration.

    Returns:
        dict with ``median_s``, ``iterations`` and, with ``count_eigh``, ``eigh``:
        pyribs' CMA-ES eigh calls per iteration by matrix size and the most in one
        iteration.
    """
    scheduler = build_from_settings(lib, settings, seed, np.dtype(np.float64))
    warm, times, per_it = [], [], []
    run_iterations(scheduler, warmup, warm, dqd)
    counter = EighCounter() if count_eigh else None
    if counter is not None:
        with counter:
            for _ in range(iterations):
                before = counter.total
                run_iterations(scheduler, 1, times, dqd)
                per_it.append(counter.total - before)
    else:
        run_iterations(scheduler, iterations, times, dqd)
    out = {"median_s": statistics.median(times), "iterations": iterations}
    if counter is not None:
        out["eigh"] = {
            "per_iteration": {str(k): v / iterations for k, v in sorted(counter.calls.items())},
            "max_in_one_iteration": max(per_it, default=0),
        }
    return out


def measure_eval(dim, dqd_rows, ask_rows, repeats, seed):
    """Seconds per iteration of the user's NumPy evaluation (component a)."""
    from ribsax.examples.sphere import sphere, sphere_jacobian

    rng = np.random.default_rng(seed)
    ask_x = rng.standard_normal((ask_rows, dim))
    total = median_time(lambda: sphere(ask_x), repeats)
    if dqd_rows:
        dqd_x = rng.standard_normal((dqd_rows, dim))
        total += median_time(lambda: sphere_jacobian(dqd_x), repeats)
    return total


def _jax_marginal(make_fn, arg_for, size, repeats):
    """(raw seconds at ``size``, marginal seconds = raw - seconds at size 1)."""
    import jax

    fn_n, fn_1 = make_fn(size), make_fn(1)
    arg_n, arg_1 = arg_for(size), arg_for(1)
    raw = median_time(lambda: jax.block_until_ready(fn_n(arg_n)), repeats)
    one = median_time(lambda: jax.block_until_ready(fn_1(arg_1)), repeats)
    return raw, max(0.0, raw - one)


def measure_noise(count, repeats, seed):
    """Candidates for drawing ``count`` Gaussian numbers (component b).

    Returns:
        ``{name: {"raw_s", "floor_s"}}``; ``floor_s`` is the raw time for NumPy and
        the marginal time for the jitted JAX candidates.
    """
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(seed)
    raw = median_time(lambda: rng.standard_normal(count), repeats)
    out = {"numpy standard_normal f64": {"raw_s": raw, "floor_s": raw}}

    def threefry(_):
        return jax.random.key(seed)

    def rbg(_):
        return jax.random.key(seed, impl="unsafe_rbg")

    cases = {
        "jax.random.normal f64": (
            threefry,
            lambda n: jax.jit(lambda k: jax.random.normal(k, (n,), jnp.float64)),
        ),
        "jax.random.bits u32": (
            threefry,
            lambda n: jax.jit(lambda k: jax.random.bits(k, (n,), jnp.uint32)),
        ),
        "jax.random.bits u64": (
            threefry,
            lambda n: jax.jit(lambda k: jax.random.bits(k, (n,), jnp.uint64)),
        ),
        "jax.random.bits u32 (unsafe_rbg)": (
            rbg,
            lambda n: jax.jit(lambda k: jax.random.bits(k, (n,), jnp.uint32)),
        ),
    }
    for name, (key_for, make) in cases.items():
        raw, marginal = _jax_marginal(make, key_for, count, repeats)
        out[name] = {"raw_s": raw, "floor_s": marginal}
    return out


def measure_eigh(size, batch, repeats, seed):
    """Candidates for one ``size x size`` symmetric eigendecomposition (component c).

    Returns:
        ``{name: {"raw_s", "floor_s"}}`` per decomposition; the jitted batched
        candidate runs ``batch`` at once and reports raw / batch and marginal /
        batch (marginal = minus the same call on a 1x1 batch of one).
    """
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(seed)

    def spd(n, k):
        a = rng.standard_normal((k, n, n))
        return a @ np.swapaxes(a, 1, 2) / n + np.eye(n)

    mat = spd(size, 1)[0]
    raw = median_time(lambda: np.linalg.eigh(mat), repeats)
    out = {"numpy.linalg.eigh": {"raw_s": raw, "floor_s": raw}}
    try:
        import scipy.linalg
    except ImportError:  # pragma: no cover - scipy is a dependency of the dev extra
        pass
    else:
        raw = median_time(lambda: scipy.linalg.eigh(mat, driver="evd", check_finite=False), repeats)
        out["scipy.linalg.eigh evd"] = {"raw_s": raw, "floor_s": raw}
    batch = max(1, int(batch))
    fn = jax.jit(lambda a: jnp.linalg.eigh(a, symmetrize_input=False))
    mats = jnp.asarray(spd(size, batch))
    ones = jnp.asarray(spd(1, 1))
    raw = median_time(lambda: jax.block_until_ready(fn(mats)), repeats)
    one = median_time(lambda: jax.block_until_ready(fn(ones)), repeats)
    out[f"jnp.linalg.eigh jit batch {batch}"] = {
        "raw_s": raw / batch,
        "floor_s": max(0.0, raw - one) / batch,
    }
    return out


def measure_calls(settings, repeats, seed):
    """Seconds of the cheapest jitted read and write calls (component d)."""
    import jax
    import jax.numpy as jnp

    import ribsax.archives
    from ribsax.examples.sphere import BOUND, CONFIG

    spec = CONFIG[settings["config"]]
    dim = settings["dim"]
    ranges = [(-dim / 2 * BOUND, dim / 2 * BOUND)] * 2

    def state_of(archive_kwargs):
        archive = ribsax.archives.GridArchive(
            solution_dim=dim,
            dims=settings["grid_dims"],
            ranges=ranges,
            seed=seed,
            dtype=np.float64,
            **archive_kwargs,
        )
        # A private copy: donation invalidates the buffers it is given.
        return jax.tree.map(jnp.copy, archive._store.state)

    # Other archives' calls are bounded by a grid archive's (a novelty search's
    # archive moves at least as much data).
    main = state_of(spec["archive"][1] if spec["archive"][0] == "GridArchive" else {})
    write = (main, state_of({})) if spec.get("result_archive") else (main,)

    def bump(states):
        first = states[0]
        return (first._replace(n_writes=first.n_writes + 1),) + tuple(states[1:])

    fn = jax.jit(bump, donate_argnums=0)
    times = {}
    for name, states in (("read_call_s", (main,)), ("write_call_s", write)):
        box = [tuple(jax.tree.map(jnp.copy, s) for s in states)]

        def call(box=box):
            box[0] = fn(box[0])
            jax.block_until_ready(box[0])

        times[name] = median_time(call, repeats)
    return times


# --------------------------------------------------------------- reporting
def _ms(seconds):
    return "n/a" if seconds is None else f"{seconds * 1e3:.3f}"


def format_tables(rows, cases) -> str:
    """Markdown: the target table, then the component candidates per case."""
    lines = [
        "| target | mode | pyribs ms/it | ribsax ms/it now | budget ms/it "
        "| floor ms/it (components) | max speed-up | verdict "
        "| all cores: max speed-up, verdict |",
        "|---|---|---:|---:|---:|---|---:|---|---|",
    ]
    for r in rows:
        parts = " + ".join(f"{k} {v * 1e3:.3f}" for k, v in r["parts"].items())
        now = r["ribsax_s"]
        now_txt = _ms(now)
        if now is not None:
            now_txt += f" ({r['pyribs_s'] / now:.1f}x)"
        lines.append(
            f"| {r['target']} (>= {r['ratio']:g}x) | {r['mode']} "
            f"| {_ms(r['pyribs_s'])} | {now_txt} | {_ms(r['budget_s'])} "
            f"| {_ms(r['floor_s'])} ({parts}) | {r['max_speedup']:.1f}x "
            f"| {r['verdict']} | {r['cores']} cores: {r['max_speedup_all_cores']:.1f}x"
            f", {r['verdict_all_cores']} |"
        )
    lines += [
        "",
        "| case | component | per iteration | candidate | raw ms | floor ms |",
        "|---|---|---|---|---:|---:|",
    ]
    for label, c in cases.items():
        lines.append(
            f"| {label} | eval (a) | ask rows {c['ask_rows']}, ask_dqd rows "
            f"{c['dqd_rows']} | user NumPy sphere | {_ms(c['eval_s'])} "
            f"| {_ms(c['eval_s'])} |"
        )
        for name, cand in c["noise"]["candidates"].items():
            mark = " (min)" if name == c["noise"]["best"] else ""
            lines.append(
                f"| {label} | noise (b) | {c['noise']['count']:,} draws "
                f"| {name}{mark} | {_ms(cand['raw_s'])} "
                f"| {_ms(cand['floor_s'])} |"
            )
        for size, e in c["eigh"].items():
            for name, cand in e["candidates"].items():
                mark = " (min)" if name == e["best"] else ""
                lines.append(
                    f"| {label} | eigh (c) {size}x{size} | "
                    f"{e['per_iteration']:.3f} calls | {name}{mark} "
                    f"| {_ms(cand['raw_s'])} | {_ms(cand['floor_s'])} |"
                )
        if not c["eigh"]:
            lines.append(f"| {label} | eigh (c) | 0 calls | - | - | 0 |")
        for name in ("read_call_s", "write_call_s"):
            lines.append(
                f"| {label} | {name[:-7]} call (d) | per call "
                f"| jitted donated identity on the archive state(s) "
                f"| {_ms(c['calls'][name])} | {_ms(c['calls'][name])} |"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: few iterations and repeats (numbers noisy)"
    )
    parser.add_argument(
        "--targets",
        default=",".join(TARGETS),
        help="comma-separated targets (default: all): "
        f"{', '.join(TARGETS)}; scalable_cma_mae selects both variants",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timings per floor component (default 200, quick 5)",
    )
    parser.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="timed loop iterations per library (default 200, quick 3)",
    )
    parser.add_argument(
        "--warmup", type=int, default=None, help="untimed iterations first (default 20, quick 2)"
    )
    parser.add_argument(
        "--no-ribsax",
        action="store_true",
        help="skip the informational ribsax timing (no compilation)",
    )
    parser.add_argument("--seed", type=int, default=42, help="default: %(default)s")
    parser.add_argument("--json", default=None, help="also write results here")
    args = parser.parse_args(argv)
    repeats = args.repeats or (5 if args.quick else 200)
    iterations = args.iterations or (3 if args.quick else 200)
    warmup = args.warmup or (2 if args.quick else 20)
    if min(repeats, iterations, warmup) < 1:
        parser.error("--repeats, --iterations and --warmup must be >= 1")
    try:
        keys = select_targets(args.targets)
    except ValueError as err:
        parser.error(str(err))

    import jax

    jax.config.update("jax_enable_x64", True)
    import ribs.archives
    import ribs.emitters
    import ribs.schedulers
    from threadpoolctl import threadpool_limits

    import ribsax.archives
    import ribsax.emitters
    import ribsax.schedulers
    from ribsax.examples.sphere import CONFIG

    labels = list(dict.fromkeys(TARGETS[k][0] for k in keys))
    settings = dict(expand_configs(labels, parser))
    info = sphere_machine_info()
    print_header("floors of ribsax's time per iteration vs the speed targets", info)
    print(
        f"- settings: warmup={warmup}, iterations={iterations}, repeats={repeats}, "
        f"seed={args.seed}, float64, BLAS limited to 1 thread (threadpoolctl)"
    )

    cases, pyribs, now = {}, {}, {}
    with threadpool_limits(limits=1, user_api="blas"):
        for label in labels:
            s = settings[label]
            spec = CONFIG[s["config"]]
            dqd = bool(spec.get("dqd"))
            run = measure_loop(
                ribs, s, dqd, warmup=warmup, iterations=iterations, seed=args.seed, count_eigh=True
            )
            pyribs[label] = run
            print(
                f"  {label}: pyribs {run['median_s'] * 1e3:.3f} ms/it, eigh/it "
                f"{run['eigh']['per_iteration']}",
                flush=True,
            )
            dqd_rows, ask_rows = eval_batches(spec)
            count = sum(r * c for _, r, c in noise_draws(spec, s["dim"]))
            noise = measure_noise(count, repeats, args.seed)
            eigh = {}
            for size, per_it in run["eigh"]["per_iteration"].items():
                cand = measure_eigh(
                    int(size), run["eigh"]["max_in_one_iteration"], repeats, args.seed
                )
                best, cost = best_candidate(cand)
                eigh[size] = {
                    "per_iteration": per_it,
                    "candidates": cand,
                    "best": best,
                    "per_iteration_s": per_it * cost,
                }
            best, noise_s = best_candidate(noise)
            cases[label] = {
                "dim": s["dim"],
                "grid_dims": list(s["grid_dims"]),
                "es": s["es"],
                "dqd_rows": dqd_rows,
                "ask_rows": ask_rows,
                "eval_s": measure_eval(s["dim"], dqd_rows, ask_rows, repeats, args.seed),
                "noise": {"count": count, "candidates": noise, "best": best, "floor_s": noise_s},
                "eigh": eigh,
                "calls": measure_calls(s, repeats, args.seed),
            }
            if not args.no_ribsax:
                modes = {TARGETS[k][2] for k in keys if TARGETS[k][0] == label}
                if modes - {"fused"}:
                    now[(label, "loop")] = measure_loop(
                        ribsax, s, dqd, warmup=warmup, iterations=iterations, seed=args.seed
                    )["median_s"]
                if "fused" in modes:
                    fused = bench_fused(
                        s,
                        warmup=warmup,
                        iterations=iterations,
                        rounds=min(5, iterations),
                        seed=args.seed,
                        dtype=np.dtype(np.float64),
                    )
                    now[(label, "fused")] = 1.0 / fused["its_per_s"]

    cores = os.cpu_count() or 1
    rows = []
    for key in keys:
        label, ratio, mode = TARGETS[key]
        c = cases[label]
        components = {
            "eval_s": c["eval_s"],
            "noise_s": c["noise"]["floor_s"],
            "eigh_s": sum(e["per_iteration_s"] for e in c["eigh"].values()),
            **c["calls"],
        }
        floor_s, parts = floor_for(mode, components)
        pyribs_s = pyribs[label]["median_s"]
        rows.append(
            {
                "target": key,
                "case": label,
                "ratio": ratio,
                "mode": mode,
                "pyribs_s": pyribs_s,
                "ribsax_s": now.get((label, "fused" if mode == "fused" else "loop")),
                "floor_s": floor_s,
                "parts": parts,
                **judge(pyribs_s, ratio, floor_s, cores),
            }
        )
    results = {
        "settings": {
            "warmup": warmup,
            "iterations": iterations,
            "repeats": repeats,
            "seed": args.seed,
        },
        "targets": rows,
        "cases": cases,
        "pyribs": pyribs,
    }
    report(format_tables(rows, cases), info, results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
