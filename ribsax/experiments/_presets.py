"""Settings shared by the shipped configs and the example scripts.

The runner's ``sphere_*`` and ``brax_*`` configs
(:mod:`ribsax.experiments._shipped_configs`) and the examples
:mod:`ribsax.examples.sphere` and :mod:`ribsax.examples.brax_map_elites` read the
same tables from here, so they cannot drift apart; the examples re-export them
(``ribsax.examples.sphere.CONFIG``, ``ribsax.examples.brax_map_elites.DEFAULT_CELLS``).
This module is data only.
"""

from __future__ import annotations

__all__ = ["SPHERE_CONFIG", "BRAX_CELLS"]

_ES = "EvolutionStrategyEmitter"
_GAE = "GradientArborescenceEmitter"
_GOE = "GradientOperatorEmitter"
_CMA_MEGA = {
    "sigma0": 10.0,
    "lr": 1.0,
    "grad_opt": "gradient_ascent",
    "selection_rule": "mu",
    "batch_size": 35,
}

#: pyribs' sphere configurations (``python -m ribsax.examples.sphere NAME``, and the
#: ``sphere_*`` shipped configs): archive kwargs, emitters as (class name, kwargs,
#: count), scheduler (class name, kwargs), whether a plain result archive is used,
#: whether the DQD loop is used, and optional defaults of the objective function and
#: dimension.
SPHERE_CONFIG = {
    "map_elites": {
        "archive": ("GridArchive", {}),
        "emitters": [("GaussianEmitter", {"sigma": 0.5, "batch_size": 540}, 1)],
        "scheduler": ("Scheduler", {}),
    },
    "line_map_elites": {
        "archive": ("GridArchive", {}),
        "emitters": [
            ("IsoLineEmitter", {"iso_sigma": 0.5, "line_sigma": 0.2, "batch_size": 540}, 1)
        ],
        "scheduler": ("Scheduler", {}),
    },
    "cvt_map_elites": {
        "archive": ("CVTArchive", {"nearest_neighbors": "scipy_kd_tree"}),
        "emitters": [("GaussianEmitter", {"sigma": 0.5, "batch_size": 540}, 1)],
        "scheduler": ("Scheduler", {}),
    },
    "line_cvt_map_elites": {
        "archive": ("CVTArchive", {"nearest_neighbors": "scipy_kd_tree"}),
        "emitters": [
            ("IsoLineEmitter", {"iso_sigma": 0.5, "line_sigma": 0.2, "batch_size": 540}, 1)
        ],
        "scheduler": ("Scheduler", {}),
    },
    "me_map_elites": {
        "archive": ("GridArchive", {}),
        "emitters": [
            (_ES, {"sigma0": 0.5, "ranker": "obj", "batch_size": 36}, 15),
            (_ES, {"sigma0": 0.5, "ranker": "2rd", "batch_size": 36}, 15),
            (_ES, {"sigma0": 0.5, "ranker": "2imp", "batch_size": 36}, 15),
            ("IsoLineEmitter", {"iso_sigma": 0.01, "line_sigma": 0.1, "batch_size": 36}, 15),
        ],
        "scheduler": ("BanditScheduler", {"num_active": 15, "reselect": "terminated"}),
    },
    "cma_me_imp": {
        "archive": ("GridArchive", {}),
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 0.5,
                    "ranker": "2imp",
                    "selection_rule": "filter",
                    "restart_rule": "no_improvement",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "cma_me_imp_mu": {
        "archive": ("GridArchive", {}),
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 0.5,
                    "ranker": "2imp",
                    "selection_rule": "mu",
                    "restart_rule": "no_improvement",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "cma_me_basic": {
        "archive": ("GridArchive", {}),
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 0.5,
                    "ranker": "2imp",
                    "selection_rule": "mu",
                    "restart_rule": "basic",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "cma_me_rd": {
        "archive": ("GridArchive", {}),
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 0.5,
                    "ranker": "2rd",
                    "selection_rule": "filter",
                    "restart_rule": "no_improvement",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "cma_me_rd_mu": {
        "archive": ("GridArchive", {}),
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 0.5,
                    "ranker": "2rd",
                    "selection_rule": "mu",
                    "restart_rule": "no_improvement",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "cma_me_opt": {
        "archive": ("GridArchive", {}),
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 0.5,
                    "ranker": "obj",
                    "selection_rule": "mu",
                    "restart_rule": "basic",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "cma_me_mixed": {
        "archive": ("GridArchive", {}),
        "emitters": [
            (_ES, {"sigma0": 0.5, "ranker": "2rd", "batch_size": 36}, 7),
            (_ES, {"sigma0": 0.5, "ranker": "2imp", "batch_size": 36}, 8),
        ],
        "scheduler": ("Scheduler", {}),
    },
    "cma_mae": {
        "archive": ("GridArchive", {"threshold_min": 0, "learning_rate": 0.01}),
        "result_archive": True,
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 0.5,
                    "ranker": "imp",
                    "selection_rule": "mu",
                    "restart_rule": "basic",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "og_map_elites": {
        "dqd": True,
        "archive": ("GridArchive", {}),
        "emitters": [
            (
                _GOE,
                {
                    "sigma": 0.5,
                    "sigma_g": 0.5,
                    "measure_gradients": False,
                    "normalize_grad": False,
                    "batch_size": 540 // 2,
                },
                1,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "omg_mega": {
        "dqd": True,
        "archive": ("GridArchive", {}),
        "emitters": [
            (
                _GOE,
                {
                    "sigma": 0.0,
                    "sigma_g": 10.0,
                    "measure_gradients": True,
                    "normalize_grad": True,
                    "batch_size": 540 // 2,
                },
                1,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "cma_mega": {
        "dqd": True,
        "archive": ("GridArchive", {}),
        "emitters": [(_GAE, dict(_CMA_MEGA), 15)],
        "scheduler": ("Scheduler", {}),
    },
    "cma_mega_adam": {
        "dqd": True,
        "archive": ("GridArchive", {}),
        "emitters": [
            (
                _GAE,
                {
                    "sigma0": 10.0,
                    "lr": 0.002,
                    "grad_opt": "adam",
                    "selection_rule": "mu",
                    "batch_size": 35,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "cma_maega": {
        "dqd": True,
        "archive": ("GridArchive", {"threshold_min": 0, "learning_rate": 0.01}),
        "result_archive": True,
        "emitters": [
            (
                _GAE,
                {
                    "sigma0": 10.0,
                    "lr": 1.0,
                    "ranker": "imp",
                    "grad_opt": "gradient_ascent",
                    "restart_rule": "basic",
                    "batch_size": 35,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "ns_cma": {
        "archive": ("ProximityArchive", {"k_neighbors": 15, "novelty_threshold": 0.037 * 512}),
        "result_archive": True,
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 0.5,
                    "ranker": "nov",
                    "selection_rule": "mu",
                    "restart_rule": "basic",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "nslc": {
        "archive": (
            "ProximityArchive",
            {"k_neighbors": 15, "novelty_threshold": 0.037 * 100, "local_competition": True},
        ),
        "result_archive": True,
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 0.5,
                    "ranker": "nslc",
                    "selection_rule": "filter",
                    "restart_rule": "no_improvement",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "nslc_cma_imp": {
        "archive": (
            "ProximityArchive",
            {"k_neighbors": 15, "novelty_threshold": 0.037 * 100, "local_competition": True},
        ),
        "result_archive": True,
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 0.5,
                    "ranker": "2imp",
                    "selection_rule": "filter",
                    "restart_rule": "no_improvement",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "dds": {
        "archive": (
            "DensityArchive",
            {"buffer_size": 10000, "density_method": "kde", "bandwidth": 25.6},
        ),
        "result_archive": True,
        "emitters_use_result_archive": True,
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 1.5,
                    "ranker": "density",
                    "selection_rule": "mu",
                    "restart_rule": "basic",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "dds_kde_sklearn": {
        "archive": (
            "DensityArchive",
            {
                "buffer_size": 10000,
                "density_method": "kde_sklearn",
                "bandwidth": 25.6,
                "sklearn_kwargs": {"kernel": "gaussian"},
            },
        ),
        "result_archive": True,
        "emitters_use_result_archive": True,
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 1.5,
                    "ranker": "density",
                    "selection_rule": "mu",
                    "restart_rule": "basic",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "dms": {
        "archive": (
            "DiscountArchive",
            {
                "learning_rate": 0.1,
                "threshold_min": 0,
                "init_train_points": 1000,
                "empty_points": 100,
            },
        ),
        "result_archive": True,
        "emitters_use_result_archive": True,
        "discount": True,
        "emitters": [
            (
                _ES,
                {
                    "sigma0": 0.5,
                    "ranker": "imp",
                    "selection_rule": "mu",
                    "restart_rule": "basic",
                    "batch_size": 36,
                },
                15,
            )
        ],
        "scheduler": ("Scheduler", {}),
    },
    "rastrigin_cma_mega": {
        "dqd": True,
        "function": "rastrigin",
        "dim": 1000,
        "archive": ("GridArchive", {}),
        "emitters": [(_GAE, dict(_CMA_MEGA), 15)],
        "scheduler": ("Scheduler", {}),
    },
}

#: Default cells per measure dimension, by number of measures (dqd-rl's archives:
#: hopper 1000, walker / half-cheetah 32 x 32, ant 6^4).
BRAX_CELLS = {1: 1000, 2: 32, 3: 10, 4: 6}
