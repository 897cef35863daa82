"""The golden Pro stream through the whole pipeline: the reference's seed gives the reference's frames.

Pro's encodes draw nothing, so the session's generator seeded with the reference's ``base_seed`` (42) draws the
reference's noise and eps in the reference's order; rendering the set's speech and image with its sizes gives its
``frames_u8`` (the golden set's own bar: max |diff| 1 on at most 0.1 % of values, 60 dB).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

import avatarstream
from avatarstream.publish.outputs import Outputs
from avatarstream.weights.files import read_safetensors

GOLDEN = Path(__file__).parents[1] / "fixtures" / "flashhead-tiny"
REFERENCE_SEED = 42


def test_the_pipeline_renders_the_golden_pro_stream(tmp_path: Path) -> None:
    infer = json.loads((GOLDEN / "golden.json").read_text())["config"]["pro"]["infer_params"]
    options = {"size": [infer["width"], infer["height"]], "chunk_frames": infer["frame_num"], "motion_latents": infer["motion_frames_latent_num"]}
    options |= {"steps": infer["sample_steps"], "shift": infer["sample_shift"], "audio_buffer_s": infer["cached_audio_duration"]}
    avatarstream.render(
        GOLDEN / "cases" / "speech.wav", GOLDEN / "cases" / "ref_image.png", out=Outputs(frames=tmp_path / "frames"), model="flashhead",
        weights=GOLDEN / "weights", model_options=options, seed=REFERENCE_SEED, threads=1,
    )  # fmt: skip
    golden = read_safetensors(GOLDEN / "cases" / "stream_pro.safetensors")["frames_u8"].numpy().astype(np.float64)
    ours = np.stack([np.asarray(Image.open(p)) for p in sorted((tmp_path / "frames").glob("*.png"))[: len(golden)]]).astype(np.float64)
    diff = np.abs(ours - golden)
    psnr = 10 * np.log10(255**2 / (diff**2).mean())
    print(f"\ngolden Pro stream through the pipeline: {psnr:.1f} dB, max |diff| {diff.max():.0f} on {100 * (diff > 0).mean():.4f} % of values")
    assert diff.max() <= 1 and (diff > 0).mean() <= 1e-3 and psnr >= 60
