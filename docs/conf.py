"""Sphinx configuration of the ribsax documentation site.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (the test suite runs
the same build into a temporary folder, see tests/docs_test.py).

Pages are reStructuredText or MyST Markdown; notebooks are rendered by myst-nb.
Two folders of the source tree are filled at each build from the repository:

* ``tutorials/*.ipynb``: copies of the notebooks in the repository's
  ``tutorials/``. They are rendered **as committed, with their outputs**: the
  outputs and figures of a run in their fast mode (``RIBSAX_TUTORIAL_FAST=1``),
  written by ``python tutorials/execute.py``; the build does not execute them.
  Set ``RIBSAX_DOCS_EXECUTE=1`` to execute them again during the build, in the
  same fast mode; this needs every extra (``pip install -e '.[dev]'``) and takes
  minutes.
* ``benchmarks/*.md``: copies of the repository's ``benchmarks/*.md``, so that the
  benchmarks page can include ``RESULTS.md`` and link the files it names.
"""

import json
import os
import pathlib
import re
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
# The checkout's ribsax wins over an installed one. RIBSAX_DOCS_ROOT lets the test
# suite build a copy of docs/ in a temporary folder.
ROOT = pathlib.Path(os.environ.get("RIBSAX_DOCS_ROOT", HERE.parent)).resolve()
sys.path.insert(0, str(ROOT))

EXECUTE = os.environ.get("RIBSAX_DOCS_EXECUTE", "0").strip().lower() in ("1", "true", "yes", "on")

project = "ribsax"
author = "ribsax developers"
copyright = "ribsax developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "myst_nb",  # Markdown pages (myst-parser) and notebooks.
    "sphinx_copybutton",
]

# Docstrings use the Google/numpy "Args:" / "Returns:" layout.
napoleon_google_docstring = True
napoleon_numpy_docstring = True
napoleon_use_rtype = False
# "Attributes:" sections become :ivar: fields; as attribute directives they would
# duplicate the NamedTuple fields autodoc documents (e.g. ribsax.tasks.brax.Rollout).
napoleon_use_ivar = True

autosummary_generate = True
autodoc_default_options = {
    "members": True,
    # Members that public classes get from private bases (GridArchive.add,
    # Scheduler.run, ...) are part of their API; those of builtins are not.
    "inherited-members": ",".join(
        [
            "object",
            "tuple",
            "dict",
            "int",
            "Enum",
            "IntEnum",
            "Exception",
            "BaseException",
            "Warning",
            "UserWarning",
            "DataFrame",
            "NDFrame",
            "PandasObject",
            "DirNamesMixin",
            "IndexingMixin",
            "OpsMixin",
            "ReprEnum",
            "Module",
            "PyTreeNode",
        ]
    ),
}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
if EXECUTE:
    tags.add("executed")  # noqa: F821  (Sphinx provides `tags` to conf.py)
    # The notebooks' kernels inherit this environment: fast mode, and ipykernel's
    # inline backend (MPLBACKEND unset) to turn figures into images.
    os.environ.setdefault("RIBSAX_TUTORIAL_FAST", "1")
    os.environ.pop("MPLBACKEND", None)
else:
    # Importing ribsax.visualize must not open windows.
    os.environ.setdefault("MPLBACKEND", "Agg")

# Cross-references to names outside ribsax (ribs.*, matplotlib.*, jax.*) are not
# resolved (no intersphinx: the build runs offline), so nitpicky stays off.
nitpicky = False

# Warnings silenced (the build is otherwise warning-free, and -W fails on any other):
# - autosummary.import_cycle: the package docstrings of ribsax.schedulers and
#   ribsax.emitters.operators list their members with fully qualified names inside
#   their own ``.. autosummary::`` blocks; the pages render correctly.
# - myst.header: pages copied from the repository (benchmark notes) may skip a
#   heading level; they render fine.
suppress_warnings = ["autosummary.import_cycle", "myst.header"]
default_role = "any"

# MyST: ::: fences for admonitions, anchors for links to sections of pages.
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# Notebooks: rendered as committed (with the outputs of tutorials/execute.py)
# unless RIBSAX_DOCS_EXECUTE is set.
nb_execution_mode = "force" if EXECUTE else "off"
nb_execution_timeout = 1800
nb_execution_raise_on_error = True
nb_merge_streams = True

html_theme = "furo"
html_title = "ribsax"
exclude_patterns = [
    "_build",
    "jupyter_execute",
    "**.ipynb_checkpoints",
    # Included by the index pages rather than pages of their own.
    "benchmarks/RESULTS.md",
    "tutorials/_readme.md",
]


