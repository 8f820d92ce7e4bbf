#!/usr/bin/env bash
# One lent-GPU session in one command: environment, GPU tests, GPU benchmarks.
#
# Run on a device machine from the repository root (device tool: `carry: [".whl"]`),
# after downloading the pure-Python wheels the device image lacks into .whl/:
#
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#       --implementation cp --platform manylinux_2_28_x86_64 -d .whl \
#       ribs==0.12.0 qdax==0.5.0 jax_tqdm==0.4.0 numpy_groupies==0.16.0 \
#       array-api-compat==1.16.0
#
# The stages `rl` and `skills` need brax and QDax's RL baselines (these, ~45 MB;
# add --platform manylinux_2_27_x86_64 for mujoco-core and mujoco-studio):
#
#       brax==0.14.2 mujoco==4.0.0 mujoco-core==4.0.0 mujoco-studio==4.0.0 \
#       mujoco-mjx==3.17.0 trimesh==5.2.0 jaxopt==0.8.5 ml-collections==1.1.0 \
#       flashbax==0.1.3 qdax==0.5.0 jumanji==1.1.2 tensorflow-probability==0.25.0 \
#       glfw pyopengl websockets tensorboardx
#
# The stage `qdrl` needs the same brax wheels; with QDRL_QDAX=1 also QDax 0.5.1's
# wheel (not on the package index: build it from QDax's repository at 46b8fee) in
# .whl/ in place of qdax==0.5.0.
#
# The device image brings its own JAX (0.11.2 with CUDA), NumPy, SciPy, pandas, flax,
# optax, chex, numba, scikit-learn and pytest; ribsax runs from the source tree.
#
# Usage: bash benchmarks/gpu_session.sh STAGE...
#   (stages: env tests core qdax add rl skills qdrl)
# Logs and JSON go to $OUT (the device tool brings them back), else ./gpu_out.
set -u
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-}
export PYTHONUNBUFFERED=1
# Several pytest workers share the GPU: allocate on demand, not 75% each.
export XLA_PYTHON_CLIENT_PREALLOCATE=false

for stage in "$@"; do
  case $stage in
    env)
      nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem \
          --format=csv | tee "$OUT/env.txt"
      python3 - <<'EOF' 2>&1 | tee -a "$OUT/env.txt"
import sys, jax, numpy, ribs, qdax, ribsax
print(sys.version.split()[0], "jax", jax.__version__, "numpy", numpy.__version__,
      "ribs", ribs.__version__, "qdax", qdax.__version__, "ribsax", ribsax.__version__)
