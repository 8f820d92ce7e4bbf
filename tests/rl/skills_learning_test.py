"""Learning checks (slow): DIAYN and DADS skills reach distinguishable final positions.

On brax's ``ant_omni`` (state descriptor: torso x-y), 5 one-hot skills are trained
from scratch (40 environments, 100-step episodes, 64x64 networks, DIAYN's
discriminator linear, observation normalisation, 400,000 environment steps and
160,000 gradient steps); every skill is then played deterministically from 8 random
initial states. The ant does not terminate when it tips over (brax's
``terminate_when_unhealthy=False``): with termination, DADS' fastest skills often
tipped over before the end of their episodes (diversity rewards can be negative, so
nothing discourages ending an episode; benchmarks/RESULTS.md). A second, much
cheaper check trains 4 skills on the 2-D point mass of the unit tests (12
environments, 20-step episodes). The checks compare the skills' final positions
before and after training:

* *separation*: mean distance between the skills' mean final positions, divided by
  the mean distance of final positions to their own skill's mean (how much more
  the skills differ from each other than repeats of one skill do);
* *accuracy*: nearest-skill-mean classification of the final positions
  (leave-one-out; chance is 1/number of skills);
* *gap*: the smallest distance between two skills' mean final positions.

The ant checks pass when the accuracy is at least 0.5 (2.5 times chance), the
separation at least 1.5 and more than 1.5 times the untrained policy's
(``tests/rl/_ant_skills.py``). Every seed tried on a GPU cleared that bar
(``benchmarks/skills_seeds.py``: DADS 8 of 8; DIAYN 8 of 8 with a 64x64
discriminator, 4 of 4 with the linear one). DIAYN's skills end 0.1-3 m from the
start (its reward stops growing once a skill is told apart), DADS' mostly 4-11 m,
and both sometimes leave two skills close together, so a stricter bar (accuracy
0.8, separation 2) passes only some seeds. A linear
discriminator's confidence keeps growing with the distance travelled in a skill's
direction; with it the test's seed reached accuracy 0.62 and separation 2.35 on the
CPU, against 0.50 and 1.74 with a 64x64 one (benchmarks/RESULTS.md). The checks run
in float32 (JAX's default), not in the suite's float64.

Run with ``pytest tests/rl/skills_learning_test.py -m slow -n 0 -s``; the printed
numbers are recorded in benchmarks/RESULTS.md. ``RIBSAX_SKILLS_ITERATIONS`` and
``RIBSAX_SKILLS_UPDATES`` change the ant's budget (iterations of one step in every
environment, gradient steps per iteration), ``RIBSAX_SKILLS_WARMUP`` the iterations
of random actions before training.
"""

import os
import time

import jax
import numpy as np
import pytest

from ribsax.rl import DADS, DIAYN, DadsConfig, DiaynConfig
from tests.rl._ant_skills import (
    NUM_SKILLS,
    REPEATS,
    ant_skill_agent,
    distinguishable,
    separation_and_accuracy,
)

NUM_ENVS = NUM_SKILLS * REPEATS
LABELS = np.arange(NUM_ENVS) % NUM_SKILLS  # The skill of each environment.
WARMUP = int(os.environ.get("RIBSAX_SKILLS_WARMUP", "50"))
ITERATIONS = int(os.environ.get("RIBSAX_SKILLS_ITERATIONS", "10000"))
UPDATES = int(os.environ.get("RIBSAX_SKILLS_UPDATES", "16"))


@pytest.fixture(autouse=True)
def _float32():
    # The suite runs with x64 on (tests/conftest.py); RL runs in JAX's default
    # float32, as QDax does, and the seeds behind the bar were trained in float32.
    with jax.enable_x64(False):
        yield


def _evaluate(agent, state, key):
    ev = agent.evaluate(state, key, jax.nn.one_hot(LABELS, NUM_SKILLS))
    final = np.asarray(ev.final_state_descriptors)
    return separation_and_accuracy(final, LABELS), final, float(np.mean(ev.returns))


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["diayn", "dads"])
def test_skills_reach_distinguishable_final_positions(algorithm):
    # DIAYN with a linear discriminator: see the module docstring.
    agent = ant_skill_agent(algorithm, model_hidden=() if algorithm == "diayn" else None)
    start = time.perf_counter()
    state = agent.init(jax.random.key(0))
    (sep0, acc0, _), _, _ = _evaluate(agent, state, jax.random.key(1))
    state, _ = agent.train(state, WARMUP, grad_updates_per_step=0, random_actions=True)
    state, metrics = agent.train(state, ITERATIONS, grad_updates_per_step=UPDATES)
    (sep, acc, _), final, ret = _evaluate(agent, state, jax.random.key(1))
    elapsed = time.perf_counter() - start
    means = [final[LABELS == s].mean(0).round(2).tolist() for s in range(NUM_SKILLS)]
    print(
        f"\n{algorithm}: {ITERATIONS} iterations x {NUM_ENVS} envs "
        f"({ITERATIONS * NUM_ENVS} env steps, {ITERATIONS * UPDATES} grad "
        f"steps), "
        f"{elapsed:.0f} s; separation {sep0:.2f} -> {sep:.2f}, accuracy "
        f"{acc0:.2f} -> {acc:.2f}; eval return {ret:.1f}; skill means {means}; "
        f"diversity reward {float(metrics['diversity_reward']):.3f}"
    )
    assert distinguishable(acc, sep, sep0), ((acc0, acc), (sep0, sep))


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["diayn", "dads"])
def test_skills_separate_on_the_point_mass(algorithm):
    from tests.rl._point_env import make_point_env

    num_skills, num_envs = 4, 12
    env = make_point_env(num_envs, 20)
    common = dict(
        batch_size=128,
        episode_length=20,
        num_skills=num_skills,
        learning_rate=1e-3,
        alpha_init=0.1,
        policy_hidden_layer_size=(32, 32),
        critic_hidden_layer_size=(32, 32),
    )
    if algorithm == "diayn":
        agent = DIAYN(
            DiaynConfig(**common, discriminator_hidden_layer_size=(32, 32)), env, buffer_size=20_000
        )
    else:
        agent = DADS(
            DadsConfig(**common, dynamics_hidden_layer_size=(32, 32)), env, buffer_size=20_000
        )
    skills = jax.nn.one_hot(np.arange(num_envs) % num_skills, num_skills)
    labels = np.arange(num_envs) % num_skills
    state = agent.init(jax.random.key(0))
    start = time.perf_counter()
    before = agent.evaluate(state, jax.random.key(1), skills)
    _, acc0, gap0 = separation_and_accuracy(np.asarray(before.final_state_descriptors), labels)
    state, _ = agent.train(state, 2000)
    after = agent.evaluate(state, jax.random.key(1), skills)
    final = np.asarray(after.final_state_descriptors)
    _, acc, gap = separation_and_accuracy(final, labels)
    means = [final[labels == s].mean(0).round(2).tolist() for s in range(num_skills)]
    print(
        f"\npoint mass {algorithm}: 2000 iterations x {num_envs} envs, "
        f"{time.perf_counter() - start:.0f} s; accuracy {acc0:.2f} -> {acc:.2f}, "
        f"gap {gap0:.3f} -> {gap:.3f}; skill means {means}"
    )
    assert acc >= 0.9
    assert gap >= 0.3 and gap >= 3 * gap0
