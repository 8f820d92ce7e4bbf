"""Tests of PGAMEEmitter (PGA-ME) on a tiny brax task: its batch, its replay
buffer, its critic, the greedy actor, and equal runs in every loop."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax import functional as F
from ribsax.archives import GridArchive
from ribsax.emitters import PGAMEEmitter, PGAMEKernel
from ribsax.schedulers import Scheduler
from ribsax.tasks import brax as brax_tasks
from tests.compile_counter import count_compilations

EPISODE = 30
SETTINGS = dict(
    batch_size=6,
    num_critic_training_steps=6,
    num_pg_training_steps=4,
    replay_buffer_size=500,
    critic_hidden_layer_size=(8,),
    training_batch_size=16,
    greedy_learning_rate=1e-2,
)


@pytest.fixture(scope="module", name="task")
def fixture_task():
    return brax_tasks.create(
        "hopper_uni", episode_length=EPISODE, hidden_layer_sizes=(4,), return_transitions=True
    )


def archive_of(task, dims=8):
    return GridArchive(
        solution_dim=task.solution_dim,
        dims=[dims],
        ranges=task.measure_ranges,
        dtype=np.float32,
        seed=1,
    )


def make(task, seed=0, **settings):
    archive = archive_of(task)
    emitter = PGAMEEmitter(archive, policy=task.policy, seed=seed, **{**SETTINGS, **settings})
    return Scheduler(archive, [emitter])


def fake_transitions(task, valid, reward=1.0):
    """Transitions of ``valid.shape`` = (rows, steps), obs = row / 10 + step / 100."""
    rows, steps = valid.shape
    code = (np.arange(rows)[:, None] / 10 + np.arange(steps)[None] / 100).astype(np.float32)
    obs = np.repeat(code[..., None], task.policy.obs_dim, axis=-1)
    zeros = np.zeros((rows, steps), np.float32)
    return brax_tasks.Transition(
        obs=jnp.asarray(obs),
        next_obs=jnp.asarray(obs + 0.01),
        action=jnp.zeros((rows, steps, task.policy.action_dim), jnp.float32),
        reward=jnp.full((rows, steps), reward, jnp.float32),
        done=jnp.asarray(zeros),
        truncation=jnp.asarray(zeros),
        valid=jnp.asarray(valid, jnp.float32),
        state_desc=jnp.zeros((rows, steps, 1), jnp.float32),
    )


def test_batch_layout_and_fresh_policies_while_empty(task):
    scheduler = make(task, proportion_mutation_ga=0.5)
    emitter = scheduler.emitters[0]
    assert emitter.kernel.ga_batch_size == 3 and emitter.kernel.pg_batch_size == 3
    first = scheduler.ask()
    assert first.shape == (6, task.solution_dim)
    # Empty archive: freshly initialised policies (biases start at zero).
    params = jax.vmap(task.policy.unravel)(jnp.asarray(first))
    assert all(float(jnp.abs(b).max()) == 0.0 for b in jax.tree.leaves(params) if b.ndim == 2)
    assert len({row.tobytes() for row in first}) == 6
    objective, measures, extras = task.jit_evaluate(jnp.asarray(first), jax.random.key(0))
    scheduler.tell(objective, measures, extras=extras)
    assert emitter.buffer_size == int(extras["num_steps"].sum())
    greedy = np.asarray(emitter.greedy_actor)
    second = scheduler.ask()
    np.testing.assert_array_equal(second[-1], greedy)  # the greedy actor is last
    elites = scheduler.archive.data("solution")
    for row in second[:5]:  # GA and PG offspring stay near elites
        assert np.min(np.abs(elites - row).max(axis=1)) < 1.0


def test_buffer_receives_exactly_the_valid_steps_of_valid_rows(task):
    archive = archive_of(task)
    emitter = PGAMEEmitter(archive, policy=task.policy, seed=0, **SETTINGS)
    solutions = emitter.ask()
    valid = np.ones((6, EPISODE), bool)
    valid[1, 3:] = False  # episode 1 ended after 3 steps
    valid[4, 1:] = False  # episode 4 after 1 step
    transitions = fake_transitions(task, valid)
    objective = np.arange(6, dtype=np.float32)
    measures = np.full((6, 1), 0.5, np.float32)
    add_info = archive.add(solutions, objective, measures)
    emitter.tell(solutions, objective, measures, add_info, transitions=transitions)
    stored = int(valid.sum())
    assert emitter.buffer_size == stored
    obs = np.asarray(emitter.kernel_state.buffer.experience.obs[0, :stored, 0])
    np.testing.assert_array_equal(obs, np.asarray(transitions.obs)[valid][:, 0])


def test_non_finite_rows_leave_no_transitions_in_the_fused_loop(task):
    def evaluate(solutions, key):
        objective, measures, extras = task.evaluate(solutions, key)
        return objective.at[2].set(jnp.nan), measures, extras

    scheduler = make(task)
    result = scheduler.run(evaluate, 1, seed=0)
    assert list(result.metrics["non_finite"]) == [1]
    # The same first batch through ask: every valid step but row 2's is stored.
    solutions = make(task).ask()
    _, _, extras = task.jit_evaluate(jnp.asarray(solutions), jax.random.key(0))
    steps = np.asarray(extras["num_steps"])
    assert scheduler.emitters[0].buffer_size == steps.sum() - steps[2]


def test_critic_loss_falls_on_fixed_transitions(task):
    archive = archive_of(task)
    # Without discount the critics' target is the reward itself.
    emitter = PGAMEEmitter(
        archive, policy=task.policy, seed=0, discount=0.0, critic_learning_rate=1e-2, **SETTINGS
    )
    transitions = fake_transitions(task, np.ones((6, EPISODE), bool), reward=0.5)
    losses = []
    for _ in range(12):
        solutions = emitter.ask()
        objective = np.zeros(6, np.float32)
        measures = np.full((6, 1), 0.5, np.float32)
        emitter.tell(
            solutions,
            objective,
            measures,
            archive.add(solutions, objective, measures),
            transitions=transitions,
        )
        losses.append(emitter.critic_loss)
    assert np.all(np.isfinite(losses))
    assert losses[-1] < 0.2 * losses[0]


@pytest.fixture(scope="module", name="trained")
def fixture_trained(task):
    """A scheduler after 12 ask/tell iterations, whether its greedy actor entered
    the archive in iterations 1-11, and the QD score after each iteration."""
    scheduler = make(task)
    entered = 0
    scores = []
    for i in range(12):
        solutions = scheduler.ask()
        objective, measures, extras = task.jit_evaluate(jnp.asarray(solutions), jax.random.key(i))
        scheduler.tell(objective, measures, extras=extras)
        if i:
            entered += int(scheduler.result_add_info["status"][-1] > 0)
        scores.append(float(scheduler.archive.stats.qd_score))
    return scheduler, entered, scores


def test_greedy_actor_enters_the_archive_and_qd_score_grows(trained):
    _, entered, scores = trained
    assert entered >= 1
    assert scores[-1] > scores[0]


def test_policy_gradient_offspring_raise_the_critic_value(task, trained):
    # The trained state on an archive holding one elite, with one policy-gradient
    # offspring (and the greedy actor): its Q value on the buffer's states beats
    # its parent's.
    scheduler = trained[0]
    archive = GridArchive(
        solution_dim=task.solution_dim, dims=[1], ranges=task.measure_ranges, dtype=np.float32
    )
    parent = np.asarray(scheduler.archive.data("solution")[0])
    archive.add(parent[None], np.zeros(1, np.float32), np.full((1, 1), 0.5, np.float32))
    emitter = PGAMEEmitter(
        archive,
        policy=task.policy,
        **{
            **SETTINGS,
            "batch_size": 2,
            "proportion_mutation_ga": 0.0,
            "num_pg_training_steps": 20,
            "policy_learning_rate": 1e-2,
        },
    )
    emitter.state = scheduler.emitters[0].state
    offspring = emitter.ask()
    kernel, state = emitter.kernel, emitter.kernel_state
    obs = kernel.buffer.sample(state.buffer, jax.random.key(8)).obs
    critic = state.td3.critic_params

    def value(flat):
        actions = task.policy.apply(jnp.asarray(flat), obs)
        return float(jnp.mean(kernel.td3.critic.apply(critic, obs, actions)[..., 0]))

    assert value(offspring[0]) > value(parent)
    assert not np.allclose(offspring[0], parent)


def test_ask_tell_fused_and_functional_loops_agree(task):
    iterations = 3
    fused = make(task)
    result = fused.run(task, iterations, seed=2)
    python = make(task)
    python.run(task, iterations, seed=2, fused=False)
    for a, b in ((fused, python),):
        np.testing.assert_allclose(
            a.archive.data("objective"), b.archive.data("objective"), rtol=1e-5
        )
        np.testing.assert_allclose(
            a.archive.data("solution"), b.archive.data("solution"), rtol=1e-4, atol=1e-5
        )
    assert fused.emitters[0].buffer_size == python.emitters[0].buffer_size
    np.testing.assert_allclose(
        fused.emitters[0].critic_loss, python.emitters[0].critic_loss, rtol=1e-3
    )
    assert list(result.metrics["evaluations"]) == [6, 12, 18]

    scheduler = make(task)
    config, state = F.init(scheduler)
    base = jax.random.key_data(fused._run_key)
    for key in F.iteration_keys(jax.random.wrap_key_data(base), 0, iterations):
        state, solutions = F.ask(config, state)
        objective, measures, extras = task.jit_evaluate(solutions, jax.random.fold_in(key, 0))
        state, _ = F.tell(config, state, objective, measures, fields=extras)
    F.install(scheduler, config, state, iterations)
    np.testing.assert_allclose(
        fused.archive.data("objective"), scheduler.archive.data("objective"), rtol=1e-5
    )


def test_an_equal_emitter_compiles_nothing_at_construction(task):
    """Equal kernels share one TD3 (and its compiled init): a second emitter of
    the same configuration compiles nothing."""
    first = make(task, seed=0).emitters[0]
    with count_compilations() as counter:
        second = make(task, seed=0).emitters[0]
    assert counter.count == 0, f"compiled: {counter.names}"
    for a, b in zip(
        jax.tree.leaves(first.kernel_state.td3), jax.tree.leaves(second.kernel_state.td3)
    ):
        if jnp.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(a, b)


def test_errors(task):
    archive = archive_of(task)
    with pytest.raises(TypeError, match="MLPPolicy"):
        PGAMEEmitter(archive, policy=object())
    with pytest.raises(ValueError, match="proportion_mutation_ga"):
        PGAMEEmitter(archive, policy=task.policy, proportion_mutation_ga=1.5)
    with pytest.raises(ValueError, match="batch_size"):
        PGAMEEmitter(archive, policy=task.policy, batch_size=0)
    with pytest.raises(ValueError, match="policy_delay"):
        PGAMEEmitter(archive, policy=task.policy, policy_delay=0)
    with pytest.raises(ValueError, match="sample_size"):
        PGAMEEmitter(archive, policy=task.policy, replay_buffer_size=10, training_batch_size=20)
    assert PGAMEKernel(policy=task.policy) == PGAMEKernel(policy=task.policy)
    # A task without transitions: the tell says what to do.
    emitter = PGAMEEmitter(archive, policy=task.policy, **SETTINGS)
    solutions = emitter.ask()
    objective = np.zeros(6, np.float32)
    measures = np.full((6, 1), 0.5, np.float32)
    with pytest.raises(ValueError, match="return_transitions=True"):
        emitter.tell(solutions, objective, measures, archive.add(solutions, objective, measures))
