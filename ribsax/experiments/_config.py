"""Experiment configs: the OmegaConf schema, loading, overrides and validation."""

from __future__ import annotations

import dataclasses
import enum
import io
from pathlib import Path
from typing import Any

from ribsax.experiments._components import check_components
from ribsax.experiments._errors import ConfigError
from ribsax.experiments._rl_config import RLRunConfig, check_rl_options

__all__ = [
    "load_config",
    "list_configs",
    "is_rl_config",
    "ConfigError",
    "CONFIG_DIR",
    "SMOKE_SUFFIX",
]

#: Directory of the configs shipped with ribsax (package data).
CONFIG_DIR = Path(__file__).parent / "configs"
#: Suffix that selects the smoke variant of a shipped config (``map_elites_test``).
SMOKE_SUFFIX = "_test"


class Loop(enum.Enum):
    """How the iterations run."""

    ask_tell = "ask_tell"
    fused = "fused"


class Dtype(enum.Enum):
    """Floating dtype of archives and solutions."""

    float32 = "float32"
    float64 = "float64"


@dataclasses.dataclass
class BudgetConfig:
    """Length of a run: exactly one of ``iterations`` and ``evaluations``."""

    iterations: int | None = None
    evaluations: int | None = None


@dataclasses.dataclass
class LoggingConfig:
    """What the run directory receives and how often."""

    metrics_every: int = 1
    snapshot_every: int = 100
    history_every: int = 1
    heatmaps: bool = True
    plots: bool = True
    progress_every: int = 1


@dataclasses.dataclass
class CheckpointConfig:
    """Checkpoint period (iterations and/or minutes; None: off), retention, and
    whether orbax writes in a background thread."""

    every_iterations: int | None = 100
    every_minutes: float | None = None
    keep: int = 3
    background: bool = True


@dataclasses.dataclass
class ExperimentConfig:
    """Schema of an experiment config (see :func:`ribsax.experiments.load_config`)."""

    name: str = dataclasses.field(default="???")
    seed: int = 0
    dtype: Dtype = Dtype.float32
    task: dict[str, Any] = dataclasses.field(default="???")  # type: ignore
    archive: dict[str, Any] = dataclasses.field(default="???")  # type: ignore
    result_archive: dict[str, Any] | None = None
    emitters: list[dict[str, Any]] = dataclasses.field(default="???")  # type: ignore
    scheduler: dict[str, Any] = dataclasses.field(default_factory=lambda: {"class": "Scheduler"})
    budget: BudgetConfig = dataclasses.field(default_factory=BudgetConfig)
    loop: Loop = Loop.ask_tell
    fused_chunk: int = 256
    # What a fused run does with evaluations whose objective or measures are not
    # finite (Scheduler.run's ``non_finite``): "skip" keeps them out of the archive
    # and counts them; "raise" also stops the run with an error naming the first.
    non_finite: str = "skip"
    shard: bool = False
    evaluator: dict[str, Any] | None = None
    logdir: str | None = None
    logging: LoggingConfig = dataclasses.field(default_factory=LoggingConfig)
    checkpoint: CheckpointConfig = dataclasses.field(default_factory=CheckpointConfig)
    smoke: dict[str, Any] = dataclasses.field(default_factory=dict)


def list_configs() -> list[str]:
    """Names of the shipped configs (each also has a ``<name>_test`` smoke variant)."""
    return sorted(path.stem for path in CONFIG_DIR.glob("*.yaml"))


def _config_path(config) -> tuple:
    """(path, smoke) for a shipped name, a ``_test`` name or a YAML path."""
    path = Path(config)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ConfigError(f"config: no such file {str(path)!r}")
        return path, False
    name, smoke = str(config), False
    if name not in list_configs() and name.endswith(SMOKE_SUFFIX):
        name, smoke = name[: -len(SMOKE_SUFFIX)], True
    shipped = CONFIG_DIR / f"{name}.yaml"
    if not shipped.is_file():
        raise ConfigError(
            f"config: {config!r} is neither a YAML file nor a shipped config; "
            f"shipped configs are {', '.join(list_configs())} (append "
            f"{SMOKE_SUFFIX!r} for the smoke variant)"
        )
    return shipped, smoke


