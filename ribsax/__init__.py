"""ribsax: quality-diversity optimisation with pyribs' API and jitted JAX kernels.

Importing ribsax changes no JAX configuration; see :mod:`ribsax.runtime` for the
setting it offers (the persistent compilation cache, applied when the first
archive is created).
"""

from ribsax import archives, emitters, functional, runtime, schedulers
from ribsax.runtime import enable_compilation_cache
from ribsax.schedulers import run_trials

__all__ = [
    "archives",
    "emitters",
    "functional",
    "runtime",
    "schedulers",
    "run_trials",
    "enable_compilation_cache",
]
__version__ = "0.1.0"
