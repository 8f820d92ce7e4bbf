"""Plots of QDax repertoires (``MapElitesRepertoire``) through a CVT archive."""

from __future__ import annotations

import numpy as np

from ribsax.archives import CVTArchive
from ribsax.visualize._cvt_archive_3d_plot import cvt_archive_3d_plot
from ribsax.visualize._cvt_archive_heatmap import cvt_archive_heatmap

__all__ = ["qdax_repertoire_heatmap", "qdax_repertoire_3d_plot"]


def repertoire_archive(repertoire, ranges):
    """A :class:`~ribsax.archives.CVTArchive` over the repertoire's centroids
    holding its elites: objective = fitness, measures = descriptors, no solutions
    (cells whose fitness is ``-inf`` are empty, as in QDax).

    Raises:
        ValueError: The repertoire's fitnesses are not one column.
    """
    fitnesses = np.asarray(repertoire.fitnesses)
    if fitnesses.shape[1:] != (1,):
        raise ValueError(
            "This method only supports visualizing single-objective "
            "archives (i.e., there can only be one fitness)."
        )
    fitnesses = fitnesses[:, 0]
    centroids = np.asarray(repertoire.centroids)
    descriptors = np.asarray(repertoire.descriptors)
    archive = CVTArchive(solution_dim=0, centroids=centroids, ranges=ranges, dtype=centroids.dtype)
    filled = np.isfinite(fitnesses)
    archive.add(
        np.empty((int(filled.sum()), 0), centroids.dtype), fitnesses[filled], descriptors[filled]
    )
    return archive


def qdax_repertoire_heatmap(repertoire, ranges, *args, **kwargs):
    """Heatmap of a single-objective QDax ``MapElitesRepertoire``.

    The repertoire (its ``centroids``, ``fitnesses`` of shape ``(cells, 1)`` and
    ``descriptors``) becomes a :class:`~ribsax.archives.CVTArchive` drawn by
    :func:`cvt_archive_heatmap`. Any object with those three arrays works; QDax
    need not be installed.

    Args:
        repertoire: The repertoire.
        ranges: ``(low, high)`` of each measure (the repertoire does not store
            them), e.g. ``[(-1, 1), (-2, 2)]``.
        *args: Passed to :func:`cvt_archive_heatmap` (e.g. ``ax``).
        **kwargs: Passed to :func:`cvt_archive_heatmap`.

    Returns:
        What :func:`cvt_archive_heatmap` returns (the Axes).

    Raises:
        ValueError: The repertoire has more than one fitness.
    """
    return cvt_archive_heatmap(repertoire_archive(repertoire, ranges), *args, **kwargs)


def qdax_repertoire_3d_plot(repertoire, ranges, *args, **kwargs):
    """3D plot of a single-objective QDax ``MapElitesRepertoire`` with three
    measures, through a :class:`~ribsax.archives.CVTArchive` and
    :func:`cvt_archive_3d_plot` (see :func:`qdax_repertoire_heatmap`).

    Args:
        repertoire: The repertoire.
        ranges: ``(low, high)`` of each of the three measures.
        *args: Passed to :func:`cvt_archive_3d_plot`.
        **kwargs: Passed to :func:`cvt_archive_3d_plot`.

    Returns:
        What :func:`cvt_archive_3d_plot` returns (the Axes).

    Raises:
        ValueError: The repertoire has more than one fitness.
    """
    return cvt_archive_3d_plot(repertoire_archive(repertoire, ranges), *args, **kwargs)
