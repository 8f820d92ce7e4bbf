"""The ant_omni skill learning checks: their agents, their measure and their bar.

Shared by ``tests/rl/skills_learning_test.py`` and ``benchmarks/skills_seeds.py``
(no pytest import, so the benchmark runs where pytest is not installed).
"""

import numpy as np

from ribsax.rl import DADS, DIAYN, DadsConfig, DiaynConfig, make_env

# Every skill is played by REPEATS of the NUM_SKILLS * REPEATS environments, both
# in training and in the evaluation.
NUM_SKILLS, REPEATS, EPISODE = 5, 8, 100


def ant_skill_agent(
    algorithm,
    *,
    num_skills=NUM_SKILLS,
    repeats=REPEATS,
    episode_length=EPISODE,
    hidden=64,
    model_hidden=None,
    learning_rate=1e-3,
    alpha_init=0.1,
    normalize_observations=True,
    terminate=False,
    buffer_size=200_000,
):
    """DIAYN or DADS on ant_omni with ``num_skills * repeats`` environments.

    ``hidden`` is the width of the two hidden layers of the policy and critics,
    ``model_hidden`` the hidden layers of DIAYN's discriminator or DADS' skill
    dynamics (default: the same as the policy's; ``()``: linear). ``terminate``
    keeps brax's termination when the ant tips over.
    """
    env = make_env(
        "ant_omni",
        batch_size=num_skills * repeats,
        episode_length=episode_length,
        env_kwargs=None if terminate else {"terminate_when_unhealthy": False},
    )
    layers = (hidden, hidden)
    model_layers = layers if model_hidden is None else tuple(model_hidden)
    common = dict(
        batch_size=256,
        episode_length=episode_length,
        num_skills=num_skills,
        learning_rate=learning_rate,
        alpha_init=alpha_init,
        normalize_observations=normalize_observations,
        policy_hidden_layer_size=layers,
        critic_hidden_layer_size=layers,
    )
    if algorithm == "diayn":
        config = DiaynConfig(**common, discriminator_hidden_layer_size=model_layers)
        return DIAYN(config, env, buffer_size=buffer_size)
    return DADS(
        DadsConfig(**common, dynamics_hidden_layer_size=model_layers), env, buffer_size=buffer_size
    )


def separation_and_accuracy(final_xy, labels):
    """``(separation, leave-one-out nearest-mean accuracy, gap)`` of skill positions."""
    skills = np.unique(labels)
    means = np.stack([final_xy[labels == s].mean(0) for s in skills])
    within = np.mean(np.linalg.norm(final_xy - means[labels], axis=1))
    pairs = [
        np.linalg.norm(means[i] - means[j])
        for i in range(len(skills))
        for j in range(i + 1, len(skills))
    ]
    correct = 0
    for i, (x, label) in enumerate(zip(final_xy, labels)):
        keep = np.arange(len(labels)) != i
        loo = np.stack([final_xy[keep & (labels == s)].mean(0) for s in skills])
        correct += int(np.argmin(np.linalg.norm(loo - x, axis=1)) == label)
    return (float(np.mean(pairs) / max(within, 1e-9)), correct / len(labels), float(np.min(pairs)))


# The bar of the ant learning checks: the trained skills are told apart at least
# 2.5 times as often as chance (5 skills), end further apart than repeats of one
# skill do, and further apart than before training (so an untrained policy cannot
# pass). Every seed tried on a GPU cleared it at the test's budget (DADS 8 of 8,
# DIAYN 8 of 8 with a 64x64 discriminator and 4 of 4 with the linear one of the
# test; benchmarks/skills_seeds.py, benchmarks/RESULTS.md "Where do the slow
# learning checks run, and what do they show?").
MIN_ACCURACY = 0.5
MIN_SEPARATION = 1.5
MIN_SEPARATION_GAIN = 1.5


def distinguishable(accuracy, separation, separation_before):
    """Whether trained skills clear the bar of the ant learning checks."""
    return (
        accuracy >= MIN_ACCURACY
        and separation >= MIN_SEPARATION
        and separation > MIN_SEPARATION_GAIN * separation_before
    )
