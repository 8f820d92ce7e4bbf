"""Importing ribsax (and ribsax.experiments) loads none of the runner's heavy
optional dependencies; they are imported when used."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_imports_are_lazy():
    code = (
        "import sys, ribsax\n"
        "import ribsax.experiments, ribsax.distributed\n"
        "heavy = ('omegaconf', 'orbax', 'tqdm', 'distributed', 'dask_jobqueue',"
        " 'gymnasium', 'matplotlib')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert proc.stdout.strip() == "[]"
