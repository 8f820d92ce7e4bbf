"""ribsax: quality-diversity optimisation with pyribs' API and jitted JAX kernels."""
from ribsax._runtime import configure_cpu_dispatch

configure_cpu_dispatch()

# pylint: disable=wrong-import-position
from ribsax import archives, emitters, functional, schedulers
from ribsax.schedulers import run_trials

__all__ = ["archives", "emitters", "functional", "schedulers", "run_trials"]
__version__ = "0.1.0"
