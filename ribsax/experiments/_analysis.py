"""Comparing run directories: ``ribsax plot`` and ``ribsax batch-sizes``."""

from __future__ import annotations

import inspect
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ribsax import emitters
from ribsax.experiments._components import build_scheduler, build_task, jacobian_samples
from ribsax.experiments._config import load_config
from ribsax.experiments._errors import ConfigError
from ribsax.experiments._experiment import Experiment, evaluations_per_iteration
from ribsax.experiments._run_directory import default_run_name
from ribsax.experiments._statistics import pairwise_tests
from ribsax.experiments._summary import SUMMARY_FILE, qd_score_auc
from ribsax.experiments._trials import run_config_trials

__all__ = [
    "load_runs",
    "run_finals",
    "final_table",
    "compare_runs",
    "markdown_report",
    "plot_runs",
    "run_batch_sizes",
    "TABLE_METRICS",
    "TESTED_METRICS",
]

#: Metrics drawn by :func:`plot_runs`, with their axis labels.
PLOTTED = (("qd_score", "QD score"), ("coverage", "coverage"), ("obj_max", "best objective"))

#: Final values in :func:`final_table` (``mean_robustness`` too when every run
#: has it), with their labels.
TABLE_METRICS = (
    ("qd_score", "QD score"),
    ("norm_qd_score", "normalised QD score"),
    ("coverage", "coverage"),
    ("obj_max", "best objective"),
    ("qd_score_auc", "QD-score AUC"),
    ("elapsed_s", "elapsed (s)"),
)

#: Metrics :func:`compare_runs` tests between groups (``mean_robustness`` too when
#: every run has it).
TESTED_METRICS = ("qd_score", "qd_score_auc", "coverage", "obj_max")

_ROBUSTNESS = ("mean_robustness", "mean elite robustness")