def _yaml_error_text(path, err) -> str:
    """One line from a YAML parse error: the file, the line and column (1-based)
    where the parser stopped, the problem and what it was parsing."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None)
    if mark is None or not problem:
        return f"{path}: not valid YAML: {' '.join(str(err).split())}"
    text = f"{path}: not valid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    context, context_mark = getattr(err, "context", None), getattr(err, "context_mark", None)
    if context:
        where = (
            f" started at line {context_mark.line + 1}, column {context_mark.column + 1}"
            if context_mark is not None
            else ""
        )
        text += f" ({context}{where})"
    return text


def _read_yaml(path):
    """The YAML file ``path`` as an OmegaConf config.

    Raises:
        ConfigError: The file cannot be read, is not valid YAML (the message
            names the file, line, column and problem), or its top level is not a
            mapping of config keys. An empty file gives an empty config.
    """
    import yaml
    from omegaconf import OmegaConf

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read the file ({err})") from None
    try:
        # The plain parse checks the syntax and the top level; OmegaConf's own
        # loader (which also refuses duplicate keys) builds the config.
        data = yaml.safe_load(text)
        if data is not None and not isinstance(data, dict):
            kind = "a list" if isinstance(data, list) else (f"a single {type(data).__name__} value")
            raise ConfigError(
                f"{path}: the top level of a config must be a mapping "
                f"of keys (name: ..., task: ...), got {kind}"
            )
        return OmegaConf.load(io.StringIO(text))
    except yaml.YAMLError as err:
        raise ConfigError(_yaml_error_text(path, err)) from None


def _error_text(err) -> str:
    """One line from an OmegaConf error: message and full key."""
    message = str(getattr(err, "msg", None) or err).splitlines()[0]
    key = getattr(err, "full_key", None)
    return f"{key}: {message}" if key else message


def _parse_value(text: str):
    """A command-line value as YAML (``[30,30]`` -> list, ``3`` -> int)."""
    import yaml

    try:
        return yaml.safe_load(text) if text != "" else ""
    except yaml.YAMLError:
        return text


def _check_path(cfg, key):
    """Raises a ConfigError when a list index or a parent of ``key`` is absent."""
    from omegaconf import OmegaConf

    parts = key.split(".")
    node = cfg
    for depth, part in enumerate(parts[:-1]):
        where = ".".join(parts[: depth + 1])
        if OmegaConf.is_list(node):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(
                    f"{key}: {'.'.join(parts[:depth])!r} is a list of "
                    f"{len(node)} entries; expected an index below "
                    f"{len(node)}, got {part!r}"
                )
            node = node[int(part)]
        elif OmegaConf.is_dict(node) and part in node and node[part] is not None:
            node = node[part]
        else:
            raise ConfigError(f"{key}: {where!r} is not in the config")


def _apply_overrides(cfg, overrides, source):
    """Applies ``key=value`` strings (or a dict of dotted keys) to ``cfg`` in place."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(overrides, dict):
        items = list(overrides.items())
    else:
        items = []
        for item in overrides:
            if "=" not in item:
                raise ConfigError(f"{source}: expected key=value, got {item!r}")
            key, value = item.split("=", 1)
            items.append((key.strip(), _parse_value(value)))
    for key, value in items:
        try:
            _check_path(cfg, key)
            OmegaConf.update(cfg, key, value, merge=True)
        except OmegaConfBaseException as err:
            raise ConfigError(f"{source} {key}={value!r}: {_error_text(err)}") from None


def load_config(config, overrides=(), *, smoke=False):
    """Loads, overrides and checks an experiment config.

    The YAML is merged over the schema (defaults, types, known keys); then the smoke
    overrides (its ``smoke`` section of dotted keys, when ``smoke`` is set or the
    name ends in ``_test``); then ``overrides``. The schema and the class arguments
    are checked here; building the archives and emitters (which checks the
    remaining values) happens in :class:`~ribsax.experiments.Experiment` before the
    first iteration.

    Args:
        config: A shipped config name (see :func:`list_configs`), its ``_test``
            smoke variant, or the path of a YAML file.
        overrides: ``key=value`` strings with dotted keys (``seed=3``,
            ``archive.dims=[30,30]``, ``emitters.0.batch_size=2048``); values are
            parsed as YAML.
        smoke: Apply the config's ``smoke`` overrides.

    Returns:
        The config as an OmegaConf ``DictConfig`` (struct mode: unknown keys fail).

    Raises:
        ConfigError: Unknown config, a file that is not valid YAML (the message
            names the file, line and column) or whose top level is not a
            mapping, unknown key, wrong type, missing field, bad budget, or
            unknown class; the message names the key.
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    path, name_smoke = _config_path(config)
    try:
        raw = _read_yaml(path)
        rl = OmegaConf.is_dict(raw) and "rl" in raw
        schema = RLRunConfig if rl else ExperimentConfig
        cfg = OmegaConf.merge(OmegaConf.structured(schema), raw)
    except OmegaConfBaseException as err:
        raise ConfigError(f"{path.name}: {_error_text(err)}") from None
    if smoke or name_smoke:
        _apply_overrides(cfg, dict(OmegaConf.to_container(cfg.smoke)), f"{path.name} smoke section")
    _apply_overrides(cfg, list(overrides), "override")
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise ConfigError(
            f"{missing[0]}: missing mandatory value (set it in the YAML or as {missing[0]}=...)"
        )
    if rl:
        check_rl_options(OmegaConf.to_container(cfg.rl, resolve=True), ConfigError)
        return cfg
    budget = cfg.budget
    if (budget.iterations is None) == (budget.evaluations is None):
        raise ConfigError(
            "budget: expected exactly one of budget.iterations and budget.evaluations"
        )
    for key in (
        "budget.iterations",
        "budget.evaluations",
        "fused_chunk",
        "logging.metrics_every",
        "logging.snapshot_every",
        "logging.history_every",
        "logging.progress_every",
        "checkpoint.every_iterations",
        "checkpoint.keep",
    ):
        value = OmegaConf.select(cfg, key)
        if value is not None and value < 1:
            raise ConfigError(f"{key}: expected a positive integer, got {value}")
    if cfg.non_finite not in ("skip", "raise"):
        raise ConfigError(f"non_finite: expected 'skip' or 'raise', got {cfg.non_finite!r}")
    check_components(cfg)
    return cfg


def is_rl_config(cfg) -> bool:
    """Whether a loaded config is an RL config (an ``rl`` section: see
    :mod:`ribsax.experiments._rl_config`) rather than a QD experiment."""
    return "rl" in cfg


def to_container(cfg) -> dict:
    """The config as plain Python data (enums as strings)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
