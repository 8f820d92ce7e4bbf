"""AddStatus enum."""

from enum import IntEnum

__all__ = ["AddStatus"]


class AddStatus(IntEnum):
    """Outcome of inserting one solution; archives return the raw int32 codes.

    Attributes:
        NOT_ADDED: The solution was not inserted (0).
        IMPROVE_EXISTING: The solution replaced or improved an occupied cell (1).
        NEW: The solution filled an empty cell (2).
    """

    NOT_ADDED = 0
    IMPROVE_EXISTING = 1
    NEW = 2
