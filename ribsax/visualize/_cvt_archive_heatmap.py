"""cvt_archive_heatmap: objective heatmap of a 1D or 2D CVT archive."""

from __future__ import annotations

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.colors import Normalize
from scipy.spatial import Voronoi

from ribsax.visualize._utils import (
    colour_range,
    draw_colorbar,
    heatmap_1d,
    label_axes,
    prepare_heatmap_1d_2d,
    resolve_axes,
)

__all__ = ["cvt_archive_heatmap"]

# Distance (in multiples of the measure range) of the four helper points that make
# every real centroid's Voronoi region bounded.
_FAR = 1000.0


def _clip_to_box(polygon, lower, upper):
    """Clips a convex polygon to an axis-aligned box (Sutherland-Hodgman).

    Args:
        polygon: (n, 2) vertices in order.
        lower: (2,) lower corner.
        upper: (2,) upper corner.

    Returns:
        (m, 2) vertices of the intersection; m is 0 when they do not overlap.
    """
    # Each half-plane is "coordinate axis, bound, keep values >= bound (sign=1) or
    # <= bound (sign=-1)".
    planes = [(0, lower[0], 1.0), (0, upper[0], -1.0), (1, lower[1], 1.0), (1, upper[1], -1.0)]
    pts = [np.asarray(p, dtype=float) for p in polygon]
    for axis, bound, sign in planes:
        if not pts:
            break
        kept = []
        for i, cur in enumerate(pts):
            prev = pts[i - 1]
            cur_in = sign * (cur[axis] - bound) >= 0
            prev_in = sign * (prev[axis] - bound) >= 0
            if cur_in != prev_in:
                t = (bound - prev[axis]) / (cur[axis] - prev[axis])
                kept.append(prev + t * (cur - prev))
            if cur_in:
                kept.append(cur)
        pts = kept
    return np.array(pts, dtype=float).reshape(-1, 2)


def _clip_to_shape(polygon, shape):
    """Intersects a polygon with a shapely geometry; returns a list of (m, 2) rings."""
    import shapely

    inter = shapely.Polygon(polygon).intersection(shape)
    parts = getattr(inter, "geoms", [inter])
    return [
        np.asarray(p.exterior.coords)[:-1]
        for p in parts
        if isinstance(p, shapely.Polygon) and not p.is_empty
    ]


def _voronoi_cells(centroids, lower, upper):
    """Vertices of each centroid's Voronoi region (list of (n, 2) arrays)."""
    span = upper - lower
    far = np.array(
        [
            upper + span * _FAR,
            upper + span * np.array([-_FAR, _FAR]),
            lower - span * _FAR,
            lower + span * np.array([_FAR, -_FAR]),
        ]
    )
    vor = Voronoi(np.concatenate([centroids, far]))
    cells = []
    for i in range(len(centroids)):
        region = vor.regions[vor.point_region[i]]
        if len(region) == 0 or -1 in region:
            cells.append(None)
        else:
            cells.append(vor.vertices[region])
    return cells


