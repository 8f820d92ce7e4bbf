"""shard_task: a JAX task whose batch is split over several devices."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["shard_task"]


def shard_task(task, devices=None):
    """A copy of ``task`` that evaluates each batch spread over ``devices``.

    The solutions' leading (batch) axis is laid out over a one-axis
    ``jax.sharding.Mesh`` of the devices (``NamedSharding(mesh, P("batch"))``),
    and so are the outputs; inside ``jit`` (the fused loop, ``run_trials``,
    :attr:`~ribsax.tasks.Task.jit_evaluate`) XLA's SPMD partitioner then runs each
    device's rows on that device. The program is the task's own, partitioned, so
    the results equal those of one device (rows are independent; JAX's
    partitionable threefry makes random draws independent of the layout). A batch
    whose size is not a multiple of the number of devices is padded with copies of
    its last row, which are dropped from the outputs; for stochastic tasks that
    split their key per row this changes the draws, so use multiples there.

    It serves the ask/tell loop (:class:`~ribsax.tasks.NumpyEvaluator`,
    ``jit_evaluate``) and the fused loop (:meth:`ribsax.schedulers.Scheduler.run`,
    :func:`ribsax.run_trials`): the fused loop recognises a sharded task by the
    ``shard_devices`` attribute of its evaluation function, replicates the
    archives and emitter states over the same devices for the run (each device
    runs the same archive and emitter kernels on the whole state, and its share of
    the evaluation) and returns them to the default device afterwards. There the
    compiled program is partitioned as a whole, so values may differ from one
    device's in the last bit (the cells and elites are the same in the tests).

    Several hosts: start each process with ``jax.distributed.initialize()`` first;
    ``jax.devices()`` then lists every host's devices and the same call shards
    over all of them.

    Args:
        task: A :class:`ribsax.tasks.Task`.
        devices: Devices to use (default: ``jax.devices()``).

    Returns:
        A task with the same metadata whose evaluation (and Jacobian) is sharded.

    Raises:
        ValueError: ``devices`` is empty.
    """
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devices = list(jax.devices() if devices is None else devices)
    if not devices:
        raise ValueError("devices: expected at least one device")
    rows = NamedSharding(Mesh(np.array(devices), ("batch",)), PartitionSpec("batch"))

    def constrain(tree):
        return jax.tree.map(
            lambda x: (
                jax.lax.with_sharding_constraint(x, rows) if getattr(x, "ndim", 0) >= 1 else x
            ),
            tree,
        )

    def sharded(function):
        if function is None:
            return None

        def evaluate(solutions, key):
            count = solutions.shape[0]
            pad = -count % len(devices)
            if pad:
                solutions = jnp.concatenate([solutions, jnp.repeat(solutions[-1:], pad, axis=0)])
            outputs = constrain(function(constrain(solutions), key))
            if not pad:
                return outputs
            return jax.tree.map(lambda x: x[:count] if getattr(x, "ndim", 0) >= 1 else x, outputs)

        evaluate.shard_devices = tuple(devices)
        return evaluate

    return dataclasses.replace(
        task, evaluate_fn=sharded(task.evaluate_fn), jacobian_fn=sharded(task.jacobian_fn)
    )
