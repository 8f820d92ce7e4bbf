"""ribsax.runtime: import changes no JAX configuration; the compilation cache is an
explicit, documented switch."""

import json
import os
import subprocess
import sys

import pytest

import ribsax


def _run(code, env_extra=None, cwd=None):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JAX_", "RIBSAX_", "XDG_CACHE_HOME"))
    }
    env.update(env_extra or {})
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        timeout=300,
    )
    return proc.stdout.strip().splitlines()[-1]


_CONFIG = "{k: repr(v) for k, v in jax.config.values.items()}"


def test_import_leaves_jax_config_untouched():
    code = (
        "import json, jax; before = " + _CONFIG + "; import ribsax, ribsax.archives, "
        "ribsax.emitters, ribsax.schedulers, ribsax.functional, ribsax.tasks; "
        "after = " + _CONFIG + "; "
        "print(json.dumps({k: [before.get(k), after[k]] for k in after "
        "if before.get(k) != after[k]}))"
    )
    assert json.loads(_run(code)) == {}


def test_import_loads_no_optional_heavy_modules():
    """``import ribsax`` (and its main subpackages) leaves flax, optax and
    scipy.spatial unloaded: they are imported where they are used (the CNF
    density, the KD-tree searches), which keeps a QD script's start short."""
    code = (
        "import sys, json; import ribsax, ribsax.archives, ribsax.emitters, "
        "ribsax.schedulers, ribsax.functional; print(json.dumps(sorted(m for m in "
        "('flax', 'optax', 'scipy.spatial') if m in sys.modules)))"
    )
    assert json.loads(_run(code)) == []


_ARCHIVE = (
    "from ribsax.archives import GridArchive; import numpy as np; "
    "a = GridArchive(solution_dim=3, dims=[4], ranges=[(0, 1)]); "
    "a.add(np.zeros((2, 3)), np.ones(2), np.full((2, 1), 0.5)); "
)


def test_first_archive_turns_the_compilation_cache_on(tmp_path):
    code = "import jax; " + _ARCHIVE + "print(jax.config.jax_compilation_cache_dir)"
    folder = tmp_path / "cache"
    assert _run(code, {"RIBSAX_CACHE_DIR": str(folder)}) == str(folder)
    assert any(folder.iterdir())  # The add kernel was written there.
    xdg = tmp_path / "xdg"
    assert _run(code, {"XDG_CACHE_HOME": str(xdg)}) == str(xdg / "ribsax" / "jax")


def test_compilation_cache_opt_out_and_user_choice_are_respected(tmp_path):
    code = "import jax; " + _ARCHIVE + "print(repr(jax.config.jax_compilation_cache_dir))"
    assert (
        _run(code, {"RIBSAX_COMPILATION_CACHE": "0", "RIBSAX_CACHE_DIR": str(tmp_path / "unused")})
        == "None"
    )
    assert not (tmp_path / "unused").exists()
    mine = str(tmp_path / "mine")
    assert _run(code, {"JAX_COMPILATION_CACHE_DIR": mine}) == repr(mine)


def test_second_process_loads_kernels_from_the_cache(tmp_path):
    """The second run of the same configuration compiles nothing itself."""
    code = (
        "import jax, json; hits = []; jax.monitoring.register_event_listener("
        "lambda e, **k: hits.append(e)); "
        + _ARCHIVE
        + "print(json.dumps([hits.count('/jax/compilation_cache/cache_hits'), "
        "hits.count('/jax/compilation_cache/cache_misses')]))"
    )
    env = {"RIBSAX_CACHE_DIR": str(tmp_path)}
    first = json.loads(_run(code, env))
    second = json.loads(_run(code, env))
    assert first[0] == 0 and first[1] >= 1
    assert second[0] >= 1 and second[1] == 0


def test_enable_compilation_cache_rejects_negative_time():
    with pytest.raises(ValueError, match="min_compile_time_secs"):
        ribsax.enable_compilation_cache(min_compile_time_secs=-1)
