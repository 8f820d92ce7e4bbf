"""pyribs' checks of a scheduler's arguments, and the checks of ``run``'s."""

from __future__ import annotations

import numbers

__all__ = [
    "check_emitters",
    "check_add_mode",
    "check_array_backend",
    "check_result_archive",
    "check_positive_int",
    "check_non_finite",
]

_NOT_UNIQUE = (
    "Not all emitters passed in were unique (i.e. some emitters "
    "had the same id). If emitters were created with something "
    "like [EmitterClass(...)] * n, instead use "
    "[EmitterClass(...) for _ in range(n)] so that all emitters "
    "are unique instances."
)


def check_emitters(emitters, name: str, min_count_check=None):
    """pyribs' checks on an emitter list: non-empty, a sequence, unique instances,
    equal solution dims.

    Args:
        emitters: The list.
        name: Argument name for the TypeError (``emitters`` / ``emitter_pool``).
        min_count_check: Optional callable run with ``len(emitters)`` inside the
            TypeError guard (raises its own ValueError).

    Returns:
        The common solution dim.

    Raises:
        TypeError: ``emitters`` has no ``len``.
        ValueError: Empty list, duplicate instances or differing solution dims.
    """
    try:
        count = len(emitters)
        if min_count_check is not None:
            min_count_check(count)
        elif count == 0:
            raise ValueError("Pass in at least one emitter to the scheduler.")
    except TypeError as exception:
        raise TypeError(f"`{name}` must be a list of emitter objects.") from exception

    if len({id(e) for e in emitters}) != len(emitters):
        raise ValueError(_NOT_UNIQUE)

    solution_dim = emitters[0].solution_dim
    # pyribs' quirk: idx counts over emitters[1:], so the second emitter is
    # reported as "Emitter 0".
    for idx, emitter in enumerate(emitters[1:]):
        if emitter.solution_dim != solution_dim:
            raise ValueError(
                "All emitters must have the same solution dim, but "
                f"Emitter {idx} has dimension {emitter.solution_dim}, "
                f"while Emitter 0 has dimension {solution_dim}"
            )
    return solution_dim


def check_add_mode(add_mode) -> None:
    """Raises ValueError unless ``add_mode`` is ``"batch"`` or ``"single"``."""
    if add_mode not in ["single", "batch"]:
        raise ValueError(f"add_mode must either be 'batch' or 'single', but it was '{add_mode}'")


def check_array_backend(array_backend) -> None:
    """Raises ValueError unless ``array_backend`` is ``"numpy"`` or ``"jax"``."""
    if array_backend not in ("numpy", "jax"):
        raise ValueError(f"array_backend must be 'numpy' or 'jax', but it was {array_backend!r}")


def check_result_archive(archive, result_archive, cls_name: str) -> None:
    """Raises ValueError if ``archive is result_archive``."""
    if archive is result_archive:
        raise ValueError(
            "`archive` has same id as `result_archive` -- "
            f"Note that `{cls_name}.result_archive` already "
            "defaults to be the same as `archive` if you pass "
            "`result_archive=None`"
        )


def check_positive_int(value, name: str) -> int:
    """Returns ``value`` as an int, or raises ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


#: What a run does with rows whose objective or measures are not finite.
NON_FINITE_CHOICES = ("skip", "raise")


def check_non_finite(non_finite: str) -> str:
    """Returns ``non_finite`` or raises ValueError naming the choices."""
    if non_finite not in NON_FINITE_CHOICES:
        raise ValueError(f"non_finite must be one of {NON_FINITE_CHOICES}, got {non_finite!r}")
    return non_finite
