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
# The device image brings its own JAX (0.11.2 with CUDA), NumPy, SciPy, pandas, flax,
# optax, chex, numba, scikit-learn and pytest; ribsax runs from the source tree.
#
# Usage: bash benchmarks/gpu_session.sh STAGE...   (stages: env tests qdax add)
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
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
