"""Process-wide JAX settings that ribsax offers, each an explicit, documented switch.

``import ribsax`` changes no JAX configuration. One setting helps ribsax's workloads,
the **persistent compilation cache** (on by default, at first use). The first time a
ribsax archive is created in a process, :func:`enable_compilation_cache` is applied
with its defaults, unless

- ``RIBSAX_COMPILATION_CACHE=0`` is set in the environment (opt out), or
- the user already chose a cache folder (``jax_compilation_cache_dir``, e.g. through
  ``JAX_COMPILATION_CACHE_DIR``), which is then left as it is.

The cache folder is ``$RIBSAX_CACHE_DIR`` if set, else
``$XDG_CACHE_HOME/ribsax/jax`` (``~/.cache/ribsax/jax`` by default). JAX writes each
compiled kernel there, and a later process compiling the same kernel for the same
shapes, JAX version and device loads it instead of compiling again, so a second run
of a configuration starts without compiling. Delete the folder to empty the cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

__all__ = [
    "enable_compilation_cache",
    "default_cache_directory",
    "apply_defaults",
]

_APPLIED = []


def default_cache_directory() -> Path:
    """The compilation-cache folder ribsax uses by default (see the module
    docstring)."""
    explicit = os.environ.get("RIBSAX_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "ribsax" / "jax"


def enable_compilation_cache(directory=None, *, min_compile_time_secs: float = 0.0):
    """Turns on JAX's persistent compilation cache.

    Args:
        directory: Cache folder (created if missing); None means
            :func:`default_cache_directory`.
        min_compile_time_secs: Kernels that compile faster than this are not
            written to the cache (JAX's ``jax_persistent_cache_min_compile_time_secs``).
            ribsax's default, 0, caches every kernel, so that a second run compiles
            nothing; JAX's own default of 1 s would leave most of them out.

    Returns:
        The cache folder, as a string.

    Raises:
        ValueError: ``min_compile_time_secs`` is negative.
    """
    if min_compile_time_secs < 0:
        raise ValueError(f"min_compile_time_secs must be >= 0, got {min_compile_time_secs!r}")
    folder = Path(directory).expanduser() if directory is not None else default_cache_directory()
    folder.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time_secs))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return str(folder)


def apply_defaults() -> None:
    """Applies ribsax's default settings once per process (called when the first
    archive is created): the persistent compilation cache, unless opted out or
    already configured by the user (see the module docstring)."""
    if _APPLIED:
        return
    _APPLIED.append(True)
    if os.environ.get("RIBSAX_COMPILATION_CACHE", "1").strip().lower() in (
        "0",
        "false",
        "no",
        "off",
    ):
        return
    if jax.config.jax_compilation_cache_dir:
        return
    try:
        enable_compilation_cache()
    except OSError:  # An unwritable home: run without the cache.
        pass
