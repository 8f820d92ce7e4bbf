"""Reinforcement learning in JAX: SAC, TD3 and the pieces they share.

Transitions, a device-resident replay buffer, running normalisation, flax
networks, a tanh-squashed Gaussian, environment unrolls in ``lax.scan`` and the
off-policy algorithms, each as a state pytree with pure jitted functions and a
thin class on top. Importing this package does not import brax; only
:func:`make_env` does. Nothing here imports ``ribsax.emitters`` or
``ribsax.schedulers``: QD-RL emitters import from here.
"""
from ribsax.rl._distributions import TanhNormal
from ribsax.rl._networks import MLP, DeterministicPolicy, GaussianPolicy, QNetwork
from ribsax.rl._off_policy import OffPolicyAgent
from ribsax.rl._normalization import RunningMeanStd, RunningMeanStdState
from ribsax.rl._optim import adam_init, adam_step, soft_update
from ribsax.rl._replay_buffer import ReplayBuffer
from ribsax.rl._sac import SAC, SacConfig, SacHyperparams, SacState
from ribsax.rl._transition import Transition
from ribsax.rl._unroll import (RLEnv, episode_returns, evaluate_policy,
                               generate_unroll, make_env, play_step)

__all__ = [
    "Transition",
    "ReplayBuffer",
    "RunningMeanStd",
    "RunningMeanStdState",
    "MLP",
    "DeterministicPolicy",
    "GaussianPolicy",
    "QNetwork",
    "TanhNormal",
    "adam_init",
    "adam_step",
    "soft_update",
    "RLEnv",
    "make_env",
    "play_step",
    "generate_unroll",
    "episode_returns",
    "evaluate_policy",
    "OffPolicyAgent",
    "SAC",
    "SacConfig",
    "SacHyperparams",
    "SacState",
]
