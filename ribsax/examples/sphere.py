"""pyribs' sphere benchmark configurations on ribsax (``python -m ribsax.examples.sphere``).

The linear-projection sphere of Fontaine et al. 2020: a ``dim``-dimensional solution
(default 100) is scored by a shifted sphere normalised to [0, 100] (optimum at
``x_i = 2.048``) and described by two measures, the sums of the first and second
halves of the solution after folding coordinates outside ``[-5.12, 5.12]`` to
``5.12 / x_i``. Evaluation is plain NumPy inside the usual Python ask/tell loop, so
the loop is exactly the one a pyribs user writes; only the imports change.

Each configuration name and its settings follow pyribs' ``examples/sphere.py``
(540 evaluations per iteration):

=====================  =========================================================
``map_elites``          GridArchive, 1 GaussianEmitter (sigma 0.5, batch 540)
``line_map_elites``     GridArchive, 1 IsoLineEmitter (iso 0.5, line 0.2, 540)
``cvt_map_elites``      CVTArchive (10,000 centroids), 1 GaussianEmitter
``line_cvt_map_elites`` CVTArchive, 1 IsoLineEmitter
``me_map_elites``       BanditScheduler (15 active) over 15 ES "obj", 15 ES "2rd",
                        15 ES "2imp" and 15 IsoLine (0.01, 0.1), batch 36 each
``cma_me_imp``          15 ES (sigma0 0.5, "2imp", filter, no_improvement, 36)
``cma_me_imp_mu``       15 ES ("2imp", mu, no_improvement)
``cma_me_basic``        15 ES ("2imp", mu, basic)
``cma_me_rd``           15 ES ("2rd", filter, no_improvement)
``cma_me_rd_mu``        15 ES ("2rd", mu, no_improvement)
``cma_me_opt``          15 ES ("obj", mu, basic)
``cma_me_mixed``        7 ES ("2rd") + 8 ES ("2imp")
``cma_mae``             GridArchive(threshold_min=0, learning_rate=0.01) with a
                        plain GridArchive as result archive, 15 ES ("imp", mu,
                        basic)
``og_map_elites``       1 GradientOperatorEmitter (sigma 0.5, sigma_g 0.5, no
                        measure gradients, no normalisation, batch 270) (DQD)
``omg_mega``            1 GradientOperatorEmitter (sigma 0, sigma_g 10, measure
                        gradients, normalised, batch 270) (DQD)
``cma_mega``            15 GradientArborescenceEmitter (sigma0 10, lr 1,
                        gradient_ascent, mu, batch 35) (DQD)
``cma_mega_adam``       15 GradientArborescenceEmitter (sigma0 10, lr 0.002, adam,
                        mu, batch 35) (DQD)
``cma_maega``           GridArchive(threshold_min=0, learning_rate=0.01) with a
                        result archive, 15 GradientArborescenceEmitter (sigma0 10,
                        lr 1, "imp", gradient_ascent, basic, batch 35) (DQD)
``ns_cma``              ProximityArchive(k_neighbors=15, novelty_threshold=0.037 *
                        512) with a GridArchive result archive, 15 ES ("nov", mu,
                        basic) (novelty search with CMA-ES)
``nslc``                ProximityArchive(k 15, threshold 0.037 * 100,
                        local_competition) with a result archive, 15 ES ("nslc",
                        filter, no_improvement)
``nslc_cma_imp``        the same archives, 15 ES ("2imp", filter, no_improvement)
``dds``                 DensityArchive(buffer_size=10000, "kde", bandwidth 25.6)
                        with a result archive; 15 ES (sigma0 1.5, "density", mu,
                        basic) built on the **result archive** (Density Descent)
``dds_kde_sklearn``     the same with density_method="kde_sklearn" (log density,
                        Gaussian kernel)
``dms``                 DiscountArchive(learning_rate 0.1, threshold_min 0,
                        init_train_points 1000, empty_points 100) with an MLP
                        (2-128-128-1, ReLU) trained by Adam (lr 1e-3; 5 epochs,
                        cutoff loss 0.05, batch 32; measures scaled to [-1, 1],
                        discounts to [0, 1] over [0, 100]) and a result archive; 15
                        ES ("imp", mu, basic) on the result archive. The run loop
                        calls ``init_discount_model()`` first and
                        ``train_discount_model()`` after every tell (Discount Model
                        Search)
``rastrigin_cma_mega``  the rastrigin linear-projection DQD benchmark (Fontaine &
                        Nikolaidis 2021): ``cma_mega`` on the 1000-D rastrigin
                        projection (``--function rastrigin``, ``--dim 1000``)
=====================  =========================================================

DQD configurations run pyribs' DQD loop: ``ask_dqd`` -> evaluate with gradients ->
``tell_dqd`` -> ``ask`` -> evaluate -> ``tell`` (540 evaluations per iteration:
15 x (1 + 35) or 270 + 270). As in pyribs, the objective gradient handed to the
emitters is ``-2 (x - 2.048)``, the gradient of the unnormalised objective.

Usage::

    python -m ribsax.examples.sphere cma_me_imp --itrs 1000 --outdir sphere_output
    python -m ribsax.examples.sphere cma_mega --itrs 1000
    python -m ribsax.examples.sphere rastrigin_cma_mega --itrs 1000

Outputs in ``--outdir`` (``NAME`` is the configuration name):

* ``NAME_metrics.json``: QD score and coverage of the result archive every
  ``--log_freq`` iterations and at the end, plus the run settings and the loop time;
* ``NAME_metrics.csv``: the same metrics as a table;
* ``NAME_archive.csv``: ``result_archive.data(return_type="pandas")``;
* ``NAME_heatmap.png``: heatmap of the result archive (needs matplotlib).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

from ribsax import archives, emitters, schedulers
from ribsax.discount_models import MLP, DiscountModelManager, ReLU
from ribsax.examples._io import write_heatmap
from ribsax.experiments._presets import SPHERE_CONFIG
from ribsax.tasks import sphere as sphere_task
from ribsax.tasks._projection import worst_cost_per_dim

__all__ = [
    "CONFIG",
    "sphere",
    "sphere_jacobian",
    "rastrigin_jacobian",
    "create_scheduler",
    "run",
    "main",
]

BOUND = 5.12
SHIFT = 0.4 * BOUND

#: The configurations (shared with the runner's ``sphere_*`` configs): archive
#: kwargs, emitters as (class name, kwargs, count), scheduler (class name, kwargs),
#: whether a plain result archive is used, whether the DQD loop is used, and
#: optional defaults of the objective function and dimension.
CONFIG = SPHERE_CONFIG

#: Objective functions of the example (``--function``).
FUNCTIONS = ("sphere", "rastrigin")


def sphere(solutions):
    """Normalised shifted sphere with linear-projection measures (NumPy).

    Args:
        solutions: ``(batch_size, dim)`` array.

    Returns:
        ``(objective[batch_size], measures[batch_size, 2])``: objectives in [0, 100]
        for solutions inside ``[-5.12, 5.12]^dim``, and the sums of the two halves
        of the folded solution.
    """
    dim = solutions.shape[1]
    best, worst = 0.0, (-BOUND - SHIFT) ** 2 * dim
    raw = np.sum(np.square(solutions - SHIFT), axis=1)
    objective = (raw - worst) / (best - worst) * 100
    folded = solutions.copy()
    outside = (folded < -BOUND) | (folded > BOUND)
    folded[outside] = BOUND / folded[outside]
    half = dim // 2
    measures = np.stack(
        [np.sum(folded[:, :half], axis=1), np.sum(folded[:, half:], axis=1)], axis=1
    )
    return objective, measures


def _fold(solutions):
    """Folded coordinates (``5.12 / x`` outside the box) and their derivatives."""
    folded = solutions.copy()
    derivative = np.ones_like(solutions)
    outside = (folded < -BOUND) | (folded > BOUND)
    folded[outside] = BOUND / solutions[outside]
    derivative[outside] = -BOUND / np.square(solutions[outside])
    return folded, derivative


def _projection_jacobian(solutions, objective_grad, derivative):
    half = solutions.shape[1] // 2
    first = derivative.copy()
    first[:, half:] = 0.0
    second = derivative.copy()
    second[:, :half] = 0.0
    return np.stack([objective_grad, first, second], axis=1)


def sphere_jacobian(solutions):
    """:func:`sphere` with pyribs' gradients (NumPy).

    Returns:
        ``(objective, measures, jacobian)`` with ``jacobian`` of shape ``(batch, 3,
        dim)``: the objective gradient ``-2 (x - 2.048)`` (pyribs' choice: the
        gradient of the unnormalised objective) and the measure gradients.
    """
    objective, measures = sphere(solutions)
    _, derivative = _fold(solutions)
    return (
        objective,
        measures,
        _projection_jacobian(solutions, -2 * (solutions - SHIFT), derivative),
    )


def rastrigin_jacobian(solutions):
    """Rastrigin linear projection (Fontaine & Nikolaidis 2021) with gradients.

    Cost ``10 n + sum(z**2 - 10 cos(2 pi z))`` with ``z = x - 2.048``, normalised to
    [0, 100] over ``[-5.12, 5.12]^n`` as in :func:`ribsax.tasks.rastrigin_projection`;
    measures as in :func:`sphere`; objective gradient ``-d cost / dx`` (unnormalised,
    as for the sphere).

    Returns:
        ``(objective, measures, jacobian)``.
    """
    dim = solutions.shape[1]
    worst = worst_cost_per_dim("rastrigin") * dim
    z = solutions - SHIFT
    raw = 10 * dim + np.sum(z * z - 10 * np.cos(2 * np.pi * z), axis=1)
    objective = (raw - worst) / (0.0 - worst) * 100
    folded, derivative = _fold(solutions)
    half = dim // 2
    measures = np.stack(
        [np.sum(folded[:, :half], axis=1), np.sum(folded[:, half:], axis=1)], axis=1
    )
    grad = -(2 * z + 20 * np.pi * np.sin(2 * np.pi * z))
    return objective, measures, _projection_jacobian(solutions, grad, derivative)


_EVALUATORS = {"sphere": sphere_jacobian, "rastrigin": rastrigin_jacobian}


def _discount_archive(dim, ranges, result_archive, archive_kwargs, seed, dtype):
    """pyribs' dms archive: an MLP discount model trained with Adam."""
    # optax takes a third of a second to import; only dms needs it.
    import optax

    model = MLP([(2, 128), (128, 128), (128, 1)], ReLU, seed=seed)
    manager = DiscountModelManager(
        model,
        optax.adam(1e-3, b1=0.9, b2=0.999),
        None,
        train_epochs=5,
        train_cutoff_loss=0.05,
        train_batch_size=32,
        normalize_measures="negative_one_one",
        measures_low=[low for low, _ in ranges],
        measures_high=[high for _, high in ranges],
        normalize_discount="zero_one",
        discount_low=0.0,
        discount_high=100.0,
        seed=seed,
    )
    return archives.DiscountArchive(
        solution_dim=dim,
        measure_dim=2,
        discount_model_manager=manager,
        result_archive=result_archive,
        seed=seed,
        dtype=dtype,
        **archive_kwargs,
    )


