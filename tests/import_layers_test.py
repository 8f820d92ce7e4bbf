"""The import layering of ``ribsax``: no package imports a higher one, no circles.

Every module under ``ribsax/`` is parsed with :mod:`ast`; every ``import`` and
``from ... import`` of a ribsax module, at the top of the module or inside a
function, is an edge. Each module belongs to a *unit*: the subpackage directly
under ``ribsax`` (``ribsax.emitters.opt._cma_es`` -> ``emitters``), the top-level
module (``ribsax.functional`` -> ``functional``), or ``ribsax`` for the package's
own ``__init__``. :data:`LAYERS` orders the units; the checks are:

* a unit imports only units of lower layers (the foundation layer's private
  helpers may also import one another);
* neither the unit graph nor the module graph has a cycle;
* imports of ribsax modules inside functions exist only where
  :data:`ALLOWED_LOCAL_IMPORTS` names them with a reason (a function-level import
  that hides a circle or an upward import is a layering bug).

The order is described in docs/guides/development.md (Import layers).
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ribsax"

#: Units from the bottom layer to the top one.
LAYERS = (
    # Foundation: private helpers and JAX settings (may import one another).
    (
        "_philox",
        "_utils",
        "_normal",
        "_scatter",
        "_tracing",
        "runtime",
        "_checkpointer",
        "_running_stats",
    ),
    # Independent cores: archives, analytic and brax tasks, sharding and Dask.
    ("archives", "tasks", "distributed"),
    # Discount models (archives' stores); RL machinery (tasks' environments).
    ("discount_models", "rl"),
    ("emitters",),
    ("schedulers",),
    ("functional",),
    # The package itself (re-exports) and the plots (archives, matplotlib).
    ("ribsax", "visualize"),
    ("experiments",),
    # User-facing scripts and ``python -m ribsax``.
    ("examples", "__main__"),
)

#: The layer whose units may import one another (the cycle check still applies).
FOUNDATION = 0

#: ``(importing module, imported module)`` -> why the import is inside a function.
#: Only optional extras and import time justify one.
ALLOWED_LOCAL_IMPORTS = {
    (
        "ribsax.archives._density_archive",
        "ribsax.archives._cnf_density",
    ): "the CNF density imports flax and optax; import ribsax stays light",
    (
        "ribsax.experiments._figures",
        "ribsax.visualize",
    ): "ribsax.visualize imports matplotlib (the visualize extra)",
    (
        "ribsax.experiments._analysis",
        "ribsax.visualize",
    ): "ribsax.visualize imports matplotlib (the visualize extra)",
    (
        "ribsax.emitters",
        "ribsax.emitters._pgame_emitter",
    ): "PGA-ME uses ribsax.rl, which imports flashbax (the rl extra)",
    (
        "ribsax.emitters",
        "ribsax.emitters._cma_mega_td3_emitter",
    ): "CMA-MEGA (TD3, ES) uses ribsax.rl, which imports flashbax (the rl extra)",
    (
        "ribsax.emitters",
        "ribsax.emitters._dcrl_me_emitter",
    ): "DCRL-ME uses ribsax.rl, which imports flashbax (the rl extra)",
    (
        "ribsax.emitters",
        "ribsax.emitters._qdpg_emitter",
    ): "QDPG uses ribsax.rl, which imports flashbax (the rl extra)",
    (
        "ribsax.emitters",
        "ribsax.emitters._pbt_me_emitter",
    ): "ME-PBT uses ribsax.rl, which imports flashbax (the rl extra)",
    (
        "ribsax.experiments._rl_config",
        "ribsax.rl.train",
    ): "ribsax.rl imports flashbax (the rl extra); QD configs load without it",
    (
        "ribsax.experiments._rl_run",
        "ribsax.rl.train",
    ): "ribsax.rl imports flashbax (the rl extra); QD runs go without it",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict:
    """``{module name: path}`` of every module under ``ribsax/``."""
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _resolve(name: str, modules) -> str:
    """The module ``name`` refers to: itself, or its nearest enclosing module
    (``ribsax.rl.train.main`` -> ``ribsax.rl.train``)."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _imports(module: str, path: Path, modules) -> list:
    """``(imported module, line, local)`` for each ribsax import in ``module``
    (``local``: inside a function)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []

    def visit(node, local):
        for child in ast.iter_child_nodes(node):
            inner = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (child.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                # ``from pkg import sub`` imports the submodule ``pkg.sub``.
                names = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in child.names
                ]
            else:
                visit(child, inner)
                continue
            for name in names:
                if name == "ribsax" or name.startswith("ribsax."):
                    target = _resolve(name, modules)
                    if target != module:
                        found.append((target, child.lineno, local))

    visit(tree, False)
    return found


def _graph():
    modules = _modules()
    return modules, {module: _imports(module, path, modules) for module, path in modules.items()}


def _cycles(edges: dict) -> list:
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def connect(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return found


def _where(module, modules, line) -> str:
    return f"{modules[module].relative_to(ROOT)}:{line}"


def test_every_unit_has_a_layer():
    layered = [unit for layer in LAYERS for unit in layer]
    assert len(layered) == len(set(layered)), "a unit is listed twice in LAYERS"
    units = {_unit(module) for module in _modules()}
    assert units <= set(layered), (
        f"add {sorted(units - set(layered))} to LAYERS (and to the import layers in "
        "docs/guides/development.md)"
    )


def test_no_upward_or_sideways_imports():
    level = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}
    modules, graph = _graph()
    bad = []
    for module, imports in graph.items():
        source = _unit(module)
        for target, line, _ in imports:
            dest = _unit(target)
            if dest == source or source not in level or dest not in level:
                continue
            if level[dest] < level[source] or (level[dest] == level[source] == FOUNDATION):
                continue
            bad.append(
                f"{_where(module, modules, line)}: {source} imports {target} "
                f"({dest}, layer {level[dest]} >= {level[source]})"
            )
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_unit_graph_has_no_cycle():
    _, graph = _graph()
    edges = collections.defaultdict(set)
    for module, imports in graph.items():
        for target, _, _ in imports:
            if _unit(target) != _unit(module):
                edges[_unit(module)].add(_unit(target))
    assert not _cycles(edges), f"circular imports between units: {_cycles(edges)}"


def test_module_graph_has_no_cycle():
    _, graph = _graph()
    edges = {module: {target for target, _, _ in imports} for module, imports in graph.items()}
    assert not _cycles(edges), f"circular imports between modules: {_cycles(edges)}"


def test_function_level_imports_are_allowed_ones():
    modules, graph = _graph()
    local = {
        (module, target): line
        for module, imports in graph.items()
        for target, line, is_local in imports
        if is_local
    }
    unexpected = [
        f"{_where(module, modules, line)}: {module} imports {target} inside a function"
        for (module, target), line in sorted(local.items())
        if (module, target) not in ALLOWED_LOCAL_IMPORTS
    ]
    assert not unexpected, (
        "move these imports to the top of their modules (restructure if that makes "
        "a circle), or allow them in ALLOWED_LOCAL_IMPORTS with the optional extra "
        "they guard:\n" + "\n".join(unexpected)
    )
    stale = sorted(set(ALLOWED_LOCAL_IMPORTS) - set(local))
    assert not stale, f"no longer imported inside a function; delete them: {stale}"


@pytest.mark.parametrize(
    "source",
    [
        "def f():\n    from ribsax.experiments import Experiment\n",
        "from ribsax import experiments\n",
    ],
)
def test_the_checks_see_an_upward_import(source, tmp_path):
    """A function-level import of a higher unit is found (and is upward)."""
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    modules = _modules()
    found = _imports("ribsax.rl._probe", path, modules)
    assert [target for target, _, _ in found] == ["ribsax.experiments"]
    assert found[0][2] == source.startswith("def")
    level = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}
    assert level[_unit(found[0][0])] > level["rl"]
