"""The environment of the Python child processes some tests start."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def child_env(**variables) -> dict:
    """``os.environ`` for a child process: the repository first on ``PYTHONPATH``
    (the caller's entries kept after it, e.g. packages installed beside the
    interpreter's), JAX on the CPU platform, then ``variables``."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "JAX_PLATFORMS": "cpu", **variables}


def run_with_host_devices(args, devices, *, xla_flags="", timeout=600):
    """Runs ``python *args`` from the repository root in a child process that sees
    ``devices`` forced host devices (``XLA_FLAGS`` must be set before JAX starts,
    hence the child), plus ``xla_flags``; asserts that it exited with 0 and
    returns the :class:`subprocess.CompletedProcess` (text output captured)."""
    # The forced devices are host devices, whatever accelerator the machine has.
    flags = f"--xla_force_host_platform_device_count={devices} {xla_flags}".strip()
    result = subprocess.run(
        [sys.executable, *map(str, args)],
        env=child_env(XLA_FLAGS=flags),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return result
