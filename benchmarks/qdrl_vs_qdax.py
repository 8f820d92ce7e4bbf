"""ribsax vs QDax 0.5.1: PGA-ME, ME-ES, QDPG and DCRL-ME on a brax feet-contact task.

Both libraries run the same algorithm on the same problem with the same settings,
seed after seed, alternating (ribsax, QDax, ribsax, QDax, ...), in one process:

- **PGA-ME**: ribsax ``PGAMEEmitter`` in ``Scheduler.run`` (the fused loop) vs QDax
  ``PGAMEEmitter`` (``PGAMEConfig``) in ``MAPElites`` driven by
  ``jax.lax.scan(MAPElites.scan_update)``. Equal: batch (``env_batch_size``), GA
  share 0.5, Iso+LineDD (0.005, 0.05), critic (256, 256), TD3 settings (QDax's
  defaults), replay buffer size, and the critic / policy-gradient steps per
  iteration (``--critic-steps`` / ``--pg-steps``, both reduced from QDax's 300 / 100
  to fit the CPU budget). QDax runs ``num_critic_training_steps / policy_delay``
  rounds of ``policy_delay`` critic steps and one greedy-actor step, ribsax
  ``num_critic_training_steps`` TD3 updates with the actor every ``policy_delay``:
  the same numbers of critic and actor steps.
- **QDPG**: ribsax ``QDPGEmitter`` vs QDax ``QDPGEmitter`` (``QDPGEmitterConfig``
  with ``QualityPGConfig``, ``DiversityPGConfig`` and ``score_euclidean_novelty``)
  in the same loops as PGA-ME. Equal: the quality / diversity / Iso+LineDD split
  (``--qdpg-split``), the critic and policy-gradient steps (``--critic-steps`` /
  ``--pg-steps``, for both learners), the critic, the TD3 settings and the novelty
  settings (``--novelty-k``, scaling 1, threshold 0.1, 10,000 descriptors).
  Differences: QDax keeps one replay buffer per learner and scores the state
  descriptor before each step, ribsax shares one buffer and scores the state after
  the step; QDax's novelty archive counts its empty slots as neighbours at the
  largest float distance (a reward of about 6.8e37 for every state while it holds
  fewer than k descriptors, which on walker2d_uni, with at most 4 distinct binary
  contact vectors and k = 5, is forever), ribsax averages over the descriptors it
  holds (on walker2d_uni a constant too, once the 4 vectors are stored). The runs
  record the novelty archive's size and the critics' finiteness (QDax) or last
  losses (ribsax).
- **ME-ES**: ribsax ``MEESEmitter`` vs QDax ``MEESEmitter`` (``MEESConfig``), both
  with ``--es-samples`` ES samples per generation (QDax's 1000 reduced) and
  QDax's other defaults; the novelty archive holds one descriptor per generation
  (QDax's ``total_generations``; ribsax's ``novelty_archive_size``).
- **DCRL-ME**: ribsax ``DCRLMEEmitter`` vs QDax ``DCRLMEEmitter`` (``DCRLMEConfig``)
  in the same loops as PGA-ME. Equal: the GA / policy-gradient / actor-injection
  split (``--dcrl-split``; QDax's 128 / 64 / 64 proportions at a batch of 100), the
  relabelling length scale (``--lengthscale``, 0.1, on descriptors normalised to
  ``[-1, 1]`` with the grid's range in both), Iso+LineDD (0.005, 0.05), the critic
  and policy-gradient steps (``--critic-steps`` / ``--pg-steps``), the critic
  (``--critic-hidden``), the replay buffer size, and QDax's other defaults on both
  sides (learning rates 3e-4 critic and actor, 1e-3 policy-gradient offspring,
  100 transitions per step, TD3 noise, discount, Polyak rate, policy delay 2). The
  conditioned actor is the policy's network on ``[obs, desc]`` inputs (QDax's
  ``MLPDC`` with the policy's layers, tanh activations and initialisers; ribsax's
  policy module with ``obs_dim + measure_dim`` inputs). QDax's DCRL emitter needs
  transitions of its ``DCRLTransition`` type: the script wraps QDax's policy
  play-step function to return them with ``desc`` and ``desc_prime`` zero, which
  QDax's emitter overwrites when it stores them (the observed descriptors, and the
  ``desc_prime`` its ``emit`` returns as extra information, which ``MAPElites``
  passes on with the extra scores).

  Rewards must be non-negative for the relabelling. Both sides follow the DCRL
  papers' convention: every step's reward clipped at 0 and a QD-score offset of 0,
  so the QD score is the sum over cells of the clipped returns. ribsax: the task
  ``create(..., reward_clip_min=0.0, qd_score_offset=0.0)`` (the emitter's own clip
  then changes nothing); QDax: its environment wrapped in ``ClipRewardWrapper(
  clip_min=0)`` (inside the auto-reset wrapper, no ``OffsetRewardWrapper``) and
  ``default_qd_metrics(qd_offset=0)``: the reward offset is counted nowhere (QDax's
  DCRL-ME example shifts the rewards by it in a wrapper and adds it again in the
  metric). The task check is repeated on these clipped tasks. On walker2d_uni a
  random policy's step rewards (alive bonus 1, forward velocity, control cost) are
  positive, so the clip seldom binds there; on ant_uni it does.

Problem: ``--env`` (default ``walker2d_uni``) with ``--episode-length`` steps, spring
backend, MLP policy ``--hidden`` with tanh hidden and output activations (QDax's
``MLP(activation=tanh, final_activation=tanh)``, LeCun-uniform kernels, zero
biases), a ``--grid`` grid over the measure range (ribsax ``GridArchive``; QDax
``MapElitesRepertoire`` on ``compute_euclidean_centroids``): feet-contact
proportions in ``[0, 1]^d`` for ``*_uni`` tasks, the final (x, y) position in
``[-R, R]^2`` for ``ant_omni`` (``R`` = ``--position-range``, default 30, QDax's;
both libraries clip the position to it).
ribsax's task is ``ribsax.tasks.brax.create(env, episode_length=...,
hidden_layer_sizes=..., return_transitions=True)``. QDax's is its own
``qdax.tasks.brax.create(env, episode_length=...)`` environment (feet-contact
wrapper, episode and auto-reset wrappers) scored by
``scoring_function_brax_envs`` with its policy play-step function, aligned with
ribsax's where the two differ in convention:

- deterministic resets from the SAME initial state (the reset key of ribsax's
  ``reset_seed=0``), through QDax's ``play_reset_fn``;
- the feet-contact descriptor averaged over the states *after* each step (QDax's
  ``next_state_desc``). By default QDax averages ``state_desc``, the states *before*
  each step (the reset state counted, the last state not), and resets the state
  descriptor together with the state after the last step, so its descriptors differ
  from ribsax's by up to one step's share (0.01 on walker2d_uni, 0.08 on hopper_uni
  in the task check). The script builds QDax's environment as QDax's ``create`` does
  but without its ``StateDescriptorResetWrapper`` (``create(..., auto_reset=False)``
  inside brax's ``AutoResetWrapper``): the states, and the fresh episodes PGA-ME's
  replay buffer receives after terminations, are QDax's; the last step's descriptor
  is the episode's own. With this the script checks that both tasks return the same
  returns and descriptors for the same policies (printed as "task check");
- omni tasks: QDax's ``XYPositionWrapper`` calls ``jnp.clip`` with keywords
  (``a_min``, ``a_max``) that JAX 0.10 removed, so its ``ant_omni`` cannot reset;
  the script replaces its ``reset`` and ``step`` with the same clip in the current
  signature. The ant's contacts amplify float rounding: both tasks return the
  same returns and positions for 5-step episodes, within 1e-3 for 20 steps, and
  drift apart after that (up to 0.5 in return and 0.07 in position at 50 steps,
  for a few of 16 random policies).

Differences that remain (algorithms as each library implements them): QDax's PGA-ME
stores every step of every episode in its replay buffer, the auto-reset steps after
a termination included, where ribsax stores only the episode's own steps; QDax
soft-updates the target critics after every critic step, ribsax with the delayed
actor step (the TD3 paper's rule); QDax's greedy actor starts as the first initial
policy, ribsax's from a fresh initialisation; QDax's ME-ES novelty counts one empty
(all-zero) slot of its novelty archive as a neighbour, and it draws the ES noise of
every parameter array of the policy from one key: with JAX's (partitionable)
threefry the arrays' noises are prefixes of one sequence, so arrays of the same
shape (here the two hidden layers' biases) get the same noise and the others repeat
each other's values; ribsax draws one noise vector over the flat parameters. For
DCRL-ME, besides the buffer and target-critic differences of PGA-ME: QDax's ``init``
only stores the initial batch's transitions, while ribsax's first tell (of its
first, freshly initialised batch) also trains, so ribsax makes one more round of
``--critic-steps`` critic steps; QDax samples the actor step's minibatch apart from
the critic steps', ribsax's actor step uses its critic step's minibatch.

Budget and evaluations: QDax starts with ``MAPElites.init`` on ``B`` random policies
(PGA-ME, QDPG, DCRL-ME; one policy for ME-ES) and then runs its iterations; ribsax's
first PGA-ME, QDPG or DCRL-ME iteration asks ``B`` freshly initialised policies
itself (empty archive), so ribsax runs one more iteration: both make ``B *
(iterations + 1)`` evaluations. ME-ES
starts both libraries from the same random policy (ribsax ``x0``); every generation
costs ``es_samples + 1`` evaluations in both, the ES samples counted (ribsax's
``evaluations`` column; QDax: by construction). QD score: ``sum over filled cells of
(return - offset)`` with ``offset = -reward_offset * episode_length`` (ribsax's
``task.qd_score_offset`` on the archive; QDax's ``default_qd_metrics`` with
``qd_offset = reward_offset * episode_length``: the same number; 0 in both for
DCRL-ME), recorded after every iteration by both.

Timing: each library's loop is compiled once per algorithm (ribsax:
``RunResult.compile_time`` of the first seed; QDax: ahead-of-time ``lower().compile()``
of ``MAPElites.init`` and of the scanned iterations, timed), then every seed runs the
compiled code; evaluations/s = evaluations / run time (compile excluded; QDax's
run time includes its ``init`` call). Compile times are cold: the script sets
``RIBSAX_COMPILATION_CACHE=0`` unless it is set (ribsax's persistent compilation
cache, once on, would also serve QDax's programs in this process).

Comparison criterion: the QD-score curves of each seed are interpolated on 20
evaluation counts evenly spaced from 10 % to 100 % of the budget; ribsax's curve
"lies within QDax's seed spread" at a checkpoint when ribsax's mean over seeds is
between QDax's minimum and maximum over seeds there; the table gives the share of
checkpoints where it does, and the same for the final QD score. The table also
gives the two-sided Mann-Whitney U test of the two libraries' final QD scores
(seeds as samples).

QDax 0.5.1 is not a ribsax dependency and is not on the package index (0.5.0 is,
and its PGA-ME does not import on brax >= 0.12.4). It was installed beside ribsax's
environment without touching it (no dependency resolution; chex and toolz are
already there, distrax is never imported), from a wheel built from QDax's
repository at its 0.5.1 commit (46b8fee)::

    pip install --no-deps --target QDAX_SITE qdax-0.5.1-py3-none-any.whl
    PYTHONPATH=QDAX_SITE python benchmarks/qdrl_vs_qdax.py

Usage::

    PYTHONPATH=QDAX_SITE python benchmarks/qdrl_vs_qdax.py          # defaults below
    PYTHONPATH=QDAX_SITE python benchmarks/qdrl_vs_qdax.py --algos mees --seeds 0 1
    PYTHONPATH=QDAX_SITE python benchmarks/qdrl_vs_qdax.py --algos dcrlme
    ... --json out.json --plot benchmarks/figures/qdrl_vs_qdax.png
    ... --algos qdpg --merge seeds_0_4.json seeds_5_9.json   # join earlier runs
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from _common import machine_info, print_header

# Compile times are reported cold: keep ribsax's persistent compilation cache (which
# would also serve QDax's programs in this process) off unless asked for.
os.environ.setdefault("RIBSAX_COMPILATION_CACHE", "0")

# benchmarks/qdax.py shadows the qdax package: drop this folder from the path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

from ribsax._utils import seed_to_key  # noqa: E402
from ribsax.archives import GridArchive  # noqa: E402
from ribsax.emitters import DCRLMEEmitter, MEESEmitter, PGAMEEmitter, QDPGEmitter  # noqa: E402
from ribsax.experiments import pairwise_tests  # noqa: E402
from ribsax.schedulers import Scheduler  # noqa: E402
from ribsax.tasks import brax as brax_tasks  # noqa: E402

ISO_SIGMA, LINE_SIGMA = 0.005, 0.05
NUM_CHECKPOINTS = 20


# ---------------------------------------------------------------------------
# Problem: ribsax's task and QDax's scoring function, aligned.
# ---------------------------------------------------------------------------
class Problem:
    """The task in both libraries' forms.

    With ``dcrl=True``, DCRL-ME's form: every step's reward clipped at 0 in both
    libraries, QD-score offset 0, and QDax's transitions as ``DCRLTransition``.

    Attributes:
        task / es_task: ribsax tasks (with / without transitions).
        env, network, scoring_fn: QDax's environment, policy network and scoring
            function (transitions in ``extra_scores``).
        default_scoring_fn: QDax's scoring function with its own descriptor
            extractor (only for the task check).
        offset: The QD-score offset (``task.qd_score_offset``).
        qdax_qd_offset: QDax's ``qd_offset`` (``-offset``).
        centroids: QDax's centroids of the grid.
    """

    def __init__(self, args, dcrl=False):
        import qdax.tasks.brax as qbrax
        from qdax.core.containers.mapelites_repertoire import compute_euclidean_centroids
        from qdax.core.neuroevolution.networks.networks import MLP
        from qdax.tasks.brax.descriptor_extractors import (
            get_feet_contact_proportion,
            get_final_xy_position,
        )
        from qdax.tasks.brax.env_creators import (
            make_policy_network_play_step_fn_brax,
            scoring_function_brax_envs,
        )
        from qdax.tasks.brax.wrappers.reward_wrappers import ClipRewardWrapper

        hidden = tuple(args.hidden)
        self.args = args
        # DCRL-ME: every step's reward clipped at 0, QD-score offset 0 (the DCRL
        # papers' convention), in both libraries.
        conventions = dict(reward_clip_min=0.0, qd_score_offset=0.0) if dcrl else {}
        # QDax's descriptor extractor of the task: feet-contact proportions or the
        # final xy position.
        extractor = qbrax.descriptor_extractor[args.env]
        assert extractor in (get_feet_contact_proportion, get_final_xy_position)
        # Omni tasks: the (x, y) measures clipped to [-R, R] in both libraries.
        radius = args.position_range
        omni = extractor is get_final_xy_position
        position = {"position_range": (-radius, radius)} if omni and radius else {}
        self.task = brax_tasks.create(
            args.env,
            episode_length=args.episode_length,
            hidden_layer_sizes=hidden,
            return_transitions=True,
            **conventions,
            **position,
        )
        self.es_task = brax_tasks.create(
            args.env, episode_length=args.episode_length, hidden_layer_sizes=hidden, **position
        )
        self.offset = float(self.task.qd_score_offset)
        # QDax's default_qd_metrics subtracts -qd_offset per cell: the same number.
        self.qdax_qd_offset = (
            0.0 if dcrl else float(qbrax.reward_offset[args.env]) * (args.episode_length)
        )
        assert abs(self.offset + self.qdax_qd_offset) < 1e-9

        # QDax's create() ends with brax's AutoResetWrapper and a wrapper that resets
        # the state descriptor with the state. Only the first is kept: after the
        # last step of an episode the descriptor is that of the episode's own final
        # state (its feet contacts count in ribsax's descriptor), while PGA-ME's
        # replay buffer still gets fresh episodes after terminations, as in QDax.
        from brax.envs.wrappers import training as brax_training

        _fix_qdax_xy_position_clip()
        wrapper_kwargs = {}
        if position:
            limits = {"minval": [-radius] * 2, "maxval": [radius] * 2}
            wrapper_kwargs = {"qdax_wrappers_kwargs": [limits, {}]}
        env = qbrax.create(
            args.env, episode_length=args.episode_length, auto_reset=False, **wrapper_kwargs
        )
        if dcrl:
            # No OffsetRewardWrapper: the rewards are clipped raw, as ribsax's.
            env = ClipRewardWrapper(env, clip_min=0.0)
        self.env = brax_training.AutoResetWrapper(env)
        self.network = MLP(
            layer_sizes=hidden + (self.env.action_size,),
            activation=jnp.tanh,
            final_activation=jnp.tanh,
            kernel_init=jax.nn.initializers.lecun_uniform(),
        )
        init_state = self.env.reset(seed_to_key(0))  # ribsax's reset_seed=0 state
        play_reset_fn = functools.partial(_fixed_reset, init_state=init_state)
        play_step_fn = make_policy_network_play_step_fn_brax(self.env, self.network)
        if dcrl:
            play_step_fn = _dcrl_play_step(play_step_fn, self.env.descriptor_length)

        # The extractor applied to the states after each step.
        def after_step(data, mask):
            return extractor(data.replace(state_desc=data.next_state_desc), mask)

        common = dict(
            episode_length=args.episode_length,
            play_reset_fn=play_reset_fn,
            play_step_fn=play_step_fn,
        )
        self.scoring_fn = functools.partial(
            scoring_function_brax_envs, descriptor_extractor=after_step, **common
        )
        self.default_scoring_fn = functools.partial(
            scoring_function_brax_envs, descriptor_extractor=extractor, **common
        )
        dims = tuple(args.grid)
        if len(dims) == 1:
            dims = dims * self.task.measure_dim
        self.dims = dims
        low, high = np.asarray(self.task.measure_ranges, float).T
        self.centroids = compute_euclidean_centroids(dims, minval=list(low), maxval=list(high))

    def to_qdax(self, flat):
        """ribsax flat parameters ``(n, dim)`` -> QDax's MLP parameter tree."""
        tree = jax.vmap(self.task.policy.unravel)(jnp.asarray(flat))
        return {
            "params": {
                name.replace("dense_", "Dense_"): layer for name, layer in tree["params"].items()
            }
        }

    def archive(self, seed):
        """A fresh ribsax grid archive."""
        return GridArchive(
            solution_dim=self.task.solution_dim,
            dims=list(self.dims),
            ranges=self.task.measure_ranges,
            qd_score_offset=self.offset,
            dtype=np.float32,
            seed=seed,
        )

    def qdax_metrics(self):
        from qdax.utils.metrics import default_qd_metrics

        return functools.partial(default_qd_metrics, qd_offset=self.qdax_qd_offset)


