"""Skills for unsupervised skill discovery: priors, sampling, diversity rewards.

DIAYN (Eysenbach et al. 2018) and DADS (Sharma et al. 2019) condition a SAC policy on
a *skill* ``z`` drawn from a prior ``p(z)`` and reward the agent for behaving so that
``z`` can be told apart from its state descriptors. This module holds what both need,
independent of the RL loop:

* :class:`SkillPrior`: the skill space. ``"one_hot"`` skills are the ``num_skills``
  basis vectors under a uniform prior (QDax's only kind). Continuous skills are
  vectors of size ``num_skills``: ``"gaussian"`` (standard normal prior) and
  ``"sphere"`` (uniform on the unit sphere).
* Skill assignment to environments: QDax tiles one-hot skills over the environments
  (the number of environments must be a multiple of ``num_skills``); with
  ``per_env=True`` every environment draws its own skill from the prior at every
  episode start (:func:`initial_skills`, :func:`resample_finished`), so any number of
  environments works and continuous skills cover their space.
* :class:`SkillDiscriminator` and :func:`diayn_reward` (DIAYN eq. 3):
  ``log q(z|s) - log p(z)``, with the discriminator family matched to the prior:
  categorical for one-hot skills, unit-variance Gaussian for Gaussian skills,
  von Mises-Fisher with a fixed concentration for spherical skills.
* :class:`SkillDynamics` and :func:`dads_reward` (DADS eq. 6): the skill-dynamics
  model ``q(delta | s, z)`` (unit-variance Gaussian over the change of the state
  descriptor) and the intrinsic reward
  ``log q(delta|s,z) - log (1/L) sum_i q(delta|s,z_i)``, with ``z_i`` the ``L`` prior
  samples (all ``num_skills`` skills, exactly, for one-hot skills).
* :func:`smerl_reward`: SMERL's gate (Kumar et al. 2020, eq. 3).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import scipy.special

from ribsax.rl._networks import MLP

__all__ = [
    "SKILL_KINDS",
    "SkillPrior",
    "initial_skills",
    "resample_finished",
    "SkillDiscriminator",
    "SkillDynamics",
    "discriminator_log_prob",
    "diayn_reward",
    "dynamics_log_prob",
    "dads_reward",
    "dynamics_inputs",
    "smerl_reward",
]

SKILL_KINDS = ("one_hot", "gaussian", "sphere")


@dataclasses.dataclass(frozen=True)
class SkillPrior:
    """A skill space and its prior ``p(z)``.

    Args:
        kind: ``"one_hot"`` (``num_skills`` discrete skills, uniform prior),
            ``"gaussian"`` (``z ~ N(0, I)`` in ``R^num_skills``) or ``"sphere"``
            (``z`` uniform on the unit sphere of ``R^num_skills``).
        num_skills: Number of discrete skills, or dimension of continuous skills.
        concentration: Fixed concentration ``kappa`` of the von Mises-Fisher
            discriminator of spherical skills (ignored by the other kinds).

    Raises:
        ValueError: Unknown ``kind``, ``num_skills < 1`` (``< 2`` for one-hot or
            spherical skills) or a non-positive ``concentration``.
    """

    kind: str = "one_hot"
    num_skills: int = 5
    concentration: float = 1.0

    def __post_init__(self):
        if self.kind not in SKILL_KINDS:
            raise ValueError(f"skill kind must be one of {SKILL_KINDS}, got {self.kind!r}")
        minimum = 1 if self.kind == "gaussian" else 2
        if int(self.num_skills) != self.num_skills or self.num_skills < minimum:
            raise ValueError(
                f"num_skills must be an integer >= {minimum} for "
                f"{self.kind} skills, got {self.num_skills}"
            )
        if not self.concentration > 0:
            raise ValueError(f"concentration must be positive, got {self.concentration}")

    @property
    def continuous(self) -> bool:
        """Whether skills are continuous vectors (not one-hot)."""
        return self.kind != "one_hot"

    def sample(self, key, n: int, dtype=None) -> jax.Array:
        """``n`` independent skills from the prior, shape ``(n, num_skills)``."""
        dtype = dtype or jnp.result_type(float)
        if self.kind == "one_hot":
            idx = jax.random.randint(key, (n,), 0, self.num_skills)
            return jax.nn.one_hot(idx, self.num_skills, dtype=dtype)
        z = jax.random.normal(key, (n, self.num_skills), dtype)
        if self.kind == "sphere":
            z = z / jnp.linalg.norm(z, axis=-1, keepdims=True)
        return z

    def log_prob(self, z: jax.Array) -> jax.Array:
        """``log p(z)`` over the last axis of ``z``.

        One-hot: ``-log num_skills``; Gaussian: the standard normal density;
        sphere: minus the log surface area of the unit sphere (the uniform density).
        """
        d = self.num_skills
        if self.kind == "one_hot":
            return jnp.full(z.shape[:-1], -math.log(d), z.dtype)
        if self.kind == "gaussian":
            return -0.5 * jnp.sum(z * z, axis=-1) - 0.5 * d * math.log(2 * math.pi)
        log_area = math.log(2.0) + 0.5 * d * math.log(math.pi) - math.lgamma(0.5 * d)
        return jnp.full(z.shape[:-1], -log_area, z.dtype)

    def vmf_log_normalizer(self) -> float:
        """``log C_d(kappa)`` of the von Mises-Fisher density on the unit sphere.

        ``C_d(k) = k^(d/2-1) / ((2 pi)^(d/2) I_(d/2-1)(k))`` with ``I`` the modified
        Bessel function of the first kind (computed on the host, since ``kappa`` is
        static).
        """
        d, k = self.num_skills, float(self.concentration)
        v = 0.5 * d - 1.0
        log_bessel = math.log(scipy.special.ive(v, k)) + k
        return v * math.log(k) - 0.5 * d * math.log(2 * math.pi) - log_bessel


def initial_skills(prior: SkillPrior, key, num_envs: int, per_env: bool, dtype=None) -> jax.Array:
    """Skills of ``num_envs`` environments at the start of training.

    Args:
        prior: The skill space.
        key: PRNG key (used when skills are sampled).
        num_envs: Number of environments.
        per_env: If True, every environment draws its own skill from the prior.
            If False, QDax's assignment: one-hot skills tiled in order (environment
            ``i`` plays skill ``i mod num_skills``), which requires ``num_envs`` to be
            a multiple of ``num_skills`` so every skill gets as many environments;
            continuous skills are drawn once per environment and kept.

    Returns:
        ``(num_envs, num_skills)`` skills.

    Raises:
        ValueError: ``per_env=False`` with one-hot skills and ``num_envs`` not a
            multiple of ``num_skills``.
    """
    dtype = dtype or jnp.result_type(float)
    if per_env or prior.continuous:
        return prior.sample(key, num_envs, dtype)
    if num_envs % prior.num_skills:
        raise ValueError(
            f"num_envs ({num_envs}) must be a multiple of num_skills "
            f"({prior.num_skills}) when skills are tiled over the environments; "
            "use per-environment skill sampling for other sizes"
        )
    return jnp.tile(jnp.eye(prior.num_skills, dtype=dtype), (num_envs // prior.num_skills, 1))


def resample_finished(
    prior: SkillPrior, key, skills: jax.Array, finished: jax.Array, per_env: bool
) -> jax.Array:
    """Draws fresh skills for environments whose episode just ended.

    With ``per_env=False`` skills are fixed and returned unchanged.

    Args:
        prior: The skill space.
        key: PRNG key.
        skills: ``(num_envs, num_skills)`` current skills.
        finished: ``(num_envs,)`` whether each environment starts a new episode.
        per_env: Whether skills are sampled per environment and episode.
    """
    if not per_env:
        return skills
    fresh = prior.sample(key, skills.shape[0], skills.dtype)
    return jnp.where(finished[:, None] > 0, fresh, skills)


class SkillDiscriminator(nn.Module):
    """DIAYN's discriminator: state descriptor ``->`` parameters of ``q(z|s)``.

    The output (size ``num_skills``) means logits for one-hot skills, the mean for
    Gaussian skills, and the mean direction (normalised in
    :func:`discriminator_log_prob`) for spherical skills.

    Attributes:
        hidden_layer_sizes: Hidden widths.
        num_skills: Output size.
    """

    hidden_layer_sizes: Sequence[int]
    num_skills: int

    @nn.compact
    def __call__(self, descriptor):
        sizes = tuple(self.hidden_layer_sizes) + (self.num_skills,)
        return MLP(sizes)(descriptor)


class SkillDynamics(nn.Module):
    """DADS' skill dynamics: ``(state descriptor, skill) ->`` mean of ``delta``.

    ``q(delta | s, z)`` is a unit-variance Gaussian around the output (size
    ``descriptor_dim``); the input is built by :func:`dynamics_inputs`.

    Attributes:
        hidden_layer_sizes: Hidden widths.
        descriptor_dim: Output size (size of the predicted descriptor change).
    """

    hidden_layer_sizes: Sequence[int]
    descriptor_dim: int

    @nn.compact
    def __call__(self, inputs):
        sizes = tuple(self.hidden_layer_sizes) + (self.descriptor_dim,)
        return MLP(sizes)(inputs)


def discriminator_log_prob(prior: SkillPrior, output: jax.Array, skills: jax.Array) -> jax.Array:
    """``log q(z|s)`` from the discriminator output, over the last axis.

    * one-hot: ``log_softmax(output) . z``;
    * Gaussian: ``log N(z; output, I)``;
    * sphere: ``kappa * (output / |output|) . z + log C_d(kappa)`` (von Mises-Fisher
      with mean direction ``output / |output|`` and fixed concentration ``kappa``).
    """
    if prior.kind == "one_hot":
        return jnp.sum(jax.nn.log_softmax(output, axis=-1) * skills, axis=-1)
    if prior.kind == "gaussian":
        d = skills.shape[-1]
        return -0.5 * jnp.sum((skills - output) ** 2, axis=-1) - 0.5 * d * math.log(2 * math.pi)
    norm = jnp.sqrt(jnp.sum(output * output, axis=-1, keepdims=True) + 1e-12)
    cosine = jnp.sum(output / norm * skills, axis=-1)
    return prior.concentration * cosine + prior.vmf_log_normalizer()


def diayn_reward(prior: SkillPrior, output: jax.Array, skills: jax.Array) -> jax.Array:
    """DIAYN's intrinsic reward ``log q(z|s) - log p(z)`` (eq. 3 of the paper).

    Args:
        prior: The skill space (chooses the discriminator family and prior).
        output: Discriminator outputs ``(..., num_skills)`` on the descriptors.
        skills: Skills ``(..., num_skills)`` the transitions were played with.
    """
    return discriminator_log_prob(prior, output, skills) - prior.log_prob(skills)


def dynamics_inputs(
    descriptor: jax.Array, skills: jax.Array, omit_input_dynamics_dim: int
) -> jax.Array:
    """Input of the skill dynamics: ``descriptor[..., omit:]`` joined with ``z``.

    Dropping the first ``omit_input_dynamics_dim`` entries (the x-y position for the
    locomotion tasks) makes the predicted change translation-invariant, as in DADS
    and QDax.
    """
    return jnp.concatenate([descriptor[..., omit_input_dynamics_dim:], skills], -1)


def dynamics_log_prob(mean: jax.Array, target: jax.Array) -> jax.Array:
    """``log N(target; mean, I)`` over the last axis."""
    d = target.shape[-1]
    return -0.5 * jnp.sum((target - mean) ** 2, axis=-1) - 0.5 * d * math.log(2 * math.pi)


def dads_reward(
    apply_fn,
    params,
    descriptor: jax.Array,
    skills: jax.Array,
    target: jax.Array,
    alternatives: jax.Array,
    omit_input_dynamics_dim: int,
) -> jax.Array:
    """DADS' intrinsic reward for a batch of transitions (eq. 6 of the paper).

    ``r = log q(delta|s,z) - log (1/L) sum_i q(delta|s,z_i)``, computed with a
    log-sum-exp. ``z_i`` are ``L`` alternative skills shared by the batch: for
    one-hot skills all ``num_skills`` skills (the prior expectation then is exact),
    for continuous skills ``L`` prior samples.

    Args:
        apply_fn: ``(params, inputs) -> mean`` of the skill dynamics.
        params: Its parameters.
        descriptor: ``(B, k)`` state descriptors before the step.
        skills: ``(B, num_skills)`` skills played.
        target: ``(B, k')`` (normalised) descriptor changes.
        alternatives: ``(L, num_skills)`` alternative skills.
        omit_input_dynamics_dim: See :func:`dynamics_inputs`.

    Returns:
        ``(B,)`` rewards.
    """

    def log_q(z):
        mean = apply_fn(params, dynamics_inputs(descriptor, z, omit_input_dynamics_dim))
        return dynamics_log_prob(mean, target)

    own = log_q(skills)
    num_alt = alternatives.shape[0]
    tiled = jnp.broadcast_to(alternatives[:, None], (num_alt,) + skills.shape).astype(skills.dtype)
    others = jax.vmap(log_q)(tiled)  # (L, B)
    return own - (jax.scipy.special.logsumexp(others, axis=0) - math.log(num_alt))


def smerl_reward(
    reward: jax.Array,
    diversity_reward: jax.Array,
    episode_return: jax.Array,
    smerl_target: float,
    smerl_margin: float,
    diversity_reward_scale: float,
) -> jax.Array:
    """SMERL's reward: ``r + scale * r_div * [R >= target - margin]``.

    The diversity term is added only to transitions whose episode return ``R`` is at
    least ``smerl_target - smerl_margin`` (inclusive), i.e. once the policy is
    near-optimal for the task. Transitions of episodes whose return is not known
    yet may pass ``NaN``, which closes the gate.
    """
    gate = (episode_return >= smerl_target - smerl_margin).astype(reward.dtype)
    return reward + diversity_reward_scale * diversity_reward * gate
