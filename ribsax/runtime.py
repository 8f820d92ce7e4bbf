"""Process-wide JAX runtime settings that ribsax chooses on import.

Synchronous CPU dispatch
------------------------
pyribs-style code calls ``ask``/``tell``/``add`` and immediately reads the results, so
JAX's asynchronous CPU dispatch only adds thread hand-offs: on jax 0.10.2 with 2 cores
an archive ``add`` kernel costs about 155 us of CPU time with async dispatch and about
85 us inline. On import, ribsax therefore turns JAX's ``jax_cpu_enable_async_dispatch``
off, which only changes *when* CPU computations run, never their results.

It is left alone when:

- the JAX backend is already initialised (the setting is read when the CPU client is
  created, so it could not take effect);
- the user set ``JAX_CPU_ENABLE_ASYNC_DISPATCH`` in the environment;
- ``RIBSAX_CPU_ASYNC_DISPATCH=1`` is set (opt out).
"""
from __future__ import annotations

import os

import jax

__all__ = ["configure_cpu_dispatch"]


def configure_cpu_dispatch() -> bool:
    """Applies the synchronous-CPU-dispatch default described in the module docstring.

    Returns:
        True if the setting was changed by this call.
    """
    if os.environ.get("RIBSAX_CPU_ASYNC_DISPATCH") == "1":
        return False
    if "JAX_CPU_ENABLE_ASYNC_DISPATCH" in os.environ:
        return False
    try:
        from jax._src import xla_bridge  # pylint: disable=import-outside-toplevel
        if xla_bridge.backends_are_initialized():
            return False
    except (ImportError, AttributeError):  # Private API moved: keep JAX's default.
        return False
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    return True
