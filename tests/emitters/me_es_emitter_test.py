"""Tests for the ME-ES emitter (MEESEmitter / MEESKernel)."""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax import functional as F
from ribsax import run_trials
from ribsax.archives import GridArchive
from ribsax.emitters import (
    ArchiveView,
    EmitterFeedback,
    EmitterKernel,
    GaussianEmitter,
    JaxEmitter,
    MEESEmitter,
    MEESKernel,
)
from ribsax.rl import RunningMeanStdState
from ribsax.schedulers import Scheduler
from ribsax.tasks import brax as brax_tasks
from ribsax.tasks import sphere
from ribsax.tasks.brax import MLPPolicy
from tests.emitters.emitter_helpers import assert_same_archives, assert_same_states

DIM = 4
TASK = sphere(DIM)
SAMPLES = 12


def grid():
    return GridArchive(solution_dim=DIM, dims=(8, 8), ranges=TASK.measure_ranges, seed=3)


def mees(archive, seed=0, **kwargs):
    settings = {
        "sample_number": SAMPLES,
        "num_optimizer_steps": 2,
        "learning_rate": 0.2,
        "x0": np.zeros(DIM),
    }
    settings.update(kwargs)
    return MEESEmitter(archive, evaluate=TASK, seed=seed, **settings)


def scheduler_of(n_mees=2, seed=0, gaussian=True):
    archive = grid()
    emitters = [mees(archive, seed=seed + i) for i in range(n_mees)]
    if gaussian:
        emitters.append(
            GaussianEmitter(archive, sigma=0.3, x0=np.zeros(DIM), batch_size=3, seed=seed + 10)
        )
    return Scheduler(archive, emitters)


def ask_tell(emitter, archive, evaluate=TASK.evaluate):
    """One iteration of the emitter on its own; returns the asked solutions."""
    solutions = emitter.ask()
    objective, measures = evaluate(jnp.asarray(solutions), jax.random.key(0))[:2]
    add_info = archive.add(solutions, np.asarray(objective), np.asarray(measures))
    emitter.tell(solutions, objective, measures, add_info)
    return solutions


def test_is_a_jax_emitter_with_a_kernel():
    archive = grid()
    emitter = mees(archive)
    assert isinstance(emitter, MEESEmitter) and isinstance(emitter, JaxEmitter)
    assert isinstance(emitter.kernel, MEESKernel)
    assert isinstance(emitter.kernel, EmitterKernel)
    assert emitter.kernel.evaluate == TASK.evaluate
    # Equal settings give equal (fusable) kernels.
    assert mees(archive, seed=1).kernel == emitter.kernel
    assert hash(mees(archive, seed=1).kernel) == hash(emitter.kernel)


def test_asks_one_offspring_starting_at_x0():
    archive = grid()
    x0 = np.linspace(-1, 1, DIM)
    emitter = mees(archive, x0=x0)
    assert emitter.batch_size == 1
    first = ask_tell(emitter, archive)
    np.testing.assert_array_equal(first, x0[None])
    second = emitter.ask()
    assert second.shape == (1, DIM)
    assert not np.allclose(second, first)


def test_starts_from_an_elite_without_x0():
    archive = grid()
    elite = np.full(DIM, 0.5)
    objective, measures, _ = TASK.evaluate(jnp.asarray(elite[None]))
    archive.add(elite[None], np.asarray(objective), np.asarray(measures))
    emitter = mees(archive, x0=None)
    np.testing.assert_array_equal(emitter.ask(), elite[None])


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "ask_tell"])
def test_counts_the_es_samples_as_evaluations(fused):
    scheduler = scheduler_of(n_mees=1, gaussian=False)
    result = scheduler.run(TASK, 4, seed=0, fused=fused)
    assert scheduler.emitters[0].evaluations == 4 * SAMPLES
    # One offspring per iteration plus the ES samples.
    assert list(result.metrics["evaluations"]) == [(SAMPLES + 1) * (i + 1) for i in range(4)]


