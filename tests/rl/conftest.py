"""Configuration of the RL tests.

RL test modules build one trained agent per module (a module-scoped fixture whose
compilation dominates the module's time). When this directory is run on its own
with several workers (``pytest tests/rl -n 2``), xdist's default scheduling would
spread a module's tests over workers and compile each fixture once per worker;
grouping tests by module keeps one compilation per fixture.
"""


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    return LoadScopeScheduling(config, log)