def create_scheduler(
    name, *, dim=100, grid_dims=(100, 100), learning_rate=None, es=None, seed=None, dtype=np.float64
):
    """Builds the archive(s), emitters and scheduler of one configuration.

    Args:
        name: A key of :data:`CONFIG`.
        dim: Solution dimension.
        grid_dims: Cells per measure of grid archives (CVT archives get
            ``prod(grid_dims)`` centroids; the result archive is a grid of these
            dims).
        learning_rate: Overrides the archive learning rate of ``cma_mae``.
        es: Overrides the evolution strategy of the ES emitters (e.g.
            ``"sep_cma_es"``).
        seed: Seed of the run (archives and one spawned SeedSequence per emitter).
        dtype: Archive dtype.

    Returns:
        The scheduler (``scheduler.result_archive`` holds the results).

    Raises:
        ValueError: Unknown configuration name.
    """
    if name not in CONFIG:
        raise ValueError(f"Unknown algorithm {name!r}; choose one of {', '.join(CONFIG)}")
    config = CONFIG[name]
    grid_dims = tuple(int(d) for d in grid_dims)
    ranges = [(-dim / 2 * BOUND, dim / 2 * BOUND)] * 2
    archive_cls, archive_kwargs = config["archive"]
    archive_kwargs = dict(archive_kwargs)
    if learning_rate is not None and "learning_rate" in archive_kwargs:
        archive_kwargs["learning_rate"] = learning_rate
    result_archive = None
    if config.get("result_archive"):
        result_archive = archives.GridArchive(
            solution_dim=dim, dims=grid_dims, ranges=ranges, seed=seed, dtype=dtype
        )
    if archive_cls == "DiscountArchive":
        archive = _discount_archive(dim, ranges, result_archive, archive_kwargs, seed, dtype)
    elif archive_cls == "DensityArchive":
        archive = archives.DensityArchive(measure_dim=2, seed=seed, dtype=dtype, **archive_kwargs)
    elif archive_cls == "ProximityArchive":
        archive = archives.ProximityArchive(
            solution_dim=dim, measure_dim=2, seed=seed, dtype=dtype, **archive_kwargs
        )
    elif archive_cls == "CVTArchive":
        archive = archives.CVTArchive(
            solution_dim=dim,
            centroids=int(np.prod(grid_dims)),
            ranges=ranges,
            seed=seed,
            dtype=dtype,
            **archive_kwargs,
        )
    else:
        archive = archives.GridArchive(
            solution_dim=dim,
            dims=grid_dims,
            ranges=ranges,
            seed=seed,
            dtype=dtype,
            **archive_kwargs,
        )

    # Density Descent: the density archive holds no elites, so the emitters sample
    # restarts from the result archive (as in pyribs' example).
    emitter_archive = result_archive if config.get("emitters_use_result_archive") else archive
    count = sum(n for _, _, n in config["emitters"])
    seeds = iter(np.random.SeedSequence(seed).spawn(count))
    emitter_list = []
    for cls_name, kwargs, n in config["emitters"]:
        cls = getattr(emitters, cls_name)
        kwargs = dict(kwargs)
        if cls_name == "EvolutionStrategyEmitter" and es is not None:
            kwargs["es"] = es
        for _ in range(n):
            emitter_list.append(cls(emitter_archive, x0=np.zeros(dim), seed=next(seeds), **kwargs))

    scheduler_cls, scheduler_kwargs = config["scheduler"]
    return getattr(schedulers, scheduler_cls)(
        archive, emitter_list, result_archive, **scheduler_kwargs
    )


