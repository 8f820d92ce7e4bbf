"""Tests of PBTMEEmitter (ME-PBT) on a point-mass environment: its batch, the
exploit/explore step (copies of agents and buffers, archive elites, resampled
hyperparameters), the budget, equal runs in the ask/tell and fused loops, and the
agents sharded over two devices (in a subprocess with forced host devices)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.archives import GridArchive
from ribsax.emitters import PBTMEEmitter, PBTMEKernel
from ribsax.rl import evaluate_policy, population_mesh
from ribsax.rl._pbt_sac import PBT_SAC_RANGES
from ribsax.rl._pbt_td3 import PBT_TD3_RANGES
from ribsax.schedulers import Scheduler
from ribsax.tasks.brax import MLPPolicy
from tests.rl._point_env import make_point_env
from tests.rl._population_devices import FAST_COMPILE, run_program

EPISODE = 5
POLICY = MLPPolicy(obs_dim=2, action_dim=2, hidden_layer_sizes=(4,))
TRAIN_ENV = make_point_env(batch_size=2, episode_length=EPISODE)
EVAL_ENV = make_point_env(batch_size=1, episode_length=EPISODE, auto_reset=False)
SETTINGS = dict(
    num_agents=4,
    ga_batch_size=2,
    num_training_iterations=3,
    grad_updates_per_step=1,
    replay_buffer_size=64,
    training_batch_size=4,
    critic_hidden_layer_size=(4,),
    fraction_best_to_replace_from=0.25,
    fraction_to_replace_from_best=0.25,
    fraction_to_replace_from_samples=0.5,
)
#: Training steps per tell: 4 agents x 2 environments x 3 iterations.
STEPS = 24
BATCH = 6


def evaluate(solutions, key):
    """Return of one episode of each policy, and its final position."""

    def one(flat, k):
        params = POLICY.unravel(flat)
        returns, transitions = evaluate_policy(
            EVAL_ENV, lambda obs, _: POLICY.apply_tree(params, obs), k
        )
        return returns[0], jnp.clip(transitions.next_state_desc[-1, 0], -1.0, 1.0)

    objective, measures = jax.vmap(one)(solutions, jax.random.split(key, solutions.shape[0]))
    return objective, measures, {}


evaluate = jax.jit(evaluate)


def archive_of(dims=4):
    return GridArchive(
        solution_dim=POLICY.num_params,
        dims=[dims, dims],
        ranges=[(-1.0, 1.0), (-1.0, 1.0)],
        dtype=np.float32,
        seed=1,
    )


def emitter_of(archive, seed=0, **settings):
    return PBTMEEmitter(
        archive, policy=POLICY, env=TRAIN_ENV, seed=seed, **{**SETTINGS, **settings}
    )


def tell(emitter, archive, solutions, objective, key=0):
    _, measures, _ = evaluate(jnp.asarray(solutions), jax.random.key(key))
    measures = np.asarray(measures)
    objective = np.asarray(objective, np.float32)
    add_info = archive.add(solutions, objective, measures)
    emitter.tell(solutions, objective, measures, add_info)


def to_numpy(x):
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    return np.asarray(x)


def snapshot(emitter):
    state = emitter.kernel_state.population
    return jax.tree.map(to_numpy, (state.agents, state.buffers))


def head(tree, n):
    """The first ``n`` items of a buffer's experience."""
    return jax.tree.map(lambda x: x[0, :n], tree)


