"""Schedulers: run the ask/tell loop over an archive and its emitters.

.. autosummary::

    ribsax.schedulers.Scheduler
    ribsax.schedulers.BanditScheduler
    ribsax.schedulers.BayesianOptimizationScheduler
    ribsax.schedulers.RunResult
    ribsax.schedulers.run_trials
    ribsax.schedulers.TrialsResult
"""

from ribsax.schedulers._bandit_scheduler import BanditScheduler
from ribsax.schedulers._bayesian_optimization_scheduler import (
    BayesianOptimizationScheduler,
)
from ribsax.schedulers._run_result import RunResult
from ribsax.schedulers._run_trials import run_trials
from ribsax.schedulers._scheduler import Scheduler
from ribsax.schedulers._trials_result import TrialsResult

__all__ = [
    "Scheduler",
    "BanditScheduler",
    "BayesianOptimizationScheduler",
    "RunResult",
    "run_trials",
    "TrialsResult",
]
