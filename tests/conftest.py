"""Test-suite configuration.

The suite runs with JAX 64-bit mode on so that float64 (pyribs' default) can be
compared with the installed ``ribs`` oracle. Behaviour without x64 is tested in
subprocesses (see tests/x64_off_test.py).

Compiled executables are dropped after every test module (``jax.clear_caches()``
and the fused loop's cache): one process compiles well over a thousand programs in
the full suite, and with all of them kept alive XLA's CPU compiler crashed
(segmentation fault / abort while compiling the brax ant task late in the run, not
in isolation). Modules compile what they use anyway.
"""
import jax
import pytest

jax.config.update("jax_enable_x64", True)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    yield
    # pylint: disable-next = import-outside-toplevel
    from ribsax.schedulers import _loop_runner
    _loop_runner._CACHE.clear()  # pylint: disable = protected-access
    jax.clear_caches()
