"""Comparing run directories: ``ribsax plot`` and ``ribsax batch-sizes``."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ribsax.experiments._components import build_scheduler, build_task
from ribsax.experiments._config import load_config
from ribsax.experiments._experiment import Experiment, evaluations_per_iteration
from ribsax.experiments._run_directory import default_run_name
from ribsax.experiments._trials import run_config_trials

__all__ = ["load_runs", "final_table", "plot_runs", "run_batch_sizes"]

#: Metrics drawn by :func:`plot_runs`, with their axis labels.
PLOTTED = (("qd_score", "QD score"), ("coverage", "coverage"),
           ("obj_max", "best objective"))


def _attribute(config: dict, metrics: pd.DataFrame, key: str):
    """Value of a dotted config key (``batch_size``: evaluations per iteration)."""
    if key == "batch_size":
        return int(metrics["evaluations"].iloc[0])
    node = config
    for part in key.split("."):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(f"attribute: {key!r} is not in the config of the run "
                           f"{config.get('name')!r}")
    return node if isinstance(node, (int, float, str, bool)) or node is None \
        else str(node)


def load_runs(results_dir, exp_name="", attribute="name") -> pd.DataFrame:
    """Finds the run directories under ``results_dir`` (any depth).

    Args:
        results_dir: Directory holding run directories (with ``config.yaml`` and
            ``metrics.csv``).
        exp_name: Keep runs whose config ``name`` starts with this prefix.
        attribute: Dotted config key to group by (``batch_size``: the evaluations
            of one iteration).

    Returns:
        A DataFrame with one row per run: ``path``, ``name``, ``seed``, ``group``
        (the attribute's value) and ``metrics`` (the run's metrics DataFrame).

    Raises:
        FileNotFoundError: No run matches.
        KeyError: A run's config lacks ``attribute``.
    """
    import yaml  # pylint: disable=import-outside-toplevel
    rows = []
    for config_path in sorted(Path(results_dir).glob("**/config.yaml")):
        run_dir = config_path.parent
        if not (run_dir / "metrics.csv").is_file():
            continue
        config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
        if not str(config.get("name", "")).startswith(exp_name):
            continue
        metrics = pd.read_csv(run_dir / "metrics.csv")
        if metrics.empty:
            continue
        rows.append({"path": str(run_dir), "name": config["name"],
                     "seed": config.get("seed"),
                     "group": _attribute(config, metrics, attribute),
                     "metrics": metrics})
    if not rows:
        raise FileNotFoundError(f"no run directory under {results_dir} whose name "
                                f"starts with {exp_name!r}")
    return pd.DataFrame(rows)


def _mean_ci(values):
    # scipy.stats takes most of a second to import; the ``ribsax`` command imports
    # this module for every sub-command.
    import scipy.stats  # pylint: disable=import-outside-toplevel
    values = np.asarray(values, dtype=float)
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, float("nan")
    return mean, float(scipy.stats.sem(values)
                       * scipy.stats.t.ppf(0.975, len(values) - 1))


def final_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% confidence half-width over seeds of the final metrics, by group.

    Returns:
        One row per group: ``group``, ``runs``, ``evaluations``, then ``<metric>``
        and ``<metric>_ci95`` for QD score, coverage, best objective and
        ``elapsed_s``.
    """
    rows = []
    for group, members in runs.groupby("group", sort=True):
        finals = pd.DataFrame([m.iloc[-1] for m in members["metrics"]])
        row = {"group": group, "runs": len(members),
               "evaluations": int(finals["evaluations"].max())}
        for column in ("qd_score", "coverage", "obj_max", "elapsed_s"):
            row[column], row[f"{column}_ci95"] = _mean_ci(finals[column])
        rows.append(row)
    return pd.DataFrame(rows)


def _on_time_grid(metrics, end, points=100):
    """Metrics interpolated on ``points`` wall-clock times in [0, end] (seconds),
    the times in the ``iteration`` column (the alignment key of the curves)."""
    grid = np.linspace(0.0, end, points)
    table = {"iteration": grid}
    for column, _ in PLOTTED:
        table[column] = np.interp(grid, metrics["elapsed_s"], metrics[column])
    return pd.DataFrame(table)


