"""Experiment runner: configs, run directories, checkpoints, analysis (``ribsax``
command).

``ribsax run CONFIG [key=value ...]`` runs a YAML config (a shipped one, see
``ribsax run --list``, or a file) into a run directory; ``ribsax run --resume
LOGDIR`` continues it from its latest checkpoint; ``ribsax analyze LOGDIR``
summarises a run (:func:`run_summary`); ``ribsax plot`` and ``ribsax
batch-sizes`` compare runs. The same from Python::

    from ribsax.experiments import Experiment, load_config, run_summary

    cfg = load_config("sphere_map_elites", ["seed=3", "budget.iterations=200"])
    metrics = Experiment(cfg, logdir="logs/me_seed3").run()
    metrics = Experiment.resume("logs/me_seed3").run()   # after a crash
    summary = run_summary("logs/me_seed3", robustness_episodes=10)
    summary["qd_score_auc"], summary["mean_robustness"]

A config (YAML; every key but the first five has a default)::

    name: my_cma_me
    task: {name: sphere, solution_dim: 100}        # or arm, rastrigin_projection,
                                                   # brax (with env: walker2d_uni)
    archive: {class: GridArchive, dims: [100, 100]} # ranges and offset: the task's
    emitters:
      - {class: EvolutionStrategyEmitter, count: 15, sigma0: 0.5, ranker: 2imp,
         batch_size: 36}                           # x0 = 0 unless set
    budget: {iterations: 1000}                     # or {evaluations: 540000}
    seed: 0
    dtype: float32
    result_archive: null                           # e.g. {class: GridArchive}
    scheduler: {class: Scheduler}
    loop: ask_tell                                 # or fused (Scheduler.run)
    fused_chunk: 256
    shard: false                                   # batch over jax.devices()
    evaluator: null                                # {function: "mod:fn", n_workers: 4}
    logdir: null                                   # logs/<date>_<name>_seed<seed>
    logging: {metrics_every: 1, snapshot_every: 100, history_every: 1,
              heatmaps: true, plots: true, progress_every: 1}
    checkpoint: {every_iterations: 100, every_minutes: null, keep: 3,
                 background: true}
    smoke: {budget.iterations: 5, archive.dims: [10, 10]}   # --smoke / NAME_test

This package imports OmegaConf, orbax-checkpoint, tqdm and pyarrow only when they
are used; ``import ribsax`` does not import it.

.. autosummary::

    ribsax.experiments.load_config
    ribsax.experiments.list_configs
    ribsax.experiments.ConfigError
    ribsax.experiments.Experiment
    ribsax.experiments.RunDirectory
    ribsax.experiments.Checkpointer
    ribsax.experiments.UnreadableCheckpointError
    ribsax.experiments.UnreadableCheckpointWarning
    ribsax.experiments.run_rl_config
    ribsax.experiments.resume_rl
    ribsax.experiments.run_summary
    ribsax.experiments.qd_score_auc
    ribsax.experiments.elite_robustness
    ribsax.experiments.final_archive
    ribsax.experiments.load_runs
    ribsax.experiments.compare_runs
    ribsax.experiments.pairwise_tests
    ribsax.experiments.holm_bonferroni

RL configs (an ``rl`` section naming one of :mod:`ribsax.rl`'s algorithms and its
training options, shipped as ``rl_*``) train that algorithm into a run directory
with learning curves instead (:func:`run_rl_config`; ``ribsax run`` dispatches;
SAC and TD3 runs with ``rl.checkpoint_every`` continue with :func:`resume_rl`).
"""

from ribsax._checkpointer import (
    Checkpointer,
    UnreadableCheckpointError,
    UnreadableCheckpointWarning,
)
from ribsax.experiments._analysis import compare_runs, load_runs
from ribsax.experiments._config import ConfigError, list_configs, load_config
from ribsax.experiments._experiment import Experiment
from ribsax.experiments._rl_run import resume_rl, run_rl_config
from ribsax.experiments._run_directory import METRIC_COLUMNS, RunDirectory
from ribsax.experiments._statistics import holm_bonferroni, pairwise_tests
from ribsax.experiments._summary import elite_robustness, final_archive, qd_score_auc, run_summary

__all__ = [
    "load_config",
    "list_configs",
    "ConfigError",
    "Experiment",
    "RunDirectory",
    "Checkpointer",
    "UnreadableCheckpointError",
    "UnreadableCheckpointWarning",
    "METRIC_COLUMNS",
    "resume_rl",
    "run_rl_config",
    "run_summary",
    "qd_score_auc",
    "elite_robustness",
    "final_archive",
    "load_runs",
    "compare_runs",
    "pairwise_tests",
    "holm_bonferroni",
]