def _attribute(config: dict, metrics: pd.DataFrame, key: str):
    """Value of a dotted config key (``batch_size``: evaluations per iteration)."""
    if key == "batch_size":  # The first record may follow several iterations.
        return int(metrics["evaluations"].iloc[0]) // int(metrics["iteration"].iloc[0])
    node = config
    for part in key.split("."):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(
                f"attribute: {key!r} is not in the config of the run {config.get('name')!r}"
            )
    return node if isinstance(node, (int, float, str, bool)) or node is None else str(node)


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
        (the attribute's value), ``metrics`` (the run's metrics DataFrame) and
        ``summary`` (its ``summary.json`` from ``ribsax analyze`` as a dict when it
        describes the run's last recorded iteration, else None).

    Raises:
        FileNotFoundError: No run matches.
        KeyError: A run's config lacks ``attribute``.
    """
    import yaml

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
        rows.append(
            {
                "path": str(run_dir),
                "name": config["name"],
                "seed": config.get("seed"),
                "group": _attribute(config, metrics, attribute),
                "metrics": metrics,
                "summary": _read_summary(run_dir, metrics),
            }
        )
    if not rows:
        raise FileNotFoundError(
            f"no run directory under {results_dir} whose name starts with {exp_name!r}"
        )
    return pd.DataFrame(rows)


def _read_summary(run_dir, metrics):
    """The run's ``summary.json`` (``ribsax analyze``) when it describes the last
    recorded iteration, else None."""
    path = Path(run_dir) / SUMMARY_FILE
    if not path.is_file():
        return None
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if summary.get("iteration") != int(metrics["iteration"].iloc[-1]):
        return None
    return summary


def run_finals(runs: pd.DataFrame) -> pd.DataFrame:
    """Final values of each run of :func:`load_runs`.

    Returns:
        One row per run: ``group``, ``name``, ``seed``, ``path``, ``evaluations``,
        the last recorded ``qd_score``, ``norm_qd_score``, ``coverage``,
        ``obj_max`` and ``elapsed_s``, ``qd_score_auc``
        (:func:`~ribsax.experiments.qd_score_auc`), and ``mean_robustness`` when
        every run has a ``summary.json`` with it for its last recorded iteration
        (``ribsax analyze``).
    """
    rows = []
    robustness = all(s is not None and "mean_robustness" in s for s in runs["summary"])
    for _, run in runs.iterrows():
        last = run["metrics"].iloc[-1]
        row = {
            "group": run["group"],
            "name": run["name"],
            "seed": run["seed"],
            "path": run["path"],
            "evaluations": int(last["evaluations"]),
        }
        for column, _ in TABLE_METRICS:
            row[column] = (
                qd_score_auc(run["metrics"]) if column == "qd_score_auc" else float(last[column])
            )
        if robustness:
            value = run["summary"]["mean_robustness"]
            row["mean_robustness"] = math.nan if value is None else float(value)
        rows.append(row)
    return pd.DataFrame(rows)


def _mean_ci(values):
    # scipy.stats takes most of a second to import; the ``ribsax`` command imports
    # this module for every sub-command.
    import scipy.stats

    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return float("nan"), float("nan")
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, float("nan")
    return mean, float(scipy.stats.sem(values) * scipy.stats.t.ppf(0.975, len(values) - 1))


def final_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% confidence half-width over seeds of the final metrics, by group.

    The half-width is Student's t: ``t_{0.975, n-1} * sd / sqrt(n)`` over the ``n``
    runs of the group (NaN for one run).

    Returns:
        One row per group: ``group``, ``runs``, ``evaluations`` (the largest), then
        ``<metric>`` and ``<metric>_ci95`` for each of :data:`TABLE_METRICS` (QD
        score, normalised QD score, coverage, best objective, QD-score AUC,
        elapsed seconds) and ``mean_robustness`` when every run has it (see
        :func:`run_finals`).
    """
    finals = run_finals(runs)
    columns = [c for c, _ in TABLE_METRICS]
    if "mean_robustness" in finals:
        columns.append("mean_robustness")
    rows = []
    for group, members in finals.groupby("group", sort=True):
        row = {
            "group": group,
            "runs": len(members),
            "evaluations": int(members["evaluations"].max()),
        }
        for column in columns:
            row[column], row[f"{column}_ci95"] = _mean_ci(members[column].dropna())
        rows.append(row)
    return pd.DataFrame(rows)


def _number(value) -> str:
    return (
        "n/a"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{value:.4g}"
    )


def _markdown(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def markdown_report(table: pd.DataFrame, tests: pd.DataFrame, alpha=0.05) -> str:
    """The tables of :func:`compare_runs` as Markdown: final values (mean ± 95%
    CI half-width over seeds) per group, then the pairwise tests."""
    labels = dict(TABLE_METRICS + (_ROBUSTNESS,))
    columns = [c for c in labels if c in table]
    text = [
        "## Final values (mean ± 95% CI over seeds)\n",
        _markdown(
            ["group", "runs", "evaluations", *(labels[c] for c in columns)],
            [
                [
                    row["group"],
                    row["runs"],
                    row["evaluations"],
                    *(f"{_number(row[c])} ± {_number(row[f'{c}_ci95'])}" for c in columns),
                ]
                for _, row in table.iterrows()
            ],
        ),
        "\n## Pairwise two-sided Mann-Whitney U tests, Holm-Bonferroni-corrected "
        f"over the pairs of each metric (significant: p_holm < {alpha:g})\n",
        _markdown(
            [
                "metric",
                "group A",
                "group B",
                "n A",
                "n B",
                "median A",
                "median B",
                "U",
                "p",
                "p_holm",
                "significant",
            ],
            [
                [
                    labels.get(row["metric"], row["metric"]),
                    row["group_a"],
                    row["group_b"],
                    row["n_a"],
                    row["n_b"],
                    _number(row["median_a"]),
                    _number(row["median_b"]),
                    _number(row["u_statistic"]),
                    _number(row["p_value"]),
                    _number(row["p_holm"]),
                    "yes" if row["significant"] else "no",
                ]
                for _, row in tests.iterrows()
            ],
        ),
    ]
    return "".join(text)


def compare_runs(runs: pd.DataFrame, *, alpha=0.05):
    """Final values and significance tests of the groups of :func:`load_runs`.

    Returns:
        ``(table, tests)``: :func:`final_table`, and
        :func:`~ribsax.experiments.pairwise_tests` of :data:`TESTED_METRICS`
        (and ``mean_robustness`` when every run has it) on the runs' final values
        (:func:`run_finals`): two-sided Mann-Whitney U tests of every pair of
        groups, Holm-Bonferroni-corrected over the pairs of each metric.
    """
    finals = run_finals(runs)
    metrics = list(TESTED_METRICS)
    if "mean_robustness" in finals:
        metrics.append("mean_robustness")
    return final_table(runs), pairwise_tests(finals, metrics, alpha=alpha)


def _on_time_grid(metrics, end, points=100):
    """Metrics interpolated on ``points`` wall-clock times in [0, end] (seconds),
    the times in the ``iteration`` column (the alignment key of the curves)."""
    grid = np.linspace(0.0, end, points)
    table = {"iteration": grid}
    for column, _ in PLOTTED:
        table[column] = np.interp(grid, metrics["elapsed_s"], metrics[column])
    return pd.DataFrame(table)


def plot_runs(
    results_dir,
    exp_name,
    attribute,
    save,
    *,
    table_path=None,
    tests_path=None,
    markdown_path=None,
    alpha=0.05,
):
    """QDax-style comparison figure: mean and 95% confidence band over seeds of QD
    score, coverage and best objective against evaluations (top row) and wall-clock
    time (bottom row), one line per value of ``attribute`` (e.g. one per
    algorithm with ``attribute="name"``); drawn with
    :func:`ribsax.visualize.qd_metric_curves` (``errorbar="ci95"``: Student's t
    interval of the mean over the seeds; no band for a single seed). Optionally
    writes the tables of :func:`compare_runs`.

    Args:
        results_dir: Directory holding the run directories.
        exp_name: Prefix of the runs' config names.
        attribute: Dotted config key to group by (or ``batch_size``).
        save: Path of the figure.
        table_path: Optional CSV path for :func:`final_table`.
        tests_path: Optional CSV path for the pairwise tests of
            :func:`compare_runs`.
        markdown_path: Optional path for both tables as Markdown
            (:func:`markdown_report`).
        alpha: Significance level of the tests.

    Returns:
        :func:`final_table` of the runs.

    Raises:
        FileNotFoundError: ``results_dir`` does not exist, or no run matches.
        ImportError: matplotlib is not installed.
    """
    return _plot_and_compare(
        results_dir,
        exp_name,
        attribute,
        save,
        table_path=table_path,
        tests_path=tests_path,
        markdown_path=markdown_path,
        alpha=alpha,
    )[0]


def _plot_and_compare(
    results_dir,
    exp_name,
    attribute,
    save,
    *,
    table_path=None,
    tests_path=None,
    markdown_path=None,
    alpha=0.05,
):
    """:func:`plot_runs`, returning ``(table, tests)`` of :func:`compare_runs`."""
    # matplotlib and ribsax.visualize (which imports it): the visualize extra.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ribsax.visualize import qd_metric_curves

    if not Path(results_dir).is_dir():
        raise FileNotFoundError(f"{results_dir} does not exist or is not a directory")
    runs = load_runs(results_dir, exp_name, attribute)
    by_evaluations, by_time = {}, {}
    for group, members in runs.groupby("group", sort=True):
        label = str(group) if attribute == "name" else f"{attribute}={group}"
        # Seeds are aligned on evaluations (the curves' x) ...
        by_evaluations[label] = [m.assign(iteration=m["evaluations"]) for m in members["metrics"]]
        # ... and on a common time grid up to the shortest run of the group.
        end = min(float(m["elapsed_s"].iloc[-1]) for m in members["metrics"])
        by_time[label] = [_on_time_grid(m, end) for m in members["metrics"]]
    fig = Figure(figsize=(15, 8))
    FigureCanvasAgg(fig)
    for col, (metric, label) in enumerate(PLOTTED):
        for row, (curves, xlabel) in enumerate(
            ((by_evaluations, "evaluations"), (by_time, "wall-clock time (s)"))
        ):
            ax = fig.add_subplot(2, len(PLOTTED), row * len(PLOTTED) + col + 1)
            qd_metric_curves(curves, ax, metric=metric, errorbar="ci95", legend=col == 0)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(label)
    fig.suptitle(
        f"{exp_name or 'all runs'}: mean and 95% confidence interval (Student's t) over seeds"
    )
    fig.tight_layout()
    Path(save).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(save, dpi=100)
    table, tests = compare_runs(runs, alpha=alpha)
    for path, write in (
        (table_path, lambda p: table.to_csv(p, index=False)),
        (tests_path, lambda p: tests.to_csv(p, index=False)),
        (
            markdown_path,
            lambda p: Path(p).write_text(markdown_report(table, tests, alpha), encoding="utf-8"),
        ),
    ):
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            write(path)
    return table, tests


#: Emitters whose batch is the sum of named parts rather than one ``batch_size``:
#: ``ribsax batch-sizes`` scales the parts in proportion.
_BATCH_PARTS = {
    "DCRLMEEmitter": ("ga_batch_size", "pg_batch_size", "ai_batch_size"),
    "QDPGEmitter": ("quality_batch_size", "diversity_batch_size", "ga_batch_size"),
}

#: Further evaluations per iteration that scale with the parts (DCG-ME's actor
#: evaluations).
_SCALED_WITH_PARTS = {"DCRLMEEmitter": ("actor_evaluations",)}


def _proportional_split(parts, total):
    """``total`` split in proportion to ``parts`` (largest remainders, earlier
    parts first on ties); every positive part keeps at least 1."""
    weight = sum(parts)
    raw = [total * p / weight for p in parts]
    sizes = [math.floor(r) for r in raw]
    order = sorted(range(len(parts)), key=lambda j: (-(raw[j] - sizes[j]), j))
    for j in order[: total - sum(sizes)]:
        sizes[j] += 1
    for j, p in enumerate(parts):
        if p > 0 and sizes[j] == 0:
            sizes[max(range(len(sizes)), key=lambda k: sizes[k])] -= 1
            sizes[j] = 1
    return sizes


def _emitter_batch_overrides(index, section, size):
    """The overrides that give the emitter of ``emitters.<index>`` ``size``
    solutions per iteration: its ``batch_size``, or its named parts scaled in
    proportion (``_BATCH_PARTS``)."""
    class_name = section["class"]  # a public emitter class: load_config checked it
    params = inspect.signature(getattr(emitters, class_name)).parameters
    if "batch_size" in params:
        return [f"emitters.{index}.batch_size={size}"]
    if class_name not in _BATCH_PARTS:
        raise ConfigError(
            f"emitters.{index}.class: {class_name} has no batch size to set: "
            f"batch_sizes scales an emitter's batch_size or the parts of "
            f"{', '.join(_BATCH_PARTS)}; set this emitter's sizes per run instead"
        )

    def value(key):
        return int(section[key]) if key in section else int(params[key].default)

    names = _BATCH_PARTS[class_name]
    parts = [value(key) for key in names]
    positive = sum(p > 0 for p in parts)
    if size < positive:
        raise ConfigError(
            f"batch_sizes: {class_name} needs at least {positive} solutions per "
            f"iteration (one for each of {', '.join(k for k, p in zip(names, parts) if p)}), "
            f"got {size}"
        )
    sizes = _proportional_split(parts, size)
    overrides = [f"emitters.{index}.{key}={n}" for key, n in zip(names, sizes)]
    for key in _SCALED_WITH_PARTS.get(class_name, ()):
        current = value(key)
        if current:
            scaled = max(1, round(current * size / sum(parts)))
            overrides.append(f"emitters.{index}.{key}={scaled}")
    return overrides


def run_batch_sizes(
    config,
    batch_sizes,
    replications,
    *,
    results_dir,
    save=None,
    overrides=(),
    smoke=False,
    quiet=True,
    trials=True,
    vectorize=True,
) -> pd.DataFrame:
    """QDax's batch-size comparison: the same evaluation budget at several batch
    sizes, ``replications`` seeds each, then :func:`plot_runs` grouped by batch size.

    The batch size is the number of solutions per iteration: with ``k`` emitters in
    the config, each gets ``batch_size // k`` as its ``batch_size``. An emitter
    whose batch is a sum of parts gets the parts scaled in proportion to the
    config's (largest remainders, earlier parts first on ties, each positive
    part at least 1): :class:`~ribsax.emitters.DCRLMEEmitter`'s
    ``ga_batch_size``, ``pg_batch_size`` and ``ai_batch_size`` (DCG-ME's
    ``actor_evaluations`` scaled by the same factor, rounded, at least 1) and
    :class:`~ribsax.emitters.QDPGEmitter`'s ``quality_batch_size``,
    ``diversity_batch_size`` and ``ga_batch_size``. The budget is the config's
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
        ValueError: A batch size smaller than the number of emitters (or than
            the positive parts of a split emitter), an emitter with neither a
            ``batch_size`` nor parts to scale (:class:`~ribsax.emitters.MEESEmitter`,
            :class:`~ribsax.emitters.PBTMEEmitter`), or fewer than one
            replication.
    """
    if int(replications) < 1:
        raise ValueError(f"replications must be at least 1, got {replications}")
    base = load_config(config, overrides, smoke=smoke)
    counts = [int(e.get("count", 1)) for e in base.emitters]
    if any(int(b) < sum(counts) for b in batch_sizes):
        raise ValueError(
            f"batch_sizes must be at least the number of emitters "
            f"({sum(counts)}), got {list(batch_sizes)}"
        )
    evaluations = base.budget.evaluations
    if evaluations is None:
        scheduler = build_scheduler(base, build_task(base))
        evaluations = base.budget.iterations * evaluations_per_iteration(
            scheduler, jacobian_samples(base)
        )
    # Every size's emitter overrides first: a size that cannot run stops before any run.
    sized = {
        size: [
            override
            for i, section in enumerate(base.emitters)
            for override in _emitter_batch_overrides(i, section, int(size) // sum(counts))
        ]
        for size in batch_sizes
    }
    for size in batch_sizes:
        name = f"{base.name}_bs{size}"
        configs = [
            load_config(
                config,
                [
                    *overrides,
                    f"name={name}",
                    f"seed={seed}",
                    "budget.iterations=null",
                    f"budget.evaluations={evaluations}",
                    *sized[size],
                ],
                smoke=smoke,
            )
            for seed in range(int(replications))
        ]
        logdirs = [Path(results_dir) / default_run_name(name, int(cfg.seed)) for cfg in configs]
        if trials and run_config_trials(configs, logdirs, vectorize=vectorize) is not None:
            continue
        for cfg, logdir in zip(configs, logdirs):
            Experiment(cfg, logdir=logdir, quiet=quiet).run()
    save = save or Path(results_dir) / "batch_sizes.png"
    return plot_runs(results_dir, base.name + "_bs", "batch_size", save)