def plot_runs(results_dir, exp_name, attribute, save, *, table_path=None):
    """QDax-style comparison figure: mean and 95% confidence band over seeds of QD
    score, coverage and best objective against evaluations (top row) and wall-clock
    time (bottom row), one line per value of ``attribute``; drawn with
    :func:`ribsax.visualize.qd_metric_curves`.

    Args:
        results_dir: Directory holding the run directories.
        exp_name: Prefix of the runs' config names.
        attribute: Dotted config key to group by (or ``batch_size``).
        save: Path of the figure.
        table_path: Optional CSV path for :func:`final_table`.

    Returns:
        :func:`final_table` of the runs.

    Raises:
        FileNotFoundError: No run matches.
        ImportError: matplotlib is not installed.
    """
    # matplotlib and ribsax.visualize (which imports it): the visualize extra.
    # pylint: disable=import-outside-toplevel
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ribsax.visualize import qd_metric_curves
    runs = load_runs(results_dir, exp_name, attribute)
    by_evaluations, by_time = {}, {}
    for group, members in runs.groupby("group", sort=True):
        label = f"{attribute}={group}"
        # Seeds are aligned on evaluations (the curves' x) ...
        by_evaluations[label] = [m.assign(iteration=m["evaluations"])
                                 for m in members["metrics"]]
        # ... and on a common time grid up to the shortest run of the group.
        end = min(float(m["elapsed_s"].iloc[-1]) for m in members["metrics"])
        by_time[label] = [_on_time_grid(m, end) for m in members["metrics"]]
    fig = Figure(figsize=(15, 8))
    FigureCanvasAgg(fig)
    for col, (metric, label) in enumerate(PLOTTED):
        for row, (curves, xlabel) in enumerate(((by_evaluations, "evaluations"),
                                                (by_time, "wall-clock time (s)"))):
            ax = fig.add_subplot(2, len(PLOTTED), row * len(PLOTTED) + col + 1)
            qd_metric_curves(curves, ax, metric=metric, legend=col == 0)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(label)
    fig.suptitle(f"{exp_name or 'all runs'}: mean and 95% CI over seeds")
    fig.tight_layout()
    Path(save).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(save, dpi=100)
    table = final_table(runs)
    if table_path is not None:
        table.to_csv(table_path, index=False)
    return table


def run_batch_sizes(config, batch_sizes, replications, *, results_dir, save=None,
                    overrides=(), smoke=False, quiet=True, trials=True,
                    vectorize=True) -> pd.DataFrame:
    """QDax's batch-size comparison: the same evaluation budget at several batch
    sizes, ``replications`` seeds each, then :func:`plot_runs` grouped by batch size.

    The batch size is the number of solutions per iteration: with ``k`` emitters in
    the config, each gets ``batch_size // k``. The budget is the config's
    ``budget.evaluations``, or ``budget.iterations`` times the config's own
    evaluations per iteration. Runs go to
    ``results_dir/<date>_<name>_bs<size>_seed<s>``.

    When the task is JAX and the fused loop can run the config (no Python
    ``evaluator``), the replications of each batch size run as the
    trials of one :func:`ribsax.run_trials` call (one ``jax.vmap``-ed loop,
    compiled once per batch size) and their run directories hold the metrics, the
    final snapshot and plots, without checkpoints or archive history (see
    :func:`~ribsax.experiments._trials.run_config_trials`; ``elapsed_s`` is then
    the wall time of all replications together). Otherwise, or with
    ``trials=False``, each replication is an :class:`Experiment` run after the
    other (the config's loop, checkpoints and history). Both give the same
    metrics up to floating-point reassociation (the same schedulers, seeds and
    evaluation keys).

    Args:
        config: Config name or path (as for :func:`~ribsax.experiments.load_config`).
        batch_sizes: Solutions per iteration to compare.
        replications: Seeds ``0 .. replications - 1`` per batch size.
        results_dir: Where the run directories go.
        save: Figure path (default: ``results_dir/batch_sizes.png``).
        overrides: Further ``key=value`` overrides.
        smoke: Apply the config's smoke overrides.
        quiet: No progress bars.
        trials: Run the replications through :func:`ribsax.run_trials` when the
            config allows it (False: always one :class:`Experiment` each).
        vectorize: ``run_trials``' ``vectorize`` (False: the trials run one after
            the other through one compiled loop, often faster on a CPU).

    Returns:
        :func:`final_table` grouped by batch size.

    Raises:
        ValueError: A batch size smaller than the number of emitters, or fewer
            than one replication.
    """
    if int(replications) < 1:
        raise ValueError(f"replications must be at least 1, got {replications}")
    base = load_config(config, overrides, smoke=smoke)
    counts = [int(e.get("count", 1)) for e in base.emitters]
    if any(int(b) < sum(counts) for b in batch_sizes):
        raise ValueError(f"batch_sizes must be at least the number of emitters "
                         f"({sum(counts)}), got {list(batch_sizes)}")
    evaluations = base.budget.evaluations
    if evaluations is None:
        scheduler = build_scheduler(base, build_task(base))
        evaluations = base.budget.iterations * evaluations_per_iteration(scheduler)
    for size in batch_sizes:
        per_emitter = int(size) // sum(counts)
        name = f"{base.name}_bs{size}"
        configs = [load_config(config, [
            *overrides, f"name={name}", f"seed={seed}", "budget.iterations=null",
            f"budget.evaluations={evaluations}",
            *(f"emitters.{i}.batch_size={per_emitter}"
              for i in range(len(counts)))], smoke=smoke)
            for seed in range(int(replications))]
        logdirs = [Path(results_dir) / default_run_name(name, int(cfg.seed))
                   for cfg in configs]
        if trials and run_config_trials(configs, logdirs,
                                        vectorize=vectorize) is not None:
            continue
        for cfg, logdir in zip(configs, logdirs):
            Experiment(cfg, logdir=logdir, quiet=quiet).run()
    save = save or Path(results_dir) / "batch_sizes.png"
    return plot_runs(results_dir, base.name + "_bs", "batch_size", save)
