"""Placing the arguments of compiled emitter steps on a kernel's device mesh.

Most kernels keep their whole state on one device, the archive's. A kernel with a
``mesh`` attribute (e.g. :class:`~ribsax.emitters.PBTMEKernel` with its agents
sharded over devices) keeps some state leaves laid out over the devices of that
:class:`jax.sharding.Mesh`. A compiled step must see all its committed arguments
on one set of devices, so for such a kernel every other argument (the archive's
view, the other leaves of the states, the other emitters' states) is replicated
over the mesh for the call: :func:`on_mesh`. The archive objects keep their own
state on their device; only the emitters' states stay on the mesh between calls.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ribsax._utils import host_copy

__all__ = ["kernel_mesh", "kernels_mesh", "on_mesh"]


def kernel_mesh(kernel) -> Mesh | None:
    """The device mesh ``kernel`` spreads its state over (its ``mesh``
    attribute), or None."""
    return getattr(kernel, "mesh", None)


def kernels_mesh(kernels) -> Mesh | None:
    """The one device mesh among ``kernels`` (None entries and kernels without
    a mesh are skipped), or None.

    Raises:
        ValueError: Two kernels spread their states over different meshes.
    """
    found = None
    for kernel in kernels:
        mesh = kernel_mesh(kernel)
        if mesh is None:
            continue
        if found is not None and mesh != found:
            raise ValueError(
                "The emitters' kernels spread their states over different device "
                f"meshes ({_describe(found)} and {_describe(mesh)}); emitters of one "
                "scheduler must share one mesh to run in the fused loop or "
                "ribsax.functional"
            )
        found = mesh
    return found


def _describe(mesh: Mesh) -> str:
    ids = [int(d.id) for d in mesh.devices.flat]
    return f"axes {tuple(mesh.axis_names)} over devices {ids}"


def _on_mesh(leaf, mesh: Mesh, replicated: NamedSharding):
    sharding = getattr(leaf, "sharding", None)
    if (
        getattr(leaf, "committed", False)
        and isinstance(sharding, NamedSharding)
        and sharding.mesh == mesh
    ):
        return leaf  # Already laid out over the mesh (sharded or replicated).
    if isinstance(leaf, np.ndarray):
        leaf = host_copy(leaf)
    return jax.device_put(leaf, replicated)


def on_mesh(tree, mesh: Mesh | None):
    """``tree`` with every leaf on ``mesh``: leaves already laid out over it (a
    :class:`~jax.sharding.NamedSharding` on ``mesh``, sharded or not) stay as
    they are, every other leaf is replicated over its devices. ``mesh=None``
    returns ``tree`` unchanged."""
    if mesh is None:
        return tree
    replicated = NamedSharding(mesh, PartitionSpec())
    return jax.tree.map(lambda leaf: _on_mesh(leaf, mesh, replicated), tree)
