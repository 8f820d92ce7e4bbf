"""Counting JAX compilations, to test that kernels do not compile again."""

import contextlib

import jax

#: JAX records this event once per lowering of a jitted function for new argument
#: types (every compilation, whether or not a persistent cache then supplies the
#: executable).
_LOWERING_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
_COUNTS = []


def _listener(event, duration, **kwargs):
    del duration
    if event == _LOWERING_EVENT:
        for counter in _COUNTS:
            counter.count += 1
            counter.names.append(kwargs.get("fun_name", ""))


jax.monitoring.register_event_duration_secs_listener(_listener)


class _Counter:
    def __init__(self):
        self.count = 0
        self.names = []  # e.g. "jit(proximity_decide)", one per compilation


@contextlib.contextmanager
def count_compilations():
    """Context yielding an object whose ``count`` is the number of JAX compilations
    started inside the context and whose ``names`` are the compiled functions'."""
    counter = _Counter()
    _COUNTS.append(counter)
    try:
        yield counter
    finally:
        _COUNTS.remove(counter)
