"""Device-resident replay buffer (a flat ring buffer over flashbax).

Built on flashbax's item buffer (``flashbax.make_item_buffer``): one flat ring of
items, inserted in batches, sampled uniformly with replacement among the filled
slots. flashbax installs and runs with the pinned JAX (0.10.2); its state is a
pytree and its ``add``/``sample`` are pure, so a population can hold one buffer per
member with ``jax.vmap``. This class only fixes the conventions ribsax uses:
inserting a batch of any leading shape (it is flattened), a fixed sample size, and
a clear error for batches larger than the buffer.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import flashbax
import jax
import jax.numpy as jnp

from ribsax.rl._checks import check_positive_int

__all__ = ["ReplayBuffer"]


@dataclasses.dataclass(frozen=True, eq=False)
class ReplayBuffer:
    """Ring buffer of ``max_size`` items (pytrees, e.g. :class:`Transition`).

    Pure functional API (``state`` is a pytree; the object holds only static sizes,
    so it can be passed to ``jax.jit`` as a static argument)::

        buffer = ReplayBuffer(max_size=100_000, sample_size=256)
        state = buffer.init(Transition.zeros(obs_dim, act_dim))
        state = buffer.insert(state, transitions)     # any leading axes
        batch = buffer.sample(state, key)             # leading axis sample_size

    Once full, new items overwrite the oldest. Sampling draws uniformly, with
    replacement, among the filled slots only; sampling an empty buffer is
    undefined (check :meth:`size` first, as training loops do with a warm-up).

    Args:
        max_size: Capacity (number of items).
        sample_size: Items returned by :meth:`sample`.

    Raises:
        ValueError: ``max_size`` or ``sample_size`` is not a positive int, or
            ``sample_size > max_size`` (a flashbax restriction).
    """

    max_size: int
    sample_size: int

    def __post_init__(self):
        check_positive_int("max_size", self.max_size)
        check_positive_int("sample_size", self.sample_size)
        if self.sample_size > self.max_size:
            raise ValueError(
                f"sample_size ({self.sample_size}) must not exceed max_size ({self.max_size})"
            )
        object.__setattr__(
            self,
            "_fbx",
            flashbax.make_item_buffer(
                max_length=self.max_size,
                min_length=1,
                sample_batch_size=self.sample_size,
                add_sequences=True,
                add_batches=False,
            ),
        )

    def init(self, example: Any):
        """Empty buffer state for items shaped like ``example`` (no batch axis)."""
        return self._fbx.init(example)

    def insert(self, state, items: Any, mask=None):
        """Appends ``items`` (a pytree whose leaves share leading axes).

        Each leaf of ``items`` has the example leaf's shape (see :meth:`init`)
        prefixed by the same batch axes, which are flattened; leaves are cast to
        the buffer's dtypes. The items are written at the buffer's write pointer,
        in place (no copy of the whole buffer when the state is donated).

        Args:
            state: Buffer state.
            items: Pytree of items.
            mask: Optional bool array of the items' batch shape: only the items
                where it is True are stored (in order, packed at the write
                pointer); the others are dropped. An episode's steps after its end,
                or the rows of an invalid evaluation, are left out this way. When
                more than ``max_size`` items are kept, the last ``max_size`` are
                stored.

        Raises:
            ValueError: Without ``mask``, more items than ``max_size`` in one
                insertion; a mask whose shape is not the items' batch shape.
        """
        example = jax.tree.leaves(state.experience)[0]
        leaf = jax.tree.leaves(items)[0]
        item_ndim = example.ndim - 2  # experience leaves are (1, max_size, ...).
        lead = leaf.ndim - item_ndim
        n = math.prod(leaf.shape[:lead])
        flat = jax.tree.map(
            lambda x, e: x.reshape((n,) + x.shape[lead:]).astype(e.dtype), items, state.experience
        )
        if mask is None:
            if n > self.max_size:
                raise ValueError(
                    f"items holds {n} items, more than the buffer's max_size={self.max_size}"
                )
            return self._fbx.add(state, flat)
        if tuple(jnp.shape(mask)) != tuple(leaf.shape[:lead]):
            raise ValueError(
                f"mask must have the items' batch shape "
                f"{tuple(leaf.shape[:lead])}, got {tuple(jnp.shape(mask))}"
            )
        keep = jnp.reshape(jnp.asarray(mask, bool), (n,))
        rank = jnp.cumsum(keep, dtype=jnp.int32) - 1
        count = rank[-1] + 1
        # More kept items than slots: the last ``max_size`` of them are stored.
        keep &= rank >= count - self.max_size
        # Kept items go to consecutive slots from the write pointer; dropped ones
        # to an index past the end, which the scatter ignores.
        slots = jnp.where(keep, (state.current_index + rank) % self.max_size, self.max_size)
        experience = jax.tree.map(
            lambda buf, x: buf.at[0, slots].set(x, mode="drop"), state.experience, flat
        )
        end = state.current_index + count
        return state.replace(
            experience=experience,
            current_index=(end % self.max_size).astype(state.current_index.dtype),
            is_full=state.is_full | (end >= self.max_size),
        )

    def sample(self, state, key: jax.Array):
        """``sample_size`` items drawn uniformly among the filled slots."""
        return self._fbx.sample(state, key).experience

    def size(self, state) -> jax.Array:
        """Number of filled slots (int32 scalar)."""
        return jnp.where(state.is_full, self.max_size, state.current_index).astype(jnp.int32)
