"""Argument checks and drawing helpers shared by the heatmap functions."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import matplotlib.colors
import numpy as np
from matplotlib.axes import Axes

from ribsax.archives import ArchiveDataFrame

__all__ = [
    "VMIN_VMAX_PAD",
    "as_colormap",
    "check_heatmap_args",
    "colour_range",
    "draw_colorbar",
    "elite_index_and_objective",
    "heatmap_1d",
    "label_axes",
    "padded_bounds",
    "prepare_scatter_2d",
    "read_fields",
    "resolve_axes",
    "scatter_2d",
]

#: Half-width of the colour range used when the data cannot define one.
VMIN_VMAX_PAD = 0.1


def as_colormap(cmap):
    """Turns a colormap name, a list of colours or a Colormap into a Colormap.

    Args:
        cmap: Name registered with matplotlib, a sequence of colour specs (made
            into a :class:`~matplotlib.colors.ListedColormap`), or a Colormap.

    Returns:
        A :class:`~matplotlib.colors.Colormap`.
    """
    if isinstance(cmap, str):
        return matplotlib.colormaps[cmap]
    if isinstance(cmap, matplotlib.colors.Colormap):
        return cmap
    if isinstance(cmap, (Sequence, np.ndarray)):
        return matplotlib.colors.ListedColormap(cmap)
    return cmap


def check_heatmap_args(aspect, cbar, measure_dim, valid_dims, dim_msg):
    """Validates the arguments every archive heatmap takes.

    ``aspect`` may be None, a real number, ``"equal"`` or ``"auto"`` (pyribs only
    accepts a ``float``; ribsax also accepts ints such as ``aspect=1``).

    Args:
        aspect: Aspect ratio argument.
        cbar: ``"auto"``, None, or an Axes for the colorbar.
        measure_dim: The archive's measure dimension.
        valid_dims: Measure dimensions the plot supports.
        dim_msg: Message of the ValueError for an unsupported ``measure_dim``.

    Raises:
        ValueError: Invalid ``aspect``, unsupported ``measure_dim`` or invalid
            ``cbar`` (checked in that order, as pyribs does).
    """
    aspect_ok = (
        aspect is None
        or (isinstance(aspect, numbers.Real) and not isinstance(aspect, bool))
        or (isinstance(aspect, str) and aspect in ("equal", "auto"))
    )
    if not aspect_ok:
        raise ValueError(f"Invalid arg aspect='{aspect}'; must be 'auto', 'equal', or float")
    if measure_dim not in valid_dims:
        raise ValueError(dim_msg)
    cbar_ok = cbar is None or isinstance(cbar, Axes) or (isinstance(cbar, str) and cbar == "auto")
    if not cbar_ok:
        raise ValueError(f"Invalid arg cbar={cbar}; must be 'auto', None, or matplotlib.axes.Axes")


def elite_index_and_objective(archive, df):
    """Cell indices and objectives to plot, from ``df`` or else the archive.

    Args:
        archive: Archive with ``data()``.
        df: None, or a DataFrame with at least ``index`` and ``objective`` columns.

    Returns:
        ``(index int array, objective float array)``.
    """
    if df is None:
        return (np.asarray(archive.data("index")), np.asarray(archive.data("objective")))
    if not isinstance(df, ArchiveDataFrame):
        df = ArchiveDataFrame(df)
    return np.asarray(df["index"]), np.asarray(df["objective"])


def read_fields(archive, df, fields, *, caller=None):
    """Reads data fields of the elites, from ``df`` when given, else the archive.

    Args:
        archive: Archive with ``data()``.
        df: None, or a DataFrame in the layout of ``archive.data(return_type=
            "pandas")`` (``measures_0``, ``measures_1``... columns for array fields).
        fields: Names of the fields to read (e.g. ``("measures", "objective")``).
        caller: Name of the plotting function. When given, an archive whose
            ``data()`` raises NotImplementedError raises pyribs' AttributeError
            naming that function.

    Returns:
        Tuple of NumPy arrays, one per field.

    Raises:
        AttributeError: ``caller`` is given and the archive cannot return data.
    """
    if df is None:
        try:
            return tuple(np.asarray(archive.data(f)) for f in fields)
        except NotImplementedError as e:
            if caller is None:
                raise
            raise AttributeError(
                f"To use {caller}, the archive must have the data() method."
            ) from e
    if not isinstance(df, ArchiveDataFrame):
        df = ArchiveDataFrame(df)
    return tuple(np.asarray(df.get_field(f)) for f in fields)


def label_axes(ax, xlabel=None, ylabel=None, zlabel=None):
    """Labels the axes of ``ax``, leaving alone any label the caller already set.

    ribsax addition: pyribs leaves the axes unlabelled. Labels are only written
    where the Axes has none, so labels set before or after the call win.
    """
    for label, getter, setter in (
        (xlabel, "get_xlabel", "set_xlabel"),
        (ylabel, "get_ylabel", "set_ylabel"),
        (zlabel, "get_zlabel", "set_zlabel"),
    ):
        if label is not None and hasattr(ax, getter) and not getattr(ax, getter)():
            getattr(ax, setter)(label)


def prepare_heatmap_1d_2d(archive, df, *, aspect, cbar, cmap, archive_name):
    """Common start of the heatmaps of 1D or 2D archives.

    Validates the arguments (:func:`check_heatmap_args`), picks the default aspect
    (0.5 in 1D, ``"auto"`` in 2D), resolves the colormap and reads the elites.

    Args:
        archive: Archive with ``measure_dim`` and ``data()``.
        df: None, or a DataFrame with ``index`` and ``objective`` columns.
        aspect: Aspect ratio argument (None for the default).
        cbar: ``"auto"``, None, or an Axes for the colorbar.
        cmap: Colormap name, list of colours, or Colormap.
        archive_name: Class name used in the unsupported-dimension message.

    Returns:
        ``(aspect, colormap, index int64 array, objective float array)``.

    Raises:
        ValueError: Invalid ``aspect`` or ``cbar``, or the archive is not 1D or 2D.
    """
    check_heatmap_args(
        aspect,
        cbar,
        archive.measure_dim,
        [1, 2],
        f"Heatmap can only be plotted for a 1D or 2D {archive_name}",
    )
    if aspect is None:
        aspect = 0.5 if archive.measure_dim == 1 else "auto"
    index, objective = elite_index_and_objective(archive, df)
    return aspect, as_colormap(cmap), index.astype(np.int64), objective.astype(float)


def colour_range(vmin, vmax, objectives):
    """Chooses the colour limits from the user's ``vmin``/``vmax`` and the data.

    Missing limits come from the smallest/largest objective. The result always has
    ``vmin < vmax``: equal limits are spread by :data:`VMIN_VMAX_PAD` either side, and
    a limit that cannot be taken from the data (empty archive, or data on the wrong
    side of the given limit) is placed ``2 * VMIN_VMAX_PAD`` from the other.

    Args:
        vmin: None or the lower limit.
        vmax: None or the upper limit.
        objectives: 1D array of plotted objectives (may be empty).

    Returns:
        ``(vmin, vmax)``.

    Raises:
        ValueError: Both limits given and ``vmax < vmin``.
    """
    objectives = np.asarray(objectives)
    have_data = objectives.size > 0
    lo = np.min(objectives) if have_data else None
    hi = np.max(objectives) if have_data else None
    pad = VMIN_VMAX_PAD

    if vmin is not None and vmax is not None:
        if vmax < vmin:
            raise ValueError(f"vmax ({vmax}) must be greater than or equal to vmin ({vmin})")
        return (vmin - pad, vmax + pad) if vmin == vmax else (vmin, vmax)
    if vmin is not None:
        return (vmin, hi) if have_data and vmin < hi else (vmin, vmin + 2 * pad)
    if vmax is not None:
        return (lo, vmax) if have_data and lo < vmax else (vmax - 2 * pad, vmax)
    if not have_data:
        return (-pad, pad)
    return (lo - pad, hi + pad) if lo == hi else (lo, hi)


def resolve_axes(ax):
    """The given Axes, or pyplot's current Axes when ``ax`` is None."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.gca()


