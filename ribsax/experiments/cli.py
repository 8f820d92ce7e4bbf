"""The ``ribsax`` command (also ``python -m ribsax``).

Sub-commands::

    ribsax run CONFIG [key=value ...] [--smoke] [--quiet]   run a config
    ribsax run --list                                       list the shipped configs
    ribsax run --resume LOGDIR [--quiet]                    continue a run
    ribsax plot RESULTS_DIR --exp-name PREFIX --attribute KEY --save FIG
                [--table CSV] [--tests CSV] [--markdown MD]
    ribsax analyze LOGDIR [LOGDIR ...] [--robustness-episodes N] [--csv CSV]
    ribsax batch-sizes CONFIG --batch-sizes 128 512 2048 -n 5 [key=value ...]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from pathlib import Path

import pandas as pd

from ribsax._checkpointer import UnreadableCheckpointError, UnreadableCheckpointWarning
from ribsax.experiments._analysis import _plot_and_compare, run_batch_sizes
from ribsax.experiments._config import (
    SMOKE_SUFFIX,
    ConfigError,
    is_rl_config,
    list_configs,
    load_config,
)
from ribsax.experiments._experiment import Experiment
from ribsax.experiments._rl_run import resume_rl, run_rl_config
from ribsax.experiments._summary import run_summary

__all__ = ["main"]


def _run(args, parser) -> int:
    if args.list:
        for name in list_configs():
            print(f"{name}  (smoke: {name}{SMOKE_SUFFIX})")
        return 0
    if args.resume is not None:
        if args.config is not None or args.overrides:
            parser.error(
                "--resume takes no CONFIG or overrides (the run directory holds its config)"
            )
        stored = Path(args.resume) / "config.yaml"
        if stored.is_file() and is_rl_config(load_config(stored)):
            return _run_rl(None, args)
        with _checkpoint_warnings():
            experiment = Experiment.resume(args.resume, quiet=args.quiet)
    else:
        if args.config is None:
            parser.error("CONFIG is required (or --list, or --resume LOGDIR)")
        cfg = load_config(args.config, args.overrides, smoke=args.smoke)
        if is_rl_config(cfg):
            return _run_rl(cfg, args)
        experiment = Experiment(cfg, quiet=args.quiet)
    if not args.quiet:
        print(f"run directory: {experiment.directory.path}", flush=True)
    metrics = experiment.run()
    final = metrics.iloc[-1]
    print(
        f"{experiment.config.name}: {int(final['iteration'])} iterations, "
        f"{int(final['evaluations'])} evaluations, QD score "
        f"{final['qd_score']:.6g}, coverage {final['coverage']:.2%}, best "
        f"{final['obj_max']:.6g}; outputs in {experiment.directory.path}"
    )
    return 0


@contextlib.contextmanager
def _checkpoint_warnings():
    """Prints each unreadable checkpoint that a resume skips, as it is skipped, as a
    ``ribsax: warning:`` line (other warnings are shown as usual)."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", UnreadableCheckpointWarning)
        show = warnings.showwarning

        def showwarning(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, UnreadableCheckpointWarning):
                print(f"ribsax: warning: {message}", file=sys.stderr, flush=True)
            else:
                show(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning
        yield


def _run_rl(cfg, args) -> int:
    """Trains the RL config ``cfg``, or resumes ``args.resume`` (``cfg`` None)."""
    if cfg is None:
        with _checkpoint_warnings():
            path, rows = resume_rl(args.resume, quiet=args.quiet)
        cfg = load_config(path / "config.yaml")
    else:
        path, rows = run_rl_config(cfg, quiet=args.quiet)
    last = rows[-1]
    env = cfg.rl.get("env", "its default environment")
    print(
        f"{cfg.name}: {cfg.rl.algorithm} on {env}, {int(last['env_steps'])} "
        f"environment steps, evaluation return {last['eval_return']:.6g}; outputs "
        f"in {path}"
    )
    return 0


def _plot(args, parser) -> int:
    del parser
    table, tests = _plot_and_compare(
        args.results_dir,
        args.exp_name,
        args.attribute,
        args.save,
        table_path=args.table,
        tests_path=args.tests,
        markdown_path=args.markdown,
        alpha=args.alpha,
    )
    print(table.to_string(index=False))
    if len(tests):
        print(
            f"\npairwise two-sided Mann-Whitney U tests, Holm-Bonferroni-corrected "
            f"per metric (significant: p_holm < {args.alpha:g}):"
        )
        print(tests.to_string(index=False))
    return 0


def _analyze(args, parser) -> int:
    del parser
    if args.robustness_episodes < 0:
        print("ribsax: error: --robustness-episodes must be at least 0", file=sys.stderr)
        return 2
    rows = []
    for logdir in args.logdirs:
        try:
            rows.append(
                run_summary(
                    logdir,
                    robustness_episodes=args.robustness_episodes,
                    seed=args.seed,
                    write=not args.no_write,
                )
            )
        except ValueError as err:
            print(f"ribsax: error: {err}", file=sys.stderr)
            return 2
    table = pd.DataFrame(rows)
    if args.csv is not None:
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.csv, index=False)
    print(table.drop(columns="path").to_string(index=False))
    return 0


