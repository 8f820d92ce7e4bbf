"""Tutorial notebooks: committed with current fast-mode outputs, and still run.

The notebooks are committed with the outputs of ``python tutorials/execute.py``
(a run in fast mode, ``RIBSAX_TUTORIAL_FAST=1``), which the documentation site
renders. The first checks read the committed files only: every code cell was run,
in order, in one go, the outputs hold figures and no errors, and the code has not
changed since (the digest ``tutorials/execute.py`` records). The last test executes
every notebook again, with the settings of ``tutorials/execute.py`` (a fresh
ipykernel of the test interpreter, fast mode, the inline matplotlib backend), on a
copy in memory: a cell that raises fails it, and nothing is written back.
"""

import importlib.util
import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TUTORIALS = sorted(
    (ROOT / "tutorials").glob("*.ipynb"), key=lambda path: int(path.name.split("_")[0])
)
_spec = importlib.util.spec_from_file_location(
    "tutorials_execute", ROOT / "tutorials" / "execute.py"
)
execute = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(execute)

#: Upper bounds that keep the outputs small (figures at a modest resolution, no
#: long printouts): per notebook and for all of them.
MAX_NOTEBOOK_BYTES = 400_000
MAX_TOTAL_BYTES = 2_500_000
#: Absolute paths of the machine that ran the notebooks have no place in outputs.
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:home|root|tmp|work|Users|usr|opt|private)/")


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


def _outputs(notebook):
    return [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]


def _refresh(path):
    return f"run `python tutorials/execute.py tutorials/{path.name}` and commit the result"


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_committed_with_current_outputs_and_fast_mode(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code
    assert any("RIBSAX_TUTORIAL_FAST" in cell.source for cell in code)
    # Every code cell ran, top to bottom, in one kernel.
    counts = [cell.execution_count for cell in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"outputs missing or out of order: {_refresh(path)}"
    )
    # The code is the code that produced the outputs (formatting and comments aside).
    recorded = notebook.metadata.get("ribsax", {}).get("code_digest")
    assert recorded == execute.code_digest(notebook), (
        f"code changed since its outputs: {_refresh(path)}"
    )
    outputs = _outputs(notebook)
    assert not [out for out in outputs if out.output_type == "error"]
    assert any("image/png" in out.get("data", {}) for out in outputs)  # At least one figure.
    text = "".join(
        "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
        for out in outputs
    )
    assert not MACHINE_PATH.search(text), MACHINE_PATH.search(text).group(0)
    assert path.stat().st_size < MAX_NOTEBOOK_BYTES, f"{path.name}: outputs too large"


def test_committed_outputs_stay_small():
    assert sum(path.stat().st_size for path in TUTORIALS) < MAX_TOTAL_BYTES


@pytest.fixture
def kernel_env(tmp_path, monkeypatch):
    for name, value in execute.kernel_environment(tmp_path).items():
        monkeypatch.setenv(name, value)
    for name in execute.UNSET:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_in_fast_mode(path, kernel_env):
    notebook = nbformat.read(path, as_version=4)
    execute.execute(notebook, path)  # Raises CellExecutionError if a cell raises.
    outputs = _outputs(notebook)
    assert not [out for out in outputs if out.output_type == "error"]
    # Every tutorial shows at least one picture.
    assert any("image/png" in out.get("data", {}) for out in outputs)
