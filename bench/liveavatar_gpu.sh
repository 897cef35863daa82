#!/usr/bin/env bash
# LiveAvatar at its real size (Wan2.2-S2V-14B DiT with the LoRA merged, umT5-XXL, wav2vec2-large, Wan VAE; random bf16
# weights built on the GPU) on one CUDA GPU, at 704x384: time to first frame, fps (whole run and steady blocks),
# real-time factor, per-stage time, peak device memory and the KV caches the session holds, with all weights resident
# and with umT5 offloaded. About 4 minutes on one H100/H200, 8 at most: no scenario starts after 330 s and the run is
# stopped at 480 s; the JSON is rewritten after every scenario. Needs ~80 GiB of GPU memory.
#   bench/liveavatar_gpu.sh                 -> bench/results/YYYY-MM-DD-liveavatar-gpu/liveavatar-gpu.json
#   bench/liveavatar_gpu.sh --budget-s 200  # options pass through to python -m avatarstream.benchmarks.liveavatar_gpu
# bench/gpu_env.sh finds (or makes) an interpreter with a CUDA torch and the packages: PYTHON, VENV and .whl/ as it says.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh

OUT=bench/results/$(date +%F)-liveavatar-gpu
export PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
exec timeout --kill-after=15 480 "$PYTHON" -m avatarstream.benchmarks.liveavatar_gpu --out "$OUT" "$@"