print(jax.devices(), jax.default_backend())
EOF
      ;;
    tests)
      # The archive, scheduler and emitter suites on the GPU (JAX's default backend
      # there), against the installed ribs; brax tasks need brax, not carried.
      timeout "${TEST_SECONDS:-300}" python3 -m pytest -q -p no:cacheprovider \
          -n "${TEST_WORKERS:-4}" ${TEST_PATHS:-tests/archives} 2>&1 \
          | tee "$OUT/tests.log" | tail -40
      ;;
    core)
      # The step functions and loops on the GPU: compile counts, fused-vs-ask/tell parity,
      # the functional API, then the sphere loops (ask/tell and fused; pyribs on the
      # machine's CPU cores) and the time to a first result in fresh processes.
      timeout "${CORE_TEST_SECONDS:-290}" python3 -m pytest -q -p no:cacheprovider \
          -n "${TEST_WORKERS:-12}" ${CORE_TEST_PATHS:-tests/schedulers/compile_count_test.py \
          tests/schedulers/fused_loop_test.py tests/functional_test.py \
          tests/x64_off_test.py} 2>&1 | tee "$OUT/core_tests.log" | tail -25
      timeout "${SPHERE_SECONDS:-170}" python3 benchmarks/sphere.py --fused \
          --configs "${SPHERE_CONFIGS:-map_elites,cma_me_imp,cma_mae,og_map_elites,omg_mega,cma_mega,me_map_elites}" \
          ${SPHERE_ARGS:---iterations 100 --warmup 10 --rounds 2} \
          --json "$OUT/sphere.json" 2>&1 | tee "$OUT/sphere.log"
      timeout "${FIRST_SECONDS:-90}" python3 benchmarks/first_results.py \
          --configs "${FIRST_CONFIGS:-map_elites,cma_mae}" --repeats 1 \
          --json "$OUT/first_results.json" 2>&1 | tee "$OUT/first_results.log"
      ;;
    qdax)
      timeout "${QDAX_SECONDS:-300}" python3 benchmarks/qdax.py \
          --which "${QDAX_CASES:-grid,cma_me,cvt}" --batch "${QDAX_BATCH:-65536}" \
          --iterations "${QDAX_ITERATIONS:-100}" --json "$OUT/qdax.json" 2>&1 \
          | tee "$OUT/qdax.log"
      ;;
    add)
      timeout "${ADD_SECONDS:-200}" python3 benchmarks/archive_add.py \
          ${ADD_ARGS:---quick} --json "$OUT/archive_add.json" 2>&1 \
          | tee "$OUT/archive_add.log"
      ;;
    rl)
      # SAC / TD3 / DIAYN / DADS environment and gradient steps/s vs QDax 0.5.0
      # (both installed for the same python3).
      timeout "${RL_SECONDS:-150}" python3 benchmarks/rl_speed.py \
          --qdax-python python3 ${RL_ARGS:---env inverted_pendulum --num-envs 32 \
          --repeats 3 --env-iters 100 --grad-iters 100 --train-iters 25 \
          --grad-per-iter 8 --fill-iters 50} 2>&1 | tee "$OUT/rl_speed.log"
      timeout "${SKILLS_SPEED_SECONDS:-100}" python3 benchmarks/skills_speed.py \
          --qdax-python python3 ${SKILLS_SPEED_ARGS:---fill-iters 20 --env-iters 100 \
          --grad-iters 100 --repeats 3} 2>&1 | tee "$OUT/skills_speed.log"
      ;;
    skills)
      # DIAYN and DADS on ant_omni, several seeds each, both at once on the GPU.
      for algo in diayn dads; do
        timeout "${SKILLS_SECONDS:-260}" python3 benchmarks/skills_seeds.py $algo \
            ${SKILLS_ARGS:---seeds 8 --iterations 20000 --time-budget 180} \
            --json "$OUT/skills_$algo.jsonl" > "$OUT/skills_$algo.log" 2>&1 &
      done
      wait
      tail -n 30 "$OUT"/skills_*.log | grep -v '^{'
      ;;
    qdrl)
      # The QD-RL batch-size table: the same evaluation budget (QDRL_EVALS, 1,000,000)
      # at each of QDRL_BATCH_SIZES for each runner config of QDRL_CONFIGS (one seed;
      # 250-step episodes, (64, 64) policies; QDRL_OVERRIDES appended), then, with
      # QDRL_QDAX=1, QDax 0.5.1's DCRL-ME beside ribsax's at one batch size
      # (qdrl_vs_qdax.py, QDRL_QDAX_ARGS; needs qdax 0.5.1's wheel in .whl/).
      evals=${QDRL_EVALS:-1000000}
      for config in ${QDRL_CONFIGS:-brax_walker2d_uni_dcrl_me brax_walker2d_uni_pga_me}; do
        timeout "${QDRL_SECONDS:-420}" python3 -m ribsax batch-sizes "$config" \
            task.episode_length=250 "task.hidden_layer_sizes=[64,64]" \
            budget.evaluations="$evals" logging.heatmaps=false ${QDRL_OVERRIDES:-} \
            --batch-sizes ${QDRL_BATCH_SIZES:-8192 4096} -n 1 --quiet \
            --results-dir "$OUT/qdrl/$config" 2>&1 | tee "$OUT/qdrl_$config.log" | tail -6
      done
      if [ "${QDRL_QDAX:-0}" = 1 ]; then
        batch=${QDRL_QDAX_BATCH:-4096}
        timeout "${QDRL_QDAX_SECONDS:-500}" python3 benchmarks/qdrl_vs_qdax.py \
            --algos dcrlme --seeds 0 --dcrl-split $((batch / 2)) $((batch / 4)) \
            $((batch / 4)) --dcrl-iterations $((evals / batch - 1)) \
            ${QDRL_QDAX_ARGS:---episode-length 250 --hidden 64 64 --critic-hidden 256 256 \
            --critic-steps 3000 --pg-steps 150 --buffer-size 1000000 --grid 32} \
            --json "$OUT/qdrl_vs_qdax.json" 2>&1 | tee "$OUT/qdrl_vs_qdax.log" | tail -12
      fi
      ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