def draw_colorbar(mappable, ax, cbar, cbar_kwargs):
    """Adds a colorbar for ``mappable`` as requested by ``cbar``.

    Args:
        mappable: The ScalarMappable (mesh or collection) to describe.
        ax: Axes holding the plot.
        cbar: ``"auto"`` (colorbar beside ``ax``), None (none), or an Axes (the
            colorbar is placed beside that Axes).
        cbar_kwargs: Extra kwargs for ``Figure.colorbar``. Unless they give a
            ``label``, the colour bar is labelled ``"objective"`` (ribsax addition;
            pyribs leaves it unlabelled).
    """
    kwargs = dict(cbar_kwargs or {})
    kwargs.setdefault("label", "objective")
    if isinstance(cbar, Axes):
        cbar.figure.colorbar(mappable, ax=cbar, **kwargs)
    elif isinstance(cbar, str) and cbar == "auto":
        ax.figure.colorbar(mappable, ax=ax, **kwargs)


def heatmap_1d(
    ax,
    *,
    lower,
    upper,
    boundaries,
    cell_objectives,
    cmap,
    aspect,
    vmin,
    vmax,
    cbar,
    cbar_kwargs,
    rasterized,
    pcm_kwargs,
):
    """Draws a 1D archive as one row of cells spanning y in [0, 1].

    Args:
        ax: Axes or None (current Axes).
        lower: Lower bound of the measure (x limit).
        upper: Upper bound of the measure (x limit).
        boundaries: ``cells + 1`` increasing cell edges.
        cell_objectives: ``cells`` objectives, left to right, NaN for empty cells.
        cmap: A Colormap.
        aspect: Aspect ratio (already defaulted).
        vmin: See :func:`colour_range`.
        vmax: See :func:`colour_range`.
        cbar: See :func:`draw_colorbar`.
        cbar_kwargs: See :func:`draw_colorbar`.
        rasterized: Rasterize the mesh.
        pcm_kwargs: Extra kwargs for ``pcolormesh``.

    Returns:
        The Axes.
    """
    ax = resolve_axes(ax)
    ax.set_xlim(lower, upper)
    ax.set_aspect(aspect)
    ax.set_yticks([])
    label_axes(ax, xlabel="measure_0")
    cell_objectives = np.asarray(cell_objectives, dtype=float)
    vmin, vmax = colour_range(vmin, vmax, cell_objectives[~np.isnan(cell_objectives)])
    mesh = ax.pcolormesh(
        np.asarray(boundaries),
        np.array([0.0, 1.0]),
        cell_objectives[None, :],
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        rasterized=rasterized,
        **(pcm_kwargs or {}),
    )
    draw_colorbar(mesh, ax, cbar, cbar_kwargs)
    return ax


