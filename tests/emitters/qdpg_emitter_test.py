"""Tests of QDPGEmitter (QDPG) on a tiny brax task: the novelty reward and the
novelty archive against brute force, its batch, its shared replay buffer, both
critics, the policy-gradient offspring, and equal runs in every loop."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.archives import GridArchive
from ribsax.emitters import QDPGEmitter, QDPGKernel
from ribsax.emitters._qdpg_emitter import insert_state_descriptors, novelty_reward
from ribsax.schedulers import Scheduler
from ribsax.tasks import brax as brax_tasks

EPISODE = 10
SETTINGS = dict(
    quality_batch_size=3,
    diversity_batch_size=3,
    ga_batch_size=2,
    num_quality_critic_training_steps=6,
    num_diversity_critic_training_steps=6,
    num_pg_training_steps=4,
    replay_buffer_size=500,
    critic_hidden_layer_size=(8,),
    training_batch_size=16,
    greedy_learning_rate=1e-2,
    archive_max_size=50,
)
BATCH = 8


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
    emitter = QDPGEmitter(archive, policy=task.policy, seed=seed, **{**SETTINGS, **settings})
    return Scheduler(archive, [emitter])


def fake_transitions(task, valid, reward=1.0, state_desc=None):
    """Transitions of ``valid.shape`` = (rows, steps), obs = row / 10 + step / 100."""
    rows, steps = valid.shape
    code = (np.arange(rows)[:, None] / 10 + np.arange(steps)[None] / 100).astype(np.float32)
    obs = np.repeat(code[..., None], task.policy.obs_dim, axis=-1)
    zeros = np.zeros((rows, steps), np.float32)
    if state_desc is None:
        state_desc = code[..., None]
    return brax_tasks.Transition(
        obs=jnp.asarray(obs),
        next_obs=jnp.asarray(obs + 0.01),
        action=jnp.zeros((rows, steps, task.policy.action_dim), jnp.float32),
        reward=jnp.full((rows, steps), reward, jnp.float32),
        done=jnp.asarray(zeros),
        truncation=jnp.asarray(zeros),
        valid=jnp.asarray(valid, jnp.float32),
        state_desc=jnp.asarray(state_desc, jnp.float32),
    )


def tell_fake(emitter, archive, transitions):
    solutions = emitter.ask()
    objective = np.zeros(len(solutions), np.float32)
    measures = np.full((len(solutions), 1), 0.5, np.float32)
    add_info = archive.add(solutions, objective, measures)
    emitter.tell(solutions, objective, measures, add_info, transitions=transitions)
    return solutions


# ---------------------------------------------------------------- novelty
def brute_force_novelty(slots, inserted, queries, k, scaling):
    stored = slots[: min(inserted, len(slots))]
    out = []
    for q in queries:
        d2 = sorted(float(np.sum((q - s) ** 2)) for s in stored)[:k]
        out.append(scaling * np.mean(d2) if d2 else 0.0)
    return np.array(out)


def brute_force_insert(slots, inserted, candidates, mask, threshold):
    """The documented rule, one candidate at a time."""
    slots = slots.copy()
    size = len(slots)
    before = slots[: min(inserted, size)].copy()
    start, new = inserted % size, []
    for x, m in zip(candidates, mask):
        if not m:
            continue
        others = list(before) + new[-size:]
        if others and min(np.linalg.norm(np.asarray(others) - x, axis=1)) <= threshold:
            continue
        slots[(start + len(new)) % size] = x
        new.append(x)
    return slots, inserted + len(new)


@pytest.mark.parametrize("inserted", [0, 3, 12, 25])
def test_novelty_reward_equals_brute_force_knn(inserted):
    rng = np.random.default_rng(inserted)
    slots = rng.normal(size=(20, 3)).astype(np.float32)
    queries = rng.normal(size=(7, 3)).astype(np.float32)
    for k, scaling in ((5, 1.0), (1, 2.5), (30, 0.5)):
        got = novelty_reward(
            jnp.asarray(slots), jnp.int32(inserted), jnp.asarray(queries), k, scaling
        )
        expected = brute_force_novelty(slots, inserted, queries, k, scaling)
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-6)


def test_novelty_archive_insertion_equals_brute_force():
    rng = np.random.default_rng(0)
    size, threshold = 15, 0.1
    insert = jax.jit(insert_state_descriptors)
    slots = np.zeros((size, 2), np.float32)
    inserted = 0
    got_slots, got_inserted = jnp.asarray(slots), jnp.int32(0)
    counts = []
    # Batches of points in a small square (many within the threshold of each
    # other), repeated points, masked-out points, and a batch that inserts more
    # than the archive holds (it wraps within one call).
    batches = [rng.uniform(0, 0.4, size=(30, 2)) for _ in range(3)]
    batches.append(np.repeat(batches[0][:5], 2, axis=0))
    batches.append(rng.uniform(0, 10, size=(40, 2)))
    for candidates in batches:
        candidates = candidates.astype(np.float32)
        mask = rng.uniform(size=len(candidates)) < 0.8
        slots, inserted = brute_force_insert(slots, inserted, candidates, mask, threshold)
        got_slots, got_inserted = insert(
            got_slots, got_inserted, jnp.asarray(candidates), jnp.asarray(mask), threshold
        )
        assert int(got_inserted) == inserted
        np.testing.assert_array_equal(np.asarray(got_slots), slots)
        counts.append(inserted)
    # Some candidates were rejected, some accepted, and the archive wrapped.
    assert 0 < counts[0] < 30 * 0.8 and counts[3] == counts[2] and counts[-1] > counts[3] + size


# ---------------------------------------------------------------- emitter
VALID = np.ones((BATCH, EPISODE), bool)
VALID[1, 3:] = False  # episode 1 ended after 3 steps
VALID[4, 1:] = False  # episode 4 after 1 step
#: State descriptors of the valid steps, 0.2 apart (all new); the padding's far
#: away. They grow with the observations (``obs = desc / 20``).
CODE = 2.0 * np.arange(BATCH)[:, None] + 0.2 * np.arange(EPISODE)[None]


@pytest.fixture(scope="module", name="fed")
def fixture_fed(task):
    """An emitter told 8 times the same transitions (invalid steps and all), what
    it held after the first tell, and its last ask."""
    archive = archive_of(task)
    emitter = QDPGEmitter(archive, policy=task.policy, seed=0, **SETTINGS)
    state_desc = np.where(VALID, CODE, 100.0)[..., None]
    transitions = fake_transitions(task, VALID, state_desc=state_desc)
    solutions = tell_fake(emitter, archive, transitions)
    first = dict(
        solutions=solutions,
        buffer_size=emitter.buffer_size,
        experience=jax.device_get(emitter.kernel_state.buffer.experience),
        inserted=int(emitter.kernel_state.inserted),
        state_descriptors=emitter.state_descriptors,
    )
    for _ in range(7):
        tell_fake(emitter, archive, transitions)
    last = emitter.ask()
    return emitter, archive, transitions, first, last


def test_buffer_and_novelty_archive_receive_exactly_the_valid_steps(fed):
    _, _, transitions, first, _ = fed
    stored = int(VALID.sum())
    assert first["buffer_size"] == stored  # one buffer for both learners
    experience = first["experience"]
    obs = np.asarray(experience.obs[0, :stored, 0])
    np.testing.assert_array_equal(obs, np.asarray(transitions.obs)[VALID][:, 0])
    descs = np.asarray(experience.next_state_desc[0, :stored, 0])
    np.testing.assert_allclose(descs, CODE[VALID], rtol=1e-6)
    # Every valid descriptor enters the novelty archive, in order, the last 50
    # of them kept (64 valid steps); none of the padding's.
    assert stored == 64 and first["inserted"] == stored
    expected = np.zeros(50)
    for i, c in enumerate(CODE[VALID]):
        expected[i % 50] = c
    np.testing.assert_allclose(first["state_descriptors"][:, 0], expected, rtol=1e-6)


def test_batch_layout(task, fed):
    emitter, archive, _, first, batch = fed
    # Empty archive: freshly initialised, distinct policies.
    assert first["solutions"].shape == (BATCH, task.solution_dim)
    assert len({row.tobytes() for row in first["solutions"]}) == BATCH
    quality = np.asarray(emitter.quality_greedy_actor)
    diversity = np.asarray(emitter.diversity_greedy_actor)
    assert batch.shape == (BATCH, task.solution_dim)
    np.testing.assert_array_equal(batch[2], quality)  # quality offspring, then its actor
    np.testing.assert_array_equal(batch[5], diversity)  # diversity offspring, then its actor
    assert not np.allclose(quality, diversity)
    elites = archive.data("solution")
    for row in np.concatenate([batch[:2], batch[3:5], batch[6:]]):
        # Offspring stay near elites but are none of them.
        distances = np.abs(elites - row).max(axis=1)
        assert 0 < np.min(distances) < 1.0


def test_policy_gradient_offspring_raise_their_critic_value(task, fed):
    # The fed state on an archive holding one elite, with one policy-gradient
    # offspring per learner (and their greedy actors): each offspring's Q value
    # under its own learner's critic, on the buffer's states, beats its parent's.
    emitter = fed[0]
    archive = GridArchive(
        solution_dim=task.solution_dim, dims=[1], ranges=task.measure_ranges, dtype=np.float32
    )
    parent = np.asarray(fed[1].data("solution")[0])
    archive.add(parent[None], np.zeros(1, np.float32), np.full((1, 1), 0.5, np.float32))
    pg = QDPGEmitter(
        archive,
        policy=task.policy,
        **{
            **SETTINGS,
            "quality_batch_size": 2,
            "diversity_batch_size": 2,
            "ga_batch_size": 0,
            "num_pg_training_steps": 20,
            "policy_learning_rate": 1e-2,
        },
    )
    pg.state = emitter.state
    offspring = pg.ask()
    state = pg.kernel_state
    obs = state.buffer.experience.obs[0, : pg.buffer_size]

    def value(flat, learner):
        actions = task.policy.apply(jnp.asarray(flat), obs)
        q = pg.kernel.td3.critic.apply(learner.critic_params, obs, actions)
        return float(jnp.mean(q[..., 0]))

    for row, learner in ((0, state.quality), (2, state.diversity)):
        assert value(offspring[row], learner) > value(parent, learner)
        assert not np.allclose(offspring[row], parent)
    # Each follows its own critic: the two offspring differ.
    assert not np.allclose(offspring[0], offspring[2])


@pytest.mark.slow
def test_each_critic_learns_its_own_reward(task):
    archive = archive_of(task)
    # Without discount each critic's target is its reward: -1 from the task, and
    # for the diversity critic the novelty of descriptors (0, 0) and (1, 0) in an
    # archive holding both: scaling · mean(0, 1) = 1.
    emitter = QDPGEmitter(
        archive,
        policy=task.policy,
        seed=0,
        **{
            **SETTINGS,
            "discount": 0.0,
            "critic_learning_rate": 1e-2,
            "num_quality_critic_training_steps": 40,
            "num_diversity_critic_training_steps": 40,
            "novelty_scaling_ratio": 2.0,
        },
    )
    state_desc = np.zeros((BATCH, EPISODE, 1), np.float32)
    state_desc[::2] = 1.0
    transitions = fake_transitions(
        task, np.ones((BATCH, EPISODE), bool), reward=-1.0, state_desc=state_desc
    )
    losses = []
    for _ in range(5):
        tell_fake(emitter, archive, transitions)
        losses.append(np.asarray(emitter.kernel_state.critic_loss))
    np.testing.assert_array_equal(np.sort(emitter.state_descriptors[:, 0]), [0.0, 1.0])
    assert np.all(losses[-1] < 0.2 * losses[0])
    state = emitter.kernel_state
    obs, actions = transitions.obs.reshape(-1, task.policy.obs_dim), transitions.action
    actions = actions.reshape(-1, task.policy.action_dim)
    critic = emitter.kernel.td3.critic
    q_quality = np.asarray(critic.apply(state.quality.critic_params, obs, actions))
    q_diversity = np.asarray(critic.apply(state.diversity.critic_params, obs, actions))
    np.testing.assert_allclose(q_quality.mean(), -1.0, atol=0.25)
    np.testing.assert_allclose(q_diversity.mean(), 1.0, atol=0.25)


@pytest.mark.slow
def test_ask_tell_and_fused_loops_agree(task):
    iterations = 3
    fused = make(task)
    result = fused.run(task, iterations, seed=2)
    python = make(task)
    python.run(task, iterations, seed=2, fused=False)
    np.testing.assert_allclose(
        fused.archive.data("objective"), python.archive.data("objective"), rtol=1e-5
    )
    np.testing.assert_allclose(
        fused.archive.data("solution"), python.archive.data("solution"), rtol=1e-4, atol=1e-5
    )
    a, b = fused.emitters[0], python.emitters[0]
    assert a.buffer_size == b.buffer_size
    np.testing.assert_allclose(a.state_descriptors, b.state_descriptors)
    np.testing.assert_allclose(
        np.asarray(a.kernel_state.critic_loss), np.asarray(b.kernel_state.critic_loss), rtol=1e-3
    )
    assert list(result.metrics["evaluations"]) == [BATCH, 2 * BATCH, 3 * BATCH]


def test_errors(task):
    archive = archive_of(task)
    with pytest.raises(TypeError, match="MLPPolicy"):
        QDPGEmitter(archive, policy=object())
    with pytest.raises(ValueError, match="quality_batch_size"):
        QDPGEmitter(archive, policy=task.policy, quality_batch_size=-1)
    with pytest.raises(ValueError, match="must be positive, got 0"):
        QDPGEmitter(
            archive,
            policy=task.policy,
            quality_batch_size=0,
            diversity_batch_size=0,
            ga_batch_size=0,
        )
    with pytest.raises(ValueError, match="num_nearest_neighbors"):
        QDPGEmitter(archive, policy=task.policy, num_nearest_neighbors=0)
    with pytest.raises(ValueError, match="archive_max_size"):
        QDPGEmitter(archive, policy=task.policy, archive_max_size=0)
    with pytest.raises(ValueError, match="archive_acceptance_threshold"):
        QDPGEmitter(archive, policy=task.policy, archive_acceptance_threshold=-0.1)
    with pytest.raises(ValueError, match="policy_delay"):
        QDPGEmitter(archive, policy=task.policy, policy_delay=0)
    with pytest.raises(ValueError, match="sample_size"):
        QDPGEmitter(archive, policy=task.policy, replay_buffer_size=10, training_batch_size=20)
    assert QDPGKernel(policy=task.policy) == QDPGKernel(policy=task.policy)
    emitter = QDPGEmitter(archive, policy=task.policy, **SETTINGS)
    # A task without transitions: the tell says what to do.
    solutions = emitter.ask()
    objective = np.zeros(BATCH, np.float32)
    measures = np.full((BATCH, 1), 0.5, np.float32)
    with pytest.raises(ValueError, match="return_transitions=True"):
        emitter.tell(solutions, objective, measures, archive.add(solutions, objective, measures))
    # State descriptors of another size than the archive's measures.
    transitions = fake_transitions(
        task, np.ones((BATCH, EPISODE), bool), state_desc=np.zeros((BATCH, EPISODE, 3))
    )
    with pytest.raises(ValueError, match="measure dimension 1"):
        tell_fake(emitter, archive, transitions)