def _fix_qdax_xy_position_clip():
    """Lets QDax 0.5.1's omni tasks run on JAX 0.10.

    QDax's ``XYPositionWrapper`` clips the (x, y) state descriptor with
    ``jnp.clip(x, a_min=..., a_max=...)``, keywords that JAX 0.10 no longer
    accepts, so its ``reset`` and ``step`` raise. They are replaced by the same
    clip written with the current signature; nothing else changes.
    """
    from qdax.tasks.brax.wrappers.locomotion_wrappers import XYPositionWrapper

    def with_position(self, state):
        position = state.pipeline_state.x.pos[self._cog_idx][:2]
        state.info["state_descriptor"] = jnp.clip(position, self._minval, self._maxval)
        return state

    XYPositionWrapper.reset = lambda self, key: with_position(self, self.env.reset(key))
    XYPositionWrapper.step = lambda self, state, action: with_position(
        self, self.env.step(state, action)
    )


def _fixed_reset(_key, init_state):
    return init_state


def _dcrl_play_step(play_step_fn, descriptor_length):
    """QDax's policy play-step function with its transitions as QDax's
    ``DCRLTransition`` (``desc`` and ``desc_prime`` zero: QDax's DCRL emitter
    overwrites both before storing the transitions)."""
    from qdax.core.neuroevolution.buffers.buffer import DCRLTransition

    def step(env_state, params, key):
        env_state, params, key, t = play_step_fn(env_state, params, key)
        zeros = jnp.zeros((descriptor_length,), t.obs.dtype)
        transition = DCRLTransition(
            obs=t.obs,
            next_obs=t.next_obs,
            rewards=t.rewards,
            dones=t.dones,
            truncations=t.truncations,
            actions=t.actions,
            state_desc=t.state_desc,
            next_state_desc=t.next_state_desc,
            desc=zeros,
            desc_prime=zeros,
        )
        return env_state, params, key, transition

    return step


