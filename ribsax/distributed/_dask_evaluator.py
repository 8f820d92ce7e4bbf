"""DaskEvaluator: evaluates batches of solutions on Dask ``distributed`` workers."""

from __future__ import annotations

import importlib
import logging
import math

import numpy as np

__all__ = ["DaskEvaluator", "EvaluationError", "resolve_function"]

_LOGGER = logging.getLogger("ribsax.distributed")


class EvaluationError(RuntimeError):
    """Some solutions could not be evaluated (after the retries).

    Attributes:
        failed: Indices (into the batch) of the solutions without a result.
        results: ``(objective, measures)`` with NaN rows for the failed solutions:
            every result that was computed is kept.
    """

    def __init__(self, message, failed, results):
        super().__init__(message)
        self.failed = failed
        self.results = results


def resolve_function(spec):
    """A callable from ``"package.module:attribute"`` (or the callable itself).

    Raises:
        ValueError: ``spec`` is not a callable or a ``module:attribute`` string.
        ImportError, AttributeError: The module or attribute does not exist.
    """
    if callable(spec):
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"function: expected a callable or 'module:attribute', got {spec!r}")
    module_name, attribute = spec.split(":", 1)
    function = importlib.import_module(module_name)
    for part in attribute.split("."):
        function = getattr(function, part)
    if not callable(function):
        raise ValueError(f"function: {spec!r} is not callable")
    return function


def _evaluate_chunk(function, solutions, batched):
    """Runs on a worker: ``(objective, measures)`` of one chunk."""
    if batched:
        objective, measures = function(solutions)
    else:
        pairs = [function(solution) for solution in solutions]
        objective = [objective for objective, _ in pairs]
        measures = [measures for _, measures in pairs]
    objective = np.asarray(objective, dtype=np.float64).reshape(len(solutions))
    measures = np.asarray(measures, dtype=np.float64).reshape(len(solutions), -1)
    return objective, measures


