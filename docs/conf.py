"""Sphinx configuration of the ribsax API reference.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (the test suite runs
the same build into a temporary folder, see tests/docs_test.py).
"""
import os
import sys

# The checkout's ribsax wins over an installed one. RIBSAX_DOCS_ROOT lets the test
# suite build a copy of docs/ in a temporary folder.
sys.path.insert(0, os.environ.get("RIBSAX_DOCS_ROOT",
                                  os.path.abspath(os.path.join(os.path.dirname(
                                      __file__), ".."))))

project = "ribsax"
author = "ribsax developers"
copyright = "ribsax developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
]

# Docstrings use the Google/numpy "Args:" / "Returns:" layout.
napoleon_google_docstring = True
napoleon_numpy_docstring = True
napoleon_use_rtype = False
# "Attributes:" sections become :ivar: fields; as attribute directives they would
# duplicate the NamedTuple fields autodoc documents (e.g. ribsax.tasks.brax.Rollout).
napoleon_use_ivar = True

autosummary_generate = True
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
# Importing ribsax.visualize must not open windows.
os.environ.setdefault("MPLBACKEND", "Agg")

# Cross-references to names outside ribsax (ribs.*, matplotlib.*, jax.*) are not
# resolved (no intersphinx: the build runs offline), so nitpicky stays off.
nitpicky = False

# Warnings silenced (the build is otherwise warning-free, and -W fails on any other):
# - autosummary.import_cycle: the package docstrings of ribsax.schedulers and
#   ribsax.emitters.operators list their members with fully qualified names inside
#   their own ``.. autosummary::`` blocks; the pages render correctly.
suppress_warnings = ["autosummary.import_cycle"]
default_role = "any"

html_theme = "alabaster"
exclude_patterns = ["_build"]
