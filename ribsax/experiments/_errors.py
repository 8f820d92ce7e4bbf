"""The error of a config that cannot run (shared by the config, component and RL
checks, so that none of them imports another for it)."""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A config that cannot run: unknown or missing key, wrong type, unknown class.

    The message names the offending key (dotted, e.g. ``emitters.0.sigma``) and what
    was expected.
    """
