"""The API reference (Sphinx, docs/) builds without a single warning."""
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_sphinx_html_builds_without_warnings(tmp_path):
    # Build a copy, so autosummary's generated pages stay out of the checkout.
    source = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", source,
                    ignore=shutil.ignore_patterns("_build", "generated"))
    env = dict(os.environ, RIBSAX_DOCS_ROOT=str(ROOT), MPLBACKEND="Agg",
               JAX_PLATFORMS="cpu")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(source), str(tmp_path / "html")],
        capture_output=True, text=True, env=env, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    page = (tmp_path / "html" / "api" / "generated" / "ribsax.visualize.html")
    text = page.read_text()
    for name in ("grid_archive_heatmap", "proximity_archive_plot",
                 "qd_metric_curves", "speed_plot"):
        assert f"ribsax.visualize.{name}" in text
    assert "Returns" in text  # napoleon turned the docstring sections into fields.
    archives = (tmp_path / "html" / "api" / "generated" / "ribsax.archives.html")
    assert "ribsax.archives.ProximityArchive" in archives.read_text()
    # The emitter protocol is documented with the emitters.
    emitters = (tmp_path / "html" / "api" / "generated" / "ribsax.emitters.html")
    text = emitters.read_text()
    for name in ("EmitterKernel", "EmitterKernel.ask_dqd", "EmitterFeedback",
                 "EmitterFeedback.ask_info", "JaxEmitter", "JaxEmitter.kernel_state",
                 "MEESEmitter", "MEESKernel", "MEESKernel.novelty"):
        assert f'id="ribsax.emitters.{name}"' in text, name
    tutorials = (tmp_path / "html" / "tutorials.html").read_text()
    assert "11_writing_your_own_emitter.ipynb" in tutorials
