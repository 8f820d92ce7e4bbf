"""DDS-CNF's learned density, ribsax vs pyribs: what each learns from the same data.

``DensityArchive(density_method="cnf")`` fine-tunes a continuous normalizing flow on
its buffer after every ``add``. pyribs builds it with torch and zuko (an adaptive ODE
solver); ribsax with flax and optax (fixed-step RK4, see the class docstring), so
the two are not expected to agree number for number. This script feeds both archives
the same stream of 2-D measures (``--adds`` batches of ``--batch`` points drawn from
a mixture of three Gaussians) with pyribs' default CNF settings, then scores each
flow by the mean log density it gives ``--held-out`` fresh points of the same
mixture, beside the mixture's own mean log density (the best any model can do). It
also times the adds (fitting included).

Needs torch and zuko for the pyribs side (not part of ``.[dev]``).

Usage::

    python benchmarks/cnf_density.py                    # 3 seeds x 100 adds of 64
    python benchmarks/cnf_density.py --seeds 0 --adds 20
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import machine_info, print_header

CENTRES = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])
SCALE = 0.5


def mixture(rng, n):
    """``n`` points of an equal mixture of three isotropic 2-D Gaussians."""
    which = rng.integers(len(CENTRES), size=n)
    return CENTRES[which] + SCALE * rng.normal(size=(n, 2))


def mixture_log_density(points):
    """The mixture's exact log density."""
    sq = np.sum((points[:, None, :] - CENTRES[None]) ** 2, axis=2)
    log_each = -sq / (2 * SCALE**2) - np.log(2 * np.pi * SCALE**2)
    top = np.max(log_each, axis=1)
    return top + np.log(np.mean(np.exp(log_each - top[:, None]), axis=1))


def run(lib, seed, adds, batch, held_out):
    """Feeds one library's archive and returns (mean held-out log density, add s)."""
    archive = lib.archives.DensityArchive(measure_dim=2, density_method="cnf", seed=seed)
    rng = np.random.default_rng(seed)
    stream = [mixture(rng, batch) for _ in range(adds)]
    test = mixture(np.random.default_rng(10_000 + seed), held_out)
    start = time.perf_counter()
    for measures in stream:
        archive.add(None, None, measures)
    seconds = time.perf_counter() - start
    return float(np.mean(archive.compute_density(test))), seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--adds", type=int, default=100)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--held-out", type=int, default=2000)
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    import ribs
    import torch

    import ribsax

    print_header("DDS-CNF learned density: ribsax vs pyribs", machine_info())
    best = float(
        np.mean(mixture_log_density(mixture(np.random.default_rng(10_000), args.held_out)))
    )
    print(
        f"- settings: {args.adds} adds of {args.batch} points, pyribs' default CNF "
        f"settings; the mixture's own held-out mean log density: {best:.3f}"
    )
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        torch.manual_seed(seed)
        result = {
            name: run(lib, seed, args.adds, args.batch, args.held_out)
            for name, lib in (("ribsax", ribsax), ("pyribs", ribs))
        }
        rows.append((seed, result))
        print(
            f"  seed {seed}: "
            + ", ".join(
                f"{name} log density {ll:.3f} ({secs:.1f} s)" for name, (ll, secs) in result.items()
            ),
            flush=True,
        )
    print()
    print(
        "| seed | ribsax held-out log density | pyribs held-out log density | "
        "ribsax add s | pyribs add s |"
    )
    print("|---:|---:|---:|---:|---:|")
    for seed, result in rows:
        print(
            f"| {seed} | {result['ribsax'][0]:.3f} | {result['pyribs'][0]:.3f} | "
            f"{result['ribsax'][1]:.1f} | {result['pyribs'][1]:.1f} |"
        )
    print(f"\nThe mixture itself: {best:.3f} (same held-out points for seed 0).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