def task_check(problem, n=16):
    """Same policies through both tasks: max |difference| of returns and measures."""
    flat = problem.task.initial_solutions(n, jax.random.key(123))
    key = jax.random.key(7)
    objective, measures, _ = problem.task.jit_evaluate(flat, key)
    params = problem.to_qdax(flat)
    fit, desc, _ = problem.scoring_fn(params, key)
    _, desc_default, _ = problem.default_scoring_fn(params, key)
    return {
        "returns_max_abs_diff": float(jnp.max(jnp.abs(objective - fit))),
        "returns_range": [float(jnp.min(objective)), float(jnp.max(objective))],
        "measures_max_abs_diff": float(jnp.max(jnp.abs(measures - desc))),
        "qdax_default_extractor_measures_max_abs_diff": float(
            jnp.max(jnp.abs(measures - desc_default))
        ),
    }


# ---------------------------------------------------------------------------
# Runs. Each returns dict(evaluations=[...], qd_score=[...], coverage=[...],
# compile_s, run_s, final_qd_score_from_archive).
# ---------------------------------------------------------------------------
def _pgame_settings(args):
    return dict(
        num_critic_training_steps=args.critic_steps,
        num_pg_training_steps=args.pg_steps,
        replay_buffer_size=args.buffer_size,
        critic_hidden_layer_size=tuple(args.critic_hidden),
        proportion_mutation_ga=0.5,
    )