def test_es_samples_never_enter_the_archive():
    archive = grid()
    emitter = mees(archive)
    asked = []
    for i in range(8):
        asked.append(ask_tell(emitter, archive)[0])
        assert len(archive) <= i + 1
    # Every elite is one of the offspring.
    asked = np.array(asked)
    for solution in archive.data("solution"):
        assert np.min(np.abs(asked - solution).max(axis=1)) == 0


def brute_force_gradient(noise, scores, mirror, rank_norm, sigma):
    noise, scores = np.asarray(noise), np.asarray(scores)
    n = scores.shape[0]
    if rank_norm:
        ranks = np.empty(n)
        ranks[np.argsort(scores, kind="stable")] = np.arange(n)
        scores = ranks / (n - 1) - 0.5
    if mirror:
        half = n // 2
        weights = scores[:half] - scores[half:]
    else:
        weights = scores
    return sum(w * e for w, e in zip(weights, noise)) / (n * sigma)


@pytest.mark.parametrize(
    "mirror,rank_norm", [(True, True), (False, True), (True, False), (False, False)]
)
def test_es_gradient_matches_brute_force(mirror, rank_norm):
    w = np.array([3.0, -2.0, 1.0, -0.5])
    kernel = MEESKernel(
        evaluate=TASK.evaluate, sample_number=400, sample_mirror=mirror, sample_rank_norm=rank_norm
    )
    parent = jnp.asarray([0.3, -0.1, 0.2, 0.5])
    samples, noise = kernel.es_samples(parent, jax.random.key(4))
    assert samples.shape == (400, DIM)
    assert noise.shape == ((200 if mirror else 400), DIM)
    full = np.concatenate([noise, -noise]) if mirror else np.asarray(noise)
    np.testing.assert_allclose(samples, parent + kernel.sample_sigma * full, rtol=1e-12)
    scores = samples @ w  # a linear objective
    gradient = kernel.es_gradient(noise, scores)
    expected = brute_force_gradient(noise, scores, mirror, rank_norm, kernel.sample_sigma)
    np.testing.assert_allclose(gradient, expected, rtol=1e-10, atol=1e-12)
    # It points along the true gradient w (raw unmirrored scores have no
    # baseline, as in QDax: their estimate is too noisy for a fixed bound).
    cosine = float(gradient @ w / np.linalg.norm(gradient) / np.linalg.norm(w))
    if mirror or rank_norm:
        assert cosine > (0.95 if mirror else 0.6)


def test_exploit_step_follows_the_objective_gradient():
    """From a reset optimizer, Adam's first step is ``lr * sign(gradient)``."""
    w = jnp.asarray([3.0, -2.0, 1.0, -1.5])

    def linear(solutions, key):
        del key
        objective = solutions @ w
        return objective, jnp.zeros((solutions.shape[0], 2)) + 0.5

    archive = GridArchive(solution_dim=DIM, dims=(4, 4), ranges=[(0, 1), (0, 1)])
    emitter = MEESEmitter(
        archive,
        evaluate=linear,
        sample_number=200,
        use_explore=False,
        learning_rate=0.1,
        x0=np.zeros(DIM),
    )
    ask_tell(emitter, archive, linear)
    np.testing.assert_allclose(emitter.ask()[0], 0.1 * np.sign(np.asarray(w)), rtol=1e-6)
    state = emitter.kernel_state
    assert not bool(state["explore"]) and int(state["adam_count"]) == 1


def brute_force_novelty(descriptors, stored, k):
    out = []
    for d in descriptors:
        distances = np.sort(np.linalg.norm(stored - d, axis=1))
        out.append(distances[:k].mean())
    return np.array(out)


def test_novelty_is_the_mean_distance_to_the_nearest_neighbours():
    rng = np.random.default_rng(0)
    kernel = MEESKernel(evaluate=TASK.evaluate, novelty_nearest_neighbors=3, novelty_archive_size=8)
    ring = rng.normal(size=(8, 2))
    queries = rng.normal(size=(5, 2))
    for count in (1, 2, 5, 8, 13):  # partly filled, full, wrapped
        got = kernel.novelty(jnp.asarray(queries), jnp.asarray(ring), count)
        stored = ring[: min(count, 8)]
        expected = brute_force_novelty(queries, stored, min(3, len(stored)))
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_array_equal(kernel.novelty(jnp.asarray(queries), jnp.asarray(ring), 0), 0)


