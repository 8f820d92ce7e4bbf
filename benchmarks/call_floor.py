"""How much of ribsax's ask/tell time the call structure costs, and how much the
kernels.

For each sphere configuration (expanded as ``benchmarks/sphere.py`` does, 100-D,
float64), three loops run in one process, alternating, each ``--rounds`` times
``--iterations`` iterations:

- ``pyribs``: pyribs' scheduler, NumPy evaluation by the user;
- ``ribsax``: ribsax's scheduler, the same evaluation;
- ``structure``: jitted calls with ribsax's call structure and nothing else: one
  call per ``ask``/``tell`` (and ``ask_dqd``/``tell_dqd`` for DQD configurations),
  each taking the run's real state pytree (``ribsax.functional.init`` of the
  scheduler, every leaf donated in and returned), returning the batch of solutions
  to the host and taking the evaluated batch back, with the same NumPy evaluation
  between them. Its kernels draw the iteration's Gaussian noise (the ``[batch,
  100]`` float64 draws the configuration's ask makes; none for omg_mega, whose
  sigma is 0) and nothing else: no parent sampling, no insertion, no emitter update.

- ``structure + tells`` (configurations without a bandit): the same asks, whose
  solutions (the noise, or zeros) now go into the state, and ribsax's real tell
  and ``tell_dqd`` (``ribsax.functional.tell``, jitted with the state donated):
  the archive insertion and the emitters' tell kernels run as in ribsax's loop.

``pyribs / structure`` is the speed-up over pyribs that ribsax could reach if its
kernels cost no more than the noise they draw; where it is above the target, the
call structure (Python, dispatch, host copies, the user's evaluation) does not
rule the target out, and the gap lies in the kernels' execution. ``pyribs /
(structure + tells)`` is the same bound once the insertions and tell updates are
paid for: the most the asks' kernels could still give.

Usage::

    python benchmarks/call_floor.py --configs og_map_elites,omg_mega,map_elites
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import ribs  # noqa: E402
import threadpoolctl  # noqa: E402

import ribsax  # noqa: E402
from ribsax import functional as F  # noqa: E402
from ribsax._normal import standard_normal  # noqa: E402
from ribsax._utils import kernel_key  # noqa: E402
from ribsax.examples.sphere import CONFIG, sphere, sphere_jacobian  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sphere import build_scheduler  # noqa: E402

_DIM = 100
#: Whether each configuration's asks draw Gaussian noise (one ``[batch, 100]``
#: draw per iteration; omg_mega's sigma is 0).
_DRAWS_NOISE = {
    "map_elites": True,
    "line_map_elites": True,
    "me_map_elites": True,
    "og_map_elites": True,
    "omg_mega": False,
}


def _scheduler(lib, config):
    return build_scheduler(
        lib,
        config,
        dim=_DIM,
        grid_dims=(100, 100),
        es=None,
        es_kwargs=None,
        seed=42,
        dtype=np.float64,
    )


def _object_loop(scheduler, dqd, iterations):
    for _ in range(iterations):
        if dqd:
            solutions = scheduler.ask_dqd()
            scheduler.tell_dqd(*sphere_jacobian(solutions))
        solutions = scheduler.ask()
        scheduler.tell(*sphere(solutions))


def _structure_loop(scheduler, config, dqd, real_tells=False):
    """The ``structure`` loop (``structure + tells`` with ``real_tells``) over a
    copy of ``scheduler``'s state."""
    plan, state = F.init(scheduler)
    state = jax.tree.map(lambda leaf: jnp.array(leaf, copy=True), state)
    # The rows asked per call: 270 for the DQD configurations, 540 for the others
    # (me_map_elites: its 15 active emitters' 36 rows each).
    batch = 270 if dqd else 540
    noise = _DRAWS_NOISE[config]

    def ask(state, key, draw, phase_dqd):
        key, sub = jax.random.split(key)
        if draw:
            solutions = standard_normal(sub, (batch, _DIM), jnp.float64)
        else:
            solutions = jnp.zeros((batch, _DIM), jnp.float64)
        if real_tells:
            state = state._replace(**{"dqd_solutions" if phase_dqd else "solutions": solutions})
        return state, key, solutions

    def tell(state, objective, *_):
        return state, {"status": (objective > 0).astype(jnp.int32), "value": objective}

    # The DQD ask draws the noise (og_map_elites' ask_dqd); other asks draw it in
    # the ask.
    ask_jit = jax.jit(lambda s, k: ask(s, k, noise and not dqd, False), donate_argnums=0)
    ask_dqd_jit = jax.jit(lambda s, k: ask(s, k, noise, True), donate_argnums=0)
    if real_tells:
        tell_jit = jax.jit(lambda s, o, m: F.tell(plan, s, o, m), donate_argnums=0)
        tell_dqd_jit = jax.jit(
            lambda s, o, m, j: F.tell(plan, s, o, m, j, dqd=True), donate_argnums=0
        )
    else:
        tell_jit = tell_dqd_jit = jax.jit(tell, donate_argnums=0)
    carry = [state, kernel_key(1)]

    def loop(iterations):
        state, key = carry
        for _ in range(iterations):
            if dqd:
                state, key, solutions = ask_dqd_jit(state, key)
                state, info = tell_dqd_jit(state, *sphere_jacobian(np.asarray(solutions)))
                jax.device_get(info)
            state, key, solutions = ask_jit(state, key)
            state, info = tell_jit(state, *sphere(np.asarray(solutions)))
            jax.device_get(info)
        carry[:] = [state, key]

    return loop


