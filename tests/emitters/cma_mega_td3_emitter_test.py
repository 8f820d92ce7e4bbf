"""Tests of CMAMEGATD3Emitter (CMA-MEGA (TD3, ES)) on a tiny brax task: its
batch, its evaluation count, its Jacobian, and equal runs in both loops."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.archives import GridArchive
from ribsax.emitters import CMAMEGATD3Emitter, CMAMEGATD3Kernel, EmitterFeedback
from ribsax.emitters._emitter_base import archive_device_view
from ribsax.rl import Transition
from ribsax.schedulers import Scheduler
from ribsax.tasks import brax as brax_tasks

EPISODE = 20
ITERATIONS = 3
SETTINGS = dict(
    batch_size=6,
    sample_batch_size=6,
    num_critic_training_steps=6,
    replay_buffer_size=500,
    critic_hidden_layer_size=(8,),
    training_batch_size=16,
    gradient_batch_size=32,
)


@pytest.fixture(scope="module", name="task")
def fixture_task():
    return brax_tasks.create(
        "hopper_uni", episode_length=EPISODE, hidden_layer_sizes=(4,), return_transitions=True
    )


def make(task, seed=0, **settings):
    archive = GridArchive(
        solution_dim=task.solution_dim,
        dims=[8],
        ranges=task.measure_ranges,
        dtype=np.float32,
        seed=1,
    )
    emitter = CMAMEGATD3Emitter(
        archive, policy=task.policy, evaluate=task, seed=seed, **{**SETTINGS, **settings}
    )
    return Scheduler(archive, [emitter])


@pytest.fixture(scope="module", name="runs")
def fixture_runs(task):
    """A run in the fused loop."""
    fused = make(task)
    result = fused.run(task, ITERATIONS, seed=2, jacobian=CMAMEGATD3Emitter.jacobian_free(task))
    return fused, result


def test_evaluations_count_the_es_samples(runs):
    _, result = runs
    per_iteration = 1 + SETTINGS["sample_batch_size"] + SETTINGS["batch_size"]
    assert list(result.metrics["evaluations"]) == [
        per_iteration * (i + 1) for i in range(ITERATIONS)
    ]
    assert runs[0].emitters[0].evaluations == ITERATIONS * SETTINGS["sample_batch_size"]


@pytest.mark.slow
def test_fused_and_ask_tell_loops_agree(task, runs):
    fused, _ = runs
    python = make(task)
    python.run(
        task, ITERATIONS, seed=2, fused=False, jacobian=CMAMEGATD3Emitter.jacobian_free(task)
    )
    np.testing.assert_allclose(
        np.sort(fused.archive.data("objective")),
        np.sort(python.archive.data("objective")),
        rtol=1e-4,
    )
    a, b = fused.emitters[0], python.emitters[0]
    assert a.buffer_size == b.buffer_size > 0
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(a.critic_loss, b.critic_loss, rtol=1e-2)


def test_batch_layout_and_qd_score_grows(task, runs):
    fused, result = runs
    scores = list(result.metrics["qd_score"])
    assert scores[-1] > scores[0] > 0
    emitter = fused.emitters[0]
    assert emitter.batch_size == SETTINGS["batch_size"]
    theta = np.asarray(emitter.theta)
    np.testing.assert_array_equal(fused.ask_dqd()[0], theta)
    greedy = np.asarray(emitter.greedy_actor)
    jacobian = np.asarray(emitter.kernel_state.jacobian)
    assert jacobian.shape == (2, task.solution_dim)
    np.testing.assert_allclose(np.linalg.norm(jacobian, axis=1), 1, rtol=1e-4)
    solutions = emitter.ask()
    assert solutions.shape == (SETTINGS["batch_size"], task.solution_dim)
    np.testing.assert_array_equal(solutions[0], greedy)  # the greedy actor first
    # The branches are theta + c @ J with the coefficients the CMA-ES drew.
    coefficients = np.asarray(emitter.kernel_state.cma.solutions)
    assert coefficients.shape == (SETTINGS["batch_size"] - 1, 2)
    np.testing.assert_allclose(solutions[1:], theta + coefficients @ jacobian, rtol=1e-4, atol=1e-4)


def _linear_evaluate(direction):
    def evaluate(solutions, key):
        del key
        measures = (solutions @ direction)[:, None]
        return jnp.zeros(solutions.shape[0]), measures, {}

    return evaluate


def test_jacobian_rows(task):
    """Objective row: the critic's gradient of mean Q1(s, pi(s)) on the single
    state the buffer holds; measure row: the ES estimate of a linear measure."""
    dim = task.solution_dim
    direction = jax.random.normal(jax.random.key(3), (dim,))
    kernel = CMAMEGATD3Kernel(
        policy=task.policy,
        evaluate=_linear_evaluate(direction),
        **{**SETTINGS, "sample_batch_size": 400, "replay_buffer_size": 64},
    )
    archive = GridArchive(solution_dim=dim, dims=[8], ranges=task.measure_ranges, dtype=np.float32)
    view = archive_device_view(archive)
    state = kernel.init(jax.random.key(0), view)
    # Before any transition: a random direction of unit norm.
    feedback = EmitterFeedback(
        solution=state.theta[None],
        objective=jnp.zeros(1),
        measures=jnp.zeros((1, 1)),
        status=jnp.zeros(1, jnp.int32),
        value=jnp.zeros(1),
        valid=jnp.ones(1, bool),
        extras={},
        ask_info={},
        batch={"valid": jnp.ones(1, bool), "extras": {}},
    )
    tell_dqd = jax.jit(kernel.tell_dqd)
    first = tell_dqd(state, view, jax.random.key(1), feedback)
    np.testing.assert_allclose(np.linalg.norm(first.jacobian, axis=1), 1, rtol=1e-4)
    # A buffer full of one state.
    obs = jnp.linspace(-1, 1, task.policy.obs_dim)
    zeros = jnp.zeros((64,))
    items = Transition(
        obs=jnp.tile(obs, (64, 1)),
        next_obs=jnp.tile(obs, (64, 1)),
        rewards=zeros,
        dones=zeros,
        truncations=zeros,
        actions=jnp.zeros((64, task.policy.action_dim)),
        state_desc=jnp.zeros((64, 0)),
        next_state_desc=jnp.zeros((64, 0)),
    )
    rl = first.rl._replace(buffer=kernel.rl.buffer.insert(first.rl.buffer, items))
    state = first._replace(rl=rl)
    second = tell_dqd(state, view, jax.random.key(2), feedback)
    td3 = kernel.rl.td3

    def q_value(flat):
        actions = task.policy.apply(flat, obs[None])
        return jnp.mean(td3.critic.apply(state.rl.td3.critic_params, obs[None], actions)[..., 0])

    expected = jax.grad(q_value)(state.theta)
    expected = expected / np.linalg.norm(expected)
    np.testing.assert_allclose(second.jacobian[0], expected, rtol=1e-3, atol=1e-5)
    cosine = float(second.jacobian[1] @ direction / jnp.linalg.norm(direction))
    assert cosine > 0.5
    assert int(second.evaluations) == 800


def test_errors(task):
    archive = GridArchive(
        solution_dim=task.solution_dim, dims=[8], ranges=task.measure_ranges, dtype=np.float32
    )
    args = dict(policy=task.policy, evaluate=task)
    with pytest.raises(TypeError, match="MLPPolicy"):
        CMAMEGATD3Emitter(archive, policy=object(), evaluate=task)
    with pytest.raises(TypeError, match="evaluate"):
        CMAMEGATD3Emitter(archive, policy=task.policy, evaluate=3)
    with pytest.raises(ValueError, match="batch_size"):
        CMAMEGATD3Emitter(archive, batch_size=2, **args)
    with pytest.raises(ValueError, match="sample_batch_size"):
        CMAMEGATD3Emitter(archive, sample_batch_size=5, **args)
    with pytest.raises(ValueError, match="gradient_batch_size"):
        CMAMEGATD3Emitter(
            archive, gradient_batch_size=100, replay_buffer_size=50, training_batch_size=16, **args
        )
    with pytest.raises(ValueError, match="sigma0"):
        CMAMEGATD3Emitter(archive, sigma0=0.0, **args)
    with pytest.raises(ValueError, match="policy_delay"):
        CMAMEGATD3Emitter(archive, policy_delay=0, **args)
    with pytest.raises(ValueError, match="x0"):
        CMAMEGATD3Emitter(archive, x0=np.zeros(3), **{**args, **SETTINGS})
    assert CMAMEGATD3Kernel(policy=task.policy, evaluate=task.evaluate) == CMAMEGATD3Kernel(
        policy=task.policy, evaluate=task.evaluate
    )