def test_novelty_archive_is_a_ring_of_offspring_descriptors():
    archive = grid()
    emitter = mees(archive, novelty_archive_size=3, novelty_nearest_neighbors=2)
    measures = []
    for _ in range(5):
        solution = ask_tell(emitter, archive)
        measures.append(np.asarray(TASK.evaluate(jnp.asarray(solution))[1][0]))
    state = emitter.kernel_state
    assert int(state["novelty_count"]) == 5
    # Slots 0, 1, 2 hold offspring 3, 4, 2 (0-based).
    np.testing.assert_allclose(
        state["novelty_archive"], np.array([measures[3], measures[4], measures[2]])
    )


@pytest.mark.parametrize("use_explore,use_exploit", [(True, True), (True, False), (False, True)])
def test_explore_and_exploit_follow_the_schedule(use_explore, use_exploit):
    archive = grid()
    emitter = mees(archive, num_optimizer_steps=2, use_explore=use_explore, use_exploit=use_exploit)
    modes, adam_counts = [], []
    for _ in range(8):
        ask_tell(emitter, archive)
        modes.append(bool(emitter.kernel_state["explore"]))
        adam_counts.append(int(emitter.kernel_state["adam_count"]))
    if use_explore and use_exploit:
        assert modes == [True, True, False, False] * 2
    else:
        assert modes == [use_explore] * 8
    # The optimizer restarts with each new parent.
    assert adam_counts == [1, 2] * 4
    np.testing.assert_array_equal(emitter.kernel.is_explore_step(jnp.arange(8)), modes)


def test_parents_come_from_the_top_cells():
    kernel = MEESKernel(
        evaluate=TASK.evaluate,
        exploit_num_cell_sample=2,
        explore_num_cell_sample=3,
        novelty_nearest_neighbors=1,
        novelty_archive_size=4,
        last_updated_size=3,
    )
    cells = 10
    solution = jnp.arange(cells, dtype=float)[:, None] * jnp.ones(DIM)
    objective = jnp.asarray([5.0, 1.0, 9.0, 0.0, 7.0, 3.0, 8.0, 2.0, 100.0, 100.0])
    measures = jnp.stack([jnp.arange(cells, dtype=float), jnp.zeros(cells)], 1)
    # Cells 8 and 9 are empty (their rows are garbage); order lists the others.
    order = jnp.asarray([3, 1, 0, 2, 4, 5, 6, 7, 8, 9], jnp.int32)
    view = ArchiveView(order, jnp.asarray(8, jnp.int32), solution, objective, measures)
    state = kernel.init(jax.random.key(0), view)
    state = {
        **state,
        # Novelty archive: one descriptor at x = 0 -> most novel cells 7, 6, 5.
        "novelty_count": jnp.asarray(1, jnp.int32),
        "last_solution": jnp.full((3, DIM), -1.0).at[1].set(-2.0),
        "last_objective": jnp.asarray([4.0, 50.0, -jnp.inf]),
    }
    keys = jax.random.split(jax.random.key(1), 200)
    pick = jax.jit(
        jax.vmap(lambda k, e: kernel.select_parent(state, view, k, e), in_axes=(0, None))
    )
    explored = set(np.asarray(pick(keys, True))[:, 0].tolist())
    assert explored == {5.0, 6.0, 7.0}
    exploited = set(np.asarray(pick(keys, False))[:, 0].tolist())
    # Top-2 elites (cells 2 and 6) or top-2 of the last added (the two filled).
    assert exploited == {2.0, 6.0, -1.0, -2.0}


