"""DIAYN / DADS on ant_omni over several seeds at once: how often the skills separate.

The learning check in ``tests/rl/skills_learning_test.py`` trains one seed; this
script trains ``--seeds`` seeds of the same configuration side by side (the agent's
pure ``init`` / ``train`` / ``evaluate`` under ``jax.vmap``, one compiled program for
all seeds) and evaluates every seed every ``--eval-every`` iterations exactly as the
test does: each skill played deterministically from ``--repeats`` random initial
states, then the separation and leave-one-out nearest-mean accuracy of the final
x-y positions (``tests/rl/_ant_skills.py``). The defaults are the test's
settings (5 one-hot skills, 8 repeats, 40 environments, 100-step episodes,
64x64 networks, observation normalisation, no termination, batch 256, learning
rate 1e-3, initial temperature 0.1, 16 gradient steps per iteration), except that
the test's DIAYN check has a linear discriminator (``--disc-hidden`` with no value).

One JSON line per evaluation (and a summary line per evaluation on stderr):

    python benchmarks/skills_seeds.py diayn --seeds 8 --iterations 10000 --disc-hidden
    python benchmarks/skills_seeds.py dads --seeds 8 --x64     # in float64

``--time-budget`` stops training at the first evaluation after that many seconds
(the printed lines say how far each run got). Runs in float32 unless ``--x64``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("algorithm", choices=("diayn", "dads"))
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--iterations", type=int, default=10_000)
    p.add_argument("--eval-every", type=int, default=2_500)
    p.add_argument("--updates", type=int, default=16, help="gradient steps per iteration")
    p.add_argument(
        "--warmup", type=int, default=50, help="iterations of random actions before training"
    )
    # The agent's settings default to the test's (tests/rl/_ant_skills.py).
    p.add_argument("--num-skills", type=int, default=None)
    p.add_argument(
        "--repeats", type=int, default=None, help="environments (and evaluation episodes) per skill"
    )
    p.add_argument("--episode-length", type=int, default=None)
    p.add_argument(
        "--hidden", type=int, default=None, help="width of the two hidden layers of every network"
    )
    p.add_argument(
        "--disc-hidden",
        type=int,
        nargs="*",
        default=None,
        help="DIAYN discriminator / DADS dynamics hidden layers (default: "
        "two of --hidden; none = linear)",
    )
    p.add_argument("--learning-rate", type=float, default=None)
    p.add_argument("--alpha-init", type=float, default=None)
    p.add_argument("--buffer-size", type=int, default=None)
    p.add_argument("--no-normalize", action="store_true")
    p.add_argument(
        "--terminate", action="store_true", help="brax's default termination when the ant tips over"
    )
    p.add_argument("--x64", action="store_true")
    p.add_argument("--time-budget", type=float, default=None)
    p.add_argument("--json", default=None, help="also append the lines to this file")
    return p


def main():
    args = _parser().parse_args()
    import jax

    jax.config.update("jax_enable_x64", args.x64)
    import numpy as np

    from tests.rl._ant_skills import ant_skill_agent, distinguishable, separation_and_accuracy

    # Settings not given take ant_skill_agent's defaults (the test's settings),
    # written back into args so that the printed lines show them.
    for name, param in inspect.signature(ant_skill_agent).parameters.items():
        if getattr(args, name, False) is None:
            setattr(args, name, param.default)
    k, reps = args.num_skills, args.repeats
    agent = ant_skill_agent(
        args.algorithm,
        num_skills=k,
        repeats=reps,
        episode_length=args.episode_length,
        hidden=args.hidden,
        model_hidden=args.disc_hidden,
        learning_rate=args.learning_rate,
        alpha_init=args.alpha_init,
        normalize_observations=not args.no_normalize,
        terminate=args.terminate,
        buffer_size=args.buffer_size,
    )
    labels = np.arange(k * reps) % k
    skills = jax.nn.one_hot(labels, k)
    eval_key = jax.random.key(1)  # The test's evaluation key.
    init = jax.jit(jax.vmap(agent._init))
    warmup = jax.jit(
        jax.vmap(
            lambda s: agent._train(s, args.warmup, grad_updates_per_step=0, random_actions=True)[0]
        ),
        donate_argnums=0,
    )
    chunk = jax.jit(
        jax.vmap(lambda s: agent._train(s, args.eval_every, grad_updates_per_step=args.updates)),
        donate_argnums=0,
    )
    final_positions = jax.jit(
        jax.vmap(lambda s: agent._evaluate(s, eval_key, skills).final_state_descriptors)
    )

    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    start = time.perf_counter()
    state = init(jax.vmap(jax.random.key)(np.asarray(seeds)))
    before = [separation_and_accuracy(f, labels) for f in np.asarray(final_positions(state))]
    state = warmup(state)
    done = 0
    while done < args.iterations:
        state, metrics = chunk(state)
        done += args.eval_every
        finals = np.asarray(final_positions(state))
        elapsed = time.perf_counter() - start
        rows = []
        for i, seed in enumerate(seeds):
            sep, acc, gap = separation_and_accuracy(finals[i], labels)
            rows.append(
                dict(
                    seed=seed,
                    accuracy=acc,
                    accuracy_before=before[i][1],
                    separation=round(sep, 3),
                    gap=round(gap, 3),
                    separation_before=round(before[i][0], 3),
                    diversity_reward=round(float(metrics["diversity_reward"][i]), 4),
                    skill_means=[
                        finals[i][labels == s].mean(0).round(2).tolist() for s in range(k)
                    ],
                )
            )
        passed = sum(
            distinguishable(r["accuracy"], r["separation"], r["separation_before"]) for r in rows
        )
        line = dict(
            vars(args),
            backend=jax.default_backend(),
            iterations_done=done,
            env_steps=done * k * reps,
            grad_steps=done * args.updates,
            seconds=round(elapsed, 1),
            passed=passed,
            runs=rows,
        )
        text = json.dumps(line)
        print(text, flush=True)
        if args.json:
            with open(args.json, "a", encoding="utf-8") as f:
                f.write(text + "\n")
        print(
            f"{args.algorithm} {done * k * reps} env steps, {elapsed:.0f} s: "
            f"passed {passed}/{len(rows)}; accuracy "
            f"{[r['accuracy'] for r in rows]}; separation "
            f"{[r['separation'] for r in rows]}",
            file=sys.stderr,
            flush=True,
        )
        if args.time_budget is not None and elapsed > args.time_budget:
            break


if __name__ == "__main__":
    main()
