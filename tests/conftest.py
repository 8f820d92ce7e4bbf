"""Test-suite configuration.

The suite runs with JAX 64-bit mode on so that float64 (pyribs' default) can be
compared with the installed ``ribs`` oracle. Behaviour without x64 is tested in
subprocesses (see tests/x64_off_test.py).
"""
import jax

jax.config.update("jax_enable_x64", True)