def measure(config, iterations, rounds):
    """Median ms per iteration of the loops (name -> ms)."""
    dqd = bool(CONFIG[config].get("dqd"))
    ours = _scheduler(ribsax, config)
    _object_loop(ours, dqd, 10)
    structure = _structure_loop(ours, config, dqd)
    theirs = _scheduler(ribs, config)
    loops = {
        "pyribs": lambda n: _object_loop(theirs, dqd, n),
        "ribsax": lambda n: _object_loop(ours, dqd, n),
        "structure": structure,
    }
    # A bandit's functional tell takes the whole pool's rows (its inactive
    # emitters' too), unlike the loops here: no ``structure + tells`` loop.
    if CONFIG[config]["scheduler"][0] != "BanditScheduler":
        loops["structure + tells"] = _structure_loop(ours, config, dqd, real_tells=True)
    for loop in loops.values():
        loop(20)
    times = {name: [] for name in loops}
    for _ in range(rounds):
        for name, loop in loops.items():
            start = time.perf_counter()
            loop(iterations)
            times[name].append((time.perf_counter() - start) / iterations * 1e3)
    return {name: float(np.median(values)) for name, values in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--configs",
        default="og_map_elites,omg_mega,map_elites,me_map_elites",
        help="default: %(default)s",
    )
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    configs = args.configs.split(",")
    for config in configs:
        if config not in _DRAWS_NOISE:
            parser.error(f"--configs: {config!r} is not one of {', '.join(_DRAWS_NOISE)}")
    threadpoolctl.threadpool_limits(1, "blas")
    print(
        "| configuration | pyribs ms/it | ribsax ms/it (pyribs / ribsax) | "
        "structure ms/it (pyribs / structure) | structure + tells ms/it "
        "(pyribs / structure + tells) |"
    )
    print("|---|---:|---:|---:|---:|")
    for config in configs:
        ms = measure(config, args.iterations, args.rounds)
        cells = [
            f"{ms[name]:.2f} ({ms['pyribs'] / ms[name]:.2f}x)" if name in ms else "n/a"
            for name in ("ribsax", "structure", "structure + tells")
        ]
        print(f"| {config} | {ms['pyribs']:.2f} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
