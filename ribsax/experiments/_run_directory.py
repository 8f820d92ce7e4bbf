"""RunDirectory: the files of one experiment run."""

from __future__ import annotations

import datetime
import json
import logging
import os
import platform
from pathlib import Path

import pandas as pd

import ribsax
from ribsax.experiments._figures import write_heatmap

__all__ = ["RunDirectory", "METRIC_COLUMNS", "default_run_name"]

#: Columns of ``metrics.csv`` / ``metrics.json``, in order.
METRIC_COLUMNS = (
    "iteration",
    "evaluations",
    "qd_score",
    "norm_qd_score",
    "coverage",
    "obj_max",
    "obj_mean",
    "num_elites",
    "elapsed_s",
)

LOGGER_NAME = "ribsax.experiments"


def default_run_name(name: str, seed: int, now=None) -> str:
    """``<YYYY-mm-dd_HH-MM-SS>_<name>_seed<seed>`` for ``now`` (default: local time)."""
    now = now or datetime.datetime.now()
    return f"{now:%Y-%m-%d_%H-%M-%S}_{name}_seed{seed}"


def _write_atomic(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` through a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _versions() -> dict:
    """Versions of the libraries a run depends on, and the JAX devices."""
    import importlib.metadata

    import jax

    versions = {"python": platform.python_version()}
    for dist in (
        "ribsax",
        "jax",
        "jaxlib",
        "numpy",
        "omegaconf",
        "orbax-checkpoint",
        "pandas",
        "pyarrow",
        "tqdm",
        "matplotlib",
        "brax",
        "distributed",
    ):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    versions["ribsax"] = ribsax.__version__
    return {
        "versions": versions,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "host": platform.node(),
    }


class RunDirectory:
    """The directory of one run and the files in it.

    Layout::

        config.yaml          resolved config
        run.json             seed, library versions, JAX backend and devices
        run.log              log of the run (appended to on resume)
        metrics.csv/.json    one row per iteration (:data:`METRIC_COLUMNS`)
        history.parquet      every insertion into the result archive (add status
                             above 0): iteration, cell index, status, objective,
                             measures
        snapshots/archive_<iteration>.parquet and heatmap_<iteration>.png
        plots/metrics.png    QD score, coverage and best objective at the end
        checkpoints/<iteration>/
        checkpoints_unreadable/<iteration>/   checkpoints that a resume could not
                             read, moved aside as they were (only after one)

    Parquet files are written through pyarrow (``ArchiveDataFrame.to_parquet``);
    figures need matplotlib and are skipped with a logged notice without it.

    Args:
        path: The directory (created if missing).
        qd: Create the sub-directories of a QD run (an RL run of
            :func:`~ribsax.experiments.run_rl_config` writes learning curves
            instead).
    """

    def __init__(self, path, *, qd=True):
        self.path = Path(path)
        for sub in ("", *(("snapshots", "plots", "checkpoints") if qd else ())):
            (self.path / sub).mkdir(parents=True, exist_ok=True)
        self.logger = logging.getLogger(f"{LOGGER_NAME}.{id(self)}")
        self.logger.setLevel(logging.INFO)
        self.logger.propagate = False
        self._handler = logging.FileHandler(self.path / "run.log", encoding="utf-8")
        self._handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        self.logger.addHandler(self._handler)

    @property
    def checkpoint_dir(self) -> Path:
        """Directory of the checkpoints."""
        return self.path / "checkpoints"

    def close(self) -> None:
        """Closes the log file."""
        self.logger.removeHandler(self._handler)
        self._handler.close()

    def write_config(self, config_yaml: str, seed: int) -> None:
        """Writes ``config.yaml`` and ``run.json`` (seed, versions, devices)."""
        _write_atomic(self.path / "config.yaml", config_yaml)
        _write_atomic(
            self.path / "run.json", json.dumps({"seed": seed, **_versions()}, indent=2) + "\n"
        )

    def write_metrics(self, rows) -> None:
        """Writes ``metrics.csv`` and ``metrics.json`` (``rows``: dicts keyed by
        :data:`METRIC_COLUMNS`)."""
        table = pd.DataFrame(list(rows), columns=list(METRIC_COLUMNS))
        _write_atomic(self.path / "metrics.csv", table.to_csv(index=False))
        rows_json = table.to_json(orient="records", double_precision=15)
        _write_atomic(
            self.path / "metrics.json",
            f'{{"columns": {json.dumps(list(METRIC_COLUMNS))}, "rows": {rows_json}}}\n',
        )

    def write_history(self, history: pd.DataFrame) -> None:
        """Writes ``history.parquet`` (insertions into the result archive)."""
        tmp = self.path / ".history.parquet.tmp"
        history.to_parquet(tmp, index=False)
        os.replace(tmp, self.path / "history.parquet")

    def write_snapshot(self, archive, iteration: int, heatmap: bool) -> None:
        """Writes ``snapshots/archive_<iteration>.parquet`` (and the heatmap of 1-D
        and 2-D archives when ``heatmap``)."""
        stem = f"{iteration:08d}"
        archive.data(return_type="pandas").to_parquet(
            self.path / "snapshots" / f"archive_{stem}.parquet", index=False
        )
        if heatmap and archive.measure_dim <= 2:
            self.write_heatmap(
                archive, self.path / "snapshots" / f"heatmap_{stem}.png", f"iteration {iteration}"
            )

    def write_heatmap(self, archive, path, title) -> bool:
        """Heatmap of ``archive`` at ``path``; False (logged) without matplotlib."""
        if not _has_matplotlib():
            self.logger.info("matplotlib is not installed; %s not written", path)
            return False
        return write_heatmap(archive, Path(path), title)

    def write_metric_plots(self, rows) -> bool:
        """``plots/metrics.png``: QD score, coverage and best objective against
        evaluations; False (logged) without matplotlib."""
        if not _has_matplotlib():
            self.logger.info("matplotlib is not installed; plots/metrics.png not written")
            return False
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        table = pd.DataFrame(list(rows), columns=list(METRIC_COLUMNS))
        fig = Figure(figsize=(13, 3.8))
        FigureCanvasAgg(fig)
        for i, (column, label) in enumerate(
            (("qd_score", "QD score"), ("coverage", "coverage"), ("obj_max", "best objective"))
        ):
            ax = fig.add_subplot(1, 3, i + 1)
            ax.plot(table["evaluations"], table[column])
            ax.set_xlabel("evaluations")
            ax.set_ylabel(label)
        fig.tight_layout()
        fig.savefig(self.path / "plots" / "metrics.png", dpi=100)
        return True


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401  (imported to see whether it is installed)
    except ImportError:
        return False
    return True
