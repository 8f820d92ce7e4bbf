"""ribsax: quality-diversity optimisation with pyribs' API and jitted JAX kernels."""
from ribsax import archives

__all__ = ["archives"]
__version__ = "0.1.0"
