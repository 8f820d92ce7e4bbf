"""Runnable examples (``python -m ribsax.examples.NAME``).

* :mod:`ribsax.examples.sphere_map_elites`: MAP-Elites on the 100-D sphere, writing
  metrics, the archive and a heatmap into a run directory.
* :mod:`ribsax.examples.sphere`: pyribs' sphere configurations (``map_elites``,
  ``cma_me_imp``, ``cma_mae``, ...) through the Scheduler ask/tell loop.
"""