def row(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


def assert_trees_equal(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(x, y)


def trees_equal(a, b):
    return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def check_ranges(hyper, ranges):
    for name, low, high in ranges:
        values = np.asarray(hyper[name])
        assert np.all((values >= low) & (values <= high)), name


@pytest.fixture(
    scope="module", name="replaced", params=["sac", pytest.param("td3", marks=pytest.mark.slow)]
)
def fixture_replaced(request):
    """An emitter without gradient updates (its networks only change by
    replacement) told twice; what it held before and after the second tell, in
    which agent 2 is the best, agent 0 the worst and agents 1 and 3 in between.
    Also the first ask's solutions, made on an empty archive."""
    archive = archive_of()
    emitter = emitter_of(archive, agent=request.param, grad_updates_per_step=0)
    solutions = emitter.ask()
    first = solutions
    tell(emitter, archive, solutions, np.arange(BATCH))
    before = snapshot(emitter)
    hyper_before = emitter.hyperparameters
    solutions = emitter.ask()
    np.testing.assert_array_equal(solutions[-4:], emitter.agents)
    elites = np.asarray(archive.data("solution"))
    fitness = np.array([0.0, 1.0, 5.0, 2.0])  # agents 0..3
    tell(emitter, archive, solutions, np.concatenate([[0.5, 0.5], fitness]), key=1)
    elites = np.concatenate([elites, np.asarray(archive.data("solution"))])
    return request.param, emitter, before, hyper_before, snapshot(emitter), elites, first


def test_worst_agent_becomes_a_copy_of_the_best_with_its_buffer(replaced):
    _, emitter, (agents0, buffers0), _, (agents1, buffers1), _, _ = replaced
    kernel = emitter.kernel
    # Networks and optimiser states are the best agent's (no gradient update ran).
    for field in ("policy_params", "critic_params", "target_critic_params", "critic_opt_state"):
        assert_trees_equal(row(getattr(agents1, field), 0), row(getattr(agents0, field), 2))
    assert not trees_equal(row(agents1.critic_params, 0), row(agents0.critic_params, 0))
    # The buffer too: the best agent's stored transitions, then the copy's own.
    size = kernel.population.buffer.size
    held = int(size(row(buffers0, 2)))
    assert held == STEPS // 4 and int(size(row(buffers1, 0))) == held + STEPS // 4
    assert_trees_equal(
        head(row(buffers1.experience, 0), held), head(row(buffers0.experience, 2), held)
    )
    assert not np.array_equal(
        row(buffers1.experience, 0).obs[0, :held], row(buffers0.experience, 0).obs[0, :held]
    )
    # The best agent is untouched; the copy plays with its own key.
    assert_trees_equal(row(agents1.policy_params, 2), row(agents0.policy_params, 2))
    assert not np.array_equal(agents1.key[0], agents1.key[2])


def test_middle_agents_take_archive_elites_and_keep_their_critics(replaced):
    agent, emitter, (agents0, buffers0), _, (agents1, buffers1), elites, _ = replaced
    solutions = emitter.agents
    for i in (1, 3):
        assert np.any(np.all(elites == solutions[i], axis=1)), i
        assert_trees_equal(row(agents1.critic_params, i), row(agents0.critic_params, i))
        held = int(emitter.kernel.population.buffer.size(row(buffers0, i)))
        assert_trees_equal(
            head(row(buffers1.experience, i), held), head(row(buffers0.experience, i), held)
        )
    if agent == "td3":
        assert_trees_equal(agents1.target_policy_params, agents1.policy_params)
    else:  # SAC keeps its own scale head.
        assert_trees_equal(
            row(agents1.policy_params["params"]["scale"], 1),
            row(agents0.policy_params["params"]["scale"], 1),
        )


def test_replaced_agents_get_hyperparameters_resampled_in_the_ranges(replaced):
    agent, emitter, _, before, _, _, _ = replaced
    after = emitter.hyperparameters
    ranges = PBT_SAC_RANGES if agent == "sac" else PBT_TD3_RANGES
    check_ranges(after, ranges)
    check_ranges(before, ranges)
    for name, _, _ in ranges:
        assert after[name][2] == before[name][2]  # the best keeps its own
        for i in (0, 1, 3):
            assert after[name][i] != before[name][i], (name, i)


@pytest.fixture(scope="module", name="runs")
def fixture_runs():
    """The same SAC run of three iterations in the fused and the ask/tell loop."""
    out = {}
    for fused in (True, False):
        archive = archive_of()
        scheduler = Scheduler(archive, [emitter_of(archive, seed=3)])
        out[fused] = (scheduler, scheduler.run(evaluate, 3, seed=2, fused=fused))
    return out


def test_batch_layout_and_training(runs):
    scheduler, _ = runs[True]
    emitter = scheduler.emitters[0]
    assert emitter.kernel.batch_size == BATCH
    solutions = scheduler.ask()
    assert solutions.shape == (BATCH, POLICY.num_params)
    np.testing.assert_array_equal(solutions[2:], emitter.agents)
    # GA offspring stay near elites.
    elites = scheduler.archive.data("solution")
    for offspring in solutions[:2]:
        assert np.min(np.abs(elites - offspring).max(axis=1)) < 1.0
    # Each agent collected its own transitions: three tells of 3 steps x 2 envs.
    np.testing.assert_array_equal(emitter.buffer_sizes, [18] * 4)
    steps = np.asarray(emitter.kernel_state.population.agents.steps)
    np.testing.assert_array_equal(steps, [9] * 4)  # 3 tells x 3 iterations x 1 update


def test_fresh_policies_while_the_archive_is_empty(replaced):
    solutions = replaced[-1]
    assert len({r.tobytes() for r in solutions}) == BATCH
    # GA rows freshly initialised (biases at zero); agents' policies too.
    for flat in solutions:
        params = POLICY.unravel(jnp.asarray(flat))
        assert all(float(jnp.abs(b).max()) == 0.0 for b in jax.tree.leaves(params) if b.ndim == 1)


def test_archive_policies_start_with_fresh_adam_moments(runs):
    emitter = runs[True][0].emitters[0]
    kernel, agents = emitter.kernel, emitter.kernel_state.population.agents
    elites = jnp.asarray(runs[True][0].archive.data("solution")[:2])
    rows = jnp.array([3, 1])
    new = kernel._with_policies(agents, rows, elites)
    np.testing.assert_array_equal(kernel.agent_solutions(new)[np.array([3, 1])], elites)
    moments = jax.tree.leaves(agents.policy_opt_state.mu)
    assert all(np.all(np.any(np.asarray(m) != 0, axis=tuple(range(1, m.ndim)))) for m in moments)
    for before, after in zip(moments, jax.tree.leaves(new.policy_opt_state.mu)):
        after = np.asarray(after)
        assert not np.any(after[np.array([1, 3])])
        np.testing.assert_array_equal(after[np.array([0, 2])], np.asarray(before)[np.array([0, 2])])


def test_training_steps_count_in_the_budget(runs):
    for fused in (True, False):
        scheduler, result = runs[fused]
        assert list(result.metrics["evaluations"]) == [(BATCH + STEPS) * i for i in (1, 2, 3)]
        assert scheduler.emitters[0].evaluations == 3 * STEPS
    assert scheduler.emitters[0].kernel.evaluations_per_tell == STEPS


def test_ask_tell_and_fused_loops_agree(runs):
    (fused, _), (python, _) = runs[True], runs[False]
    for field in ("objective", "solution"):
        np.testing.assert_allclose(
            fused.archive.data(field), python.archive.data(field), rtol=1e-4, atol=1e-5
        )
    np.testing.assert_allclose(
        fused.emitters[0].agents, python.emitters[0].agents, rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"agent": "ppo"}, "agent must be one of"),
        ({"num_agents": 1}, "num_agents must be an int >= 2"),
        ({"num_training_iterations": 0}, "num_training_iterations must be"),
        ({"grad_updates_per_step": -1}, "grad_updates_per_step must be"),
        ({"iso_sigma": -0.1}, "iso_sigma must be non-negative"),
        ({"fraction_to_replace_from_best": 1.5}, "fraction_to_replace_from_best must be"),
        ({"fraction_best_to_replace_from": 0.1}, "must each give at least one"),
        ({"fraction_to_replace_from_samples": 0.75}, "must not overlap"),
        ({"training_batch_size": 128}, "must not exceed replay_buffer_size"),
        ({"soft_tau_update": 2.0}, "soft_tau_update must be in"),
        ({"agent": "td3", "policy_delay": 0}, "policy_delay must be"),
        ({"alpha_init": 0.0}, "alpha_init must be positive"),
    ],
)
def test_bad_arguments_raise(settings, message):
    with pytest.raises(ValueError, match=message):
        emitter_of(archive_of(), **settings)


