#!/usr/bin/env bash
# InfiniteTalk at its real size (Wan2.1-I2V-14B DiT + adapter, UMT5-XXL, CLIP ViT-H/14, wav2vec2, Wan VAE; 25.4 B
# parameters, random bf16 weights built on the GPU) on one CUDA GPU. Measures time to first frame, fps, real-time
# factor, per-stage time, peak device memory, host-to-device bytes and exposed stage-switch time for
#   - the flashtalk preset (4 steps, no guidance) at 768x448 and 832x480, 5 s of speech each, under: all resident,
#     text encoder offloaded, DiT streamed:2 (rest resident), everything offloaded;
#   - one chunk of the infinitetalk preset (40 guided steps) at 832x480: 3 steps run, the other 37 extrapolated.
# About 6 minutes on one H100/H200, 8 at most: no scenario starts after 390 s (the rest are reported as skipped) and
# the run is stopped at 480 s; the JSON is rewritten after every scenario, so a cut-short run keeps what it measured.
# Needs ~60 GiB of GPU memory (resident) and ~90 GiB of free host memory for the offloaded run (skipped when short).
#   bench/infinitetalk_gpu.sh                 -> bench/results/YYYY-MM-DD-infinitetalk-gpu/infinitetalk-gpu.json
#   bench/infinitetalk_gpu.sh --budget-s 200  # options pass through to python -m avatarstream.families.infinitetalk.gpu_bench
# PYTHON picks the interpreter (default: .venv/bin/python, else python3). When it lacks a CUDA torch or the packages
# below, they go into a venv ($VENV, default /tmp/avatarstream-gpu-venv) that sees python3's own packages (its CUDA
# torch); with a folder .whl/ of wheels in the repository root, they are installed from there, offline.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh

OUT=bench/results/$(date +%F)-infinitetalk-gpu
export PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
exec timeout --kill-after=15 480 "$PYTHON" -m avatarstream.families.infinitetalk.gpu_bench --out "$OUT" "$@"