def run_ribsax_pgame(problem, args, seed):
    archive = problem.archive(seed)
    emitter = PGAMEEmitter(
        archive,
        policy=problem.task.policy,
        batch_size=args.batch,
        iso_sigma=ISO_SIGMA,
        line_sigma=LINE_SIGMA,
        seed=seed,
        **_pgame_settings(args),
    )
    result = Scheduler(archive, [emitter]).run(problem.task, args.pgame_iterations + 1, seed=seed)
    return _ribsax_record(result, archive, problem)


def _qdpg_settings(args):
    quality, diversity, ga = args.qdpg_split
    return dict(
        quality_batch_size=quality,
        diversity_batch_size=diversity,
        ga_batch_size=ga,
        num_pg_training_steps=args.pg_steps,
        replay_buffer_size=args.buffer_size,
        critic_hidden_layer_size=tuple(args.critic_hidden),
    )


def run_ribsax_qdpg(problem, args, seed):
    archive = problem.archive(seed)
    emitter = QDPGEmitter(
        archive,
        policy=problem.task.policy,
        iso_sigma=ISO_SIGMA,
        line_sigma=LINE_SIGMA,
        num_quality_critic_training_steps=args.critic_steps,
        num_diversity_critic_training_steps=args.critic_steps,
        num_nearest_neighbors=args.novelty_k,
        seed=seed,
        **_qdpg_settings(args),
    )
    result = Scheduler(archive, [emitter]).run(problem.task, args.qdpg_iterations + 1, seed=seed)
    record = _ribsax_record(result, archive, problem)
    state = emitter.kernel_state
    record["critic_loss_quality_diversity"] = np.asarray(state.critic_loss).tolist()
    record["novelty_archive_size"] = len(emitter.state_descriptors)
    return record