def test_bad_policy_env_or_archive_raise():
    archive = archive_of()
    with pytest.raises(TypeError, match="policy must be a ribsax.tasks.brax.MLPPolicy"):
        PBTMEEmitter(archive, policy="mlp", env=TRAIN_ENV)
    with pytest.raises(TypeError, match="env must be a ribsax.tasks.brax.BraxTask"):
        PBTMEEmitter(archive, policy=POLICY, env="walker2d_uni")
    linear = MLPPolicy(obs_dim=2, action_dim=2, hidden_layer_sizes=(4,), final_activation=None)
    with pytest.raises(ValueError, match="final_activation is 'tanh'"):
        PBTMEKernel(policy=linear, env=TRAIN_ENV)
    PBTMEKernel(policy=linear, env=TRAIN_ENV, agent="td3")  # TD3 takes any output
    small = GridArchive(solution_dim=3, dims=[2, 2], ranges=[(-1, 1), (-1, 1)])
    with pytest.raises(ValueError, match="solution_dim"):
        PBTMEEmitter(small, policy=POLICY, env=TRAIN_ENV)


def test_bad_mesh_raises():
    with pytest.raises(TypeError, match="mesh must be a ribsax.rl.population_mesh"):
        emitter_of(archive_of(), mesh=jax.devices())
    with pytest.raises(ValueError, match=r"num_agents \(4\) must be a multiple of .* mesh \(3\)"):
        emitter_of(archive_of(), mesh=population_mesh(jax.devices() * 3))
    with pytest.raises(ValueError, match=r"num_agents \(6\) must be a multiple"):
        PBTMEKernel(
            policy=POLICY,
            env=TRAIN_ENV,
            **{**SETTINGS, "num_agents": 6},
            mesh=population_mesh(jax.devices() * 4),
        )


