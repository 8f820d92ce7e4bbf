"""ribsax.rl vs QDax 0.5.0: DIAYN and DADS environment and gradient steps per second.

Same JAX and brax, same task (``--env``, a QD task with state descriptors; QDax's
``ant_omni`` crashes on jax 0.10, so the default is ``walker2d_uni``), same
number of environments and one-hot skills (tiled, QDax's only mode), same
256x256 networks (QDax's discriminator and dynamics use the critic's widths), same
batch and buffer sizes. Per algorithm and library, each timing is a jitted
``lax.scan`` compiled first (compile time reported separately), then run
``--repeats`` times (best kept; the machine may be shared):

- ``env``: ``--env-iters`` iterations of acting in every environment and inserting
  the transitions (QDax: ``do_iteration_fn`` with ``grad_updates_per_step=0``;
  ribsax: ``agent.train(..., grad_updates_per_step=0)``) -> environment steps/s;
- ``grad``: ``--grad-iters`` updates (policy, critics, temperature and
  discriminator / skill dynamics), each sampling a batch from a filled buffer
  (QDax: ``update``; ribsax: ``agent.update``) -> gradient steps/s.

Each library runs in a subprocess of its own, back to back (QDax from its own
virtual environment, ``--qdax-python``), and the ratios ribsax / QDax are printed
(> 1: ribsax faster). QDax 0.5.0's DADS does not import with jax 0.10
(tensorflow_probability's JAX substrate fails), so only ribsax's DADS is timed.

    python benchmarks/skills_speed.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def _timed(fn, args, repeats):
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return compile_s, times


def _rates(args, c_env, t_env, c_grad, t_grad):
    return {
        "env_steps_per_s": args.env_iters * args.num_envs / min(t_env),
        "grad_steps_per_s": args.grad_iters / min(t_grad),
        "compile_s": {"env": c_env, "grad": c_grad},
        "times_s": {"env": t_env, "grad": t_grad},
    }


def _ribsax_side(args):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jax

    from ribsax.rl import DADS, DIAYN, DadsConfig, DiaynConfig, make_env

    env = make_env(args.env, batch_size=args.num_envs, episode_length=args.episode_length)
    hidden = tuple(args.hidden)
    common = dict(
        batch_size=args.batch_size,
        episode_length=args.episode_length,
        num_skills=args.num_skills,
        critic_hidden_layer_size=hidden,
        policy_hidden_layer_size=hidden,
    )
    results = {}
    for algo in args.algos:
        if algo == "diayn":
            agent = DIAYN(
                DiaynConfig(**common, discriminator_hidden_layer_size=hidden),
                env,
                buffer_size=args.buffer_size,
            )
        else:
            agent = DADS(
                DadsConfig(**common, dynamics_hidden_layer_size=hidden),
                env,
                buffer_size=args.buffer_size,
            )
        fill = jax.jit(
            lambda s, a=agent: a._train(
                s, args.fill_iters, grad_updates_per_step=0, random_actions=True
            )
        )
        state = fill(agent.init(jax.random.key(0)))[0]
        env_fn = jax.jit(lambda s, a=agent: a._train(s, args.env_iters, grad_updates_per_step=0))
        c_env, t_env = _timed(env_fn, (state,), args.repeats)

        def grads(s, a=agent):
            return jax.lax.scan(lambda c, _: a._update(c), s, None, args.grad_iters)

        c_grad, t_grad = _timed(jax.jit(grads), (state,), args.repeats)
        results[algo] = _rates(args, c_env, t_env, c_grad, t_grad)
    return results


def _qdax_side(args):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    import functools

    import jax
    import jax.numpy as jnp
    from qdax.baselines.diayn import DIAYN, DiaynConfig
    from qdax.core.neuroevolution.buffers.buffer import QDTransition, ReplayBuffer
    from qdax.core.neuroevolution.sac_td3_utils import do_iteration_fn
    from qdax.tasks.brax import v2 as environments

    env = environments.create(
        args.env, batch_size=args.num_envs, episode_length=args.episode_length, auto_reset=True
    )
    hidden = tuple(args.hidden)
    common = dict(
        batch_size=args.batch_size,
        episode_length=args.episode_length,
        num_skills=args.num_skills,
        critic_hidden_layer_size=hidden,
        policy_hidden_layer_size=hidden,
    )
    desc = env.state_descriptor_length
    skills = jnp.concatenate([jnp.eye(args.num_skills)] * (args.num_envs // args.num_skills))
    results = {}
    for algo in args.algos:
        if algo == "diayn":
            agent = DIAYN(DiaynConfig(**common), env.action_size)
            play = functools.partial(
                agent.play_step_fn, skills=skills, env=env, deterministic=False
            )
        else:
            try:  # QDax 0.5.0's DADS imports tensorflow_probability's JAX substrate.
                from qdax.baselines.dads import DADS, DadsConfig
            except (ImportError, AttributeError) as err:
                results[algo] = {"error": f"{type(err).__name__}: {err}"}
                continue
            agent = DADS(DadsConfig(**common), env.action_size, desc)
            play = functools.partial(
                agent.play_step_fn, skills=skills, env=env, deterministic=False
            )
        state = agent.init(
            jax.random.key(0),
            action_size=env.action_size,
            observation_size=env.observation_size,
            descriptor_size=desc,
        )
        env_state = jax.jit(env.reset)(jax.random.key(1))
        buf = ReplayBuffer.init(
            buffer_size=args.buffer_size,
            transition=QDTransition.init_dummy(
                observation_dim=env.observation_size + args.num_skills,
                action_dim=env.action_size,
                descriptor_dim=desc,
            ),
        )

        def iterate(n, s, e, b, agent=agent, play=play):
            def body(carry, _):
                s, e, b, _ = do_iteration_fn(
                    *carry,
                    env_batch_size=args.num_envs,
                    grad_updates_per_step=0,
                    play_step_fn=play,
                    update_fn=agent.update,
                )
                return (s, e, b), None

            return jax.lax.scan(body, (s, e, b), None, n)[0]

        state, env_state, buf = jax.jit(functools.partial(iterate, args.fill_iters))(
            state, env_state, buf
        )
        env_fn = jax.jit(functools.partial(iterate, args.env_iters))
        c_env, t_env = _timed(env_fn, (state, env_state, buf), args.repeats)

        def grads(s, b, agent=agent):
            def body(carry, _):
                s, b = carry
                s, b, _ = agent.update(s, b)
                return (s, b), None

            return jax.lax.scan(body, (s, b), None, args.grad_iters)[0]

        c_grad, t_grad = _timed(jax.jit(grads), (state, buf), args.repeats)
        results[algo] = _rates(args, c_env, t_env, c_grad, t_grad)
    return results


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--side", choices=("both", "ribsax", "qdax"), default="both")
    p.add_argument("--algos", nargs="+", default=["diayn", "dads"])
    p.add_argument("--env", default="walker2d_uni")
    p.add_argument("--episode-length", type=int, default=100)
    p.add_argument("--num-envs", type=int, default=10)
    p.add_argument("--num-skills", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    p.add_argument("--buffer-size", type=int, default=100_000)
    p.add_argument("--fill-iters", type=int, default=100)
    p.add_argument("--env-iters", type=int, default=200)
    p.add_argument("--grad-iters", type=int, default=200)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--qdax-python", default="/work/venv-qdax/bin/python")
    return p


def main():
    args = _parser().parse_args()
    if args.side != "both":
        side = _ribsax_side if args.side == "ribsax" else _qdax_side
        print(json.dumps(side(args)))
        return
    out = {}
    for side, python in (("ribsax", sys.executable), ("qdax", args.qdax_python)):
        cmd = [python, os.path.abspath(__file__), "--side", side] + sys.argv[1:]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        out[side] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(
        f"{'algo':6} {'metric':18} {'ribsax':>10} {'qdax':>10} {'ratio':>7}  "
        "compile s (ribsax / qdax)"
    )
    for algo in args.algos:
        r, q = out["ribsax"][algo], out["qdax"][algo]
        if "error" in q:
            print(
                f"{algo:6} QDax unavailable ({q['error'][:60]}); ribsax "
                f"{r['env_steps_per_s']:.0f} env steps/s, "
                f"{r['grad_steps_per_s']:.0f} grad steps/s"
            )
            continue
        for metric, part in (("env_steps_per_s", "env"), ("grad_steps_per_s", "grad")):
            print(
                f"{algo:6} {metric:18} {r[metric]:10.0f} {q[metric]:10.0f} "
                f"{r[metric] / q[metric]:7.2f}  {r['compile_s'][part]:.1f} / "
                f"{q['compile_s'][part]:.1f}"
            )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
