"""The documentation site (Sphinx, docs/) builds without a single warning, renders
every tutorial notebook with its committed outputs and figures, documents every
public name, and its guides' links into the API reference resolve; the README's
links resolve and its speed figures are those of benchmarks/RESULTS.md."""

import importlib
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: Public modules whose ``__all__`` the API reference must cover. Subpackages and
#: public submodules are found by :func:`_public_modules`; this is the floor.
EXPECTED_MODULES = {
    "ribsax",
    "ribsax.archives",
    "ribsax.emitters",
    "ribsax.emitters.opt",
    "ribsax.emitters.operators",
    "ribsax.schedulers",
    "ribsax.functional",
    "ribsax.tasks",
    "ribsax.tasks.brax",
    "ribsax.rl",
    "ribsax.experiments",
    "ribsax.visualize",
    "ribsax.distributed",
    "ribsax.discount_models",
    "ribsax.runtime",
}


def _build(tmp):
    """Builds the site from a copy of docs/ (so that generated pages stay out of
    the checkout); returns ``(html folder, build result)``."""
    source = tmp / "docs"
    shutil.copytree(
        ROOT / "docs",
        source,
        ignore=shutil.ignore_patterns("_build", "generated", "jupyter_execute", "*.ipynb"),
    )
    env = dict(os.environ, RIBSAX_DOCS_ROOT=str(ROOT), MPLBACKEND="Agg", JAX_PLATFORMS="cpu")
    env.pop("RIBSAX_DOCS_EXECUTE", None)  # Render the notebooks as committed.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            "-d",
            str(tmp / "doctrees"),
            str(source),
            str(tmp / "html"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    return tmp / "html", result


def test_site_builds_and_covers_tutorials_api_and_benchmarks(tmp_path):
    # One build for all checks: under pytest-xdist, a fixture shared by several
    # tests would be built once per worker.
    html, result = _build(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    _check_tutorials(html)
    _check_guide_links(html)
    _check_public_names(html)
    _check_api_pages(html)
    _check_benchmarks(html)


def _check_tutorials(html):
    """Every notebook has a page, listed in the tutorials index, with its
    committed outputs: as many images as the notebook has figures."""
    notebooks = sorted((ROOT / "tutorials").glob("*.ipynb"))
    assert notebooks
    index = (html / "tutorials" / "index.html").read_text()
    for path in notebooks:
        page = html / "tutorials" / f"{path.stem}.html"
        assert page.is_file(), f"{path.name} has no page"
        assert f'href="{path.stem}.html"' in index, f"{path.name} not in the index"
        text = page.read_text()
        assert "fast mode" in text  # The page says where its outputs come from.
        assert 'class="cell_input' in text  # Code cells are rendered...
        assert 'class="cell_output' in text  # ... with their outputs,
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        figures = sum(
            "image/png" in out.get("data", {}) for cell in cells for out in cell.get("outputs", [])
        )
        assert figures, f"{path.name} has no figure"
        assert text.count("<img") >= figures, f"{path.name}: figures not on its page"


def _check_guide_links(html):
    """Every reference to a Python object on the pages outside the API reference
    (guides, getting started, the home page) resolves: Sphinx renders an
    unresolved one as code without a link, and does not warn (nitpicky is off)."""
    pages = [html / "index.html", html / "getting_started.html"]
    pages += sorted((html / "guides").glob("*.html"))
    linked = 0
    for page in pages:
        text = page.read_text()
        refs = re.findall(r'(<a [^>]*>)?<code class="xref py[^"]*"[^>]*>(.*?)</code>', text)
        unresolved = [re.sub(r"<[^>]+>", "", code) for anchor, code in refs if not anchor]
        assert not unresolved, f"{page.name}: unresolved references {unresolved}"
        linked += len(refs)
    assert linked > 100


def _public_modules():
    """Names of ribsax's public modules that declare ``__all__`` (no private
    component; the user-facing scripts of ``ribsax.examples`` and the command
    line are left out)."""
    names = set()
    for path in (ROOT / "ribsax").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts) or "examples" in parts:
            continue
        if "__all__" in path.read_text(encoding="utf-8"):
            names.add(".".join(parts))
    return names - {"ribsax.experiments.cli", "ribsax.rl.train"}


def _documented_ids(html):
    ids = set()
    for page in (html / "api").rglob("*.html"):
        ids.update(re.findall(r'id="(ribsax\.[\w.]+)"', page.read_text()))
    return ids


def _resolve(dotted):
    """The object named ``dotted`` (module path, then attributes), or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _check_public_names(html):
    """Every name in the ``__all__`` of every public module is documented."""
    modules = _public_modules()
    assert EXPECTED_MODULES <= modules, EXPECTED_MODULES - modules
    generated = html / "api" / "generated"
    ids = _documented_ids(html)
    by_name = {}
    for dotted in ids:
        by_name.setdefault(dotted.rsplit(".", 1)[1], []).append(dotted)
    missing = []
    for module_name in sorted(modules):
        module = importlib.import_module(module_name)
        if module_name != "ribsax":
            assert (generated / f"{module_name}.html").is_file(), module_name
        for name in module.__all__:
            obj = getattr(module, name)
            if f"{module_name}.{name}" in ids:
                continue
            if hasattr(obj, "__file__"):  # A module: it has a page of its own.
                if (generated / f"{obj.__name__}.html").is_file():
                    continue
            # A re-export documented where it is defined (ribsax.run_trials is
            # ribsax.schedulers.run_trials).
            if any(_resolve(other) is obj for other in by_name.get(name, ())):
                continue
            missing.append(f"{module_name}.{name}")
    assert not missing, f"not in the API reference: {missing}"


def _check_api_pages(html):
    """Docstring sections and the emitter protocol are rendered; guides link
    into the API reference."""
    generated = html / "api" / "generated"
    text = (generated / "ribsax.visualize.html").read_text()
    assert "Returns" in text  # napoleon turned the docstring sections into fields.
    # The emitter protocol is documented with its methods.
    text = (generated / "ribsax.emitters.html").read_text()
    for name in (
        "EmitterKernel.ask_dqd",
        "EmitterFeedback.ask_info",
        "JaxEmitter.kernel_state",
        "MEESKernel.novelty",
    ):
        assert f'id="ribsax.emitters.{name}"' in text, name
    # Members public classes inherit from private bases are documented on them.
    for page, name in (
        ("ribsax.schedulers", "ribsax.schedulers.Scheduler.run"),
        ("ribsax.archives", "ribsax.archives.GridArchive.add"),
        ("ribsax.archives", "ribsax.archives.CVTArchive.data"),
    ):
        assert f'id="{name}"' in (generated / f"{page}.html").read_text(), name
    # The guides link into the API reference.
    guide = (html / "guides" / "writing_an_emitter.html").read_text()
    assert "api/generated/ribsax.emitters.html#ribsax.emitters.EmitterKernel" in guide


def _check_benchmarks(html):
    """The benchmarks page carries benchmarks/RESULTS.md."""
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    headings = re.findall(r"^#{1,3} (.+)$", results, re.MULTILINE)
    page = (html / "benchmarks" / "index.html").read_text()
    # Headings as rendered: inline code and emphasis become markup; compare words.
    words = re.findall(r"\w+", re.sub(r"<[^>]+>", " ", page))
    text = " ".join(words)
    for heading in headings[:3]:
        assert " ".join(re.findall(r"\w+", heading)) in text, heading


def _slug(heading):
    """GitHub's anchor of a Markdown heading."""
    heading = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def test_readme_links_resolve():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    relative = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert any(link.startswith("docs/") for link in relative)
    for link in relative:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.exists(), link
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(), re.MULTILINE)
            assert anchor in {_slug(h) for h in headings}, link


