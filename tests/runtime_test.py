"""ribsax's process-wide runtime choices and host helpers."""
import subprocess
import sys


from ribsax._runtime import configure_cpu_dispatch


def _run(code, env_extra):
    import os  # pylint: disable=import-outside-toplevel
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "RIBSAX_"))}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


PROBE = ("import ribsax, jax; "
         "print(jax.config._read('jax_cpu_enable_async_dispatch'))")


def test_import_turns_async_cpu_dispatch_off():
    assert _run(PROBE, {}) == "False"


def test_opt_out_and_explicit_user_setting_are_respected():
    assert _run(PROBE, {"RIBSAX_CPU_ASYNC_DISPATCH": "1"}) == "True"
    assert _run(PROBE, {"JAX_CPU_ENABLE_ASYNC_DISPATCH": "true"}) == "True"


def test_initialised_backend_is_left_alone():
    code = ("import jax, jax.numpy as jnp; jnp.zeros(1).block_until_ready(); "
            "import ribsax; print(jax.config._read('jax_cpu_enable_async_dispatch'))")
    assert _run(code, {}) == "True"


def test_configure_is_a_noop_once_backend_exists():
    import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
    jnp.zeros(1).block_until_ready()
    assert configure_cpu_dispatch() is False
