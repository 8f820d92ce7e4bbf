"""Executes every tutorial notebook in fast mode; a cell that raises fails the test.

Each notebook runs in a fresh ipykernel of the test interpreter (a kernelspec
written to a temporary folder, so no kernel needs to be installed beforehand and
the checkout's ``ribsax`` is the one imported), with ``RIBSAX_TUTORIAL_FAST=1``
and ipykernel's inline matplotlib backend (figures become PNG outputs).
"""

import json
import pathlib
import sys

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
TUTORIALS = sorted(
    (ROOT / "tutorials").glob("*.ipynb"), key=lambda path: int(path.name.split("_")[0])
)
KERNEL = "ribsax-tutorial"


def test_tutorials_exist():
    names = [path.name for path in TUTORIALS]
    assert names == [
        "1_quick_start.ipynb",
        "2_migrating_from_pyribs.ipynb",
        "3_cma_mae.ipynb",
        "4_dqd_cma_mega.ipynb",
        "5_many_runs.ipynb",
        "6_arm_repertoire.ipynb",
        "7_brax_locomotion.ipynb",
        "8_lunar_lander_dask.ipynb",
        "9_novelty_search.ipynb",
        "10_skill_discovery.ipynb",
        "11_writing_your_own_emitter.ipynb",
        "12_pga_me_on_brax.ipynb",
    ]
    readme = (ROOT / "tutorials" / "README.md").read_text()
    assert all(name in readme for name in names)


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_committed_without_outputs_and_with_fast_mode(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None
    assert any("RIBSAX_TUTORIAL_FAST" in cell.source for cell in code)


@pytest.fixture
def kernel_env(tmp_path, monkeypatch):
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "ribsax tutorials",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("RIBSAX_TUTORIAL_FAST", "1")
    # ipykernel's inline backend renders the figures as PNG outputs.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_in_fast_mode(path, kernel_env):
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name=KERNEL,
        timeout=300,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # Raises CellExecutionError if a cell raises.
    outputs = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    # Every tutorial shows at least one picture.
    assert any("image/png" in out.get("data", {}) for out in outputs)