def run_ribsax_mees(problem, args, seed):
    archive = problem.archive(seed)
    x0 = problem.task.policy.init(jax.random.key(seed))
    emitter = MEESEmitter(
        archive,
        evaluate=problem.es_task,
        sample_number=args.es_samples,
        novelty_archive_size=args.mees_iterations,
        x0=x0,
        seed=seed,
    )
    result = Scheduler(archive, [emitter]).run(problem.es_task, args.mees_iterations, seed=seed)
    return _ribsax_record(result, archive, problem)


def run_ribsax_dcrlme(problem, args, seed):
    archive = problem.archive(seed)
    ga, pg, ai = args.dcrl_split
    emitter = DCRLMEEmitter(
        archive,
        policy=problem.task.policy,
        ga_batch_size=ga,
        pg_batch_size=pg,
        ai_batch_size=ai,
        lengthscale=args.lengthscale,
        iso_sigma=ISO_SIGMA,
        line_sigma=LINE_SIGMA,
        num_critic_training_steps=args.critic_steps,
        num_pg_training_steps=args.pg_steps,
        replay_buffer_size=args.buffer_size,
        critic_hidden_layer_size=tuple(args.critic_hidden),
        seed=seed,
    )
    result = Scheduler(archive, [emitter]).run(problem.task, args.dcrl_iterations + 1, seed=seed)
    record = _ribsax_record(result, archive, problem)
    state = emitter.kernel_state
    record["critic_loss_actor_loss"] = [float(state.critic_loss), float(state.actor_loss)]
    return record


def _ribsax_record(result, archive, problem):
    metrics = result.metrics
    data = archive.data()
    final = float(np.sum(np.asarray(data["objective"]) - problem.offset))
    return {
        "evaluations": metrics["evaluations"].to_numpy().tolist(),
        "qd_score": metrics["qd_score"].to_numpy().tolist(),
        "coverage": metrics["coverage"].to_numpy().tolist(),
        "compile_s": float(result.compile_time),
        "run_s": float(result.run_time),
        "final_qd_score_from_archive": final,
    }


class QDaxRunner:
    """QDax's MAPElites with one emitter, compiled once (``init`` and the scan)."""

    def __init__(self, problem, emitter, iterations, batch):
        from qdax.core.map_elites import MAPElites

        self.problem = problem
        self.iterations = iterations
        self.batch = batch
        self.map_elites = MAPElites(
            scoring_function=problem.scoring_fn,
            emitter=emitter,
            metrics_function=problem.qdax_metrics(),
        )
        self._init = jax.jit(self.map_elites.init)
        self._scan = jax.jit(functools.partial(self._scan_fn, length=iterations))
        self.compiled = None
        self.compile_s = None

    def _scan_fn(self, repertoire, emitter_state, key, length):
        (repertoire, emitter_state, _), metrics = jax.lax.scan(
            self.map_elites.scan_update, (repertoire, emitter_state, key), None, length=length
        )
        return repertoire, emitter_state, metrics

    def run(self, genotypes, seed, evals_per_iteration):
        key = jax.random.key(seed)
        k_init, k_run = jax.random.split(key)
        compile_s = 0.0
        if self.compiled is None:
            start = time.perf_counter()
            init_c = self._init.lower(genotypes, self.problem.centroids, k_init).compile()
            shapes = jax.eval_shape(self.map_elites.init, genotypes, self.problem.centroids, k_init)
            scan_c = self._scan.lower(shapes[0], shapes[1], k_run).compile()
            self.compiled = (init_c, scan_c)
            compile_s = self.compile_s = time.perf_counter() - start
        init_c, scan_c = self.compiled
        start = time.perf_counter()
        repertoire, emitter_state, init_metrics = init_c(genotypes, self.problem.centroids, k_init)
        repertoire, emitter_state, metrics = scan_c(repertoire, emitter_state, k_run)
        jax.block_until_ready((repertoire, metrics))
        run_s = time.perf_counter() - start
        self.last_emitter_state = emitter_state
        n_init = jax.tree.leaves(genotypes)[0].shape[0]
        evaluations = n_init + evals_per_iteration * np.arange(self.iterations + 1)
        qd = np.concatenate([[float(init_metrics["qd_score"])], np.asarray(metrics["qd_score"])])
        coverage = (
            np.concatenate([[float(init_metrics["coverage"])], np.asarray(metrics["coverage"])])
            / 100.0
        )
        fitnesses = np.asarray(repertoire.fitnesses).ravel()
        filled = fitnesses > -np.inf
        final = float(np.sum(fitnesses[filled] - self.problem.offset))
        return {
            "evaluations": evaluations.tolist(),
            "qd_score": qd.tolist(),
            "coverage": coverage.tolist(),
            "compile_s": compile_s,
            "run_s": run_s,
            "final_qd_score_from_archive": final,
        }


def qdax_pgame_runner(problem, args):
    from qdax.core.emitters.mutation_operators import isoline_variation
    from qdax.core.emitters.pga_me_emitter import PGAMEConfig
    from qdax.core.emitters.pga_me_emitter import PGAMEEmitter as QPGAME

    config = PGAMEConfig(env_batch_size=args.batch, **_pgame_settings(args))
    variation_fn = functools.partial(isoline_variation, iso_sigma=ISO_SIGMA, line_sigma=LINE_SIGMA)
    emitter = QPGAME(
        config=config, policy_network=problem.network, env=problem.env, variation_fn=variation_fn
    )
    return QDaxRunner(problem, emitter, args.pgame_iterations, args.batch)