def cvt_archive_heatmap(
    archive,
    ax=None,
    *,
    df=None,
    transpose_measures=False,
    cmap="magma",
    aspect=None,
    lw=0.5,
    ec="black",
    vmin=None,
    vmax=None,
    cbar="auto",
    cbar_kwargs=None,
    rasterized=False,
    clip=False,
    plot_centroids=False,
    ms=1,
    pcm_kwargs=None,
    plot_samples=None,
):
    """Plots the elites' objectives of a 1D or 2D CVT archive as a heatmap.

    Same arguments and drawing as :func:`ribs.visualize.cvt_archive_heatmap`. In 2D
    each centroid's Voronoi cell (``scipy.spatial.Voronoi``) is drawn as a polygon,
    coloured by the objective of the cell's elite; empty cells are transparent. In 1D
    the cells are the intervals between midpoints of the sorted centroids, drawn
    with ``pcolormesh`` as one row spanning y in [0, 1].

    In 2D the polygons form one :class:`~matplotlib.collections.PolyCollection`
    whose data array holds the objectives (masked for empty cells), with polygon
    ``i`` belonging to centroid ``i`` when ``clip`` is False. That collection is
    also the mappable behind the colorbar.

    Args:
        archive: Any 1D or 2D archive with ``centroids`` (e.g.
            :class:`ribsax.archives.CVTArchive`), ``measure_dim``, ``cells``,
            ``lower_bounds``, ``upper_bounds`` and ``data``.
        ax: Axes to draw on; pyplot's current Axes when None.
        df: Optional DataFrame with ``index`` and ``objective`` columns to plot
            instead of the archive's contents.
        transpose_measures: Put the second measure on the x-axis (2D only).
        cmap: Colormap name, list of colours, or Colormap.
        aspect: ``"auto"``, ``"equal"`` or a number; defaults to 0.5 for 1D and
            ``"auto"`` for 2D.
        lw: Width of the cell edges.
        ec: Colour of the cell edges.
        vmin: Lower colour limit (default: smallest objective).
        vmax: Upper colour limit (default: largest objective).
        cbar: ``"auto"``, None, or an Axes for the colorbar.
        cbar_kwargs: Extra kwargs for ``Figure.colorbar``.
        rasterized: Rasterize the cells.
        clip: 2D only. False draws whole Voronoi cells (those at the border run
            past the axes limits). True clips them to the archive's bounds (done
            here, no extra dependency). A shapely polygon clips them to that shape
            (uses shapely, which you have if you built such a polygon).
        plot_centroids: Also mark the centroids with black dots.
        ms: Marker size of the centroids.
        pcm_kwargs: 1D only: extra kwargs for ``pcolormesh`` (``linewidth`` and
            ``edgecolor`` are taken from ``lw`` and ``ec``).
        plot_samples: Deprecated in pyribs 0.9.0; must be None.

    Returns:
        The Axes drawn on (pyribs returns None; returning the Axes is a ribsax
        addition). Axes without a label are labelled ``measure_0`` /
        ``measure_1`` and the colour bar ``objective`` (also ribsax additions).

    Raises:
        ValueError: ``plot_samples`` is given, invalid ``aspect`` or ``cbar``, the
            archive is not 1D or 2D, or ``vmax < vmin``.
    """
    if plot_samples is not None:
        raise ValueError(
            "`plot_samples` is deprecated in pyribs 0.9.0, as CVTArchive no longer stores samples."
        )
    aspect, cmap, index, objective = prepare_heatmap_1d_2d(
        archive, df, aspect=aspect, cbar=cbar, cmap=cmap, archive_name="CVTArchive"
    )
    centroids = np.asarray(archive.centroids, dtype=float)
    lower = np.asarray(archive.lower_bounds, dtype=float)
    upper = np.asarray(archive.upper_bounds, dtype=float)

    if archive.measure_dim == 1:
        xs = centroids[:, 0]
        order = np.argsort(xs)
        sorted_xs = xs[order]
        boundaries = np.concatenate([lower[:1], (sorted_xs[:-1] + sorted_xs[1:]) / 2.0, upper[:1]])
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        cell_objectives = np.full(len(xs), np.nan)
        cell_objectives[rank[index]] = objective
        kwargs = {
            k: v
            for k, v in (pcm_kwargs or {}).items()
            if k not in ("lw", "ec", "linewidth", "linewidths", "edgecolor", "edgecolors")
        }
        kwargs.update(linewidth=lw, edgecolor=ec)
        ax = heatmap_1d(
            ax,
            lower=lower[0],
            upper=upper[0],
            boundaries=boundaries,
            cell_objectives=cell_objectives,
            cmap=cmap,
            aspect=aspect,
            vmin=vmin,
            vmax=vmax,
            cbar=cbar,
            cbar_kwargs=cbar_kwargs,
            rasterized=rasterized,
            pcm_kwargs=kwargs,
        )
        if plot_centroids:
            ax.plot(xs, np.full(len(xs), 0.5), "o", c="black", ms=ms)
        return ax

    if transpose_measures:
        lower, upper = lower[::-1], upper[::-1]
        centroids = centroids[:, ::-1]

    ax = resolve_axes(ax)
    label_axes(
        ax, *(("measure_1", "measure_0") if transpose_measures else ("measure_0", "measure_1"))
    )
    ax.set_xlim(lower[0], upper[0])
    ax.set_ylim(lower[1], upper[1])
    ax.set_aspect(aspect)

    cell_obj = np.full(len(centroids), np.nan)
    cell_obj[index] = objective
    polygons, values = [], []
    for i, cell in enumerate(_voronoi_cells(centroids, lower, upper)):
        if cell is None:
            continue
        if hasattr(clip, "geom_type"):  # A shapely geometry.
            pieces = _clip_to_shape(cell, clip)
        elif clip:
            pieces = [_clip_to_box(cell, lower, upper)]
        else:
            pieces = [cell]
        for piece in pieces:
            if len(piece) >= 3:
                polygons.append(piece)
                values.append(cell_obj[i])

    vmin, vmax = colour_range(vmin, vmax, objective)
    values = np.asarray(values, dtype=float)
    cells = PolyCollection(
        polygons,
        array=np.ma.masked_invalid(values),
        cmap=cmap,
        norm=Normalize(vmin=vmin, vmax=vmax),
        edgecolors=ec,
        linewidths=lw,
        rasterized=rasterized,
    )
    ax.add_collection(cells, autolim=False)
    if plot_centroids:
        ax.plot(centroids[:, 0], centroids[:, 1], "o", c="black", ms=ms)
    draw_colorbar(cells, ax, cbar, cbar_kwargs)
    return ax