def _batch_sizes(args, parser) -> int:
    del parser
    table = run_batch_sizes(
        args.config,
        args.batch_sizes,
        args.n,
        results_dir=args.results_dir,
        save=args.save,
        overrides=args.overrides,
        smoke=args.smoke,
        quiet=args.quiet,
        trials=not args.sequential,
        vectorize=not args.no_vmap,
    )
    print(table.to_string(index=False))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ribsax", description="Run and compare quality-diversity experiments."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a config into a run directory")
    run.add_argument(
        "config",
        nargs="?",
        help="shipped config name (see --list), its _test smoke variant, or a YAML file",
    )
    run.add_argument(
        "overrides",
        nargs="*",
        help="dotted key=value overrides, e.g. "
        "seed=3 archive.dims=[30,30] emitters.0.batch_size=2048",
    )
    run.add_argument("--list", action="store_true", help="list the shipped configs")
    run.add_argument(
        "--resume", metavar="LOGDIR", help="continue the run in LOGDIR from its latest checkpoint"
    )
    run.add_argument(
        "--smoke", action="store_true", help="apply the config's smoke overrides (a run of seconds)"
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(handler=_run)

    plot = commands.add_parser(
        "plot",
        help="mean and 95%% confidence band over seeds of runs grouped by a config attribute",
    )
    plot.add_argument("results_dir", help="directory holding run directories")
    plot.add_argument(
        "--exp-name", default="", help="keep runs whose config name starts with this prefix"
    )
    plot.add_argument(
        "--attribute", default="name", help="dotted config key to group by (default: name)"
    )
    plot.add_argument("--save", required=True, help="figure path (PNG, PDF, ...)")
    plot.add_argument(
        "--table",
        default=None,
        help="also write the table of final values (mean and 95%% CI per group) as CSV here",
    )
    plot.add_argument(
        "--tests",
        default=None,
        help="also write the pairwise "
        "Mann-Whitney U tests (Holm-Bonferroni-corrected per metric) "
        "as CSV here",
    )
    plot.add_argument("--markdown", default=None, help="also write both tables as Markdown here")
    plot.add_argument(
        "--alpha", type=float, default=0.05, help="significance level of the tests (default 0.05)"
    )
    plot.set_defaults(handler=_plot)

    analyze = commands.add_parser(
        "analyze",
        help="final metrics of run directories (QD score, normalised QD "
        "score, coverage, best, QD-score AUC, mean elite robustness)",
        description="Final metrics of each run directory, from its metrics.csv, and "
        "the mean elite robustness: every elite of its latest archive re-evaluated "
        "N times (brax tasks with random initial states), mean return minus "
        "archived objective, averaged over the elites. Writes LOGDIR/summary.json "
        "(which `ribsax plot` adds to its table) unless --no-write.",
    )
    analyze.add_argument("logdirs", nargs="+", metavar="LOGDIR", help="run directories")
    analyze.add_argument(
        "--robustness-episodes",
        type=int,
        default=10,
        help="re-evaluations per elite (default 10, as dqd-rl; 0: no robustness)",
    )
    analyze.add_argument(
        "--seed", type=int, default=0, help="seed of the re-evaluations (default 0)"
    )
    analyze.add_argument("--csv", default=None, help="also write the table as CSV")
    analyze.add_argument("--no-write", action="store_true", help="do not write LOGDIR/summary.json")
    analyze.set_defaults(handler=_analyze)

    sizes = commands.add_parser(
        "batch-sizes",
        help="same evaluation budget at several batch sizes",
        description="The same evaluation budget at several batch sizes x n seeds, "
        "then the plot grouped by batch size. JAX tasks that the fused loop can "
        "run: the seeds of each batch size run as vmapped trials of "
        "ribsax.run_trials (one compiled loop; run directories with metrics, the "
        "final snapshot and plots, no checkpoints or history). Python evaluators "
        "(an evaluator section) or components the fused loop cannot "
        "run: one `ribsax run` after the other (the sequential fallback).",
    )
    sizes.add_argument("config")
    sizes.add_argument("overrides", nargs="*")
    sizes.add_argument("--batch-sizes", type=int, nargs="+", required=True)
    sizes.add_argument("-n", type=int, default=5, help="replications (seeds 0..n-1)")
    sizes.add_argument("--results-dir", default="logs/batch_sizes")
    sizes.add_argument(
        "--save", default=None, help="figure path (default: RESULTS_DIR/batch_sizes.png)"
    )
    sizes.add_argument("--smoke", action="store_true")
    sizes.add_argument("--quiet", action="store_true")
    sizes.add_argument(
        "--sequential",
        action="store_true",
        help="one `ribsax run` per seed and batch size even for JAX tasks",
    )
    sizes.add_argument(
        "--no-vmap",
        action="store_true",
        help="run_trials runs "
        "the seeds one after the other through one compiled loop "
        "(often faster on a CPU) instead of vmapping them",
    )
    sizes.set_defaults(handler=_batch_sizes)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``ribsax`` command.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success, 2 for a bad config or arguments, a run
        directory that already holds a run (new runs) or none (``--resume``), a
        run directory none of whose checkpoints can be read (``--resume``), no
        runs to plot, or a missing or empty run directory to analyze.
    """
    parser = _parser()
    # Overrides may also follow the options (``... --quiet seed=3``).
    args, extra = parser.parse_known_args(argv)
    unknown = [item for item in extra if item.startswith("-") or "=" not in item]
    if unknown or (extra and not hasattr(args, "overrides")):
        parser.error(f"unrecognized arguments: {' '.join(unknown or extra)}")
    if extra:
        args.overrides = [*args.overrides, *extra]
    try:
        return args.handler(args, parser)
    except (ConfigError, FileExistsError, FileNotFoundError, UnreadableCheckpointError) as err:
        print(f"ribsax: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
