"""ribsax.rl vs QDax 0.5.0: SAC and TD3 environment and gradient steps per second.

Same JAX, same brax environment (a plain brax env, ``--env``, spring backend,
``--num-envs`` parallel copies, brax's episode/vmap/auto-reset wrappers on both
sides), same networks (``--hidden``, QDax's defaults 256x256), same batch size,
same buffer size. Three timings per algorithm and library, each a jitted
``lax.scan`` compiled first (compile time reported separately) and then run
``--repeats`` times:

- ``env``: ``--env-iters`` iterations of acting in all environments with the
  exploration policy and inserting the transitions in the replay buffer
  (QDax: ``do_iteration_fn`` with ``grad_updates_per_step=0``; ribsax:
  ``agent.train(..., grad_updates_per_step=0)``) -> environment steps/s;
- ``grad``: ``--grad-iters`` gradient steps, each sampling a batch from a filled
  buffer (QDax: ``sac.update`` / ``td3.update``, which sample inside; ribsax:
  ``buffer.sample`` + ``agent.update``) -> gradient steps/s;
- ``train``: ``--train-iters`` iterations of one environment step in every
  environment plus ``--grad-per-iter`` gradient steps (QDax: ``do_iteration_fn``
  with ``grad_updates_per_step = grad_per_iter / num_envs``) -> env steps/s.

QDax 0.5.0 needs its own virtual environment (``--qdax-python``, default
``/work/venv-qdax/bin/python``; it installs with jax 0.10.2 and brax 0.14.2):
this script runs each library in a subprocess of its own, back to back on the same
machine, and prints the ratios ribsax / QDax (> 1 means ribsax is faster). The
best of the repeats is used (the machine may be shared).

    python benchmarks/rl_speed.py                 # both, prints the ratio table
    python benchmarks/rl_speed.py --side ribsax   # one library, JSON on stdout
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def _timed(fn, args, repeats):
    """``(output, first-call seconds, [seconds of each later call])``."""
    import jax

    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return out, compile_s, times


def _make_agent(algo, classes, args, action_size):
    """SAC or TD3 of either library (same config field names) at the settings."""
    sac, sac_config, td3, td3_config = classes
    agent, config = (sac, sac_config) if algo == "sac" else (td3, td3_config)
    hidden = tuple(args.hidden)
    return agent(
        config(
            batch_size=args.batch_size,
            episode_length=1000,
            critic_hidden_layer_size=hidden,
            policy_hidden_layer_size=hidden,
        ),
        action_size,
    )


def _ribsax_side(args):
    # This checkout's ribsax, whatever is installed.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jax

    from ribsax.rl import SAC, TD3, ReplayBuffer, SacConfig, TD3Config, Transition, make_env

    env = make_env(args.env, batch_size=args.num_envs, episode_length=1000)
    results = {}
    for algo in args.algos:
        agent = _make_agent(algo, (SAC, SacConfig, TD3, TD3Config), args, env.action_size)
        buffer = ReplayBuffer(max_size=args.buffer_size, sample_size=args.batch_size)
        state0 = agent.init(jax.random.key(0), observation_size=env.observation_size)
        env_state0 = jax.jit(env.reset)(jax.random.key(1))
        example = Transition.zeros(env.observation_size, env.action_size, 0)

        def run(n_iters, grads, state, env_state, buf):
            return agent._train(
                state,
                env_state,
                buf,
                env=env,
                buffer=buffer,
                num_steps=n_iters,
                grad_updates_per_step=grads,
            )

        # Fill the buffer with random-policy steps (not timed).
        fill = jax.jit(
            lambda s, e, b: agent._train(
                s,
                e,
                b,
                env=env,
                buffer=buffer,
                num_steps=args.fill_iters,
                grad_updates_per_step=0,
                random_actions=True,
            )
        )
        if set(args.parts) == {"grad"}:  # no environment compile: random data
            state, env_state = state0, env_state0
            n = args.fill_iters * args.num_envs
            buf = buffer.insert(
                buffer.init(example),
                jax.tree.map(
                    lambda x: jax.random.normal(jax.random.key(3), (n,) + x.shape, x.dtype), example
                ),
            )
        else:
            state, env_state, buf, _ = fill(state0, env_state0, buffer.init(example))
        env_fn = jax.jit(lambda s, e, b: run(args.env_iters, 0, s, e, b))
        timings = {}
        if "env" in args.parts:
            timings["env"] = _timed(env_fn, (state, env_state, buf), args.repeats)

        def grads(s, b):
            def body(carry, k):
                k1, k2 = jax.random.split(k)
                carry, m = agent._update(carry, buffer.sample(b, k1), k2)
                return carry, m

            return jax.lax.scan(body, s, jax.random.split(jax.random.key(2), args.grad_iters))

        if "grad" in args.parts:
            timings["grad"] = _timed(jax.jit(grads), (state, buf), args.repeats)
        train_fn = jax.jit(lambda s, e, b: run(args.train_iters, args.grad_per_iter, s, e, b))
        if "train" in args.parts:
            timings["train"] = _timed(train_fn, (state, env_state, buf), args.repeats)
        results[algo] = _rates(args, timings)
    return results


def _qdax_side(args):
    # benchmarks/qdax.py would shadow the qdax package.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    import functools

    import jax
    from qdax.baselines.sac import SAC, SacConfig
    from qdax.baselines.td3 import TD3, TD3Config
    from qdax.core.neuroevolution.buffers.buffer import ReplayBuffer, Transition
    from qdax.core.neuroevolution.sac_td3_utils import do_iteration_fn
    from qdax.tasks.brax import v2 as environments

    env = environments.create(
        args.env, batch_size=args.num_envs, episode_length=1000, auto_reset=True
    )
    results = {}
    for algo in args.algos:
        agent = _make_agent(algo, (SAC, SacConfig, TD3, TD3Config), args, env.action_size)
        state = agent.init(
            jax.random.key(0), action_size=env.action_size, observation_size=env.observation_size
        )
        env_state = jax.jit(env.reset)(jax.random.key(1))
        buf = ReplayBuffer.init(
            buffer_size=args.buffer_size,
            transition=Transition.init_dummy(
                observation_dim=env.observation_size, action_dim=env.action_size
            ),
        )
        play = functools.partial(agent.play_step_fn, env=env, deterministic=False)

        def iterate(n_iters, grad_per_step, s, e, b):
            def body(carry, _):
                s, e, b = carry
                s, e, b, m = do_iteration_fn(
                    s,
                    e,
                    b,
                    env_batch_size=args.num_envs,
                    grad_updates_per_step=grad_per_step,
                    play_step_fn=play,
                    update_fn=agent.update,
                )
                return (s, e, b), m

            return jax.lax.scan(body, (s, e, b), None, n_iters)

        # Fill with the (untrained) policy: QDax's warm-start plays its policy.
        if set(args.parts) == {"grad"}:  # no environment compile: random data
            n = args.fill_iters * args.num_envs
            buf = buf.insert(
                jax.tree.map(
                    lambda x: jax.random.normal(jax.random.key(3), (n,) + x.shape[1:], x.dtype),
                    buf.transition,
                )
            )
        else:
            (state, env_state, buf), _ = jax.jit(
                lambda s, e, b: iterate(args.fill_iters, 0, s, e, b)
            )(state, env_state, buf)
        env_fn = jax.jit(lambda s, e, b: iterate(args.env_iters, 0, s, e, b))
        timings = {}
        if "env" in args.parts:
            timings["env"] = _timed(env_fn, (state, env_state, buf), args.repeats)

        def grads(s, b):
            def body(carry, _):
                s, b = carry
                s, b, m = agent.update(s, b)
                return (s, b), m

            return jax.lax.scan(body, (s, b), None, args.grad_iters)

        if "grad" in args.parts:
            timings["grad"] = _timed(jax.jit(grads), (state, buf), args.repeats)
        train_fn = jax.jit(
            lambda s, e, b: iterate(args.train_iters, args.grad_per_iter / args.num_envs, s, e, b)
        )
        if "train" in args.parts:
            timings["train"] = _timed(train_fn, (state, env_state, buf), args.repeats)
        results[algo] = _rates(args, timings)
    return results


def _rates(args, timings):
    """Rates from ``{part: (out, compile_s, times)}`` (best of the repeats)."""
    work = {
        "env": ("env_steps_per_s", args.env_iters * args.num_envs),
        "grad": ("grad_steps_per_s", args.grad_iters),
        "train": ("train_env_steps_per_s", args.train_iters * args.num_envs),
    }
    out = {"compile_s": {}, "times_s": {}}
    for part, (_, compile_s, times) in timings.items():
        name, amount = work[part]
        out[name] = amount / min(times)
        out["compile_s"][part] = compile_s
        out["times_s"][part] = times
    return out


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--side", choices=("both", "ribsax", "qdax"), default="both")
    p.add_argument("--algos", nargs="+", default=["td3", "sac"])
    p.add_argument("--env", default="halfcheetah")
    p.add_argument("--num-envs", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    p.add_argument("--buffer-size", type=int, default=100_000)
    p.add_argument("--fill-iters", type=int, default=100)
    p.add_argument("--env-iters", type=int, default=200)
    p.add_argument("--grad-iters", type=int, default=200)
    p.add_argument("--train-iters", type=int, default=50)
    p.add_argument("--grad-per-iter", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--parts", nargs="+", default=["env", "grad", "train"], choices=("env", "grad", "train")
    )
    p.add_argument("--qdax-python", default="/work/venv-qdax/bin/python")
    return p


def main():
    args = _parser().parse_args()
    if args.side == "ribsax":
        print(json.dumps(_ribsax_side(args)))
        return
    if args.side == "qdax":
        print(json.dumps(_qdax_side(args)))
        return
    forwarded = sys.argv[1:]
    here = os.path.abspath(__file__)
    out = {}
    for side, python in (("ribsax", sys.executable), ("qdax", args.qdax_python)):
        proc = subprocess.run(
            [python, here, "--side", side] + forwarded, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            print(f"{side} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
            sys.exit(1)
        out[side] = json.loads(proc.stdout.strip().splitlines()[-1])
    import jax

    print(
        f"jax {jax.__version__}, {os.cpu_count()} cores, env {args.env}, "
        f"{args.num_envs} envs, batch {args.batch_size}, hidden {args.hidden}"
    )
    print(f"{'algo':5} {'metric':24} {'ribsax':>10} {'qdax':>10} {'ratio':>7}")
    for algo in args.algos:
        r, q = out["ribsax"][algo], out["qdax"][algo]
        for metric in ("env_steps_per_s", "grad_steps_per_s", "train_env_steps_per_s"):
            if metric in r:
                print(
                    f"{algo:5} {metric:24} {r[metric]:10.1f} {q[metric]:10.1f} "
                    f"{r[metric] / q[metric]:7.2f}x"
                )
        print(
            f"{algo:5} {'compile s (' + '/'.join(r['compile_s']) + ')':24} "
            f"{'/'.join(f'{v:.1f}' for v in r['compile_s'].values()):>10} "
            f"{'/'.join(f'{v:.1f}' for v in q['compile_s'].values()):>10}"
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
