"""Helpers for the differential ES tests (ribsax vs the installed pyribs).

ribsax draws its samples with JAX's PRNG and pyribs with NumPy's, so the samples
differ. To compare the *updates*, each iteration asks ribsax for solutions, hands the
very same solutions (and the underlying noise where the ES keeps it) to the pyribs
object, ranks them once, and tells both the same ranking.
"""

import numpy as np


def sphere_ranking(solutions, shift=1.0):
    """Objective ``-||x - shift||^2`` and its descending (stable) argsort."""
    objective = -np.sum((np.asarray(solutions) - shift) ** 2, axis=1)
    return objective, np.flip(np.argsort(objective, kind="stable"))


def mu_parents(it, rng, batch_size):
    """ "mu" selection: half the batch."""
    del it, rng
    return batch_size // 2


def filter_parents(it, rng, batch_size):
    """Filter-like selection: a random count including 0 and the full batch."""
    del it
    return int(rng.integers(0, batch_size + 1))


def drive(rx_es, ribs_es, sync, iterations, parents, seed=0, check=None):
    """Runs both ES on ribsax's samples for ``iterations`` ask/tell rounds.

    Args:
        rx_es: ribsax ES (already reset).
        ribs_es: pyribs ES (already reset at the same point).
        sync: ``sync(rx_es, ribs_es, solutions)`` gives pyribs ribsax's samples (and
            performs whatever pyribs' own ``ask`` does besides sampling).
        iterations: Number of rounds.
        parents: ``parents(it, rng, batch_size) -> num_parents``.
        seed: Seed for the parent counts.
        check: ``check(it, rx_es, ribs_es, ranking_values_sorted)`` after each tell.
    """
    rng = np.random.default_rng(seed)
    for it in range(iterations):
        solutions = rx_es.ask()
        sync(rx_es, ribs_es, solutions)
        objective, indices = sphere_ranking(solutions)
        num_parents = parents(it, rng, rx_es.batch_size)
        rx_es.tell(indices, objective, num_parents)
        ribs_es.tell(indices, objective, num_parents)
        if check is not None:
            check(it, rx_es, ribs_es, objective[indices])


def assert_close(actual, expected, rtol=1e-9, atol=1e-12, what=""):
    """``np.testing.assert_allclose`` with tight defaults and a label."""
    np.testing.assert_allclose(
        np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol, err_msg=what
    )