def run(
    algorithm,
    *,
    dim=None,
    itrs=10000,
    grid_dims=(100, 100),
    learning_rate=None,
    es=None,
    outdir="sphere_output",
    log_freq=250,
    seed=None,
    dtype="float64",
    verbose=True,
    save_archive=True,
    function=None,
    fused=False,
):
    """Runs one configuration and writes its outputs.

    Args:
        algorithm: Configuration name (see :data:`CONFIG`).
        dim: Solution dimension (None: the configuration's, else 100).
        itrs: Number of iterations.
        grid_dims: Cells per measure (CVT: ``prod(grid_dims)`` centroids).
        learning_rate: CMA-MAE archive learning rate override.
        es: Evolution strategy override for the ES emitters.
        outdir: Output directory (created if missing).
        log_freq: Record (and print) metrics every this many iterations.
        seed: Seed of the run.
        dtype: ``"float64"`` (pyribs' default; turns on JAX x64) or ``"float32"``.
        verbose: Print progress.
        save_archive: Write ``NAME_archive.csv`` and ``NAME_heatmap.png``.
        function: ``"sphere"`` or ``"rastrigin"`` (None: the configuration's, else
            the sphere).
        fused: Run the iterations with :meth:`ribsax.schedulers.Scheduler.run`
            (ask -> evaluate -> tell compiled into one ``lax.scan`` per
            ``log_freq`` iterations, with the JAX sphere task
            :func:`ribsax.tasks.sphere` and pyribs' objective gradient) instead of
            the Python loop. Sphere only.

    Returns:
        Dict with the final ``qd_score``, ``coverage`` and the loop time.
    """
    if dtype == "float64" and not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)
    if algorithm not in CONFIG:
        raise ValueError(f"Unknown algorithm {algorithm!r}; choose one of {', '.join(CONFIG)}")
    config = CONFIG[algorithm]
    dim = int(dim if dim is not None else config.get("dim", 100))
    function = function if function is not None else config.get("function", "sphere")
    if function not in _EVALUATORS:
        raise ValueError(f"Unknown function {function!r}; choose one of {', '.join(FUNCTIONS)}")
    evaluate = _EVALUATORS[function]
    dqd = bool(config.get("dqd"))
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    scheduler = create_scheduler(
        algorithm,
        dim=dim,
        grid_dims=grid_dims,
        learning_rate=learning_rate,
        es=es,
        seed=seed,
        dtype=np.dtype(dtype),
    )
    result_archive = scheduler.result_archive

    metrics = {"QD Score": {"x": [0], "y": [0.0]}, "Archive Coverage": {"x": [0], "y": [0.0]}}

    def itr_stats(itr):
        stats = result_archive.stats
        metrics["QD Score"]["x"].append(itr)
        metrics["QD Score"]["y"].append(float(stats.qd_score))
        metrics["Archive Coverage"]["x"].append(itr)
        metrics["Archive Coverage"]["y"].append(float(stats.coverage))
        if verbose:
            print(
                f"> {itr} itrs completed after {loop_time:.2f} s | "
                f"QD score {float(stats.qd_score):.2f} | coverage "
                f"{float(stats.coverage):.2%} | size {stats.num_elites}",
                flush=True,
            )

    loop_time = 0.0
    discount = bool(config.get("discount"))
    if discount:
        if fused:
            raise ValueError("fused=True does not support dms")
        scheduler.archive.init_discount_model()
    if fused:
        if function != "sphere":
            raise ValueError("fused=True supports the sphere function only")
        task = sphere_task(dim, pyribs_objective_grad=True)
    for itr in range(1, itrs + 1):
        if fused:
            if not (itr % log_freq == 0 or itr == itrs):
                continue
            done = metrics["QD Score"]["x"][-1]
            result = scheduler.run(task, itr - done, seed=seed if done == 0 else None)
            loop_time += result.run_time + result.compile_time
            itr_stats(itr)
            continue
        start = time.perf_counter()
        if dqd:
            solutions = scheduler.ask_dqd()
            objective, measures, jacobian = evaluate(solutions)
            scheduler.tell_dqd(objective, measures, jacobian)
        solutions = scheduler.ask()
        if function == "sphere":
            objective, measures = sphere(solutions)
        else:
            objective, measures, _ = evaluate(solutions)
        scheduler.tell(objective, measures)
        if discount:
            scheduler.archive.train_discount_model()
        loop_time += time.perf_counter() - start

        if itr % log_freq == 0 or itr == itrs:
            itr_stats(itr)

    summary = {
        "algorithm": algorithm,
        "function": function,
        "dim": dim,
        "itrs": itrs,
        "grid_dims": list(grid_dims),
        "learning_rate": learning_rate,
        "es": es,
        "seed": seed,
        "dtype": dtype,
        "qd_score": metrics["QD Score"]["y"][-1],
        "coverage": metrics["Archive Coverage"]["y"][-1],
        "loop_time_s": loop_time,
    }
    (outdir / f"{algorithm}_metrics.json").write_text(
        json.dumps({**metrics, "summary": summary}, indent=2) + "\n"
    )
    with open(outdir / f"{algorithm}_metrics.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["iteration", "qd_score", "coverage"])
        writer.writerows(
            zip(
                metrics["QD Score"]["x"], metrics["QD Score"]["y"], metrics["Archive Coverage"]["y"]
            )
        )
    if save_archive:
        result_archive.data(return_type="pandas").to_csv(outdir / f"{algorithm}_archive.csv")
        write_heatmap(result_archive, outdir / f"{algorithm}_heatmap.png", vmin=0, vmax=100)
    if verbose:
        print(f"Algorithm Time (Excludes Logging and Setup): {loop_time:.2f} s")
    return summary


def main(argv=None):
    """Command-line entry point (arguments as in pyribs' ``sphere.py``)."""
    parser = argparse.ArgumentParser(
        prog="python -m ribsax.examples.sphere",
        description="pyribs' sphere benchmark configurations on ribsax.",
    )
    parser.add_argument("algorithm", choices=list(CONFIG))
    parser.add_argument(
        "--dim",
        type=int,
        default=None,
        help="solution dimension (default: 100, 1000 for rastrigin_cma_mega)",
    )
    parser.add_argument(
        "--function",
        choices=list(FUNCTIONS),
        default=None,
        help="objective (default: the configuration's, sphere)",
    )
    parser.add_argument("--itrs", type=int, default=10000)
    parser.add_argument("--grid_dims", type=int, nargs=2, default=(100, 100))
    parser.add_argument("--learning_rate", type=float, default=None)
    parser.add_argument("--es", default=None)
    parser.add_argument("--outdir", default="sphere_output")
    parser.add_argument("--log_freq", type=int, default=250)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--verbose", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--save_archive", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--fused",
        action="store_true",
        help="ribsax extension: compile ask -> evaluate -> tell into "
        "one lax.scan per --log_freq iterations (Scheduler.run)",
    )
    args = parser.parse_args(argv)
    run(
        args.algorithm,
        dim=args.dim,
        itrs=args.itrs,
        grid_dims=args.grid_dims,
        learning_rate=args.learning_rate,
        es=args.es,
        outdir=args.outdir,
        log_freq=args.log_freq,
        seed=args.seed,
        dtype=args.dtype,
        verbose=args.verbose,
        save_archive=args.save_archive,
        function=args.function,
        fused=args.fused,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