def check_sharded(result, label="two", iterations=2):
    """The run ``label`` of a ``_population_devices.py`` ME-PBT program kept
    every leaf of the agents' state (agents, environments, buffers) split over
    both devices and the archive's state on one device, and its agents trained
    ``iterations`` times."""
    assert set(result[f"{label}_spans"]) == {2} and result[f"{label}_split"].all()
    assert set(result[f"{label}_archive_spans"]) == {1}
    assert len(result[f"{label}_index"]) > 1
    per_tell = SETTINGS["num_training_iterations"] * TRAIN_ENV.batch_size
    np.testing.assert_array_equal(result[f"{label}_buffer_sizes"], [iterations * per_tell] * 4)
    assert result[f"{label}_evaluations"] == iterations * STEPS


def check_same_runs(result, iterations):
    """Both runs of a ``_population_devices.py`` ME-PBT program: the sharded one
    as :func:`check_sharded` says, with the archive and agents of the one-device
    run."""
    check_sharded(result, "two", iterations)
    assert set(result["one_spans"]) == {1}
    np.testing.assert_array_equal(result["one_index"], result["two_index"])
    names = ("objective", "measures", "solution", "agents", "trials")
    for name in (n for n in names if "one_" + n in result):
        np.testing.assert_allclose(
            result["one_" + name], result["two_" + name], rtol=1e-4, atol=1e-5, err_msg=name
        )
    for name in ("buffer_sizes", "evaluations"):
        np.testing.assert_array_equal(result["one_" + name], result["two_" + name])


