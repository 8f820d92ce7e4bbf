"""RL runs of ``ribsax run``: configs with an ``rl`` section train one of
:mod:`ribsax.rl`'s algorithms (``python -m ribsax.rl.train``) into a run directory.

An RL config names the algorithm and any option of ``python -m ribsax.rl.train
ALGO`` (dashes written as underscores)::

    name: rl_sac_inverted_pendulum
    seed: 0
    rl: {algorithm: sac, env: inverted_pendulum, steps: 100000, hidden: [256, 256]}
    smoke: {rl.steps: 200, rl.hidden: [8]}      # --smoke / NAME_test

The run directory holds ``config.yaml`` and ``run.json`` (as a QD run's) and the
training outputs: ``curves.csv`` / ``curves.json`` (one row per evaluation),
``config.json`` (the resolved options) and ``curves.png``. SAC and TD3 runs write
checkpoints into ``checkpoints/`` when the ``rl`` section asks for them
(``checkpoint_every: K`` evaluations and/or ``checkpoint_minutes: M``, the last
``checkpoint_keep`` kept), and ``ribsax run --resume LOGDIR`` (:func:`resume_rl`)
continues from the latest one to the curves and final states of an uninterrupted
run.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from ribsax.experiments._config import ConfigError, is_rl_config, load_config
from ribsax.experiments._rl_config import RESUMABLE, rl_argv
from ribsax.experiments._run_directory import RunDirectory, default_run_name

__all__ = ["resume_rl", "run_rl", "run_rl_config"]


def run_rl(cfg, path: Path, *, quiet: bool = False, resume: bool = False):
    """Trains the RL config ``cfg`` into the run directory ``path`` (with
    ``resume``: continues the run there from its latest checkpoint).

    Returns:
        The learning-curve rows (dicts).
    """
    from omegaconf import OmegaConf

    # ribsax.rl imports flashbax (the rl extra): QD runs go without it.
    from ribsax.rl import train

    directory = RunDirectory(path, qd=False)
    try:
        if not resume:
            directory.write_config(OmegaConf.to_yaml(cfg), int(cfg.seed))
        argv = rl_argv(OmegaConf.to_container(cfg.rl, resolve=True), path, int(cfg.seed)) + (
            ["--resume"] if resume else []
        )
        directory.logger.info("RL run%s: %s", " resumed" if resume else "", " ".join(argv))
        with contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext():
            rows = train.main(argv)
        if rows:
            directory.logger.info(
                "final evaluation return %.6g after %d environment steps",
                rows[-1]["eval_return"],
                rows[-1]["env_steps"],
            )
    finally:
        directory.close()
    return rows


def run_rl_config(config, overrides=(), *, smoke=False, logdir=None, quiet=False):
    """Loads and checks an RL config, then trains it into a new run directory.

    Args:
        config: A shipped RL config name (``rl_*``, or its ``_test`` smoke
            variant), a YAML path, or a loaded config.
        overrides: Dotted ``key=value`` overrides (``rl.steps=20000``, ``seed=2``).
        smoke: Apply the config's smoke overrides.
        logdir: Run directory (default: the config's ``logdir``, else
            ``logs/<YYYY-mm-dd_HH-MM-SS>_<name>_seed<seed>``).
        quiet: Do not print the training rows.

    Returns:
        ``(path, rows)``: the run directory and the learning-curve rows.

    Raises:
        ConfigError: A bad config (named key), or a QD config.
        FileExistsError: ``logdir`` already holds a run.
    """
    from omegaconf import OmegaConf

    cfg = (
        OmegaConf.create(OmegaConf.to_container(config))
        if OmegaConf.is_config(config)
        else load_config(config, overrides, smoke=smoke)
    )
    if not is_rl_config(cfg):
        raise ConfigError(
            f"{cfg.name} is not an RL config (no rl section); run it "
            "with ribsax.experiments.Experiment"
        )
    path = Path(logdir or cfg.logdir or Path("logs") / default_run_name(cfg.name, cfg.seed))
    if (path / "config.yaml").exists():
        raise FileExistsError(f"{path} already holds a run; choose another logdir")
    OmegaConf.update(cfg, "logdir", str(path))
    return path, run_rl(cfg, path, quiet=quiet)


def resume_rl(logdir, *, quiet=False):
    """Continues the RL run in ``logdir`` from its latest checkpoint (from the start
    when there is none), with the config stored there.

    Returns:
        ``(path, rows)``: the run directory and all the learning-curve rows.

    Raises:
        FileNotFoundError: ``logdir`` has no ``config.yaml``.
        ConfigError: The run is not an RL run, or its algorithm writes no
            checkpoints (only :data:`RESUMABLE` ones do).
    """
    path = Path(logdir)
    if not (path / "config.yaml").is_file():
        raise FileNotFoundError(f"{path} holds no config.yaml; is it a run directory?")
    cfg = load_config(path / "config.yaml")
    if not is_rl_config(cfg):
        raise ConfigError(f"{path} holds a QD run; resume it with Experiment.resume")
    if cfg.rl.algorithm not in RESUMABLE:
        raise ConfigError(
            f"rl.algorithm: {cfg.rl.algorithm} runs write no "
            f"checkpoints (resumable: {', '.join(RESUMABLE)})"
        )
    return path, run_rl(cfg, path, quiet=quiet, resume=True)
