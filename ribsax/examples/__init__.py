"""Runnable examples (``python -m ribsax.examples.NAME``).

* :mod:`ribsax.examples.sphere_map_elites`: MAP-Elites on the 100-D sphere, writing
  metrics, the archive and a heatmap into a run directory.
"""
