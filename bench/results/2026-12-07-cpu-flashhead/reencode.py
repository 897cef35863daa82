"""What FlashHead's per-chunk audio re-encode costs on this CPU: wav2vec2-base at its real size (random float32 weights)
over the 8 s buffer, against only the new audio of a Pro (28 frames) or Lite (24 frames) chunk; 5 calls each, after one
warm-up pass over the buffer.

    python bench/results/2026-12-07-cpu-flashhead/reencode.py THREADS
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

from avatarstream.benchtools import gpu_run
from avatarstream.benchtools.audio import bundled_speech
from avatarstream.families.flashhead.gpu_bench import meta_networks
from avatarstream.models.flashhead.audio_features import SAMPLE_RATE, frame_features, normalize

SAMPLES_PER_FRAME = SAMPLE_RATE // 25

torch.set_num_threads(int(sys.argv[1]))
networks = meta_networks("pro", tiny=False)
gpu_run.materialize(networks.audio_encoder, torch.device("cpu"), torch.float32, torch.Generator().manual_seed(0))
speech = bundled_speech(SAMPLE_RATE)
with torch.inference_mode():
    for frames in (200, 200, 28, 24):  # a warm-up, the 8 s buffer, a Pro chunk's new 1.12 s, a Lite chunk's new 0.96 s
        values = normalize(networks.extractor, speech[: frames * SAMPLES_PER_FRAME])
        times = []
        for _ in range(5):
            start = time.perf_counter()
            frame_features(networks.audio_encoder, values, frames)
            times.append(time.perf_counter() - start)
        print(f"threads {sys.argv[1]} frames {frames}: median {1e3 * statistics.median(times):.0f} ms (min {1e3 * min(times):.0f})", flush=True)