def test_loops_agree():
    iterations = 6
    fused = scheduler_of()
    fused.run(TASK, iterations, seed=5)
    assert fused.fusion_groups[0] == [0, 1]  # the two ME-ES emitters share a kernel
    python = scheduler_of()
    python.run(TASK, iterations, seed=5, fused=False)
    assert_same_archives(fused.archive, python.archive)
    for ef, ep in zip(fused.emitters, python.emitters):
        assert_same_states(ef.state, ep.state)

    scheduler = scheduler_of()
    config, state = F.init(scheduler)
    base = jax.random.key_data(fused._run_key)
    keys = F.iteration_keys(jax.random.wrap_key_data(base), 0, iterations)
    for key in keys:
        state, solutions = F.ask(config, state)
        objective, measures, _ = TASK.evaluate(solutions, jax.random.fold_in(key, 0))
        state, _ = F.tell(config, state, objective, measures)
    F.install(scheduler, config, state, iterations)
    assert_same_archives(fused.archive, scheduler.archive)
    for ef, es in zip(fused.emitters, scheduler.emitters):
        assert_same_states(ef.state, es.state)
    assert int(fused.emitters[0].kernel_state["step"]) == iterations


def test_vmap_over_seeds_equals_separate_runs():
    def make(seed):
        return scheduler_of(n_mees=1, seed=seed, gaussian=False)

    trials = run_trials(make, TASK, iterations=4, seeds=[0, 1], vectorize=True)
    for seed, vmapped in zip([0, 1], trials.schedulers):
        alone = make(seed)
        alone.run(TASK, 4, seed=seed)
        assert_same_archives(vmapped.archive, alone.archive)
        assert_same_states(vmapped.emitters[0].state, alone.emitters[0].state)


def test_qd_score_improves_on_the_sphere():
    archive = GridArchive(solution_dim=DIM, dims=(8, 8), ranges=TASK.measure_ranges, seed=0)
    emitter = MEESEmitter(
        archive,
        evaluate=TASK,
        sample_number=16,
        num_optimizer_steps=5,
        learning_rate=0.2,
        x0=np.zeros(DIM),
        seed=0,
    )
    result = Scheduler(archive, [emitter]).run(TASK, 40, seed=0)
    qd = result.metrics["qd_score"].to_numpy()
    assert qd[-1] > 2 * qd[0]
    assert result.metrics["num_elites"].iloc[-1] >= 5
    # Exploit steps climbed: the best elite beats the start.
    assert (
        float(archive.data("objective").max())
        > float(TASK.evaluate(jnp.zeros((1, DIM)))[0][0]) + 1.0
    )


def test_non_finite_samples_rank_lowest():
    def flaky(solutions, key):
        objective, measures, extras = TASK.evaluate(solutions, key)
        return jnp.where(solutions[:, 0] > 0, jnp.nan, objective), measures, extras

    kernel = MEESKernel(evaluate=flaky, sample_number=SAMPLES, use_explore=False)
    objective = jnp.asarray([1.0, jnp.nan, 3.0])
    measures = jnp.asarray([[0.0, 0.0], [0.0, 0.0], [jnp.inf, 0.0]])
    view = ArchiveView(
        jnp.zeros(1, jnp.int32),
        jnp.asarray(0, jnp.int32),
        jnp.zeros((1, DIM)),
        jnp.zeros(1),
        jnp.zeros((1, 2)),
    )
    state = kernel.init(jax.random.key(0), view)
    scores = kernel.sample_scores(objective, measures, jnp.asarray(False), state)
    np.testing.assert_array_equal(scores, [1.0, -np.inf, -np.inf])
    # A run whose samples partly fail still moves and stays finite.
    archive = grid()
    emitter = MEESEmitter(
        archive,
        evaluate=flaky,
        sample_number=SAMPLES,
        use_explore=False,
        x0=-np.ones(DIM),
        learning_rate=0.2,
    )
    Scheduler(archive, [emitter]).run(flaky, 4, seed=0)
    assert np.all(np.isfinite(emitter.kernel_state["offspring"]))
    assert len(archive) >= 1


