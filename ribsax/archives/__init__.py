"""Archives: where elites live.

Each archive keeps its storage on the JAX device and inserts batches with one jitted
kernel, while exposing pyribs' public interface.
"""

from ribsax.archives._add_status import AddStatus
from ribsax.archives._archive_base import ArchiveBase
from ribsax.archives._archive_data_frame import ArchiveDataFrame
from ribsax.archives._archive_stats import ArchiveStats
from ribsax.archives._array_store import ArrayStore
from ribsax.archives._categorical_archive import CategoricalArchive
from ribsax.archives._cqd_score import CQDScoreResult, cqd_score
from ribsax.archives._cvt_archive import CVTArchive
from ribsax.archives._density_archive import DensityArchive
from ribsax.archives._discount_archive import DiscountArchive
from ribsax.archives._dns_archive import DNSArchive
from ribsax.archives._grid_archive import GridArchive
from ribsax.archives._k_means import k_means_centroids
from ribsax.archives._proximity_archive import ProximityArchive
from ribsax.archives._sliding_boundaries_archive import SlidingBoundariesArchive

__all__ = [
    "CVTArchive",
    "k_means_centroids",
    "CategoricalArchive",
    "DensityArchive",
    "DiscountArchive",
    "DNSArchive",
    "GridArchive",
    "ProximityArchive",
    "SlidingBoundariesArchive",
    "ArchiveBase",
    "ArrayStore",
    "AddStatus",
    "ArchiveDataFrame",
    "ArchiveStats",
    "cqd_score",
    "CQDScoreResult",
]
