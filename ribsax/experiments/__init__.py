"""Experiment runner: configs, run directories, checkpoints, analysis (``ribsax``
command).

``ribsax run CONFIG [key=value ...]`` runs a YAML config (a shipped one, see
``ribsax run --list``, or a file) into a run directory; ``ribsax run --resume
LOGDIR`` continues it from its latest checkpoint; ``ribsax plot`` and ``ribsax
batch-sizes`` compare runs. The same from Python::

    from ribsax.experiments import Experiment, load_config

    cfg = load_config("sphere_map_elites", ["seed=3", "budget.iterations=200"])
    metrics = Experiment(cfg, logdir="logs/me_seed3").run()
    metrics = Experiment.resume("logs/me_seed3").run()   # after a crash

This package imports OmegaConf, orbax-checkpoint, tqdm and pyarrow only when they
are used; ``import ribsax`` does not import it.

.. autosummary::

    ribsax.experiments.load_config
    ribsax.experiments.list_configs
    ribsax.experiments.ConfigError
    ribsax.experiments.Experiment
    ribsax.experiments.RunDirectory
    ribsax.experiments.Checkpointer
"""
from ribsax.experiments._checkpointer import Checkpointer
from ribsax.experiments._config import ConfigError, list_configs, load_config
from ribsax.experiments._experiment import Experiment
from ribsax.experiments._run_directory import METRIC_COLUMNS, RunDirectory

__all__ = [
    "load_config",
    "list_configs",
    "ConfigError",
    "Experiment",
    "RunDirectory",
    "Checkpointer",
    "METRIC_COLUMNS",
]