def _table(text, after):
    """The cells of the first Markdown table that follows ``after`` in ``text``."""
    lines = text[text.index(after) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[0], rows[2:]  # Header, then the rows after the |---| line.


def test_readme_speed_figures_are_those_of_the_results():
    """The README's speed summary states the ranges of RESULTS.md's current
    tables: the 18 sphere configurations on the CPU and the whole runs against
    QDax on the H200."""
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    readme = " ".join((ROOT / "README.md").read_text().split())
    header, rows = _table(results, "**CPU, all 18 grid and CVT configurations")
    ask = [float(row[header.index("ask/tell vs pyribs")].rstrip("x")) for row in rows]
    fused = [float(row[header.index("fused vs pyribs")].rstrip("x")) for row in rows]
    geometric_mean = math.exp(sum(map(math.log, ask)) / len(ask))
    header, rows = _table(results, "**GPU, batch 65,536.**")
    qdax = [float(row[header.index("ratio")].rstrip("x")) for row in rows]
    expected = [
        f"{len(ask)} sphere configurations at {min(ask):.2f}–{max(ask):.2f}×",
        f"(geometric mean {geometric_mean:.2f}×)",
        f"the fused loop at {min(fused):.2f}–{max(fused):.2f}×",
        f"ran {min(qdax):.2f}–{max(qdax):.2f}× as fast as QDax",
    ]
    assert [phrase for phrase in expected if phrase not in readme] == []
