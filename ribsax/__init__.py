"""ribsax: quality-diversity optimisation with pyribs' API and jitted JAX kernels."""
from ribsax._runtime import configure_cpu_dispatch

configure_cpu_dispatch()

# pylint: disable=wrong-import-position
from ribsax import archives, emitters, schedulers

__all__ = ["archives", "emitters", "schedulers"]
__version__ = "0.1.0"
