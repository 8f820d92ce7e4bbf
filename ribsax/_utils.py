"""Validation, dtype and seeding helpers shared by every ribsax module.

The error messages produced here reproduce pyribs' wording exactly, because user code
and tests match on them.
"""

from __future__ import annotations

import numbers

import jax
import numpy as np

from ribsax._philox import PHILOX4X32

__all__ = [
    "is_record",
    "check_finite",
    "check_batch_shape",
    "check_shape",
    "check_is_1d",
    "check_solution_batch_dim",
    "validate_batch",
    "validate_single",
    "default_float_dtype",
    "parse_dtype",
    "x64_enabled",
    "seed_to_key",
    "kernel_key",
    "KERNEL_PRNG_IMPL",
    "jax_dtype_supported",
    "host_copy",
    "to_device",
]


# ---------------------------------------------------------------------------
# Shape and finiteness checks.
# ---------------------------------------------------------------------------
def check_finite(x, name: str) -> None:
    """Raises ValueError if ``x`` contains inf or NaN.

    Args:
        x: Scalar or array to check.
        name: Name of the argument, used in the message.

    Raises:
        ValueError: ``x`` has non-finite entries.
    """
    if not isinstance(x, np.ndarray) and np.isscalar(x):
        if not np.isfinite(x):
            raise ValueError(f"{name} must be finite (infinity and NaN values are not supported).")
        return
    x = np.asarray(x)
    if x.dtype.kind not in "biu" and not np.isfinite(x).all():
        raise ValueError(
            f"All elements of {name} must be finite (infinity and NaN values are not supported)."
        )


def _dim_tuple(dim) -> tuple:
    return tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)


def check_batch_shape(array, array_name: str, dim, dim_name: str, extra_msg: str = ""):
    """Checks that ``array`` has shape ``(batch_size, *dim)``.

    Raises:
        ValueError: The shape does not match.
    """
    dim = _dim_tuple(dim)
    if array.ndim != 1 + len(dim) or tuple(array.shape[1:]) != dim:
        dim_str = ", ".join(map(str, dim))
        raise ValueError(
            f"Expected {array_name} to be an array with shape "
            f"(batch_size, {dim_str}) (i.e. shape "
            f"(batch_size, {dim_name})) but it had shape "
            f"{array.shape}.{extra_msg}"
        )


def check_shape(array, array_name: str, dim, dim_name: str, extra_msg: str = ""):
    """Checks that ``array`` has shape ``dim`` (an int or a tuple).

    Raises:
        ValueError: The shape does not match.
    """
    dim = _dim_tuple(dim)
    if tuple(array.shape) != dim:
        comma = "," if len(dim) == 1 else ""
        raise ValueError(
            f"Expected {array_name} to be an array with shape "
            f"{dim} (i.e. shape ({dim_name}{comma})) but it had shape "
            f"{array.shape}.{extra_msg}"
        )


def check_is_1d(array, array_name: str, extra_msg: str = "") -> None:
    """Checks that ``array`` is one-dimensional.

    Raises:
        ValueError: ``array`` is not 1D.
    """
    if array.ndim != 1:
        raise ValueError(
            f"Expected {array_name} to be a 1D array but it had shape {array.shape}.{extra_msg}"
        )


def check_solution_batch_dim(
    array, array_name: str, batch_size: int, is_1d: bool = False, extra_msg: str = ""
) -> None:
    """Checks that ``array`` has ``batch_size`` entries along its first axis.

    Raises:
        ValueError: The lengths differ.
    """
    if array.ndim == 0 or array.shape[0] != batch_size:
        raise ValueError(
            f"{array_name} does not match the batch dimension of "
            "solution -- since solution has shape "
            f"({batch_size}, ..), {array_name} should have shape "
            f"({batch_size},{'' if is_1d else ' ..'}), but it has "
            f"shape {array.shape}.{extra_msg}"
        )


def validate_batch(archive, data: dict, none_objective_ok: bool = False) -> dict:
    """Converts a batch of user data to NumPy arrays and validates it.

    Args:
        archive: The archive the data is meant for (its ``dtypes``, ``solution_dim``
            and ``measure_dim`` are used).
        data: Dict with at least ``solution``, ``objective`` and ``measures``.
        none_objective_ok: Whether ``objective=None`` is allowed.

    Returns:
        A new dict with the converted arrays, in the same key order.

    Raises:
        ValueError: A shape, batch length or finiteness check fails.
    """
    dtypes = archive.dtypes
    out = {}
    solution = np.asarray(data["solution"], dtype=dtypes["solution"])
    check_batch_shape(solution, "solution", archive.solution_dim, "solution_dim", "")
    batch_size = solution.shape[0]
    for name, arr in data.items():
        if name == "solution":
            out[name] = solution
            continue
        if name == "objective":
            if arr is None:
                if not none_objective_ok:
                    raise ValueError("objective cannot be None")
            else:
                arr = np.asarray(arr, dtype=dtypes["objective"])
                check_is_1d(arr, "objective", "")
                check_solution_batch_dim(arr, "objective", batch_size, is_1d=True)
                check_finite(arr, "objective")
        elif name == "measures":
            arr = np.asarray(arr, dtype=dtypes["measures"])
            check_batch_shape(arr, "measures", archive.measure_dim, "measure_dim", "")
            check_solution_batch_dim(arr, "measures", batch_size, is_1d=False)
            if arr.dtype.kind in "biufc":
                check_finite(arr, "measures")
        elif is_record(arr):
            # A record of arrays (e.g. an RL task's transitions) stays as it is.
            for leaf in jax.tree.leaves(arr):
                check_solution_batch_dim(leaf, name, batch_size, is_1d=False)
        else:
            arr = np.asarray(arr)
            check_solution_batch_dim(arr, name, batch_size, is_1d=False)
        out[name] = arr
    return out


