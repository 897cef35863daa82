#!/usr/bin/env bash
# GPU check of the runtime (issue 5): pinned vs pageable H2D bandwidth, streamed-vs-resident
# overhead on a 1.5 B DiT at a 720p latent, exposed stage-switch time. One CUDA GPU, < 5 minutes.
#   bench/gpu_check.sh                       -> bench/results/gpu_check.json
#   bench/gpu_check.sh --out /tmp/check.json
# PYTHON picks the interpreter (default: .venv/bin/python, else python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
exec timeout 300 "$PYTHON" bench/gpu_check.py "$@"
