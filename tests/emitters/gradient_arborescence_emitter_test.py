"""Tests for GradientArborescenceEmitter (CMA-MEGA), with differential checks
against pyribs."""

import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.archives import GridArchive
from ribsax.emitters import GradientArborescenceEmitter
from ribsax.emitters.opt import GradientOptBase
from ribsax.schedulers import Scheduler
from tests.backend import CPU_EXACT_FUSED_CMA
from tests.emitters.emitter_helpers import (
    assert_same_error,
    emitter_pair,
    fill,
    grid_pair,
    run_object_dqd,
    run_pure_dqd,
)

DIM = 4


def _both(kwargs, solution_dim=DIM):
    return emitter_pair(
        "GradientArborescenceEmitter",
        kwargs,
        {"x0": np.zeros(solution_dim), "sigma0": 1.0, "lr": 0.1},
        solution_dim=solution_dim,
    )


def _emitter(archive=None, **kwargs):
    if archive is None:
        _, archive = grid_pair(solution_dim=DIM)
    kwargs.setdefault("x0", np.zeros(DIM))
    kwargs.setdefault("sigma0", 1.0)
    kwargs.setdefault("lr", 1.0)
    return GradientArborescenceEmitter(archive, **kwargs)


def _jacobian(seed=0, n=1, dim=DIM):
    return np.random.default_rng(seed).normal(size=(n, 3, dim))


def _tell_dqd(emitter, jacobian=None):
    sol = emitter.ask_dqd()
    obj = -np.sum(sol**2, axis=1)
    info = emitter.archive.add(sol, obj, sol[:, :2])
    emitter.tell_dqd(sol, obj, sol[:, :2], _jacobian() if jacobian is None else jacobian, info)
    return sol


def _zero_feedback_cycle(emitter, value):
    """ask_dqd -> tell_dqd -> ask -> tell with zero objectives, measures and
    statuses (nothing is added to the archive); ``value(n)`` gives the values in
    the tell's add_info."""
    sol = emitter.ask_dqd()
    emitter.tell_dqd(
        sol,
        np.zeros(1),
        np.zeros((1, 2)),
        _jacobian(),
        {"status": np.zeros(1, np.int32), "value": np.zeros(1)},
    )
    solutions = emitter.ask()
    n = len(solutions)
    emitter.tell(
        solutions,
        np.zeros(n),
        np.zeros((n, 2)),
        {"status": np.zeros(n, np.int32), "value": value(n)},
    )


def _evaluate_and_add(emitter, solutions):
    obj = -np.sum(solutions**2, axis=1)
    meas = np.clip(solutions[:, :2], -1, 1)
    return obj, meas, emitter.archive.add(solutions, obj, meas)


# ---------------------------------------------------------------- construction
@pytest.mark.parametrize(
    "kwargs",
    [
        {"bounds": [(0, 1)] * DIM},
        {"lower_bounds": np.zeros(DIM)},
        {"upper_bounds": np.ones(DIM)},
        {"x0": np.zeros(DIM + 1)},
        {"selection_rule": "foo"},
        {"restart_rule": "foo"},
        {"ranker": "foo"},
        {"grad_opt": "foo"},
        {"grad_opt": 3},
        {"es": "foo"},
        {"grad_opt": "adam", "grad_opt_kwargs": {"foo": 1}},
    ],
    ids=[
        "bounds",
        "lower",
        "upper",
        "x0_shape",
        "selection",
        "restart",
        "ranker",
        "grad_opt_name",
        "grad_opt_type",
        "es_name",
        "grad_opt_kwargs",
    ],
)
def test_validation_errors_match_ribs(kwargs):
    assert_same_error(*_both(kwargs))


def test_properties_match_ribs():
    make_ribs, make = _both({"epsilon": 1e-5, "x0": np.ones(DIM)})
    theirs, ours = make_ribs(), make()
    assert ours.batch_size == theirs.batch_size == 4 + int(3 * np.log(3))
    assert type(ours.batch_size) is int
    assert ours.batch_size_dqd == theirs.batch_size_dqd == 1
    assert ours.epsilon == theirs.epsilon == 1e-5
    assert ours.restarts == 0 and ours.itrs == 0
    np.testing.assert_array_equal(ours.x0, theirs.x0)
    assert ours.x0.dtype == theirs.x0.dtype
    np.testing.assert_array_equal(ours.ask_dqd(), theirs.ask_dqd())
    assert ours.ask_dqd().shape == (1, DIM)
    assert _emitter(batch_size=5).batch_size == 5