def is_record(value) -> bool:
    """Whether ``value`` is a dict or a named tuple (a pytree of per-row arrays,
    such as a task's transitions) rather than something array-like."""
    return isinstance(value, dict) or (isinstance(value, tuple) and hasattr(value, "_fields"))


def validate_single(archive, data: dict, none_objective_ok: bool = False) -> dict:
    """Single-solution counterpart of :func:`validate_batch`.

    Returns:
        A new dict with converted arrays (objective as a 0-d array).

    Raises:
        ValueError: A shape or finiteness check fails.
    """
    dtypes = archive.dtypes
    out = {}
    for name, arr in data.items():
        if name == "solution":
            arr = np.asarray(arr, dtype=dtypes["solution"])
            check_shape(arr, "solution", archive.solution_dim, "solution_dim", "")
        elif name == "objective":
            if arr is None:
                if not none_objective_ok:
                    raise ValueError("objective cannot be None")
            else:
                arr = np.asarray(arr, dtype=dtypes["objective"])
                check_finite(arr, "objective")
        elif name == "measures":
            arr = np.asarray(arr, dtype=dtypes["measures"])
            check_shape(arr, "measures", archive.measure_dim, "measure_dim", "")
            if np.issubdtype(arr.dtype, np.number):
                check_finite(arr, "measures")
        else:
            arr = np.asarray(arr)
        out[name] = arr
    return out


def x64_enabled() -> bool:
    """Whether JAX's 64-bit mode (``jax_enable_x64``) is on."""
    return bool(jax.config.jax_enable_x64)


def default_float_dtype():
    """float64 when JAX x64 is enabled (as in pyribs), float32 otherwise."""
    return np.dtype(np.float64) if x64_enabled() else np.dtype(np.float32)


_WIDE_KINDS = {
    np.dtype(np.float64),
    np.dtype(np.int64),
    np.dtype(np.uint64),
    np.dtype(np.complex128),
}