def qdax_qdpg_runner(problem, args):
    from qdax.core.containers.archive import score_euclidean_novelty
    from qdax.core.emitters.dpg_emitter import DiversityPGConfig
    from qdax.core.emitters.qdpg_emitter import QDPGEmitter as QQDPG
    from qdax.core.emitters.qdpg_emitter import QDPGEmitterConfig
    from qdax.core.emitters.qpg_emitter import QualityPGConfig

    settings = _qdpg_settings(args)
    quality, diversity, ga = args.qdpg_split
    common = dict(
        num_critic_training_steps=args.critic_steps,
        num_pg_training_steps=args.pg_steps,
        replay_buffer_size=settings["replay_buffer_size"],
        critic_hidden_layer_size=settings["critic_hidden_layer_size"],
    )
    config = QDPGEmitterConfig(
        qpg_config=QualityPGConfig(env_batch_size=quality, **common),
        dpg_config=DiversityPGConfig(
            env_batch_size=diversity,
            archive_acceptance_threshold=0.1,
            archive_max_size=10_000,
            **common,
        ),
        iso_sigma=ISO_SIGMA,
        line_sigma=LINE_SIGMA,
        ga_batch_size=ga,
    )
    score_novelty = functools.partial(
        score_euclidean_novelty, num_nearest_neighb=args.novelty_k, scaling_ratio=1.0
    )
    emitter = QQDPG(
        config=config,
        policy_network=problem.network,
        env=problem.env,
        score_novelty=score_novelty,
    )
    return QDaxRunner(problem, emitter, args.qdpg_iterations, sum(args.qdpg_split))


def qdax_mees_runner(problem, args):
    from qdax.core.emitters.mees_emitter import MEESConfig
    from qdax.core.emitters.mees_emitter import MEESEmitter as QMEES

    config = MEESConfig(sample_number=args.es_samples)
    emitter = QMEES(
        config=config,
        total_generations=args.mees_iterations,
        scoring_fn=problem.scoring_fn,
        num_descriptors=problem.task.measure_dim,
    )
    return QDaxRunner(problem, emitter, args.mees_iterations, 1)


def qdax_dcrlme_runner(problem, args):
    from qdax.core.emitters.dcrl_me_emitter import DCRLMEConfig
    from qdax.core.emitters.dcrl_me_emitter import DCRLMEEmitter as QDCRLME
    from qdax.core.emitters.mutation_operators import isoline_variation
    from qdax.core.neuroevolution.networks.networks import MLPDC

    ga, pg, ai = args.dcrl_split
    config = DCRLMEConfig(
        ga_batch_size=ga,
        dcrl_batch_size=pg,
        ai_batch_size=ai,
        lengthscale=args.lengthscale,
        critic_hidden_layer_size=tuple(args.critic_hidden),
        num_critic_training_steps=args.critic_steps,
        num_pg_training_steps=args.pg_steps,
        replay_buffer_size=args.buffer_size,
    )
    # The conditioned actor: the policy's layers on [obs, desc] inputs.
    actor = MLPDC(
        layer_sizes=tuple(args.hidden) + (problem.env.action_size,),
        activation=jnp.tanh,
        final_activation=jnp.tanh,
        kernel_init=jax.nn.initializers.lecun_uniform(),
    )
    variation_fn = functools.partial(isoline_variation, iso_sigma=ISO_SIGMA, line_sigma=LINE_SIGMA)
    emitter = QDCRLME(
        config=config,
        policy_network=problem.network,
        actor_network=actor,
        env=problem.env,
        variation_fn=variation_fn,
    )
    return QDaxRunner(problem, emitter, args.dcrl_iterations, sum(args.dcrl_split))


def run_qdax_dcrlme(runner, problem, args, seed):
    batch = sum(args.dcrl_split)
    genotypes = problem.to_qdax(
        problem.task.initial_solutions(batch, jax.random.key(10_000 + seed))
    )
    record = runner.run(genotypes, seed, batch)
    dcrl_state = runner.last_emitter_state.emitter_states[0]
    record["critic_params_finite"] = bool(
        all(np.all(np.isfinite(x)) for x in jax.tree.leaves(dcrl_state.critic_params))
    )
    return record


def run_qdax_pgame(runner, problem, args, seed):
    genotypes = problem.to_qdax(
        problem.task.initial_solutions(args.batch, jax.random.key(10_000 + seed))
    )
    return runner.run(genotypes, seed, args.batch)


def run_qdax_qdpg(runner, problem, args, seed):
    batch = sum(args.qdpg_split)
    genotypes = problem.to_qdax(
        problem.task.initial_solutions(batch, jax.random.key(10_000 + seed))
    )
    record = runner.run(genotypes, seed, batch)
    quality, diversity = runner.last_emitter_state.emitter_states[:2]
    record["critic_params_finite_quality_diversity"] = [
        bool(all(np.all(np.isfinite(x)) for x in jax.tree.leaves(s.critic_params)))
        for s in (quality, diversity)
    ]
    data = np.asarray(diversity.archive.data)
    record["novelty_archive_size"] = int(np.sum(~np.isnan(data).any(axis=1)))
    return record


def run_qdax_mees(runner, problem, args, seed):
    x0 = problem.task.policy.init(jax.random.key(seed))  # ribsax's x0
    return runner.run(problem.to_qdax(x0[None]), seed, args.es_samples + 1)


