"""Archives: where elites live.

Each archive keeps its storage on the JAX device and inserts batches with one jitted
kernel, while exposing pyribs' public interface.
"""
from ribsax.archives._add_status import AddStatus
from ribsax.archives._archive_base import ArchiveBase
from ribsax.archives._archive_data_frame import ArchiveDataFrame
from ribsax.archives._archive_stats import ArchiveStats
from ribsax.archives._array_store import ArrayStore
from ribsax.archives._grid_archive import GridArchive

__all__ = [
    "GridArchive",
    "ArchiveBase",
    "ArrayStore",
    "AddStatus",
    "ArchiveDataFrame",
    "ArchiveStats",
]
