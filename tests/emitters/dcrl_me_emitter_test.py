"""Tests of DCRLMEEmitter (DCRL-ME, and DCG-ME as an option) on a tiny brax task:
its batch and conditioning descriptors, its replay buffer, the reward
relabelling, the critic, the actor fold, equal runs in both loops, and DCG-ME's
evaluation count."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.archives import GridArchive
from ribsax.emitters import DCRLMEEmitter, DCRLMEKernel, EmitterFeedback
from ribsax.emitters._dcrl_me_emitter import descriptor_reward
from ribsax.schedulers import Scheduler
from ribsax.tasks import brax as brax_tasks

EPISODE = 10
SETTINGS = dict(
    ga_batch_size=2,
    pg_batch_size=2,
    ai_batch_size=2,
    num_critic_training_steps=4,
    num_pg_training_steps=3,
    replay_buffer_size=500,
    critic_hidden_layer_size=(8,),
    training_batch_size=16,
)
GA, PG, AI = slice(0, 2), slice(2, 4), slice(4, 6)


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
    emitter = DCRLMEEmitter(archive, policy=task.policy, seed=seed, **{**SETTINGS, **settings})
    return Scheduler(archive, [emitter])


def fake_transitions(task, valid, rewards):
    """Transitions of ``valid.shape`` = (rows, steps), obs = row / 10 + step /
    100, rewards ``rewards[row]`` at every step."""
    rows, steps = valid.shape
    code = (np.arange(rows)[:, None] / 10 + np.arange(steps)[None] / 100).astype(np.float32)
    obs = np.repeat(code[..., None], task.policy.obs_dim, axis=-1)
    zeros = np.zeros((rows, steps), np.float32)
    return brax_tasks.Transition(
        obs=jnp.asarray(obs),
        next_obs=jnp.asarray(obs + 0.01),
        action=jnp.zeros((rows, steps, task.policy.action_dim), jnp.float32),
        reward=jnp.asarray(np.repeat(np.asarray(rewards, np.float32)[:, None], steps, axis=1)),
        done=jnp.asarray(zeros),
        truncation=jnp.asarray(zeros),
        valid=jnp.asarray(valid, jnp.float32),
        state_desc=jnp.zeros((rows, steps, 1), jnp.float32),
    )


@pytest.fixture(scope="module", name="told")
def fixture_told(task):
    """Two ask/tell rounds through a scheduler with fake transitions.

    Round 1: every row reaches measure 0.25 (one elite). Round 2: rows reach
    measures 0.05, 0.15, ..., 0.55; episode 1 ends after 3 steps, episode 4
    after 1 step; rewards ``row - 1.5``.
    """
    scheduler = make(task)
    emitter = scheduler.emitters[0]
    first = scheduler.ask()
    first_info = np.asarray(emitter.state.ask_info["desc_prime"])
    valid = np.ones((6, EPISODE), bool)
    scheduler.tell(
        np.zeros(6, np.float32),
        np.full((6, 1), 0.25, np.float32),
        extras={"transitions": fake_transitions(task, valid, np.ones(6))},
    )
    size_after_first = emitter.buffer_size
    second = scheduler.ask()
    second_info = np.asarray(emitter.state.ask_info["desc_prime"])
    conditioned = np.asarray(emitter.conditioned_policy(np.full((2, 1), 0.25)))
    valid[1, 3:] = False
    valid[4, 1:] = False
    measures = (np.arange(6, dtype=np.float32)[:, None] + 0.5) / 10
    rewards = np.arange(6) - 1.5
    transitions = fake_transitions(task, valid, rewards)
    scheduler.tell(np.arange(6, dtype=np.float32), measures, extras={"transitions": transitions})
    return dict(
        scheduler=scheduler,
        first=first,
        first_info=first_info,
        size_after_first=size_after_first,
        second=second,
        second_info=second_info,
        conditioned=conditioned,
        valid=valid,
        measures=measures,
        rewards=rewards,
        transitions=transitions,
    )


def test_batch_layout_and_desc_prime_of_pg_and_ai_rows(task, told):
    emitter = told["scheduler"].emitters[0]
    assert emitter.batch_size == 6 and emitter.kernel.batch_size == 6
    # Empty archive: distinct fresh policies, no intended descriptor.
    assert told["first"].shape == (6, task.solution_dim)
    assert len({row.tobytes() for row in told["first"]}) == 6
    assert np.all(np.isnan(told["first_info"]))
    assert told["size_after_first"] == 6 * EPISODE
    # One elite at 0.25 (normalised: -0.5): GA rows carry nothing, PG and AI
    # rows its descriptor.
    info = told["second_info"]
    assert info.shape == (6, 1)
    assert np.all(np.isnan(info[GA]))
    np.testing.assert_allclose(info[PG], -0.5)
    np.testing.assert_allclose(info[AI], -0.5)
    # AI rows are the conditioned actor; PG and GA rows stay near the elite.
    second = told["second"]
    np.testing.assert_allclose(second[AI], told["conditioned"], rtol=1e-5, atol=1e-6)
    elite = told["first"][0]  # Every first-round row tied at 0: the first stays.
    for row in second[:4]:
        assert np.abs(row - elite).max() < 1.0
    assert not np.allclose(second[PG], elite)  # trained on the buffer


def test_buffer_holds_exactly_the_valid_steps_with_desc_and_desc_prime(task, told):
    emitter = told["scheduler"].emitters[0]
    valid, start = told["valid"], told["size_after_first"]
    stored = int(valid.sum())
    assert emitter.buffer_size == start + stored
    experience = emitter.kernel_state.buffer.experience
    take = lambda leaf: np.asarray(leaf[0, start : start + stored])  # noqa: E731
    rows = np.nonzero(valid)[0]  # the row of each stored step, in order
    np.testing.assert_array_equal(
        take(experience.transition.obs)[:, 0], np.asarray(told["transitions"].obs)[valid][:, 0]
    )
    # Rewards offset (0) and clipped at 0.
    np.testing.assert_allclose(
        take(experience.transition.rewards), np.maximum(told["rewards"][rows], 0.0)
    )
    desc = 2 * told["measures"] - 1
    np.testing.assert_allclose(take(experience.desc), desc[rows], rtol=1e-6)
    # GA rows: the observed descriptor; PG and AI rows: the intended one (-0.5).
    intended = np.where(np.arange(6)[:, None] < 2, desc, -0.5)
    np.testing.assert_allclose(take(experience.desc_prime), intended[rows], rtol=1e-6)


def test_desc_prime_finds_the_emitters_rows_in_a_larger_batch(told):
    kernel = told["scheduler"].emitters[0].kernel
    rng = np.random.default_rng(0)
    solutions = jnp.asarray(rng.normal(size=(10, 7)), jnp.float32)
    measures = jnp.asarray(rng.uniform(size=(10, 1)), jnp.float32)
    asked = jnp.asarray([[np.nan], [np.nan], [0.1], [0.2], [0.3], [0.4]], jnp.float32)
    rows = np.array([0, 2, 3, 5, 8, 9])  # other emitters' rows in between
    own = np.zeros(10, bool)
    own[rows] = True
    feedback = EmitterFeedback(
        solution=solutions[rows],
        objective=jnp.zeros(6),
        measures=measures[rows],
        status=None,
        value=None,
        valid=None,
        extras={},
        ask_info={"desc_prime": asked},
        batch={"solution": solutions, "measures": measures, "own": jnp.asarray(own)},
    )
    desc = kernel.normalize(measures)
    got = np.asarray(kernel.batch_desc_prime(feedback, desc))
    expected = np.asarray(desc).copy()
    expected[rows[2:]] = np.asarray(asked[2:])
    np.testing.assert_allclose(got, expected)


def test_reward_relabelling_is_the_formula(told):
    kernel = told["scheduler"].emitters[0].kernel
    rng = np.random.default_rng(1)
    n = 5
    items = kernel.buffer.sample(
        told["scheduler"].emitters[0].kernel_state.buffer, jax.random.key(3)
    )
    rewards = rng.uniform(0, 2, size=items.transition.rewards.shape).astype(np.float32)
    desc = rng.uniform(-1, 1, size=items.desc.shape).astype(np.float32)
    desc_prime = rng.uniform(-1, 1, size=items.desc.shape).astype(np.float32)
    items = items._replace(
        transition=items.transition._replace(rewards=jnp.asarray(rewards)),
        desc=jnp.asarray(desc),
        desc_prime=jnp.asarray(desc_prime),
    )
    batch = kernel.conditioned_batch(items)
    expected = rewards * np.exp(-np.linalg.norm(desc - desc_prime, axis=-1) / 0.1)
    np.testing.assert_allclose(batch.rewards, expected, rtol=1e-5)
    np.testing.assert_allclose(descriptor_reward(rewards[:n], desc[:n], desc[:n], 0.1), rewards[:n])
    # The critic and actor see [s, desc_prime].
    np.testing.assert_array_equal(batch.obs[:, -1:], desc_prime)
    np.testing.assert_array_equal(batch.next_obs[:, -1:], desc_prime)
    np.testing.assert_array_equal(batch.obs[:, :-1], items.transition.obs)
    # Offset then clip.
    shifted = DCRLMEKernel(
        policy=kernel.policy, measure_ranges=((0.0, 1.0),), reward_offset=1.0, **SETTINGS
    )
    np.testing.assert_allclose(
        shifted.transform_rewards(jnp.asarray([-3.0, -0.5, 2.0])), [0.0, 0.5, 3.0]
    )
    unclipped = DCRLMEKernel(
        policy=kernel.policy, measure_ranges=((0.0, 1.0),), clip_rewards=False, **SETTINGS
    )
    np.testing.assert_allclose(unclipped.transform_rewards(jnp.asarray([-3.0, 2.0])), [-3.0, 2.0])


def test_critic_loss_falls_on_a_fixed_batch(task, told):
    # Without discount the critics' target is the relabelled reward itself.
    kernel = DCRLMEKernel(
        policy=task.policy,
        measure_ranges=task.measure_ranges,
        **{
            **SETTINGS,
            "discount": 0.0,
            "critic_learning_rate": 1e-2,
            "critic_hidden_layer_size": (32,),
        },
    )
    items = kernel.buffer.sample(
        told["scheduler"].emitters[0].kernel_state.buffer, jax.random.key(4)
    )
    rng = np.random.default_rng(2)
    items = items._replace(
        desc=jnp.asarray(rng.uniform(-1, 1, items.desc.shape), jnp.float32),
        transition=items.transition._replace(
            rewards=jnp.asarray(rng.uniform(0.5, 1.5, items.transition.rewards.shape), jnp.float32)
        ),
    )
    batch = kernel.conditioned_batch(items)
    state = kernel.td3.init(jax.random.key(0), observation_size=task.policy.obs_dim + 1)
    losses = []
    for i in range(150):
        state, metrics = kernel.td3.update(state, batch, jax.random.key(i))
        losses.append(float(metrics["critic_loss"]))
    assert np.all(np.isfinite(losses))
    assert losses[-1] < 0.2 * losses[0]


def test_actor_fold_acts_as_the_conditioned_actor(task, told):
    kernel = told["scheduler"].emitters[0].kernel
    params = kernel.td3.init(
        jax.random.key(5), observation_size=task.policy.obs_dim + 1
    ).policy_params
    rng = np.random.default_rng(3)
    obs = jnp.asarray(rng.normal(size=(20, task.policy.obs_dim)), jnp.float32)
    for d_hat in (-0.7, 0.0, 0.9):
        d = jnp.full((1,), d_hat, jnp.float32)
        folded = kernel.fold(params, d)
        assert folded.shape == (task.solution_dim,)
        expected = kernel.td3.policy.apply(
            params, jnp.concatenate([obs, jnp.broadcast_to(d, (20, 1))], axis=-1)
        )
        np.testing.assert_allclose(task.policy.apply(folded, obs), expected, rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module", name="runs")
def fixture_runs(task):
    """The same 4-iteration run in the fused loop and in the ask/tell loop."""
    fused = make(task)
    result = fused.run(task, 4, seed=2)
    python = make(task)
    python.run(task, 4, seed=2, fused=False)
    return fused, python, result


def test_ask_tell_and_fused_loops_agree(runs):
    fused, python, result = runs
    np.testing.assert_allclose(
        fused.archive.data("objective"), python.archive.data("objective"), rtol=1e-5
    )
    np.testing.assert_allclose(
        fused.archive.data("solution"), python.archive.data("solution"), rtol=1e-4, atol=1e-5
    )
    assert fused.emitters[0].buffer_size == python.emitters[0].buffer_size
    np.testing.assert_allclose(
        fused.emitters[0].critic_loss, python.emitters[0].critic_loss, rtol=1e-3
    )
    assert list(result.metrics["evaluations"]) == [6, 12, 18, 24]


def test_a_short_run_improves_the_qd_score(runs):
    qd_score = list(runs[2].metrics["qd_score"])
    assert qd_score[-1] > qd_score[0]


def test_dcg_me_counts_its_actor_evaluations(task):
    scheduler = make(task, ai_batch_size=0, actor_evaluations=3, evaluate=task)
    emitter = scheduler.emitters[0]
    assert emitter.batch_size == 4 and emitter.kernel.evaluations_per_tell == 3
    result = scheduler.run(task, 2, seed=0)
    assert list(result.metrics["evaluations"]) == [7, 14]
    assert emitter.evaluations == 6
    # The actor episodes are stored too: more steps than the batch rows alone
    # could give.
    assert emitter.buffer_size > 2 * 4 * EPISODE


@pytest.mark.parametrize(
    "settings, error, match",
    [
        (dict(ga_batch_size=-1), ValueError, "ga_batch_size"),
        (dict(pg_batch_size=1.5), TypeError, "pg_batch_size"),
        (dict(ai_batch_size=True), TypeError, "ai_batch_size"),
        (
            dict(ga_batch_size=0, pg_batch_size=0, ai_batch_size=0),
            ValueError,
            "ga_batch_size \\+ pg_batch_size \\+ ai_batch_size",
        ),
        (dict(lengthscale=0.0), ValueError, "lengthscale"),
        (dict(iso_sigma=-1.0), ValueError, "iso_sigma"),
        (dict(line_sigma=float("nan")), ValueError, "line_sigma"),
        (dict(num_critic_training_steps=-1), ValueError, "num_critic_training_steps"),
        (dict(num_pg_training_steps=-2), ValueError, "num_pg_training_steps"),
        (dict(replay_buffer_size=0), ValueError, "replay_buffer_size"),
        (dict(training_batch_size=600), ValueError, "training_batch_size"),
        (dict(critic_learning_rate=-1e-3), ValueError, "critic_learning_rate"),
        (dict(actor_learning_rate="a"), TypeError, "actor_learning_rate"),
        (dict(policy_learning_rate=-1.0), ValueError, "policy_learning_rate"),
        (dict(noise_clip=-0.1), ValueError, "noise_clip"),
        (dict(policy_noise=-0.1), ValueError, "policy_noise"),
        (dict(discount=-0.5), ValueError, "discount"),
        (dict(reward_scaling=-1.0), ValueError, "reward_scaling"),
        (dict(soft_tau_update=2.0), ValueError, "soft_tau_update"),
        (dict(policy_delay=0), ValueError, "policy_delay"),
        (dict(reward_offset=float("inf")), ValueError, "reward_offset"),
        (dict(clip_rewards=1), TypeError, "clip_rewards"),
        (dict(actor_evaluations=-1), ValueError, "actor_evaluations"),
        (dict(actor_evaluations=2), ValueError, "evaluate"),
        (dict(descriptor_sigma=-1.0), ValueError, "descriptor_sigma"),
        (dict(measure_ranges=((1.0, 0.0),)), ValueError, "measure_ranges"),
        (dict(measure_ranges=((0.0, 1.0), (0.0, 1.0))), ValueError, "measure_ranges"),
        (dict(policy=object()), TypeError, "MLPPolicy"),
    ],
)
def test_errors(task, settings, error, match):
    archive = archive_of(task)
    settings = {"policy": task.policy, **SETTINGS, **settings}
    with pytest.raises(error, match=match):
        DCRLMEEmitter(archive, **settings)


def test_errors_that_need_a_task(task):
    archive = archive_of(task)
    plain = brax_tasks.create("hopper_uni", episode_length=EPISODE, hidden_layer_sizes=(4,))
    with pytest.raises(ValueError, match="return_transitions"):
        DCRLMEEmitter(archive, policy=task.policy, actor_evaluations=2, evaluate=plain, **SETTINGS)
    other = brax_tasks.create("hopper_uni", episode_length=EPISODE, hidden_layer_sizes=(5,))
    with pytest.raises(ValueError, match="solution_dim"):
        DCRLMEEmitter(archive, policy=other.policy, **SETTINGS)
    assert DCRLMEKernel(policy=task.policy, measure_ranges=((0, 1),)) == DCRLMEKernel(
        policy=task.policy, measure_ranges=((0.0, 1.0),)
    )