def jax_dtype_supported(dtype) -> bool:
    """Whether arrays of ``dtype`` can live on a JAX device without downcasting."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "biufc":
        return False
    if dtype in _WIDE_KINDS and not x64_enabled():
        return False
    return True


def parse_dtype(dtype, name: str = "dtype"):
    """Resolves one user dtype.

    ``None`` becomes :func:`default_float_dtype`. 64-bit numeric dtypes require JAX
    x64; ribsax never silently downcasts them.

    Args:
        dtype: Anything :func:`numpy.dtype` accepts, or None.
        name: Argument name for the error message.

    Returns:
        A :class:`numpy.dtype`.

    Raises:
        ValueError: A 64-bit dtype was requested while JAX x64 is disabled.
    """
    if dtype is None:
        return default_float_dtype()
    dtype = np.dtype(dtype)
    if dtype in _WIDE_KINDS and not x64_enabled():
        raise ValueError(
            f"{name}={dtype} requires JAX 64-bit mode, which is disabled. Enable it "
            "before creating arrays with jax.config.update('jax_enable_x64', True), "
            "or pass a 32-bit dtype such as np.float32."
        )
    return dtype


def parse_all_dtypes(
    dtype, solution_dtype, objective_dtype, measures_dtype, default_measures_dtype=None
):
    """Resolves the archive dtypes the way pyribs does.

    Args:
        dtype: Sets solution, objective and measures dtypes together.
        solution_dtype: Individual dtype for solutions.
        objective_dtype: Individual dtype for objectives.
        measures_dtype: Individual dtype for measures.
        default_measures_dtype: Measures dtype used when neither ``dtype`` nor
            ``measures_dtype`` is given (CategoricalArchive uses ``object``).

    Returns:
        Tuple of (solution, objective, measures) numpy dtypes.

    Raises:
        ValueError: ``dtype`` is a dict, or ``dtype`` is combined with individual
            dtypes, or a 64-bit dtype is requested without JAX x64.
    """
    if isinstance(dtype, dict):
        raise ValueError(
            "Passing a dict as `dtype` is deprecated in pyribs 0.9.0. Please use "
            "`solution_dtype`, `objective_dtype`, and/or `measures_dtype` instead."
        )
    individual = (
        solution_dtype is not None or objective_dtype is not None or measures_dtype is not None
    )
    if dtype is not None and individual:
        raise ValueError(
            "dtype cannot be used at the same time as solution_dtype, "
            "objective_dtype, or measures_dtype. Either pass dtype on its own,"
            "or pass solution_dtype, objective_dtype, and/or measures_dtype."
        )
    if dtype is not None:
        solution_dtype = objective_dtype = dtype
        if default_measures_dtype is None:
            measures_dtype = dtype
    if measures_dtype is None and default_measures_dtype is not None:
        measures = np.dtype(default_measures_dtype)
    else:
        measures = _parse_field_dtype(measures_dtype, "measures_dtype")
    return (
        _parse_field_dtype(solution_dtype, "solution_dtype"),
        parse_dtype(objective_dtype, "objective_dtype"),
        measures,
    )


def _parse_field_dtype(dtype, name):
    """Like :func:`parse_dtype` but allows non-numeric dtypes (kept on the host)."""
    if dtype is not None and np.dtype(dtype).kind not in "biufc":
        return np.dtype(dtype)
    return parse_dtype(dtype, name)


# ---------------------------------------------------------------------------
# Seeding.
# ---------------------------------------------------------------------------
#: The PRNG implementation of the keys that ribsax's own kernels draw from (the
#: emitters' sampling, rankers, restarts): Philox 4x32, the counter-based generator
#: of Random123, as :mod:`ribsax._philox` writes it (bit for bit JAX's
#: ``"philox4x32"``). Its key is 64 bits, like JAX's default ``threefry2x32``, so a
#: seed gives the same key words under both. Keys handed to the user's evaluation
#: functions keep JAX's default implementation (:func:`seed_to_key`).
KERNEL_PRNG_IMPL = PHILOX4X32


def seed_to_key(seed, impl=None) -> jax.Array:
    """Derives a JAX PRNG key from anything pyribs accepts as a seed.

    Args:
        seed: None (fresh OS entropy), an int, or a :class:`numpy.random.SeedSequence`.
        impl: The key's PRNG implementation, anything ``jax.random.key`` accepts
            as ``impl`` with 64-bit keys; None means JAX's default.

    Returns:
        A typed PRNG key whose two 32-bit key words come from
        ``numpy.random.SeedSequence(seed)``.
    """
    words = _seed_sequence(seed).generate_state(2, dtype=np.uint32)
    return jax.random.wrap_key_data(np.asarray(words, dtype=np.uint32), impl=impl)


def _seed_sequence(seed) -> np.random.SeedSequence:
    """``numpy.random.SeedSequence`` of a pyribs seed (see :func:`seed_to_key`)."""
    if seed is None:
        return np.random.SeedSequence()
    if isinstance(seed, numbers.Integral):
        return np.random.SeedSequence(int(seed))
    if not isinstance(seed, np.random.SeedSequence):
        raise ValueError(f"seed must be None, an int, or a numpy.random.SeedSequence, got {seed!r}")
    return seed


def host_copy(x, dtype=None) -> np.ndarray:
    """A private, C-contiguous NumPy copy of ``x`` (cast to ``dtype`` if given).

    On a CPU device ``jax.device_put`` may share the memory of a NumPy array, so host
    data handed to JAX is copied first: the caller may change its array later."""
    return np.array(x, dtype=dtype, order="C", copy=True)


def to_device(x, dtype=None) -> jax.Array:
    """A new JAX array holding a copy of the host value ``x`` (cast to ``dtype`` if
    given), on JAX's default device and uncommitted, as ``jnp.asarray`` makes it.

    ``jnp.asarray`` of NumPy data compiles a small program the first time it meets
    each shape and dtype; this compiles nothing. Archives and emitters build their
    first states with it, so that building a scheduler compiles no program."""
    return jax.device_put(host_copy(x, dtype))


def kernel_key(seed) -> jax.Array:
    """:func:`seed_to_key` with :data:`KERNEL_PRNG_IMPL`: the key an emitter, ranker
    or optimizer derives from its ``seed``."""
    return seed_to_key(seed, KERNEL_PRNG_IMPL)


def kernel_keys(seed, n: int) -> list:
    """``n`` independent :func:`kernel_key`-style keys from one seed, their words
    drawn from its ``numpy.random.SeedSequence`` on the host: unlike
    ``jax.random.split``, this compiles no program (building an emitter then
    compiles nothing)."""
    words = _seed_sequence(seed).generate_state(2 * n, dtype=np.uint32)
    return [
        jax.random.wrap_key_data(
            np.asarray(words[2 * i : 2 * i + 2], np.uint32), impl=KERNEL_PRNG_IMPL
        )
        for i in range(n)
    ]
