"""The README's main-job command (``ribsax run ...``) works in a fresh interpreter."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[2]


def test_readme_main_job_command(tmp_path):
    readme = (REPO / "README.md").read_text()
    command = re.search(r"\.venv/bin/ribsax (run [^\n]+)", readme).group(1)
    args = shlex.split(command)
    assert args[:2] == ["run", "sphere_map_elites"]
    # The README's arguments, made tiny; logdir= given last wins.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ribsax",
            *args,
            "--quiet",
            "budget.iterations=3",
            "task.solution_dim=4",
            "archive.dims=[5,5]",
            "emitters.0.batch_size=8",
            f"logdir={tmp_path / 'run'}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    assert (run / "snapshots" / "heatmap_00000003.png").stat().st_size > 0
    assert pd.read_csv(run / "metrics.csv")["evaluations"].tolist() == [8, 16, 24]
