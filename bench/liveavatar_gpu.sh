#!/usr/bin/env bash
# LiveAvatar at its real size (Wan2.2-S2V-14B DiT with the LoRA merged, umT5-XXL, wav2vec2-large, Wan VAE; random bf16
# weights built on the GPU) at 704x384: time to first frame, fps (whole run and steady blocks), real-time factor,
# per-stage time, peak device memory and the KV caches the session holds. One GPU: all weights resident, then umT5
# offloaded; about 4 minutes on one H100/H200, no scenario starts after 330 s and the run is stopped at 480 s. Several
# GPUs: the one-process run (stopped at 240 s), then the widest --parallel layout they allow under torchrun (steps=4 on
# 4, steps=4,decode on 5-7, steps=4,sp=2 on 8; sp=2 on 2-3; stopped at 225 s), 8 minutes at most in all. The JSON is
# rewritten after every scenario. Needs ~80 GiB of GPU memory per GPU.
#   bench/liveavatar_gpu.sh                 -> bench/results/YYYY-MM-DD-liveavatar-gpu/liveavatar-gpu.json
#                                              (several GPUs: .../one-process/ and .../LAYOUT/)
#   bench/liveavatar_gpu.sh --budget-s 200  # options pass through to python -m avatarstream.families.liveavatar.gpu_bench
# bench/gpu_env.sh finds (or makes) an interpreter with a CUDA torch and the packages: PYTHON, VENV and .whl/ as it says.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh

OUT=bench/results/$(date +%F)-liveavatar-gpu
export PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
# what to launch on this many GPUs: "LAYOUT PROCESSES", or nothing for one
read -r LAYOUT NPROC <<< "$("$PYTHON" -c "import torch
from avatarstream.families.liveavatar.gpu_bench import layout_for
print(*(layout_for(torch.cuda.device_count()) or ()))")" || true
if [ -z "${LAYOUT:-}" ]; then
  exec timeout --kill-after=15 480 "$PYTHON" -m avatarstream.families.liveavatar.gpu_bench --out "$OUT" "$@"
fi
timeout --kill-after=15 240 "$PYTHON" -m avatarstream.families.liveavatar.gpu_bench --out "$OUT/one-process" --budget-s 100 "$@" \
  || echo "liveavatar_gpu: the one-process run failed (exit $?); the $LAYOUT run goes on" >&2
exec timeout --kill-after=15 225 "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$NPROC" \
  -m avatarstream.families.liveavatar.gpu_bench --out "$OUT/$LAYOUT" --parallel "$LAYOUT" "$@"
