"""Scaling out evaluation: Dask workers for Python functions, several JAX devices.

* :class:`DaskEvaluator` runs a Python (non-JAX) evaluation function on Dask
  ``distributed`` workers: a ``LocalCluster`` by default, any ``Client``, or a
  ``dask_jobqueue.SLURMCluster`` (:meth:`DaskEvaluator.from_config`). It is what the
  runner uses for a config's ``evaluator`` section.

Dask is imported when an evaluator is created (``pip install ribsax[dask]``).

.. autosummary::

    ribsax.distributed.DaskEvaluator
    ribsax.distributed.EvaluationError
"""
from ribsax.distributed._dask_evaluator import DaskEvaluator, EvaluationError

__all__ = ["DaskEvaluator", "EvaluationError"]
