"""Tests for GradientOperatorEmitter (OG-MAP-Elites, OMG-MEGA), with differential
checks against pyribs."""

import jax.numpy as jnp
import numpy as np
import pytest
import ribs.emitters

from ribsax.archives import GridArchive
from ribsax.emitters import GradientOperatorEmitter
from tests.emitters.emitter_helpers import (
    assert_same_error,
    emitter_pair,
    fill,
    grid_pair,
    run_object_dqd,
    run_pure_dqd,
)

DIM = 4
BATCH = 6


def _both(kwargs, solution_dim=DIM, **archive_kwargs):
    return emitter_pair(
        "GradientOperatorEmitter",
        kwargs,
        {"sigma": 0.1, "sigma_g": 0.5, "batch_size": BATCH},
        solution_dim=solution_dim,
        **archive_kwargs,
    )


def _info(n):
    return {"status": np.zeros(n, np.int32), "value": np.zeros(n)}


def _jacobian(n=BATCH, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 3, DIM))


def _tell_dqd(emitter, sol, jacobian):
    emitter.tell_dqd(sol, np.zeros(len(sol)), np.zeros((len(sol), 2)), jacobian, _info(len(sol)))


# ---------------------------------------------------------------- construction
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"x0": np.zeros(DIM), "initial_solutions": np.zeros((2, DIM))},
        {"x0": np.zeros(DIM + 1)},
        {"initial_solutions": np.zeros((2, DIM + 1))},
        {"x0": np.zeros(DIM), "bounds": [(0, 1)] * (DIM - 1)},
        {"x0": np.zeros(DIM), "bounds": [(0, 1)] * DIM, "lower_bounds": np.zeros(DIM)},
    ],
    ids=["neither", "both", "x0_shape", "initial_shape", "bounds_len", "bounds_both"],
)
def test_validation_errors_match_ribs(kwargs):
    assert_same_error(*_both(kwargs))


def test_properties_match_ribs():
    make_ribs, make = _both({"x0": np.ones(DIM), "sigma": [0.1, 0.2, 0.3, 0.4], "epsilon": 1e-4})
    theirs, ours = make_ribs(), make()
    np.testing.assert_array_equal(ours.x0, theirs.x0)
    np.testing.assert_array_equal(ours.sigma, theirs.sigma)
    assert ours.sigma.dtype == theirs.sigma.dtype
    assert ours.initial_solutions is theirs.initial_solutions is None
    assert ours.batch_size == theirs.batch_size == BATCH
    assert ours.batch_size_dqd == theirs.batch_size_dqd == BATCH
    assert ours.epsilon == theirs.epsilon == 1e-4


def test_empty_archive_with_initial_solutions_matches_ribs():
    init = np.random.default_rng(0).uniform(-2, 2, size=(3, DIM))
    make_ribs, make = _both({"initial_solutions": init, "bounds": [(-1, 1)] * DIM})
    theirs, ours = make_ribs(), make()
    dqd_t, dqd_o = theirs.ask_dqd(), ours.ask_dqd()
    assert dqd_o.shape == dqd_t.shape == (0, DIM)
    _tell_dqd(theirs, dqd_t, np.zeros((0, 3, DIM)))
    _tell_dqd(ours, dqd_o, np.zeros((0, 3, DIM)))
    # ask() returns the initial solutions unclipped, as pyribs does.
    np.testing.assert_array_equal(ours.ask(), theirs.ask())
    np.testing.assert_array_equal(ours.ask(), init)


def test_ask_before_tell_dqd_matches_ribs():
    make_ribs, make = _both({"x0": np.zeros(DIM)})
    assert_same_error(lambda: make_ribs().ask(), lambda: make().ask())


@pytest.mark.parametrize(
    "jacobian",
    [
        np.zeros((BATCH, 2, DIM)),
        np.zeros((BATCH, 3, DIM + 1)),
        np.full((BATCH, 3, DIM), np.inf),
    ],
    ids=["measure_rows", "solution_dim", "inf"],
)
def test_tell_dqd_jacobian_errors_match_ribs(jacobian):
    make_ribs, make = _both({"x0": np.zeros(DIM)})
    sol = np.zeros((BATCH, DIM))
    assert_same_error(
        lambda: _tell_dqd(make_ribs(), sol, jacobian), lambda: _tell_dqd(make(), sol, jacobian)
    )