def test_call_order_errors_match_ribs():
    make_ribs, make = _both({})
    assert_same_error(lambda: make_ribs().ask(), lambda: make().ask())
    sol = np.zeros((3, DIM))
    info = {"status": np.zeros(3, np.int32), "value": np.zeros(3)}
    assert_same_error(
        lambda: make_ribs().tell(sol, np.zeros(3), np.zeros((3, 2)), info),
        lambda: make().tell(sol, np.zeros(3), np.zeros((3, 2)), info),
    )
    # Data validation comes before the call-order check, as in pyribs.
    assert_same_error(
        lambda: make_ribs().tell(sol, np.zeros(2), np.zeros((3, 2)), info),
        lambda: make().tell(sol, np.zeros(2), np.zeros((3, 2)), info),
    )


@pytest.mark.parametrize(
    "jacobian",
    [
        np.zeros((1, 2, DIM)),
        np.zeros((1, 3, DIM + 1)),
        np.zeros((3, DIM)),
        np.full((1, 3, DIM), np.nan),
    ],
    ids=["measure_rows", "solution_dim", "ndim", "nan"],
)
def test_tell_dqd_jacobian_errors_match_ribs(jacobian):
    make_ribs, make = _both({})
    sol = np.zeros((1, DIM))
    info = {"status": np.zeros(1, np.int32), "value": np.zeros(1)}
    assert_same_error(
        lambda: make_ribs().tell_dqd(sol, np.zeros(1), np.zeros((1, 2)), jacobian, info),
        lambda: make().tell_dqd(sol, np.zeros(1), np.zeros((1, 2)), jacobian, info),
    )


def test_tell_dqd_rejects_more_than_one_row():
    emitter = _emitter()
    sol = np.zeros((2, DIM))
    info = {"status": np.zeros(2, np.int32), "value": np.zeros(2)}
    with pytest.raises(ValueError, match="single solution returned by ask_dqd"):
        emitter.tell_dqd(sol, np.zeros(2), np.zeros((2, 2)), _jacobian(n=2), info)


# ---------------------------------------------------------------- ask / branching
@pytest.mark.parametrize("normalize_grad", [True, False])
def test_branches_use_the_sampled_coefficients(normalize_grad):
    emitter = _emitter(x0=np.full(DIM, 0.3), normalize_grad=normalize_grad, epsilon=1e-3, seed=3)
    jacobian = _jacobian(1)
    _tell_dqd(emitter, jacobian)
    solutions = emitter.ask()
    assert solutions.shape == (emitter.batch_size, DIM)
    assert solutions.flags.writeable
    expected_jac = jacobian[0]
    if normalize_grad:
        expected_jac = expected_jac / (np.linalg.norm(expected_jac, axis=1, keepdims=True) + 1e-3)
    np.testing.assert_allclose(np.asarray(emitter.kernel_state.jacobian), expected_jac, rtol=1e-14)
    coefficients = np.asarray(emitter.kernel_state.opt.solutions)
    np.testing.assert_allclose(solutions, 0.3 + coefficients @ expected_jac, rtol=1e-12, atol=1e-14)


def test_normalised_jacobian_matches_ribs():
    make_ribs, make = _both({"epsilon": 1e-2})
    theirs, ours = make_ribs(), make()
    jacobian = _jacobian(7) * 5
    sol = np.zeros((1, DIM))
    for emitter in (theirs, ours):
        info = emitter.archive.add(sol, np.zeros(1), np.zeros((1, 2)))
        # pyribs normalises the caller's array in place; ribsax does not.
        emitter.tell_dqd(sol, np.zeros(1), np.zeros((1, 2)), jacobian.copy(), info)
    np.testing.assert_allclose(
        np.asarray(ours.kernel_state.jacobian), theirs._jacobian_batch[0], rtol=1e-15
    )
    np.testing.assert_array_equal(jacobian, _jacobian(7) * 5)  # Input untouched.
    ours.tell_dqd(sol, np.zeros(1), np.zeros((1, 2)), jacobian, info)
    np.testing.assert_array_equal(jacobian, _jacobian(7) * 5)


