"""Properties shared by the object shells of the kernel-backed components.

Evolution strategies, gradient optimizers and rankers all hold a static, hashable
configuration in ``self._config`` and a state pytree in ``self._state``; these
factories build the ``config`` (read-only) and ``state`` (settable) properties that
expose them.
"""

from __future__ import annotations

__all__ = ["config_property", "state_property"]


def config_property(doc="The static configuration (hashable).") -> property:
    """Read-only property returning ``self._config``, with docstring ``doc``."""
    return property(lambda self: self._config, doc=doc)


def state_property(doc) -> property:
    """Settable property over ``self._state``, with docstring ``doc``."""

    def fset(self, value):
        self._state = value

    return property(lambda self: self._state, fset, doc=doc)