# ---------------------------------------------------------------------------
# Summary.
# ---------------------------------------------------------------------------
def summarize(runs, budget):
    """Checkpoint curves, finals and speeds of both libraries for one algorithm."""
    grid = np.linspace(0.1 * budget, budget, NUM_CHECKPOINTS)
    curves = {
        lib: np.array([np.interp(grid, r["evaluations"], r["qd_score"]) for r in rs])
        for lib, rs in runs.items()
    }
    rib_mean = curves["ribsax"].mean(axis=0)
    q_min, q_max = curves["qdax"].min(axis=0), curves["qdax"].max(axis=0)
    inside = (rib_mean >= q_min) & (rib_mean <= q_max)
    out = {
        "checkpoints": grid.tolist(),
        "inside": inside.tolist(),
        "inside_share": float(inside.mean()),
    }
    for lib, rs in runs.items():
        finals = np.array([r["qd_score"][-1] for r in rs])
        evals = np.array([r["evaluations"][-1] for r in rs], float)
        run_s = np.array([r["run_s"] for r in rs])
        out[lib] = {
            "final_qd_mean": float(finals.mean()),
            "final_qd_std": float(finals.std(ddof=1)) if len(finals) > 1 else 0.0,
            "final_qd_min": float(finals.min()),
            "final_qd_max": float(finals.max()),
            "final_coverage_mean": float(np.mean([r["coverage"][-1] for r in rs])),
            "evaluations": float(evals.mean()),
            "evals_per_s": float(np.median(evals / run_s)),
            "compile_s": float(max(r["compile_s"] for r in rs)),
            "run_s": run_s.tolist(),
        }
    out["final_inside"] = bool(
        out["qdax"]["final_qd_min"] <= out["ribsax"]["final_qd_mean"] <= out["qdax"]["final_qd_max"]
    )
    # Two-sided Mann-Whitney U test of the final QD scores (seeds as samples).
    finals = pd.DataFrame(
        [{"group": lib, "qd_score": r["qd_score"][-1]} for lib, rs in runs.items() for r in rs]
    )
    out["final_mannwhitney_p"] = (
        float(pairwise_tests(finals, ["qd_score"])["p_value"].iloc[0])
        if min(len(rs) for rs in runs.values()) > 1
        else float("nan")
    )
    ratios = [
        r["evaluations"][-1] / r["run_s"] / (q["evaluations"][-1] / q["run_s"])
        for r, q in zip(runs["ribsax"], runs["qdax"])
    ]
    out["speed_ratio_per_seed"] = ratios
    out["speed_ratio_median"] = float(np.median(ratios))
    return out


def print_table(results, algos):
    """The Markdown table of the summaries of ``algos``."""
    print()
    print(
        "| algorithm | seeds | evaluations | ribsax final QD (mean ± std) | QDax final QD "
        "mean [min, max] | ribsax mean inside QDax's spread (checkpoints; final) | "
        "Mann-Whitney p (finals) | evals/s ribsax | evals/s QDax | ratio | "
        "compile s ribsax / QDax |"
    )
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|")
    names = {"pgame": "PGA-ME", "mees": "ME-ES", "qdpg": "QDPG", "dcrlme": "DCRL-ME"}
    for algo in algos:
        s = results[algo]["summary"]
        r, q = s["ribsax"], s["qdax"]
        print(
            f"| {names[algo]} | {len(results[algo]['runs']['ribsax'])} | "
            f"{r['evaluations']:,.0f} / {q['evaluations']:,.0f} | "
            f"{r['final_qd_mean']:,.0f} ± {r['final_qd_std']:,.0f} | "
            f"{q['final_qd_mean']:,.0f} [{q['final_qd_min']:,.0f}, "
            f"{q['final_qd_max']:,.0f}] | "
            f"{sum(s['inside'])}/{len(s['inside'])}; "
            f"{'yes' if s['final_inside'] else 'no'} | {s['final_mannwhitney_p']:.2f} | "
            f"{r['evals_per_s']:,.0f} | {q['evals_per_s']:,.0f} | "
            f"{s['speed_ratio_median']:.2f} | {r['compile_s']:.0f} / {q['compile_s']:.0f} |"
        )


#: Settings that may differ between merged runs.
_PER_RUN_SETTINGS = ("seeds", "json", "plot", "merge", "algos")


def merge(paths, algos):
    """The results of several runs of this script (``--json`` files) joined seed
    by seed and summarised again; their settings must agree (seeds aside)."""
    results = None
    for path in paths:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
        settings = {k: v for k, v in data["settings"].items() if k not in _PER_RUN_SETTINGS}
        if results is None:
            results = {"machine": data["machine"], "settings": settings, "merged_from": []}
        elif settings != results["settings"]:
            changed = sorted(k for k in settings if settings[k] != results["settings"].get(k))
            raise SystemExit(f"--merge: {path} was run with other settings ({', '.join(changed)})")
        results["merged_from"].append({"path": str(path), "seeds": data["settings"]["seeds"]})
        for algo in algos:
            if algo not in data:
                raise SystemExit(f"--merge: {path} has no {algo} runs")
            runs = results.setdefault(algo, {"runs": {"ribsax": [], "qdax": []}})["runs"]
            for lib in runs:
                runs[lib].extend(data[algo]["runs"][lib])
    for algo in algos:
        runs = results[algo]["runs"]
        budget = runs["ribsax"][0]["evaluations"][-1]
        results[algo]["summary"] = summarize(runs, budget)
    return results