def test_agents_stay_sharded_over_two_devices_in_the_ask_tell_loop(tmp_path):
    """With ``mesh=population_mesh()`` over two devices, two iterations of
    ``Scheduler.ask``/``tell`` keep the agents, their environments and buffers
    sharded over both, and the archive on one device."""
    check_sharded(run_program("pbt_me_sharded", 2, tmp_path / "sharded.npz", FAST_COMPILE))


@pytest.mark.slow
def test_agents_sharded_over_two_devices_match_one_device_in_the_ask_tell_loop(tmp_path):
    """The run of the test above, then a pickle round trip of the scheduler
    and one more iteration, give the archive and agents of the same run with
    ``mesh=None``."""
    result = run_program("pbt_me_ask_tell", 2, tmp_path / "ask_tell.npz", FAST_COMPILE)
    check_same_runs(result, 3)


@pytest.mark.slow
def test_agents_sharded_over_two_devices_match_one_device_in_the_fused_loop(tmp_path):
    """The same with two iterations of the fused loop (``Scheduler.run``), then
    one of ``ribsax.functional`` and one of the ask/tell loop; and two trials
    with ``ribsax.run_trials``."""
    check_same_runs(run_program("pbt_me_fused", 2, tmp_path / "fused.npz", FAST_COMPILE), 4)


@pytest.mark.slow
def test_sac_agents_learn_to_balance_the_inverted_pendulum():
    """Learning check: on brax's inverted pendulum (the return is the number of
    steps the pole stays up, 200 at most), four SAC agents trained for 8
    iterations of 500 steps of 4 environments (4 updates per step) act better
    than the first batch's policies (the agents' and the GA's initial ones)."""
    from ribsax.rl import make_env

    train_env = make_env("inverted_pendulum", batch_size=4, episode_length=200)
    eval_env = make_env("inverted_pendulum", batch_size=4, episode_length=200, auto_reset=False)
    policy = MLPPolicy(
        obs_dim=train_env.observation_size,
        action_dim=1,
        hidden_layer_sizes=(64, 64),
        activation="relu",
    )

    @jax.jit
    def evaluate_pendulum(solutions, key):
        def one(flat, k):
            params = policy.unravel(flat)
            returns, transitions = evaluate_policy(
                eval_env, lambda obs, _: policy.apply_tree(params, obs), k
            )
            cart = jnp.mean(transitions.next_obs[..., 0])
            return jnp.mean(returns), jnp.clip(cart, -1.0, 1.0)[None]

        objective, measures = jax.vmap(one)(solutions, jax.random.split(key, solutions.shape[0]))
        return objective, measures, {}

    archive = GridArchive(
        solution_dim=policy.num_params, dims=[10], ranges=[(-1.0, 1.0)], dtype=np.float32, seed=0
    )
    emitter = PBTMEEmitter(
        archive,
        policy=policy,
        env=train_env,
        num_agents=4,
        ga_batch_size=2,
        num_training_iterations=500,
        grad_updates_per_step=4,
        replay_buffer_size=100_000,
        training_batch_size=128,
        critic_hidden_layer_size=(64, 64),
        fraction_best_to_replace_from=0.25,
        fraction_to_replace_from_best=0.25,
        fraction_to_replace_from_samples=0.25,
        seed=0,
    )
    result = Scheduler(archive, [emitter]).run(evaluate_pendulum, 8, seed=0)
    first = float(result.metrics["obj_max"].iloc[0])
    returns, _, _ = evaluate_pendulum(jnp.asarray(emitter.agents), jax.random.key(5))
    print({"first batch best": first, "agents": np.asarray(returns).tolist()})
    assert float(jnp.max(returns)) > 1.5 * first
    assert float(result.metrics["obj_max"].iloc[-1]) > 1.5 * first