def test_tell_dqd_rejects_other_lengths():
    emitter = _both({"x0": np.zeros(DIM)})[1]()
    with pytest.raises(ValueError, match="expects the jacobian of the 6 solutions"):
        _tell_dqd(emitter, np.zeros((2, DIM)), _jacobian(2))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sigma": -1.0},
        {"sigma": 0.1, "operator_type": "iso_line_dd", "line_sigma": -1.0},
    ],
    ids=["sigma", "line_sigma"],
)
def test_negative_scales_raise_like_ribs(kwargs):
    ribs_archive, archive = grid_pair(solution_dim=DIM)
    fill(ribs_archive)
    fill(archive)
    make_ribs = lambda: ribs.emitters.GradientOperatorEmitter(  # noqa: E731
        ribs_archive, x0=np.zeros(DIM), sigma_g=0.5, batch_size=BATCH, **kwargs
    ).ask_dqd()
    make = lambda: GradientOperatorEmitter(  # noqa: E731
        archive, x0=np.zeros(DIM), sigma_g=0.5, batch_size=BATCH, **kwargs
    ).ask_dqd()
    assert_same_error(make_ribs, make)


def test_iso_line_dd_on_empty_archive_raises_like_ribs():
    make_ribs, make = _both({"x0": np.zeros(DIM), "operator_type": "iso_line_dd"})
    assert_same_error(lambda: make_ribs().ask_dqd(), lambda: make().ask_dqd())


# ---------------------------------------------------------------- deterministic paths
@pytest.mark.parametrize("normalize_grad", [False, True])
def test_og_map_elites_steps_match_ribs(normalize_grad):
    """sigma = 0 with an empty archive makes both libraries deterministic:
    ask_dqd gives x0 clipped to the bounds, ask gives parents + sigma_g * grad f."""
    x0 = np.array([2.0, -0.5, 0.3, -3.0])
    make_ribs, make = _both(
        {
            "x0": x0,
            "sigma": 0.0,
            "sigma_g": 0.7,
            "normalize_grad": normalize_grad,
            "epsilon": 1e-3,
            "bounds": [(-1, 1)] * DIM,
        }
    )
    theirs, ours = make_ribs(), make()
    dqd_t, dqd_o = theirs.ask_dqd(), ours.ask_dqd()
    np.testing.assert_array_equal(dqd_o, dqd_t)
    np.testing.assert_array_equal(dqd_o, np.tile(np.clip(x0, -1, 1), (BATCH, 1)))
    jacobian = _jacobian(seed=3) * 4
    _tell_dqd(theirs, dqd_t, jacobian.copy())
    _tell_dqd(ours, dqd_o, jacobian.copy())
    sols_o = ours.ask()
    np.testing.assert_allclose(sols_o, theirs.ask(), rtol=1e-14, atol=1e-15)
    assert np.abs(sols_o).max() > 1  # ask() does not clip.


def test_omg_mega_coefficients():
    """With measure gradients the offsets lie in the span of each parent's
    gradients, with a non-negative objective coefficient of scale sigma_g."""
    _, archive = grid_pair(solution_dim=DIM)
    emitter = GradientOperatorEmitter(
        archive,
        x0=np.zeros(DIM),
        sigma=0.0,
        sigma_g=2.0,
        measure_gradients=True,
        normalize_grad=True,
        batch_size=400,
        seed=1,
    )
    parents = emitter.ask_dqd()
    jacobian = np.random.default_rng(0).normal(size=(400, 3, DIM))
    _tell_dqd(emitter, parents, jacobian)
    sols = emitter.ask()
    normed = jacobian / (np.linalg.norm(jacobian, axis=2, keepdims=True) + 1e-8)
    coefficients = np.stack(
        [np.linalg.lstsq(normed[i].T, sols[i] - parents[i], rcond=None)[0] for i in range(400)]
    )
    residual = sols - parents - np.einsum("bj,bjd->bd", coefficients, normed)
    assert np.abs(residual).max() < 1e-10
    assert np.all(coefficients[:, 0] >= 0)
    assert np.std(coefficients[:, 1:]) == pytest.approx(2.0, rel=0.1)
    assert np.mean(coefficients[:, 0]) == pytest.approx(2.0 * np.sqrt(2 / np.pi), rel=0.1)