def plot(results, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("- matplotlib not available: no plot")
        return
    algos = [a for a in ("pgame", "mees", "qdpg", "dcrlme") if a in results]
    fig, axes = plt.subplots(1, len(algos), figsize=(5.5 * len(algos), 4), squeeze=False)
    titles = {"pgame": "PGA-ME", "mees": "ME-ES", "qdpg": "QDPG", "dcrlme": "DCRL-ME"}
    for ax, algo in zip(axes[0], algos):
        for lib, color, label in (("ribsax", "C0", "ribsax"), ("qdax", "C1", "QDax 0.5.1")):
            runs = results[algo]["runs"][lib]
            evals = np.asarray(runs[0]["evaluations"], float)
            qd = np.array([r["qd_score"] for r in runs])
            ax.plot(evals, qd.mean(axis=0), color=color, label=f"{label} (mean)")
            ax.fill_between(
                evals,
                qd.min(axis=0),
                qd.max(axis=0),
                color=color,
                alpha=0.25,
                label=f"{label} (min-max)",
            )
        ax.set_title(f"{titles[algo]}, {results['settings']['env']}")
        ax.set_xlabel("evaluations")
        ax.set_ylabel("QD score")
        ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=100)
    print(f"- plot: {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="walker2d_uni")
    parser.add_argument("--episode-length", type=int, default=100)
    parser.add_argument("--hidden", type=int, nargs="+", default=[32, 32])
    parser.add_argument("--grid", type=int, nargs="+", default=[32])
    parser.add_argument(
        "--position-range",
        type=float,
        default=None,
        help="omni tasks: (x, y) measures clipped to [-R, R] (default the task's 30)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--algos",
        nargs="+",
        default=["pgame", "mees"],
        choices=["pgame", "mees", "qdpg", "dcrlme"],
    )
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--pgame-iterations", type=int, default=199)
    parser.add_argument("--critic-steps", type=int, default=30)
    parser.add_argument("--pg-steps", type=int, default=10)
    parser.add_argument("--buffer-size", type=int, default=1_000_000)
    parser.add_argument("--critic-hidden", type=int, nargs="+", default=[64, 64])
    parser.add_argument("--qdpg-split", type=int, nargs=3, default=[34, 33, 33])
    parser.add_argument("--qdpg-iterations", type=int, default=199)
    parser.add_argument("--novelty-k", type=int, default=5)
    parser.add_argument("--dcrl-split", type=int, nargs=3, default=[50, 25, 25])
    parser.add_argument("--dcrl-iterations", type=int, default=199)
    parser.add_argument("--lengthscale", type=float, default=0.1)
    parser.add_argument("--es-samples", type=int, default=100)
    parser.add_argument("--mees-iterations", type=int, default=200)
    parser.add_argument("--json", default=None)
    parser.add_argument("--plot", default=None)
    parser.add_argument(
        "--merge",
        nargs="+",
        default=None,
        metavar="JSON",
        help="run nothing: join the --json files of earlier runs (same settings, other "
        "seeds) and print their table (and --json / --plot) for --algos",
    )
    args = parser.parse_args()
    if args.merge:
        results = merge(args.merge, args.algos)
        seeds = [s for item in results["merged_from"] for s in item["seeds"]]
        print(f"- merged {len(args.merge)} runs, seeds {seeds}")
        print_table(results, args.algos)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as file:
                json.dump(results, file, indent=1)
        if args.plot:
            plot(results, args.plot)
        return

    import brax
    import flax
    import qdax

    start_all = time.perf_counter()
    info = machine_info(
        {"qdax": qdax.__version__, "brax": brax.__version__, "flax": flax.__version__}
    )
    print_header("PGA-ME, ME-ES, QDPG and DCRL-ME: ribsax vs QDax", info)
    print(f"- settings: {vars(args)}")
    results = {"machine": info, "settings": vars(args)}
    problems = {}
    if set(args.algos) - {"dcrlme"}:
        problems["default"] = Problem(args)
        check = task_check(problems["default"])
        print(f"- task check (16 random policies, same params, same reset): {check}")
        results["task_check"] = check
    if "dcrlme" in args.algos:
        problems["dcrl"] = Problem(args, dcrl=True)
        check = task_check(problems["dcrl"])
        print(f"- task check, DCRL-ME's rewards clipped at 0 (same policies): {check}")
        results["task_check_dcrlme"] = check

    for algo in args.algos:
        problem = problems["dcrl" if algo == "dcrlme" else "default"]
        if algo == "pgame":
            runner = qdax_pgame_runner(problem, args)
            rib_fn, q_fn = run_ribsax_pgame, run_qdax_pgame
            budget = args.batch * (args.pgame_iterations + 1)
        elif algo == "qdpg":
            runner = qdax_qdpg_runner(problem, args)
            rib_fn, q_fn = run_ribsax_qdpg, run_qdax_qdpg
            budget = sum(args.qdpg_split) * (args.qdpg_iterations + 1)
        elif algo == "dcrlme":
            runner = qdax_dcrlme_runner(problem, args)
            rib_fn, q_fn = run_ribsax_dcrlme, run_qdax_dcrlme
            budget = sum(args.dcrl_split) * (args.dcrl_iterations + 1)
        else:
            runner = qdax_mees_runner(problem, args)
            rib_fn, q_fn = run_ribsax_mees, run_qdax_mees
            budget = (args.es_samples + 1) * args.mees_iterations
        runs = {"ribsax": [], "qdax": []}
        for seed in args.seeds:
            for lib in ("ribsax", "qdax"):
                t0 = time.perf_counter()
                if lib == "ribsax":
                    rec = rib_fn(problem, args, seed)
                else:
                    rec = q_fn(runner, problem, args, seed)
                runs[lib].append(rec)
                print(
                    f"  {algo} seed {seed} {lib:6s}: evals {rec['evaluations'][-1]:,}"
                    f"  final QD {rec['qd_score'][-1]:,.1f} (archive "
                    f"{rec['final_qd_score_from_archive']:,.1f})  coverage "
                    f"{rec['coverage'][-1]:.3f}  compile {rec['compile_s']:.1f} s  "
                    f"run {rec['run_s']:.1f} s  wall {time.perf_counter() - t0:.1f} s",
                    flush=True,
                )
        summary = summarize(runs, budget)
        results[algo] = {"runs": runs, "summary": summary}

    print_table(results, args.algos)
    print(f"\n- total wall time: {time.perf_counter() - start_all:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=1)
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
