"""The benchmark scenarios by name with one line each, for ``bench --help`` and its choices (read without loading torch).

``scenarios.SCENARIOS`` maps the same names to the functions; a test keeps the two in step.
"""

from __future__ import annotations

SUMMARIES = {
    "speed": "Time to first frame, fps and real-time factor of ``render`` (encoding included).",
    "resolution": "fps and real-time factor against output resolution (same model widths, larger latents).",
    "overhead": "Framework overhead: the pipeline against the same models in a plain loop, interleaved, no encoding.",
    "memory": "RSS (and device memory) per chunk over a long session: it must draw a flat line.",
    "interpolation": "What I-chunks cost: the same audio with and without them.",
    "overlap": "Finishing chunk k and preparing chunk k+1's audio features while chunk k generates, against strictly sequential execution.",
    "compile": "torch.compile of the DiT blocks (--compile), against eager: speed, frames, and compile time apart (any family).",
    "residency": "Resident, offloaded and streamed weights side by side: same model, same audio, one run.",
    "motion": "Motion frames re-encoded from pixels (the reference's way) against handed over as latents (a model with a motion option).",
    "audio-window": "Rolling-window audio features against whole-file features, per window length and look-ahead (a model that measures them).",
    "contention": "Renders alone and next to a competing CPU job, per threading setting: the slowdown a shared machine causes.",
    "load-memory": "Peak RSS of a --seconds render and of one 9x as long, both next to a competing CPU job: memory must not grow with length.",
    "soak": "The server at its session limit for --minutes with misbehaving clients and a stalling RTMP peer; fails when anything trends upward.",
    "fleet": "Session start and first frame through the fleet vs the single server, and the resume after a lost node (local Ray cluster).",
    "parallel": "--parallel layouts: the speed-up model's fps and time to first frame for 2, 4 and 8 GPUs, and measured runs of every layout that fits here.",
    "gpu": "Production-size speed on one GPU (random weights): time to first frame and fps.",
}