def test_argument_errors():
    archive = grid()
    for name, value, error in [
        ("sample_number", 7, ValueError),  # odd, mirrored
        ("sample_number", 1, ValueError),
        ("sample_number", 8.0, TypeError),
        ("sample_sigma", 0.0, ValueError),
        ("sample_sigma", "0.1", TypeError),
        ("learning_rate", -1.0, ValueError),
        ("l2_coefficient", -0.1, ValueError),
        ("num_optimizer_steps", 0, ValueError),
        ("novelty_nearest_neighbors", 0, ValueError),
        ("novelty_archive_size", 5, ValueError),  # smaller than k = 10
        ("last_updated_size", 0, ValueError),
        ("exploit_num_cell_sample", 0, ValueError),
        ("explore_num_cell_sample", 0, ValueError),
        ("sample_mirror", 1, TypeError),
        ("use_explore", "yes", TypeError),
    ]:
        with pytest.raises(error, match=name):
            MEESEmitter(archive, evaluate=TASK, x0=np.zeros(DIM), **{name: value})
    with pytest.raises(ValueError, match="use_explore and use_exploit"):
        mees(archive, use_explore=False, use_exploit=False)
    with pytest.raises(TypeError, match="evaluate"):
        MEESEmitter(archive, evaluate=3, x0=np.zeros(DIM))
    with pytest.raises(ValueError, match="x0"):
        MEESEmitter(archive, evaluate=TASK)  # empty archive
    with pytest.raises(ValueError, match="x0"):
        MEESEmitter(archive, evaluate=TASK, x0=np.zeros(DIM + 1))
    with pytest.raises(ValueError, match="x0"):
        MEESEmitter(archive, evaluate=TASK, x0=np.full(DIM, np.nan))
    # The kernel validates on its own as well.
    with pytest.raises(ValueError, match="sample_sigma"):
        MEESKernel(evaluate=TASK.evaluate, sample_sigma=-1.0)


# ---------------------------------------------------------------- observation
# normalisation. A toy control task: a 3-d linear system driven by a tiny MLP
# policy, observations far from zero mean and unit scale, episodes that end early
# (after the end the observations are NaN and invalid).
POLICY = MLPPolicy(obs_dim=3, action_dim=2, hidden_layer_sizes=(4,))
STEPS = 8


class Episodes(NamedTuple):
    """The part of brax's Transition that the normalisation reads."""

    obs: Any
    valid: Any


def toy_control(solutions, key):
    del key

    def episode(flat):
        params = POLICY.unravel(flat)

        def step(carry, _):
            obs, alive = carry
            action = POLICY.apply_tree(params, obs)
            nxt = (
                0.8 * obs
                + jnp.asarray([3.0, -1.0, 0.5]) * action[0]
                + jnp.asarray([0.0, 2.0, 1.0]) * action[1]
                + jnp.asarray([0.5, 2.0, -1.0])
            )
            done = jnp.abs(nxt[0]) > 4.0
            out = (jnp.where(alive, obs, jnp.nan), alive, jnp.where(alive, action, 0))
            return (nxt, alive & ~done), out

        start = jnp.asarray([1.0, 5.0, -2.0], flat.dtype)
        _, out = jax.lax.scan(step, (start, jnp.bool_(True)), None, STEPS)
        return out

    obs, valid, actions = jax.vmap(episode)(solutions)
    objective = -jnp.sum(jnp.where(valid[..., None], jnp.abs(obs), 0), axis=(1, 2)) / STEPS
    measures = (jnp.sum(actions, axis=1) / jnp.sum(valid, axis=1)[:, None] + 1) / 2
    return objective, measures, {"transitions": Episodes(obs, valid)}


def control_archive():
    return GridArchive(solution_dim=POLICY.num_params, dims=(4, 4), ranges=[(0, 1), (0, 1)], seed=1)


def normalizing(archive, evaluate=toy_control, seed=0, **kwargs):
    settings = {
        "sample_number": 6,
        "sample_sigma": 0.5,
        "num_optimizer_steps": 2,
        "learning_rate": 0.1,
        "normalize_observations": True,
        "policy": POLICY,
        "x0": np.asarray(POLICY.init(jax.random.key(0), jnp.float64)),
    }
    settings.update(kwargs)
    return MEESEmitter(archive, evaluate=evaluate, seed=seed, **settings)


