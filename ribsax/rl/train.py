"""Training entry point: ``python -m ribsax.rl.train ALGO --env ENV --steps N``.

Writes learning curves to ``--outdir``: ``curves.csv`` and ``curves.json`` (one row
per evaluation: environment steps, gradient steps, mean deterministic evaluation
return, training metrics, wall time), ``config.json`` and ``curves.png`` when
matplotlib is installed. SAC and TD3 write checkpoints into ``--outdir``/checkpoints
with ``--checkpoint-every`` / ``--checkpoint-minutes`` and continue from the latest
one with ``--resume``. Algorithms are looked up in :data:`ALGORITHMS` (name ->
``run(args) -> rows``); :data:`EXTRA_ARGUMENTS` may add options per algorithm.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp

from ribsax._checkpointer import Checkpointer
from ribsax.rl._replay_buffer import ReplayBuffer
from ribsax.rl._sac import SAC, SacConfig
from ribsax.rl._td3 import TD3, TD3Config
from ribsax.rl._transition import Transition
from ribsax.rl._unroll import evaluate_policy, make_env

__all__ = [
    "ALGORITHMS",
    "EXTRA_ARGUMENTS",
    "algorithm_parser",
    "main",
    "train_off_policy",
    "write_curves",
]


def _hidden(text: str):
    return tuple(int(x) for x in text.split(",") if x)


def _random_return(eval_env, key) -> float:
    def random_policy(obs, k):
        return jax.random.uniform(k, obs.shape[:-1] + (eval_env.action_size,), obs.dtype, -1.0, 1.0)

    returns, _ = jax.jit(lambda k: evaluate_policy(eval_env, random_policy, k))(key)
    return float(jnp.mean(returns))


def train_off_policy(agent, args) -> list[dict]:
    """Trains ``agent`` (SAC or TD3) on ``args.env`` and returns curve rows.

    Warm-up with uniform random actions for ``args.warmup_steps`` environment
    steps, then iterations of one step in each of ``args.num_envs`` environments
    followed by ``args.grad_updates_per_step`` gradient steps; every
    ``args.eval_every`` environment steps the deterministic policy plays one
    episode in each of ``args.eval_envs`` fresh environments.

    Checkpoints (:class:`ribsax.experiments.Checkpointer` in
    ``args.outdir``/checkpoints, numbered by environment steps, the last
    ``args.checkpoint_keep`` kept) are written after the evaluation that ends
    every ``args.checkpoint_every``-th training chunk (one chunk per evaluation;
    0: never) or when ``args.checkpoint_minutes`` have passed since the last one,
    and at the end. They hold the agent, environment and replay-buffer states,
    the evaluation key, the step counts and the rows so far. With
    ``args.resume`` training continues from the latest readable checkpoint (from
    the start when there is none; unreadable newer ones are moved aside with a
    warning, see :meth:`~ribsax.experiments.Checkpointer.restore_latest_readable`)
    and gives the rows (all but ``wall_s``) and final states of an uninterrupted
    run.
    """
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
    key = jax.random.key(args.seed)
    k_init, k_env, k_eval, k_rand = jax.random.split(key, 4)
    buffer = ReplayBuffer(max_size=args.buffer_size, sample_size=agent.config.batch_size)
    state = agent.init(k_init, observation_size=env.observation_size)
    env_state = jax.jit(env.reset)(k_env)
    buffer_state = buffer.init(
        Transition.zeros(env.observation_size, env.action_size, env.state_descriptor_size)
    )

    @jax.jit
    def evaluate(agent_state, k):
        def policy(obs, kk):
            return agent._select_action(agent_state, obs, kk, deterministic=True)

        returns, _ = evaluate_policy(eval_env, policy, k)
        return jnp.mean(returns)

    checkpointer = _off_policy_checkpointer(args)
    restored = checkpoint = None
    if checkpointer is not None and args.resume:
        checkpoint = checkpointer.restore_latest_readable()
    if checkpoint is not None:
        _, _, objects, meta = checkpoint
        restored = objects["training"]
        (state, env_state, buffer_state, k_eval, rows) = restored
        env_steps, grad_steps = int(meta["env_steps"]), int(meta["grad_steps"])
        random_return = float(meta["random_return"])
        start = time.perf_counter() - float(meta["wall_s"])
    else:
        start = time.perf_counter()
        rows = []
        random_return = _random_return(eval_env, k_rand)
        env_steps = grad_steps = 0
    last_checkpoint = time.perf_counter()

    def save_checkpoint():
        nonlocal last_checkpoint
        checkpointer.save(
            env_steps,
            arrays={},
            objects={"training": jax.device_get((state, env_state, buffer_state, k_eval, rows))},
            meta={
                "env_steps": env_steps,
                "grad_steps": grad_steps,
                "random_return": random_return,
                "wall_s": time.perf_counter() - start,
            },
        )
        last_checkpoint = time.perf_counter()

    def record(metrics):
        nonlocal k_eval
        k_eval, k = jax.random.split(k_eval)
        row = {
            "env_steps": env_steps,
            "grad_steps": grad_steps,
            "eval_return": float(evaluate(state, k)),
            "random_return": random_return,
            "wall_s": time.perf_counter() - start,
        }
        row.update({name: float(v) for name, v in metrics.items()})
        rows.append(row)
        print(json.dumps(row), flush=True)

    warmup_iters = -(-args.warmup_steps // args.num_envs)
    if restored is None:
        if warmup_iters > 0:
            state, env_state, buffer_state, _ = agent.train(
                state,
                env_state,
                buffer_state,
                env=env,
                buffer=buffer,
                num_steps=warmup_iters,
                grad_updates_per_step=0,
                random_actions=True,
            )
            env_steps += warmup_iters * args.num_envs
        record({})
    chunk = max(1, args.eval_every // args.num_envs)
    chunks = 0
    try:
        while env_steps < args.steps:
            iters = min(chunk, -(-(args.steps - env_steps) // args.num_envs))
            state, env_state, buffer_state, metrics = agent.train(
                state,
                env_state,
                buffer_state,
                env=env,
                buffer=buffer,
                num_steps=iters,
                grad_updates_per_step=args.grad_updates_per_step,
            )
            env_steps += iters * args.num_envs
            grad_steps += iters * args.grad_updates_per_step
            record(metrics)
            chunks += 1
            if checkpointer is not None and (
                (args.checkpoint_every and chunks % args.checkpoint_every == 0)
                or (
                    args.checkpoint_minutes is not None
                    and time.perf_counter() - last_checkpoint >= 60 * args.checkpoint_minutes
                )
                or env_steps >= args.steps
            ):
                save_checkpoint()
    finally:
        if checkpointer is not None:
            checkpointer.close()
    return rows


def _off_policy_checkpointer(args):
    """The checkpointer of ``args.outdir`` when checkpoints are asked for (or a
    run is resumed), else None."""
    if not (args.checkpoint_every or args.checkpoint_minutes is not None or args.resume):
        return None
    return Checkpointer(os.path.join(args.outdir, "checkpoints"), keep=args.checkpoint_keep)


def _add_checkpoint_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=0,
        help="checkpoint after every this many evaluations (0: never)",
    )
    p.add_argument(
        "--checkpoint-minutes",
        type=float,
        default=None,
        help="checkpoint after an evaluation once this many minutes "
        "have passed since the last checkpoint",
    )
    p.add_argument("--checkpoint-keep", type=int, default=3, help="number of checkpoints kept")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue from the latest checkpoint in OUTDIR/checkpoints",
    )


def _run_sac(args) -> list[dict]:
    config = SacConfig(
        batch_size=args.batch_size,
        episode_length=args.episode_length,
        critic_hidden_layer_size=args.hidden,
        policy_hidden_layer_size=args.hidden,
        learning_rate=args.learning_rate,
        discount=args.discount,
        reward_scaling=args.reward_scaling,
        normalize_observations=args.normalize_observations,
    )
    return train_off_policy(SAC(config, _action_size(args)), args)


def _run_td3(args) -> list[dict]:
    config = TD3Config(
        batch_size=args.batch_size,
        episode_length=args.episode_length,
        critic_hidden_layer_size=args.hidden,
        policy_hidden_layer_size=args.hidden,
        critic_learning_rate=args.learning_rate,
        policy_learning_rate=args.learning_rate,
        discount=args.discount,
        reward_scaling=args.reward_scaling,
    )
    return train_off_policy(TD3(config, _action_size(args)), args)


def _action_size(args) -> int:
    return make_env(args.env, batch_size=1, episode_length=1, backend=args.backend).action_size


#: Algorithm name -> ``run(args) -> list of curve rows``.
ALGORITHMS: dict[str, Callable] = {
    "sac": _run_sac,
    "td3": _run_td3,
}

#: Algorithm name -> ``add(parser)`` adding algorithm-specific options.
EXTRA_ARGUMENTS: dict[str, Callable] = {
    "sac": lambda p: (
        p.add_argument("--normalize-observations", action="store_true"),
        p.set_defaults(discount=0.97),
        _add_checkpoint_arguments(p),
    ),
    "td3": lambda p: (p.set_defaults(normalize_observations=False), _add_checkpoint_arguments(p)),
}


# DIAYN, DADS, their SMERL variants and PBT (runners in _train_skills_pbt.py).
from ribsax.rl import _train_skills_pbt  # noqa: E402

ALGORITHMS.update(_train_skills_pbt.SKILL_ALGORITHMS)
ALGORITHMS.update(_train_skills_pbt.PBT_ALGORITHMS)
EXTRA_ARGUMENTS.update(
    {
        name: _train_skills_pbt.add_skill_arguments(name)
        for name in _train_skills_pbt.SKILL_ALGORITHMS
    }
)
EXTRA_ARGUMENTS.update(
    {name: _train_skills_pbt.add_pbt_arguments for name in _train_skills_pbt.PBT_ALGORITHMS}
)


def _common_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--env",
        default="inverted_pendulum",
        help="ribsax QD task (e.g. hopper_uni) or brax environment name",
    )
    p.add_argument("--steps", type=int, default=100_000, help="environment steps")
    p.add_argument("--outdir", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", default="spring")
    p.add_argument("--episode-length", type=int, default=1000)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--eval-envs", type=int, default=8)
    p.add_argument("--eval-every", type=int, default=10_000, help="environment steps")
    p.add_argument("--warmup-steps", type=int, default=5_000)
    p.add_argument("--grad-updates-per-step", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--buffer-size", type=int, default=1_000_000)
    p.add_argument(
        "--hidden", type=_hidden, default=(256, 256), help="hidden widths, comma-separated"
    )
    p.add_argument("--learning-rate", type=float, default=3e-4)
    p.add_argument("--discount", type=float, default=0.99)
    p.add_argument("--reward-scaling", type=float, default=1.0)


def write_curves(rows: list[dict], outdir: str, title: str = "") -> None:
    """Writes ``curves.csv``, ``curves.json`` and (with matplotlib) ``curves.png``."""
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "curves.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
    names = sorted({k for row in rows for k in row})
    with open(os.path.join(outdir, "curves.csv"), "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=names)
        writer.writeheader()
        writer.writerows(rows)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(5, 3.5))
    x = [r["env_steps"] for r in rows]
    ax.plot(x, [r["eval_return"] for r in rows], marker="o", label="policy")
    if rows and "random_return" in rows[0]:
        ax.axhline(rows[0]["random_return"], color="gray", ls="--", label="random")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("evaluation return")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "curves.png"), dpi=100)
    plt.close(fig)


def algorithm_parser(name: str, prog: str = "python -m ribsax.rl.train") -> argparse.ArgumentParser:
    """The command-line options of algorithm ``name`` (the common ones and its
    own); ``ribsax run`` checks an RL config's options against it."""
    p = argparse.ArgumentParser(prog=f"{prog} {name}")
    _add_options(p, name)
    return p


def _add_options(p: argparse.ArgumentParser, name: str) -> None:
    _common_arguments(p)
    if name in EXTRA_ARGUMENTS:
        EXTRA_ARGUMENTS[name](p)


def main(argv=None) -> list[dict]:
    """Parses ``argv``, trains, writes the curves and returns the rows."""
    parser = argparse.ArgumentParser(
        prog="python -m ribsax.rl.train", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="algorithm", required=True)
    for name in ALGORITHMS:
        _add_options(sub.add_parser(name), name)
    args = parser.parse_args(argv)
    rows = ALGORITHMS[args.algorithm](args)
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(
            {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(args).items()},
            f,
            indent=1,
        )
    write_curves(rows, args.outdir, f"{args.algorithm} on {args.env}")
    return rows


if __name__ == "__main__":
    main()
