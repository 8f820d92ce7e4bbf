"""Argument checks shared by ribsax.rl (errors name the argument)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["check_positive_int", "check_hidden_sizes"]


def check_positive_int(name: str, value, allow_zero: bool = False) -> None:
    """Raises ValueError naming ``name`` unless ``value`` is a positive int
    (non-negative with ``allow_zero``)."""
    low = 0 if allow_zero else 1
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must be a {kind} int, got {value!r}")


def check_hidden_sizes(name: str, sizes: Sequence[int]) -> tuple[int, ...]:
    """Validates a sequence of hidden widths and returns it as a tuple."""
    try:
        out = tuple(sizes)
    except TypeError as err:
        raise ValueError(f"{name} must be a sequence of positive ints, got {sizes!r}") from err
    for s in out:
        check_positive_int(f"{name} entries", s)
    return out