@pytest.mark.parametrize("selection_rule", ["mu", "filter"])
def test_tell_uses_exactly_the_coefficients_of_ask(selection_rule):
    """Unlike QDax's CMA-MEGA, whose update does not use the coefficients that produced
    the evaluated solutions, the ranking and ES update must use exactly those. Recover the
    coefficients from the returned solutions, rank them, and check that the ES mean
    and the solution point moved to their log-rank weighted means."""
    _, archive = grid_pair(solution_dim=DIM, dims=(20, 20))
    emitter = _emitter(
        archive,
        grad_opt="gradient_ascent",
        lr=1.0,
        sigma0=0.5,
        ranker="obj",
        selection_rule=selection_rule,
        restart_rule="basic",
        seed=11,
    )
    _tell_dqd(emitter, _jacobian(2))
    theta = emitter.theta
    jac = np.asarray(emitter.kernel_state.jacobian)
    old_mean = np.asarray(emitter.opt.mean)
    solutions = emitter.ask()
    coefficients = np.linalg.lstsq(jac.T, (solutions - theta).T, rcond=None)[0].T
    np.testing.assert_allclose(
        coefficients, np.asarray(emitter.kernel_state.opt.solutions), atol=1e-10
    )

    objective = np.random.default_rng(5).permutation(len(solutions)).astype(float)
    status = np.zeros(len(solutions), np.int32)
    status[:3] = 2
    info = {"status": status, "value": objective}
    emitter.tell(solutions, objective, np.zeros((len(solutions), 2)), info)

    mu = len(solutions) // 2 if selection_rule == "mu" else 3
    order = np.argsort(-objective)[:mu]
    weights = np.log(mu + 0.5) - np.log(np.arange(1, mu + 1))
    weights /= weights.sum()
    np.testing.assert_allclose(
        np.asarray(emitter.opt.mean), weights @ coefficients[order], atol=1e-10
    )
    assert not np.allclose(old_mean, np.asarray(emitter.opt.mean))
    np.testing.assert_allclose(emitter.theta, weights @ solutions[order], atol=1e-10)
    np.testing.assert_allclose(
        emitter.theta, theta + (weights @ coefficients[order]) @ jac, atol=1e-10
    )
    assert emitter.itrs == 1


@pytest.mark.parametrize(
    "grad_opt,grad_opt_kwargs,lr,selection_rule,ranker",
    [
        ("gradient_ascent", None, 0.7, "mu", "imp"),
        ("adam", {"beta1": 0.8, "l2_coeff": 0.01}, 0.05, "filter", "2imp"),
    ],
)
def test_solution_point_updates_match_ribs(grad_opt, grad_opt_kwargs, lr, selection_rule, ranker):
    """Both libraries receive the same solutions, objectives and add info; the
    solution point (ranking, weighted mean, Adam / gradient-ascent step) must agree
    to 1e-12 over several iterations."""
    kwargs = {
        "grad_opt": grad_opt,
        "grad_opt_kwargs": grad_opt_kwargs,
        "lr": lr,
        "selection_rule": selection_rule,
        "ranker": ranker,
        "restart_rule": "basic",
        "sigma0": 0.5,
        "seed": 4,
    }
    make_ribs, make = _both(kwargs)
    theirs, ours = make_ribs(), make()
    rng = np.random.default_rng(0)
    for itr in range(4):
        jacobian = rng.normal(size=(1, 3, DIM))
        sol = ours.ask_dqd()
        np.testing.assert_allclose(sol, theirs.ask_dqd(), rtol=1e-12, atol=1e-13)
        for emitter in (theirs, ours):
            emitter.tell_dqd(
                sol,
                np.zeros(1),
                np.zeros((1, 2)),
                jacobian.copy(),
                {"status": np.zeros(1, np.int32), "value": np.zeros(1)},
            )
        solutions = ours.ask()
        theirs.ask()  # Keeps pyribs' ES in its ask/tell cycle.
        objective = -np.sum(solutions**2, axis=1)
        status = (rng.uniform(size=len(solutions)) < 0.5).astype(np.int32) * rng.integers(
            1, 3, size=len(solutions)
        ).astype(np.int32)
        status[itr] = 2  # At least one parent for "filter".
        info = {"status": status, "value": objective + rng.normal(size=len(objective))}
        for emitter in (theirs, ours):
            emitter.tell(solutions, objective, solutions[:, :2], dict(info))
    np.testing.assert_allclose(ours.theta, theirs._grad_opt.theta, rtol=1e-12, atol=1e-12)
    assert ours.itrs == theirs.itrs == 4


