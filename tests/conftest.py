"""Test-suite configuration.

The suite runs with JAX 64-bit mode on so that float64 (pyribs' default) can be
compared with the installed ``ribs`` oracle. Behaviour without x64 is tested in
subprocesses (see tests/x64_off_test.py).

The persistent compilation cache that ribsax turns on by default is off here
(``RIBSAX_COMPILATION_CACHE=0``); tests/runtime_test.py tests it in subprocesses.

Compiled executables are dropped after every test module (``jax.clear_caches()``
and the fused loop's cache): one process compiles well over a thousand programs in
the full suite, and with all of them kept alive XLA's CPU compiler crashed
(segmentation fault / abort while compiling the brax ant task late in the run, not
in isolation). Modules compile what they use anyway.
"""

import os

import jax
import pytest

jax.config.update("jax_enable_x64", True)
# The suite counts compilations and must not read kernels compiled by other runs
# (ribsax turns JAX's persistent compilation cache on by default; see
# ribsax.runtime). Subprocesses started by tests inherit this.
os.environ.setdefault("RIBSAX_COMPILATION_CACHE", "0")


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    yield
    from ribsax.schedulers import _loop_runner

    _loop_runner._CACHE.clear()
    jax.clear_caches()