def test_parents_come_from_the_archive_and_are_clipped():
    _, archive = grid_pair(solution_dim=DIM)
    fill(archive, n=15)
    elites = archive.data("solution")
    emitter = GradientOperatorEmitter(
        archive,
        x0=np.zeros(DIM),
        sigma=0.0,
        sigma_g=1.0,
        batch_size=50,
        seed=0,
        operator_type="iso_line_dd",
        line_sigma=0.0,
        bounds=[(-0.5, 0.5)] * DIM,
    )
    parents = emitter.ask_dqd()
    clipped = np.clip(elites, -0.5, 0.5)
    assert all(any(np.array_equal(p, e) for e in clipped) for p in parents)
    # line_sigma > 0: solutions leave the elites but stay in the bounds.
    emitter = GradientOperatorEmitter(
        archive,
        x0=np.zeros(DIM),
        sigma=0.1,
        sigma_g=1.0,
        batch_size=50,
        seed=0,
        operator_type="iso_line_dd",
        line_sigma=0.5,
        bounds=[(-0.5, 0.5)] * DIM,
    )
    parents = emitter.ask_dqd()
    assert np.all(np.abs(parents) <= 0.5)
    assert not all(any(np.array_equal(p, e) for e in clipped) for p in parents)


def test_per_dimension_sigma_perturbs_only_its_nonzero_dimensions():
    """A sigma that is zero in some dimensions only still perturbs the others (the
    draws are skipped only when every entry is zero)."""
    _, archive = grid_pair(solution_dim=DIM)
    fill(archive, n=15)
    elites = archive.data("solution")
    emitter = GradientOperatorEmitter(
        archive, x0=np.zeros(DIM), sigma=[0.0, 0.1, 0.0, 0.1], sigma_g=1.0, batch_size=50, seed=0
    )
    parents = emitter.ask_dqd()
    for row in parents:
        matches = [e for e in elites if np.array_equal(row[[0, 2]], e[[0, 2]])]
        assert matches
        assert not any(np.array_equal(row, e) for e in matches)


def test_same_seed_same_solutions():
    def run(seed):
        _, archive = grid_pair(solution_dim=DIM)
        fill(archive)
        emitter = GradientOperatorEmitter(
            archive,
            x0=np.zeros(DIM),
            sigma=0.1,
            sigma_g=1.0,
            measure_gradients=True,
            batch_size=BATCH,
            seed=seed,
        )
        parents = emitter.ask_dqd()
        _tell_dqd(emitter, parents, _jacobian())
        return np.concatenate([parents, emitter.ask(), emitter.ask()])

    np.testing.assert_array_equal(run(3), run(3))
    assert not np.array_equal(run(3), run(4))


def test_pure_kernel_sequence_matches_object_api():
    def evaluate(solutions):
        objective = -jnp.sum(solutions**2, axis=1)
        measures = jnp.clip(solutions[:, :2], -1, 1)
        jacobian = jnp.stack([-2 * solutions, jnp.ones_like(solutions), jnp.cos(solutions)], axis=1)
        return objective, measures, jacobian

    def make():
        archive = GridArchive(solution_dim=DIM, dims=(10, 10), ranges=[(-1, 1)] * 2)
        return GradientOperatorEmitter(
            archive,
            x0=np.full(DIM, 0.1),
            sigma=0.2,
            sigma_g=0.3,
            measure_gradients=True,
            normalize_grad=True,
            operator_type="iso_line_dd",
            line_sigma=0.2,
            batch_size=BATCH,
            seed=7,
        )

    emitter = make()
    # Iso+LineDD needs elites: seed both archives with the same solutions.
    seed_sols = np.random.default_rng(1).uniform(-1, 1, size=(5, DIM))
    obj, meas, _ = (np.asarray(x) for x in evaluate(jnp.asarray(seed_sols)))
    emitter.archive.add(seed_sols, obj, meas)
    _, arch, pure = run_pure_dqd(emitter, evaluate, 3)

    reference = make()
    reference.archive.add(seed_sols, obj, meas)
    ref = run_object_dqd(reference, evaluate, 3)
    np.testing.assert_allclose(pure, ref, rtol=1e-10, atol=1e-12)
    assert int(arch.store.n_occupied) == reference.archive.stats.num_elites
    assert not emitter.kernel.has_tell