def test_filter_without_parents_moves_theta_to_zero_like_ribs():
    """pyribs' quirk: with no parent the weighted mean is an empty sum (0)."""
    kwargs = {
        "grad_opt": "gradient_ascent",
        "lr": 1.0,
        "restart_rule": "basic",
        "x0": np.full(DIM, 0.5),
    }
    make_ribs, make = _both(kwargs)
    theirs, ours = make_ribs(), make()
    for emitter in (theirs, ours):
        # Distinct values: flat ranking values would make the ES stop (restart).
        _zero_feedback_cycle(emitter, lambda n: np.arange(n, dtype=float))
    assert ours.restarts == theirs.restarts == 0
    np.testing.assert_array_equal(ours.theta, theirs._grad_opt.theta)
    np.testing.assert_array_equal(ours.theta, np.zeros(DIM))


# ---------------------------------------------------------------- restarts
def test_restart_moves_point_to_an_elite_and_resets_es():
    _, archive = grid_pair(solution_dim=DIM)
    elites = fill(archive, n=30)
    emitter = _emitter(archive, restart_rule=1, seed=2)
    _tell_dqd(emitter)
    solutions = emitter.ask()
    obj, meas, info = _evaluate_and_add(emitter, solutions)
    emitter.tell(solutions, obj, meas, info)
    assert emitter.restarts == 1
    stored = archive.data("solution")
    assert any(np.array_equal(emitter.theta, row) for row in stored)
    assert len(elites)
    np.testing.assert_array_equal(np.asarray(emitter.opt.mean), np.zeros(3))
    assert float(emitter.opt.sigma) == pytest.approx(1.0)
    # The Adam state restarts too.
    assert int(emitter.kernel_state.grad_opt.t) == 0


def test_restart_on_empty_archive_raises_index_error_like_ribs():
    make_ribs, make = _both({"restart_rule": "no_improvement"})
    assert_same_error(
        lambda: _zero_feedback_cycle(make_ribs(), np.zeros),
        lambda: _zero_feedback_cycle(make(), np.zeros),
    )


# ---------------------------------------------------------------- modes
class _NumpyAscent(GradientOptBase):
    """A user-defined (NumPy) gradient optimizer: forces the object path."""

    def __init__(self, theta0, lr):
        self._theta = np.array(theta0, dtype=float)
        self._lr = lr

    @property
    def theta(self):
        return self._theta

    def reset(self, theta0):
        self._theta = np.array(theta0, dtype=float)

    def step(self, gradient):
        self._theta = self._theta + self._lr * np.asarray(gradient)


def _run(emitter, itrs=3):
    out = []
    for _ in range(itrs):
        _tell_dqd(emitter)
        solutions = emitter.ask()
        obj, meas, info = _evaluate_and_add(emitter, solutions)
        emitter.tell(solutions, obj, meas, info)
        out.append(solutions)
    return np.concatenate(out), emitter.theta


