"""How far apart skills end: the measure of the skill learning checks.

Shared by ``tests/rl/skills_learning_test.py`` and ``benchmarks/skills_seeds.py``
(no pytest import, so the benchmark runs where pytest is not installed).
"""
import numpy as np


def separation_and_accuracy(final_xy, labels):
    """``(separation, leave-one-out nearest-mean accuracy, gap)`` of skill positions."""
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
    return (float(np.mean(pairs) / max(within, 1e-9)), correct / len(labels),
            float(np.min(pairs)))


# The bar of the ant learning checks: the trained skills are told apart at least
# 2.5 times as often as chance (5 skills), end further apart than repeats of one
# skill do, and further apart than before training (so an untrained policy cannot
# pass). Every seed tried on a GPU cleared it at the test's budget (DADS 8 of 8,
# DIAYN 8 of 8 with a 64x64 discriminator and 4 of 4 with the linear one of the
# test; benchmarks/skills_seeds.py, benchmarks/RESULTS.md "RL (issue 18): skills
# and PBT", session 15).
MIN_ACCURACY = 0.5
MIN_SEPARATION = 1.5
MIN_SEPARATION_GAIN = 1.5


def distinguishable(accuracy, separation, separation_before):
    """Whether trained skills clear the bar of the ant learning checks."""
    return (accuracy >= MIN_ACCURACY and separation >= MIN_SEPARATION
            and separation > MIN_SEPARATION_GAIN * separation_before)