class DaskEvaluator:
    """Evaluates solutions with a Python function on Dask workers.

    For evaluation functions that are not JAX (NumPy, Gymnasium, PyBullet, ...). A
    batch is split into chunks; each chunk is one Dask task run by
    ``function(chunk) -> (objective, measures)`` (``batched=True``) or by
    ``function(solution) -> (objective, measures)`` per solution. Results come back
    in the order of the solutions::

        evaluator = DaskEvaluator(my_module.evaluate, n_workers=8, batched=False)
        for itr in range(iterations):
            solutions = scheduler.ask()
            objective, measures = evaluator(solutions)
            scheduler.tell(objective, measures)
        evaluator.close()

    Failures: a task that raises is run again up to ``retries`` times; a task whose
    worker dies (killed, out of memory) is rescheduled on another worker by the Dask
    scheduler (up to its ``distributed.scheduler.allowed-failures``, 3 by default).
    When a chunk still fails, :class:`EvaluationError` names the solutions without a
    result and carries every result that was computed. The dashboard address is
    logged and printed (``print_dashboard``).

    Args:
        function: The evaluation function, or ``"module:attribute"``; it is pickled
            to the workers (cloudpickle), so module-level functions are best.
        client: A ``distributed.Client`` to use (any cluster; not closed by
            :meth:`close`). None starts a ``LocalCluster`` of ``n_workers``
            (:meth:`from_config` also starts a ``dask_jobqueue.SLURMCluster``).
        n_workers: Workers of the local cluster (None: Dask's default).
        threads_per_worker: Threads per local worker.
        processes: Local workers are processes (True) or threads in this process.
        batched: Whether ``function`` takes a batch or one solution.
        chunk_size: Solutions per task (None: the batch split into two chunks per
            worker; 1 for the finest load balancing).
        retries: Extra attempts of a task that raised.
        print_dashboard: Print the dashboard address when starting.

    Raises:
        ValueError: Bad ``chunk_size``, ``retries`` or ``n_workers``.
    """

    def __init__(
        self,
        function,
        client=None,
        *,
        n_workers=None,
        threads_per_worker=1,
        processes=True,
        batched=True,
        chunk_size=None,
        retries=2,
        print_dashboard=True,
        _cluster=None,
    ):
        from distributed import Client, LocalCluster

        if chunk_size is not None and int(chunk_size) < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        if int(retries) < 0:
            raise ValueError(f"retries must be non-negative, got {retries}")
        if n_workers is not None and int(n_workers) < 1:
            raise ValueError(f"n_workers must be at least 1, got {n_workers}")
        self._function = resolve_function(function)
        self._batched = bool(batched)
        self._chunk_size = None if chunk_size is None else int(chunk_size)
        self._retries = int(retries)
        self._cluster = _cluster
        self._owns_client = client is None
        if client is None:
            if self._cluster is None:
                self._cluster = LocalCluster(
                    n_workers=n_workers,
                    threads_per_worker=threads_per_worker,
                    processes=processes,
                    dashboard_address=":0",
                )
            client = Client(self._cluster)
        self.client = client
        link = self.dashboard_link
        _LOGGER.info("Dask dashboard: %s", link)
        if print_dashboard:
            print(f"Dask dashboard: {link}", flush=True)

    @classmethod
    def from_config(
        cls, function, *, cluster="local", scheduler_address=None, slurm=None, jobs=1, **kwargs
    ) -> DaskEvaluator:
        """An evaluator from a config section (the runner's ``evaluator``).

        Args:
            function: As in the constructor.
            cluster: ``"local"`` (a ``LocalCluster``), ``"slurm"`` (a
                ``dask_jobqueue.SLURMCluster`` of ``jobs`` jobs; dqd-rl's HPC set-up)
                or ``"address"`` (connect to ``scheduler_address``).
            scheduler_address: Address of a running Dask scheduler (``"address"``).
            slurm: Keyword arguments of ``SLURMCluster`` (``cores``, ``memory``,
                ``queue``, ``walltime``, ``account``, ``job_extra_directives``...).
            jobs: Slurm jobs to start.
            **kwargs: The constructor's other arguments.

        Raises:
            ValueError: Unknown ``cluster`` or missing settings.
        """
        from distributed import Client

        if cluster == "local":
            return cls(function, **kwargs)
        local_only = {"n_workers", "threads_per_worker", "processes"}
        kwargs = {k: v for k, v in kwargs.items() if k not in local_only}
        if cluster == "address":
            if not scheduler_address:
                raise ValueError("scheduler_address: required with cluster='address'")
            return cls(function, Client(scheduler_address), **kwargs)
        if cluster == "slurm":
            from dask_jobqueue import SLURMCluster

            slurm_cluster = SLURMCluster(**dict(slurm or {}))
            slurm_cluster.scale(jobs=int(jobs))
            return cls(function, _cluster=slurm_cluster, **kwargs)
        raise ValueError(f"cluster: expected 'local', 'slurm' or 'address', got {cluster!r}")

    @property
    def dashboard_link(self) -> str:
        """Address of the Dask dashboard."""
        return str(self.client.dashboard_link)

    def _chunks(self, n):
        if self._chunk_size is not None:
            size = self._chunk_size
        else:
            workers = max(len(self.client.scheduler_info().get("workers", {})), 1)
            size = max(1, math.ceil(n / (2 * workers)))
        return [(start, min(start + size, n)) for start in range(0, n, size)]

    def __call__(self, solutions):
        """Evaluates a batch.

        Args:
            solutions: ``(batch_size, ...)`` array.

        Returns:
            ``(objective[batch_size], measures[batch_size, measure_dim])`` as
            float64 arrays.

        Raises:
            EvaluationError: A chunk failed after the retries (or its workers kept
                dying); the message names the solutions and the cause.
        """
        solutions = np.asarray(solutions)
        n = len(solutions)
        bounds = self._chunks(n)
        futures = [
            self.client.submit(
                _evaluate_chunk,
                self._function,
                solutions[start:stop],
                self._batched,
                retries=self._retries,
                pure=False,
            )
            for start, stop in bounds
        ]
        results, errors = [], []
        for (start, stop), future in zip(bounds, futures):
            try:
                results.append(future.result())
            except Exception as err:
                results.append(None)
                errors.append((start, stop, err))
        measure_dim = next((m.shape[1] for r in results if r is not None for m in [r[1]]), 1)
        objective = np.full(n, np.nan)
        measures = np.full((n, measure_dim), np.nan)
        for (start, stop), result in zip(bounds, results):
            if result is not None:
                objective[start:stop], measures[start:stop] = result
        if errors:
            failed = np.concatenate([np.arange(a, b) for a, b, _ in errors])
            causes = "; ".join(
                f"solutions {a}..{b - 1}: {type(e).__name__}: {e}" for a, b, e in errors
            )
            raise EvaluationError(
                f"{len(failed)} of {n} solutions failed after {self._retries} retries ({causes})",
                failed,
                (objective, measures),
            )
        return objective, measures

    def close(self) -> None:
        """Closes the client and the cluster this evaluator started."""
        if self._owns_client:
            self.client.close()
            if self._cluster is not None:
                self._cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
