"""Executes tutorial notebooks in their fast mode and writes them back with outputs.

    python tutorials/execute.py                             # all (several minutes)
    python tutorials/execute.py tutorials/3_cma_mae.ipynb   # only the ones named

The notebooks are committed with the outputs of a fast-mode run
(``RIBSAX_TUTORIAL_FAST=1``), which the documentation site renders as they are.
Rerun this script for a notebook after changing its code (or code it calls, where
its printouts or figures change). Each notebook runs top to bottom in a fresh
ipykernel of this interpreter (a kernel spec written to a temporary folder, so no
kernel needs to be installed and this checkout's ``ribsax`` is the one imported),
on the CPU, with ipykernel's inline matplotlib backend at a modest resolution
(figures become small PNG outputs); what belongs to the machine rather than to
the tutorial (library warnings on the standard error) is left out (:func:`tidy`).

The notebook records a digest of its code (``metadata.ribsax.code_digest``), and
``tests/tutorials_test.py`` checks that it matches the code, so code edited
without a rerun fails the test suite; the digest ignores formatting and comments,
so ``ruff format`` does not make it stale. That test also executes the notebooks
with the same settings (:func:`kernel_environment`, :func:`execute`), without
writing them back.
"""

import argparse
import ast
import copy
import hashlib
import json
import os
import pathlib
import re
import sys
import tempfile

import nbformat
from nbclient import NotebookClient

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
KERNEL = "ribsax-tutorial"
#: Resolution of the figures in the outputs (matplotlib's default is 100).
DPI = 72
#: Variables removed from the kernel's environment: ipykernel's inline backend
#: is the one that turns figures into outputs.
UNSET = ("MPLBACKEND",)


def kernel_environment(folder):
    """Writes a kernel spec for this interpreter and a matplotlibrc into
    ``folder``; returns the variables to set in the environment of the process
    that starts the kernel (the kernel inherits them; remove :data:`UNSET`)."""
    folder = pathlib.Path(folder)
    spec_dir = folder / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "ribsax tutorials",
                "language": "python",
            }
        )
    )
    rc_dir = folder / "matplotlib"
    rc_dir.mkdir(exist_ok=True)
    (rc_dir / "matplotlibrc").write_text(f"figure.dpi: {DPI}\n")
    return {
        "JUPYTER_PATH": str(folder / "jupyter"),
        "MATPLOTLIBRC": str(rc_dir),
        "RIBSAX_TUTORIAL_FAST": "1",
        "JAX_PLATFORMS": "cpu",
        "PYTHONPATH": str(ROOT),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }


def execute(notebook, path):
    """Executes ``notebook`` (read from ``path``) in place in a kernel started
    from the current environment; raises ``CellExecutionError`` if a cell
    raises. Outputs already in the notebook are replaced."""
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    client = NotebookClient(
        notebook,
        kernel_name=KERNEL,
        timeout=300,
        record_timing=False,
        resources={"metadata": {"path": str(pathlib.Path(path).parent)}},
    )
    client.execute()
    return notebook


#: Lines of printed output left out of the committed notebooks: brax's probe for
#: its optional warp backend prints them at import on machines without it.
NOISE = re.compile(r"^Failed to import (?:mujoco_)?warp: .*\n?", re.MULTILINE)


def tidy(notebook):
    """Leaves out of ``notebook``'s outputs what belongs to the machine rather
    than to the tutorial: the standard-error stream (third-party libraries'
    warnings, which name the files of the installation that raised them) and
    the :data:`NOISE` lines of the standard output."""
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.outputs:
            if out.output_type == "stream":
                if out.name == "stderr":
                    continue
                out.text = NOISE.sub("", out.text)
                if not out.text:
                    continue
            kept.append(out)
        cell.outputs = kept
    return notebook


def code_digest(notebook):
    """SHA-256 of the notebook's code cells, each normalised by parsing and
    unparsing it (so formatting and comments do not count)."""
    digest = hashlib.sha256()
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        try:
            source = ast.unparse(ast.parse(cell.source))
        except SyntaxError:
            source = cell.source.strip()
        digest.update(source.encode("utf-8") + b"\0")
    return digest.hexdigest()


def _main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "notebooks", nargs="*", type=pathlib.Path, help="notebooks to execute (default: all)"
    )
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(
        HERE.glob("*.ipynb"), key=lambda path: int(path.name.split("_")[0])
    )
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(kernel_environment(tmp))
        for name in UNSET:
            os.environ.pop(name, None)
        for path in paths:
            print(f"executing {path.name}", flush=True)
            notebook = nbformat.read(path, as_version=4)
            metadata = copy.deepcopy(notebook.metadata)
            tidy(execute(notebook, path))
            # The committed kernel spec and language info stay as they were.
            notebook.metadata = metadata
            notebook.metadata["ribsax"] = {"code_digest": code_digest(notebook)}
            nbformat.write(notebook, path)
            print(f"wrote {path.name} ({path.stat().st_size // 1024} KiB)", flush=True)


if __name__ == "__main__":
    _main()
