#!/usr/bin/env bash
# --parallel on this node's GPUs (issue 14): the speed-up model's fps and time to first frame for 2, 4 and 8 GPUs, and
# measured `render --nproc G --parallel L` runs of every layout that fits on the GPUs present (NCCL), next to them.
# The model is the demo family at production size (~1.4 B-parameter base DiT, 24 blocks, 12 heads, 736x736; random
# weights written once to $WEIGHTS), 10 s of speech per run. With one GPU only the one-process figures and the
# predictions are made (the links between GPUs then are an NVLink-4 node's published figures, marked "assumed").
# About 3 minutes on one GPU, 2 more per measured layout; the run is stopped at 570 s.
#   bench/gpu_parallel.sh                    -> bench/results/YYYY-MM-DD-gpu-parallel/parallel.json
#   SECONDS_OF_SPEECH=5 bench/gpu_parallel.sh
# PYTHON picks the interpreter (default: .venv/bin/python, else python3); it needs a CUDA torch and avatarstream installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
WEIGHTS=${WEIGHTS:-/tmp/avatarstream-production-demo}
OUT=${OUT:-bench/results/$(date +%F)-gpu-parallel}
if [ ! -f "$WEIGHTS/config.json" ]; then
  "$PYTHON" - "$WEIGHTS" <<'PY'
import sys

from avatarstream.families.demo import DemoFamily

DemoFamily.production_model().save(sys.argv[1])
PY
fi
exec timeout 570 "$PYTHON" -m avatarstream.cli.main bench --scenario parallel --model demo --weights "$WEIGHTS" --device cuda \
  --seconds "${SECONDS_OF_SPEECH:-10}" --repeats 1 --out "$OUT"