# ---------------------------------------------------------------------------
# Files copied in from the repository at each build.
# ---------------------------------------------------------------------------
_FAST_MODE_NOTE = (
    "```{note}\n"
    "The outputs on this page come from a run of the notebook in its fast mode "
    "(`RIBSAX_TUTORIAL_FAST=1`): small runs of seconds, so the numbers and figures "
    "show what the code does rather than what a full run reaches. Run it yourself "
    "with Jupyter (the `dev` extra brings a kernel), without that variable for the "
    "full run.\n"
    "```\n"
)


def _copy_tutorials(source: pathlib.Path, target: pathlib.Path):
    """Copies the notebooks; a note after each title says that the outputs
    come from a fast-mode run."""
    target.mkdir(exist_ok=True)
    for old in target.glob("*.ipynb"):
        old.unlink()
    for path in sorted(source.glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        metadata = notebook.setdefault("metadata", {})
        metadata.setdefault("language_info", {"name": "python"})
        # Cell ids (nbformat 4.5) keep nbformat from warning about their absence.
        notebook["nbformat_minor"] = max(notebook.get("nbformat_minor", 0), 5)
        cells = notebook["cells"]
        at = 1 if cells and cells[0]["cell_type"] == "markdown" else 0
        cells.insert(at, {"cell_type": "markdown", "metadata": {}, "source": _FAST_MODE_NOTE})
        for i, cell in enumerate(notebook["cells"]):
            cell.setdefault("id", f"ribsax-docs-{i}")
        (target / path.name).write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    shutil.copyfile(source / "README.md", target / "_readme.md")


# A relative Markdown link: [text](target) whose target has no scheme or anchor-only.
_LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^)\s]+)\)")


def _copy_benchmarks(source: pathlib.Path, target: pathlib.Path):
    """Copies ``benchmarks/*.md`` (and figures). Links to the other copied notes
    stay links; links to anything else of the repository (scripts, data) become
    their text, since the site has no copy of those files."""
    target.mkdir(exist_ok=True)
    for old in target.glob("*.md"):
        if old.name != "index.md":
            old.unlink()
    names = {path.name for path in source.glob("*.md")}

    def relink(match):
        text, href = match.group(1), match.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", href) or href.startswith("#"):
            return match.group(0)
        path, hash_, anchor = href.partition("#")
        if path == "RESULTS.md":  # Included by index.md, not a page of its own.
            return f"[{text}](index.md{hash_}{anchor})"
        if path in names:
            return match.group(0)
        return text

    for path in sorted(source.glob("*.md")):
        text = _LINK.sub(relink, path.read_text(encoding="utf-8"))
        (target / path.name).write_text(text, encoding="utf-8")
    if (source / "figures").is_dir():
        shutil.copytree(source / "figures", target / "figures", dirs_exist_ok=True)


_NAME_LIST = re.compile(r"^(\s*)\w+(, \w+)*,$")
_MULTI_FIELD = re.compile(r"^(\s*)(\w+(?:, \w+)+): (.*)$")


def _split_multi_name_fields(app, what, name, obj, options, lines):
    """Google-style fields that name several parameters or attributes at once
    (``batch_size, iso_sigma,`` / ``line_sigma: As in ...``, possibly over
    several lines) become one field per name with the shared description, which
    napoleon (run after this) renders as separate entries: Sphinx's field lists
    would otherwise read all names but the last as a type."""
    del app, what, name, obj, options
    i = 0
    while i < len(lines):
        match = _NAME_LIST.match(lines[i])
        if match and i + 1 < len(lines):
            following = lines[i + 1]
            indent = match.group(1)
            if following.startswith(indent) and not following[len(indent) :].startswith(" "):
                lines[i : i + 2] = [lines[i] + " " + following.strip()]
                continue
        match = _MULTI_FIELD.match(lines[i])
        if match:
            indent, names, text = match.groups()
            end = i + 1
            while end < len(lines) and lines[end].startswith(indent + " "):
                text += " " + lines[end].strip()
                end += 1
            fields = [f"{indent}{field}: {text}" for field in names.split(", ")]
            lines[i:end] = fields
            i += len(fields)
            continue
        i += 1


def setup(app):
    # Before napoleon (priority 500) turns the sections into fields.
    app.connect("autodoc-process-docstring", _split_multi_name_fields, priority=400)


_copy_tutorials(ROOT / "tutorials", HERE / "tutorials")
_copy_benchmarks(ROOT / "benchmarks", HERE / "benchmarks")
