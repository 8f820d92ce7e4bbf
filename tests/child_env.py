"""The environment of the Python child processes some tests start."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def child_env(**variables) -> dict:
    """``os.environ`` for a child process: the repository first on ``PYTHONPATH``
    (the caller's entries kept after it, e.g. packages installed beside the
    interpreter's), JAX on the CPU platform, then ``variables``."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "JAX_PLATFORMS": "cpu", **variables}