def test_folding_is_exact():
    kernel = MEESKernel(evaluate=toy_control, normalize_observations=True, policy=POLICY)
    rng = np.random.default_rng(0)
    theta = jnp.asarray(rng.normal(size=POLICY.num_params))
    mean = jnp.asarray(rng.normal(size=3) * 5)
    std = jnp.asarray(rng.uniform(0.1, 4.0, size=3))
    obs = jnp.asarray(rng.normal(size=(20, 3)) * np.asarray(std) + np.asarray(mean))
    folded = kernel.fold(theta, mean, std)
    # The folded policy on raw observations acts like theta on normalised ones.
    np.testing.assert_allclose(
        POLICY.apply(folded, obs), POLICY.apply(theta, (obs - mean) / std), rtol=1e-12
    )
    np.testing.assert_allclose(kernel.unfold(folded, mean, std), theta, rtol=1e-12)
    # Only the first layer changes.
    a, b = POLICY.unravel(folded), POLICY.unravel(theta)
    np.testing.assert_array_equal(
        a["params"]["dense_1"]["kernel"], b["params"]["dense_1"]["kernel"]
    )
    assert not np.allclose(a["params"]["dense_0"]["bias"], b["params"]["dense_0"]["bias"])
    # The identity statistics fold nothing.
    np.testing.assert_array_equal(kernel.fold(theta, jnp.zeros(3), jnp.ones(3)), theta)


