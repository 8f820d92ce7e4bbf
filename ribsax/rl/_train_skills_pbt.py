"""Training-entry-point runners of DIAYN, DADS, their SMERL variants and PBT.

Registered in :data:`ribsax.rl.train.ALGORITHMS`; each ``run(args)`` trains and
returns the learning-curve rows that ``python -m ribsax.rl.train`` writes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import jax
import numpy as np

from ribsax.rl._dads import DADS, DadsConfig
from ribsax.rl._diayn import DIAYN, DiaynConfig
from ribsax.rl._pbt_sac import PBTSAC, PBTSacConfig
from ribsax.rl._pbt_td3 import PBTTD3, PBTTD3Config
from ribsax.rl._smerl import DADSSMERL, DIAYNSMERL, DadsSmerlConfig, DiaynSmerlConfig
from ribsax.rl._unroll import make_env

__all__ = ["SKILL_ALGORITHMS", "PBT_ALGORITHMS", "add_skill_arguments", "add_pbt_arguments"]

_SKILLS = {
    "diayn": (DIAYN, DiaynConfig, "discriminator_hidden_layer_size"),
    "dads": (DADS, DadsConfig, "dynamics_hidden_layer_size"),
    "diayn_smerl": (DIAYNSMERL, DiaynSmerlConfig, "discriminator_hidden_layer_size"),
    "dads_smerl": (DADSSMERL, DadsSmerlConfig, "dynamics_hidden_layer_size"),
}


def _row(rows: list[dict], start: float, **values) -> None:
    row = {name: (float(v) if np.ndim(v) == 0 else v) for name, v in values.items()}
    row["wall_s"] = time.perf_counter() - start
    rows.append(row)
    print(json.dumps(row), flush=True)


def _run_skills(name: str, args) -> list[dict]:
    cls, config_cls, model_field = _SKILLS[name]
    env = make_env(
        args.env, batch_size=args.num_envs, episode_length=args.episode_length, backend=args.backend
    )
    extra = {}
    if name.endswith("smerl"):
        extra = dict(
            smerl_target=args.smerl_target,
            smerl_margin=args.smerl_margin,
            diversity_reward_scale=args.diversity_reward_scale,
        )
    config = config_cls(
        batch_size=args.batch_size,
        episode_length=args.episode_length,
        learning_rate=args.learning_rate,
        discount=args.discount,
        critic_hidden_layer_size=args.hidden,
        policy_hidden_layer_size=args.hidden,
        num_skills=args.num_skills,
        skill_kind=args.skill_kind,
        per_env_skills=args.per_env_skills,
        **{model_field: args.hidden},
        **extra,
    )
    agent = cls(config, env, buffer_size=args.buffer_size)
    key, eval_key = jax.random.split(jax.random.key(args.seed))
    state = agent.init(key)
    start, rows = time.perf_counter(), []
    unroll = args.episode_length if name.endswith("smerl") else 1
    warmup = -(-args.warmup_steps // (args.num_envs * unroll))
    if warmup:
        state, _ = agent.train(state, warmup, grad_updates_per_step=0, random_actions=True)
    env_steps, grad_steps = warmup * args.num_envs * unroll, 0
    metrics = {}
    while True:
        eval_key, k = jax.random.split(eval_key)
        ev = agent.evaluate(state, k)
        _row(
            rows,
            start,
            env_steps=env_steps,
            grad_steps=grad_steps,
            eval_return=np.mean(ev.returns),
            eval_diversity_return=np.mean(ev.diversity_returns),
            **metrics,
        )
        if env_steps >= args.steps:
            return rows
        iters = max(1, args.eval_every // (args.num_envs * unroll))
        # SMERL unrolls whole episodes: keep the updates-per-env-step ratio.
        updates = args.grad_updates_per_step * unroll
        state, metrics = agent.train(state, iters, grad_updates_per_step=updates)
        env_steps += iters * args.num_envs * unroll
        grad_steps += iters * updates


def _run_pbt(name: str, args) -> list[dict]:
    env = make_env(
        args.env, batch_size=args.num_envs, episode_length=args.episode_length, backend=args.backend
    )
    eval_env = make_env(
        args.env,
        batch_size=args.eval_envs,
        episode_length=args.episode_length,
        backend=args.backend,
        auto_reset=False,
    )
    sizes = dict(policy_hidden_layer_size=args.hidden, critic_hidden_layer_size=args.hidden)
    if name == "pbt_sac":
        cls, config = (
            PBTSAC,
            PBTSacConfig(batch_size=args.batch_size, episode_length=args.episode_length, **sizes),
        )
    else:
        cls, config = (
            PBTTD3,
            PBTTD3Config(batch_size=args.batch_size, episode_length=args.episode_length, **sizes),
        )
    n = args.population_size
    trainer = cls(
        config,
        env,
        population_size=n,
        num_best_to_replace_from=max(1, round(n * args.pbt_fraction)),
        num_worse_to_replace=max(1, round(n * args.pbt_fraction)),
        buffer_size=args.buffer_size,
        eval_env=eval_env,
    )
    key, eval_key, pbt_key = jax.random.split(jax.random.key(args.seed), 3)
    population = trainer.init(key)
    start, rows = time.perf_counter(), []
    warmup = -(-args.warmup_steps // args.num_envs)
    if warmup:
        population, _ = trainer.train(
            population, warmup, grad_updates_per_step=0, random_actions=True
        )
    env_steps = warmup * args.num_envs
    while True:
        eval_key, k = jax.random.split(eval_key)
        returns = np.asarray(trainer.evaluate(population, k))
        _row(
            rows,
            start,
            env_steps=env_steps,
            best_return=returns.max(),
            mean_return=returns.mean(),
            eval_return=returns.max(),
        )
        if env_steps >= args.steps:
            return rows
        pbt_key, k = jax.random.split(pbt_key)
        population = trainer.update(population, k, returns)
        iters = max(1, args.eval_every // args.num_envs)
        population, _ = trainer.train(
            population, iters, grad_updates_per_step=args.grad_updates_per_step
        )
        env_steps += iters * args.num_envs


def add_skill_arguments(name: str) -> Callable:
    """``add(parser)`` for a skill algorithm's options."""

    def add(p):
        p.add_argument("--num-skills", type=int, default=5)
        p.add_argument("--skill-kind", default="one_hot", choices=("one_hot", "gaussian", "sphere"))
        p.add_argument("--per-env-skills", action="store_true")
        if name.endswith("smerl"):
            p.add_argument("--smerl-target", type=float, default=1e3)
            p.add_argument("--smerl-margin", type=float, default=1e2)
            p.add_argument("--diversity-reward-scale", type=float, default=1.0)
        p.set_defaults(
            env="ant_omni",
            episode_length=100,
            num_envs=10,
            discount=0.97,
            grad_updates_per_step=1,
            warmup_steps=1000,
        )

    return add


def add_pbt_arguments(p) -> None:
    """``add(parser)`` for PBT's options."""
    p.add_argument("--population-size", type=int, default=8)
    p.add_argument(
        "--pbt-fraction",
        type=float,
        default=0.25,
        help="fraction of members replaced, and of best sources",
    )
    p.set_defaults(num_envs=4, buffer_size=100_000)


SKILL_ALGORITHMS = {name: (lambda args, _n=name: _run_skills(_n, args)) for name in _SKILLS}
PBT_ALGORITHMS = {
    name: (lambda args, _n=name: _run_pbt(_n, args)) for name in ("pbt_sac", "pbt_td3")
}