def prepare_scatter_2d(archive, df, *, aspect, cbar, cmap, dim_msg):
    """Common start of the point plots of 2D archives (sliding boundaries,
    proximity): validates the arguments, defaults ``aspect`` to ``"auto"``,
    resolves the colormap and reads the elites' measures and objectives.

    Returns:
        ``(aspect, colormap, measures, objective)``.
    """
    check_heatmap_args(aspect, cbar, archive.measure_dim, [2], dim_msg)
    cmap = as_colormap(cmap)
    measures, objective = read_fields(archive, df, ("measures", "objective"))
    return "auto" if aspect is None else aspect, cmap, measures, objective


def scatter_2d(
    ax,
    *,
    measures,
    objective,
    lower,
    upper,
    transpose_measures,
    cmap,
    aspect,
    ms,
    vmin,
    vmax,
    cbar,
    cbar_kwargs,
    rasterized,
):
    """Draws 2D elites as points coloured by objective, inside the given bounds.

    Shared by the plots of archives without fixed cells (sliding boundaries,
    proximity).

    Args:
        ax: Axes or None (current Axes).
        measures: (n, 2) measures.
        objective: (n,) objectives.
        lower: (2,) lower bounds (x, y before transposition).
        upper: (2,) upper bounds.
        transpose_measures: Put the second measure on the x-axis.
        cmap: A Colormap.
        aspect: Aspect ratio (already defaulted).
        ms: Marker size (None: matplotlib's default).
        vmin: See :func:`colour_range`.
        vmax: See :func:`colour_range`.
        cbar: See :func:`draw_colorbar`.
        cbar_kwargs: See :func:`draw_colorbar`.
        rasterized: Rasterize the points.

    Returns:
        ``(ax, PathCollection of the points)``.
    """
    measures = np.asarray(measures, dtype=float).reshape(-1, 2)
    x, y = measures[:, 0], measures[:, 1]
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    labels = ("measure_0", "measure_1")
    if transpose_measures:
        x, y = y, x
        lower, upper = lower[::-1], upper[::-1]
        labels = labels[::-1]
    ax = resolve_axes(ax)
    label_axes(ax, *labels)
    ax.set_xlim(lower[0], upper[0])
    ax.set_ylim(lower[1], upper[1])
    ax.set_aspect(aspect)
    vmin, vmax = colour_range(vmin, vmax, objective)
    points = ax.scatter(
        x, y, s=ms, c=objective, cmap=cmap, vmin=vmin, vmax=vmax, rasterized=rasterized
    )
    draw_colorbar(points, ax, cbar, cbar_kwargs)
    return ax, points


def padded_bounds(measures, measure_dim, pad=0.01):
    """Bounds around the measures, ``pad`` beyond the extremes (±pad when empty).

    Used for archives without bounds (e.g. a ProximityArchive), as pyribs does.

    Returns:
        ``(lower, upper)`` arrays of length ``measure_dim``.
    """
    measures = np.asarray(measures, dtype=float).reshape(-1, measure_dim)
    if len(measures) == 0:
        return np.full(measure_dim, -pad), np.full(measure_dim, pad)
    return measures.min(axis=0) - pad, measures.max(axis=0) + pad
