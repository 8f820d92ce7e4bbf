"""Schedulers: run the ask/tell loop over an archive and its emitters.

.. autosummary::

    ribsax.schedulers.Scheduler
    ribsax.schedulers.BanditScheduler
"""
from ribsax.schedulers._bandit_scheduler import BanditScheduler
from ribsax.schedulers._scheduler import Scheduler

__all__ = [
    "Scheduler",
    "BanditScheduler",
]