def test_custom_grad_opt_runs_through_objects_like_the_kernels():
    _, archive_a = grid_pair(solution_dim=DIM)
    _, archive_b = grid_pair(solution_dim=DIM)
    kernel = _emitter(archive_a, grad_opt="gradient_ascent", lr=0.5, seed=9, restart_rule="basic")
    objects = _emitter(archive_b, grad_opt=_NumpyAscent, lr=0.5, seed=9, restart_rule="basic")
    assert kernel.fusion_key is not None and objects.fusion_key is None
    sols_a, theta_a = _run(kernel)
    sols_b, theta_b = _run(objects)
    np.testing.assert_allclose(sols_a, sols_b, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(theta_a, theta_b, rtol=1e-10, atol=1e-10)


@CPU_EXACT_FUSED_CMA
def test_same_seed_same_run_and_fused_scheduler_matches_unfused():
    def build(fuse):
        archive = GridArchive(solution_dim=DIM, dims=(10, 10), ranges=[(-1, 1)] * 2, seed=0)
        emitters = [
            GradientArborescenceEmitter(
                archive, x0=np.zeros(DIM), sigma0=0.5, lr=0.5, seed=s, batch_size=5
            )
            for s in range(3)
        ]
        return Scheduler(archive, emitters, fuse=fuse)

    def run(scheduler):
        out = []
        for itr in range(4):
            sol = scheduler.ask_dqd()
            scheduler.tell_dqd(
                -np.sum(sol**2, axis=1), np.clip(sol[:, :2], -1, 1), _jacobian(itr, n=len(sol))
            )
            sol = scheduler.ask()
            out.append(sol)
            scheduler.tell(-np.sum(sol**2, axis=1), np.clip(sol[:, :2], -1, 1))
        return np.concatenate(out), scheduler

    fused_sols, fused = run(build(True))
    plain_sols, plain = run(build(False))
    assert fused.fusion_groups == [[0, 1, 2]]
    np.testing.assert_array_equal(fused_sols, plain_sols)
    for a, b in zip(fused.emitters, plain.emitters):
        np.testing.assert_array_equal(a.theta, b.theta)
        assert a.itrs == b.itrs == 4 and a.restarts == b.restarts
    assert fused.archive.stats.num_elites == plain.archive.stats.num_elites


def test_pure_kernel_sequence_matches_object_api():
    """ask_dqd -> tell_dqd -> ask -> tell as pure kernels in one jitted function,
    with archive adds through the fused-loop seam, equals the object API."""

    def evaluate(solutions):
        objective = -jnp.sum(solutions**2, axis=1)
        measures = jnp.clip(solutions[:, :2], -1, 1)
        jacobian = jnp.stack(
            [
                -2 * solutions,
                jnp.eye(DIM)[0] * jnp.ones_like(solutions),
                jnp.eye(DIM)[1] * jnp.ones_like(solutions),
            ],
            axis=1,
        )
        return objective, measures, jacobian

    def make():
        archive = GridArchive(solution_dim=DIM, dims=(10, 10), ranges=[(-1, 1)] * 2)
        return GradientArborescenceEmitter(
            archive, x0=np.full(DIM, 0.2), sigma0=0.5, lr=0.5, seed=5, restart_rule=2
        )

    emitter = make()
    state, arch, pure_sols = run_pure_dqd(emitter, evaluate, 4)
    reference = make()
    ref_sols = run_object_dqd(reference, evaluate, 4)

    np.testing.assert_allclose(pure_sols, ref_sols, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        np.asarray(state.grad_opt.theta), reference.theta, rtol=1e-10, atol=1e-12
    )
    assert int(state.restarts) == reference.restarts == 2
    assert int(arch.store.n_occupied) == reference.archive.stats.num_elites
    assert int(state.itrs) == reference.itrs == 4


def _fused_dqd_scheduler(fuse=True, n=3):
    archive = GridArchive(solution_dim=DIM, dims=(10, 10), ranges=[(-1, 1)] * 2, seed=0)
    emitters = [
        GradientArborescenceEmitter(
            archive, x0=np.zeros(DIM), sigma0=0.5, lr=0.5, seed=s, batch_size=5
        )
        for s in range(n)
    ]
    return Scheduler(archive, emitters, fuse=fuse)


def test_fused_group_tells_dqd_at_once(monkeypatch):
    scheduler = _fused_dqd_scheduler()
    assert scheduler.fusion_groups == [[0, 1, 2]]

    def fail(*args, **kwargs):
        raise AssertionError("member tell_dqd called")

    monkeypatch.setattr(GradientArborescenceEmitter, "tell_dqd", fail)
    sol = scheduler.ask_dqd()
    jacobian = _jacobian(1, n=len(sol))
    scheduler.tell_dqd(-np.sum(sol**2, axis=1), np.clip(sol[:, :2], -1, 1), jacobian)
    norms = np.linalg.norm(jacobian, axis=2, keepdims=True)
    for i, emitter in enumerate(scheduler.emitters):
        np.testing.assert_allclose(
            np.asarray(emitter.kernel_state.jacobian),
            jacobian[i] / (norms[i] + emitter.epsilon),
            rtol=1e-12,
        )
    assert len(scheduler.ask()) == 15


@pytest.mark.parametrize("fuse", [True, False])
def test_fused_group_tell_dqd_errors_are_the_members(fuse):
    scheduler = _fused_dqd_scheduler(fuse=fuse)
    sol = scheduler.ask_dqd()
    jacobian = _jacobian(1, n=len(sol))
    jacobian[1, 0, 0] = np.nan
    with pytest.raises(ValueError, match="jacobian.*finite|finite.*jacobian"):
        scheduler.tell_dqd(-np.sum(sol**2, axis=1), np.clip(sol[:, :2], -1, 1), jacobian)