def test_statistics_are_those_of_the_valid_sample_observations():
    seen = []

    def recording(solutions, key):
        out = toy_control(solutions, key)
        episodes = out[2]["transitions"]
        jax.debug.callback(
            lambda o, v: seen.append((np.asarray(o), np.asarray(v))), episodes.obs, episodes.valid
        )
        return out

    archive = control_archive()
    emitter = normalizing(archive, evaluate=recording)
    for _ in range(5):
        ask_tell(emitter, archive, toy_control)
    assert len(seen) == 5
    obs = np.concatenate([o[v] for o, v in seen])
    assert len(obs) < sum(v.size for _, v in seen)  # some episodes ended early
    state = emitter.kernel_state
    stats = state["observation_stats"]
    assert float(stats.count) == len(obs)
    np.testing.assert_allclose(stats.mean, obs.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(stats.std, obs.std(axis=0), rtol=1e-10)
    mean, std = emitter.kernel.observation_mean_std(state)
    np.testing.assert_allclose(std, np.maximum(obs.std(axis=0), 0.1), rtol=1e-10)
    assert not np.allclose(mean, 0) and not np.allclose(std, 1)
    # The asked offspring is theta folded with the current statistics.
    expected = np.asarray(emitter.kernel.fold(state["theta"], mean, std))
    np.testing.assert_allclose(emitter.ask()[0], expected, rtol=1e-12)


def test_a_new_parent_is_the_unfolded_elite():
    lr = 1e-3
    kernel = MEESKernel(
        evaluate=toy_control,
        sample_number=6,
        sample_sigma=0.1,
        num_optimizer_steps=1,
        use_explore=False,
        learning_rate=lr,
        l2_coefficient=0.0,
        normalize_observations=True,
        policy=POLICY,
    )
    elite = POLICY.init(jax.random.key(1), jnp.float64)
    measures = jnp.asarray([[0.5, 0.5]])
    view = ArchiveView(
        jnp.zeros(1, jnp.int32), jnp.asarray(1, jnp.int32), elite[None], jnp.ones(1), measures
    )
    state = kernel.init(jax.random.key(0), view)
    stats = RunningMeanStdState(
        count=jnp.asarray(10.0),
        mean=jnp.asarray([1.0, 5.0, -2.0]),
        m2=10 * jnp.asarray([4.0, 0.25, 9.0]),
    )
    state = {**state, "observation_stats": stats}
    # The told offspring (the elite itself) did not enter the archive.
    feedback = EmitterFeedback(
        solution=elite[None],
        objective=jnp.ones(1),
        measures=measures,
        status=jnp.zeros(1, jnp.int32),
        value=jnp.zeros(1),
        valid=jnp.ones(1, bool),
        extras={},
        ask_info={},
    )
    after = jax.jit(kernel.tell)(state, view, jax.random.key(2), feedback)
    parent = kernel.unfold(elite, *kernel.observation_mean_std(state))
    # Adam's first step moves each parameter by at most the learning rate.
    assert float(jnp.max(jnp.abs(after["theta"] - parent))) <= lr * (1 + 1e-9)
    assert float(jnp.max(jnp.abs(after["theta"] - elite))) > 10 * lr
    np.testing.assert_allclose(
        after["offspring"],
        kernel.fold(after["theta"], *kernel.observation_mean_std(after)),
        rtol=1e-12,
    )


@pytest.fixture(scope="module", name="brax_task")
def fixture_brax_task():
    return brax_tasks.create(
        "hopper_uni", episode_length=10, hidden_layer_sizes=(4,), return_transitions=True
    )


def test_loops_agree_with_normalisation(brax_task):
    def make():
        archive = GridArchive(
            solution_dim=brax_task.solution_dim, dims=[8], ranges=brax_task.measure_ranges, seed=1
        )
        x0 = np.asarray(brax_task.initial_solutions(1, jax.random.key(0), dtype=np.float64))[0]
        emitter = MEESEmitter(
            archive,
            evaluate=brax_task,
            sample_number=4,
            num_optimizer_steps=2,
            normalize_observations=True,
            policy=brax_task.policy,
            x0=x0,
            seed=0,
        )
        return Scheduler(archive, [emitter])

    fused = make()
    fused.run(brax_task, 4, seed=3)
    python = make()
    python.run(brax_task, 4, seed=3, fused=False)
    assert_same_archives(fused.archive, python.archive)
    assert_same_states(fused.emitters[0].state, python.emitters[0].state)
    stats = fused.emitters[0].kernel_state["observation_stats"]
    assert 4 * 4 <= float(stats.count) <= 4 * 4 * 10
    assert np.all(np.asarray(stats.std) > 0)


def test_normalisation_errors():
    archive = control_archive()
    with pytest.raises(ValueError, match="normalize_observations=True needs policy"):
        normalizing(archive, policy=None)
    with pytest.raises(TypeError, match="policy must be"):
        normalizing(archive, policy="mlp")
    with pytest.raises(ValueError, match="policy has"):
        normalizing(archive, policy=MLPPolicy(obs_dim=3, action_dim=2, hidden_layer_sizes=(5,)))
    with pytest.raises(TypeError, match="normalize_observations"):
        normalizing(archive, normalize_observations="yes")
    with pytest.raises(ValueError, match="observation_std_min"):
        normalizing(archive, observation_std_min=0.0)
    # A task created without transitions is refused up front ...
    plain = brax_tasks.create("hopper_uni", episode_length=10, hidden_layer_sizes=(4,))
    grid_of_task = GridArchive(
        solution_dim=plain.solution_dim, dims=[8], ranges=plain.measure_ranges
    )
    with pytest.raises(ValueError, match="return_transitions=True"):
        MEESEmitter(
            grid_of_task,
            evaluate=plain,
            normalize_observations=True,
            policy=plain.policy,
            x0=np.zeros(plain.solution_dim),
        )
    # ... an evaluate function without them at its first tell.
    emitter = normalizing(archive, evaluate=lambda s, k: toy_control(s, k)[:2])
    with pytest.raises(ValueError, match="extras\\['transitions'\\]"):
        ask_tell(emitter, archive, toy_control)
    # Without normalisation the policy is ignored: the kernels stay equal.
    assert (
        normalizing(archive, normalize_observations=False).kernel
        == normalizing(archive, normalize_observations=False, policy=None).kernel
    )
