"""Learning check (slow): DIAYN and DADS skills reach distinguishable final positions.

On brax's ``ant_omni`` (state descriptor: torso x-y), 5 one-hot skills are trained
from scratch; every skill is then played deterministically from 4 random initial
states. The check compares the skills' final positions before and after training:

* *separation*: mean distance between the skills' mean final positions, divided by
  the mean distance of final positions to their own skill's mean (how much more
  the skills differ from each other than repeats of one skill do);
* *accuracy*: nearest-skill-mean classification of the final positions
  (leave-one-out; chance is 1/5).

Run with ``pytest tests/rl/skills_learning_test.py -m slow -s``; the printed
numbers are recorded in benchmarks/RESULTS.md.
"""
import os
import time

import jax
import numpy as np
import pytest

from ribsax.rl import DADS, DIAYN, DadsConfig, DiaynConfig, make_env

NUM_SKILLS, REPEATS, EPISODE = 5, 4, 100
WARMUP = int(os.environ.get("RIBSAX_SKILLS_WARMUP", "50"))
ITERATIONS = int(os.environ.get("RIBSAX_SKILLS_ITERATIONS", "3000"))


def separation_and_accuracy(final_xy, labels):
    """``(separation, leave-one-out nearest-mean accuracy)`` of skill positions."""
    skills = np.unique(labels)
    means = np.stack([final_xy[labels == s].mean(0) for s in skills])
    within = np.mean(np.linalg.norm(final_xy - means[labels], axis=1))
    pairs = [np.linalg.norm(means[i] - means[j])
             for i in range(len(skills)) for j in range(i + 1, len(skills))]
    correct = 0
    for i, (x, label) in enumerate(zip(final_xy, labels)):
        keep = np.arange(len(labels)) != i
        loo = np.stack([final_xy[keep & (labels == s)].mean(0) for s in skills])
        correct += int(np.argmin(np.linalg.norm(loo - x, axis=1)) == label)
    return float(np.mean(pairs) / max(within, 1e-9)), correct / len(labels)


def _evaluate(agent, state, key):
    skills = jax.nn.one_hot(np.arange(NUM_SKILLS * REPEATS) % NUM_SKILLS, NUM_SKILLS)
    ev = agent.evaluate(state, key, skills)
    final = np.asarray(ev.final_state_descriptors)
    labels = np.arange(NUM_SKILLS * REPEATS) % NUM_SKILLS
    return separation_and_accuracy(final, labels), final, float(np.mean(ev.returns))


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["diayn", "dads"])
def test_skills_reach_distinguishable_final_positions(algorithm):
    env = make_env("ant_omni", batch_size=NUM_SKILLS * REPEATS, episode_length=EPISODE)
    common = dict(batch_size=256, episode_length=EPISODE, num_skills=NUM_SKILLS,
                  learning_rate=1e-3, policy_hidden_layer_size=(64, 64),
                  critic_hidden_layer_size=(64, 64))
    if algorithm == "diayn":
        agent = DIAYN(DiaynConfig(**common, discriminator_hidden_layer_size=(64, 64)),
                      env, buffer_size=200_000)
    else:
        agent = DADS(DadsConfig(**common, dynamics_hidden_layer_size=(64, 64)), env,
                     buffer_size=200_000)
    start = time.perf_counter()
    state = agent.init(jax.random.key(0))
    (sep0, acc0), _, _ = _evaluate(agent, state, jax.random.key(1))
    state, _ = agent.train(state, WARMUP, grad_updates_per_step=0, random_actions=True)
    state, metrics = agent.train(state, ITERATIONS)
    (sep, acc), final, ret = _evaluate(agent, state, jax.random.key(1))
    elapsed = time.perf_counter() - start
    means = [final[np.arange(len(final)) % NUM_SKILLS == s].mean(0).round(2).tolist()
             for s in range(NUM_SKILLS)]
    print(f"\n{algorithm}: {ITERATIONS} iterations x {NUM_SKILLS * REPEATS} envs "
          f"({ITERATIONS * NUM_SKILLS * REPEATS} env steps, {ITERATIONS} grad steps), "
          f"{elapsed:.0f} s; separation {sep0:.2f} -> {sep:.2f}, accuracy "
          f"{acc0:.2f} -> {acc:.2f}; eval return {ret:.1f}; skill means {means}; "
          f"diversity reward {float(metrics['diversity_reward']):.3f}")
    assert acc >= 0.8, acc
    assert sep >= 2.0 and sep > 1.5 * sep0, (sep0, sep)
