"""Scaling out evaluation: Dask workers for Python functions, several JAX devices.

* :class:`DaskEvaluator` runs a Python (non-JAX) evaluation function on Dask
  ``distributed`` workers: a ``LocalCluster`` by default, any ``Client``, or a
  ``dask_jobqueue.SLURMCluster`` (:meth:`DaskEvaluator.from_config`). It is what the
  runner uses for a config's ``evaluator`` section.

* :func:`shard_task` spreads a JAX task's batch over ``jax.devices()`` (several
  accelerators of one host, or of several hosts after ``jax.distributed.initialize``)
  with ``jax.sharding``; results equal one device's. The runner's ``shard: true``.

Dask is imported when an evaluator is created (``pip install ribsax[dask]``).

.. autosummary::

    ribsax.distributed.DaskEvaluator
    ribsax.distributed.EvaluationError
    ribsax.distributed.shard_task
"""

from ribsax.distributed._dask_evaluator import DaskEvaluator, EvaluationError
from ribsax.distributed._sharding import shard_task

__all__ = ["DaskEvaluator", "EvaluationError", "shard_task"]
