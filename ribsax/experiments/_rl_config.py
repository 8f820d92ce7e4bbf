"""RL configs: the schema of a config with an ``rl`` section and the checks of its
options against ``python -m ribsax.rl.train`` (see :mod:`ribsax.experiments._rl_run`
for the runs themselves)."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["RESUMABLE", "RLRunConfig", "check_rl_options", "rl_argv"]

#: Algorithms whose runs write checkpoints and can be resumed.
RESUMABLE = ("sac", "td3")


@dataclasses.dataclass
class RLRunConfig:
    """Schema of an RL config: ``rl`` holds ``algorithm`` and the training options."""

    name: str = dataclasses.field(default="???")
    seed: int = 0
    rl: dict[str, Any] = dataclasses.field(default="???")  # type: ignore
    logdir: str | None = None
    smoke: dict[str, Any] = dataclasses.field(default_factory=dict)


def _option_value(value) -> str:
    """A config value as the command line takes it (lists: comma-separated)."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def rl_argv(options: dict, outdir: str, seed: int) -> list[str]:
    """``python -m ribsax.rl.train`` arguments of an ``rl`` section."""
    options = dict(options)
    argv = [str(options.pop("algorithm")), "--outdir", str(outdir), "--seed", str(seed)]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                argv.append(flag)
            continue
        argv += [flag, _option_value(value)]
    return argv


def check_rl_options(options: dict, error) -> None:
    """Checks an ``rl`` section against the algorithm's command-line options.

    Args:
        options: The section (``algorithm`` and options).
        error: Exception class raised with a message naming the key.
    """
    # ribsax.rl imports flashbax (the rl extra): QD configs load without it.
    from ribsax.rl.train import ALGORITHMS, algorithm_parser

    algorithm = options.get("algorithm")
    if algorithm not in ALGORITHMS:
        raise error(f"rl.algorithm: expected one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    parser = algorithm_parser(algorithm)
    known = {action.dest: action for action in parser._actions if action.option_strings}
    for key in options:
        if key == "algorithm":
            continue
        if key in ("outdir", "seed") or key not in known:
            allowed = sorted(k for k in known if k not in ("outdir", "seed", "help"))
            raise error(
                f"rl.{key}: not an option of {algorithm} (options: "
                f"{', '.join(allowed)}; the run directory and seed come "
                f"from logdir and seed)"
            )
        action = known[key]
        value = options[key]
        if action.nargs == 0:
            if not isinstance(value, bool):
                raise error(f"rl.{key}: expected true or false, got {value!r}")
            continue
        try:
            converted = action.type(_option_value(value)) if action.type else _option_value(value)
        except (TypeError, ValueError):
            raise error(
                f"rl.{key}: expected a value of type "
                f"{getattr(action.type, '__name__', 'str')}, got "
                f"{value!r}"
            ) from None
        if action.choices is not None and converted not in action.choices:
            raise error(f"rl.{key}: expected one of {', '.join(action.choices)}, got {value!r}")
