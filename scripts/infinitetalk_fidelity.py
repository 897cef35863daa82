"""What each streaming choice of the InfiniteTalk family costs against the reference CLI, on a whole-video golden set.

Renders the set's run at ``--fidelity reference`` (through the same pipeline
``avatarstream render`` builds), then again with one streaming choice swapped
in at a time, and prints each video's PSNR against the set's frames with its
wall time; last, the streaming fidelity itself (every choice at once).
docs/models/infinitetalk.md quotes the figures.

  python scripts/infinitetalk_fidelity.py tests/fixtures/infinitetalk-video
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch

import avatarstream.stages.infinitetalk.decode as reference_decode
import avatarstream.stages.wan_decode as causal_decode
from avatarstream.components.wan.config import VAE_SPATIAL_STRIDE
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.infinitetalk.options import InfiniteTalkOptions
from avatarstream.families.infinitetalk.parity import render_arguments
from avatarstream.families.registry import load_family
from avatarstream.parity.fixture import GoldenSet
from avatarstream.parity.video import golden_frames, psnr
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.residency import Runtime
from avatarstream.sources.audio_file import open_audio_file
from avatarstream.sources.reference import load_reference_image
from avatarstream.stages.common import video_to_frames
from avatarstream.stages.infinitetalk.context import WanAudioContextStage
from avatarstream.stages.infinitetalk.decode import WanWindowDecodeStage, truncated_frames
from avatarstream.stages.infinitetalk.generate import WanAudioToVideoStage
from avatarstream.stages.infinitetalk.whole_audio import WanWholeAudioContextStage
from avatarstream.stages.seeding import seeded_noise
from avatarstream.stages.wan_decode import WanDecodeStage


class PerChunkNoise(WanWholeAudioContextStage):
    """Streaming's noise: each chunk seeded from (seed, chunk) on its own, no generator carried over."""

    def run(self, ctx: StageContext) -> None:
        super().run(ctx)
        chunk = ctx["chunk"]
        ctx["noise"] = seeded_noise(tuple(ctx["noise"].shape), ctx["noise"].device, ctx.seed, "chunk", chunk.kind, chunk.index)


class WindowedAudio(WanWholeAudioContextStage):
    """Streaming's audio: wav2vec2 over a bounded window per chunk (``windowed``), loudness-normalised on its own."""

    def __init__(self, whole: WanWholeAudioContextStage, windowed: WanAudioContextStage) -> None:
        super().__init__(whole.audio_encoder, whole.frames, whole.steps, whole.noise_device)
        self.windowed = windowed

    def audio_context_frames(self) -> tuple[int, int]:
        return self.windowed.audio_context_frames()

    def run(self, ctx: StageContext) -> None:
        super().run(ctx)
        ctx["audio_windows"] = self.windowed.windows(ctx["audio"], ctx["chunk"])


@contextmanager
def swapped(module: ModuleType, name: str, value: Callable[..., Any]) -> Iterator[None]:
    """A decode module's ``name`` replaced while a variant runs (its uint8 conversion)."""
    original = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, original)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("golden_dir", type=Path, help="a whole-video golden set with cases/frames.safetensors")
    args = parser.parse_args()
    gs = GoldenSet.open(args.golden_dir)
    golden = golden_frames(gs)
    assert golden is not None, "the set has no frames to compare with"
    run_args = render_arguments(gs)
    cpu = torch.device("cpu")
    options = InfiniteTalkOptions.parse(run_args["model_options"])
    family = load_family("infinitetalk", run_args["weights"], options, device=cpu)
    reference = build_pipeline(family, cpu, options)
    image = family.reference(run_args["reference"], options)
    stage = {s.name: s for s in reference.stages}
    whole, a2v, window_decode = stage["context_gen"], stage["audio_to_video"], stage["decode"]
    assert isinstance(whole, WanWholeAudioContextStage) and isinstance(a2v, WanAudioToVideoStage) and isinstance(window_decode, WanWindowDecodeStage)
    height, width = image.shape[:2]  # the reference fidelity sizes the video from the image's bucket
    latent_shape = (16, height // VAE_SPATIAL_STRIDE, width // VAE_SPATIAL_STRIDE)
    windowed = WanAudioContextStage(whole.audio_encoder, whole.frames, latent_shape, fps=family.fps, window_s=8.0, lookahead_frames=12)

    def pipeline(swap: dict[str, Stage] | None = None, *, video_frames: Callable[[float], int] | None = reference.video_frames) -> Pipeline:
        stages = [(swap or {}).get(s.name, s) for s in reference.stages]
        return Pipeline(
            stages,
            reference.plan,
            Runtime(cpu),
            fps=family.fps,
            model_sample_rate=reference.model_sample_rate,
            frames=reference.frames,
            video_frames=video_frames,
        )

    def measure(name: str, run: Pipeline, picture: np.ndarray = image) -> None:
        start = time.perf_counter()
        with open_audio_file(run_args["audio"]) as audio:
            ours = np.concatenate([m.frames for m in run.stream(audio, picture, run_args["prompt"], seed=run_args["seed"])])
        seconds = time.perf_counter() - start
        n = min(len(ours), len(golden))
        error = ours[:n].astype(np.int64) - golden[:n].astype(np.int64)
        worst = min(psnr(float(np.square(e).sum()), e.size) for e in error)
        print(f"{name:<62} {psnr(float(np.square(error).sum()), error.size):6.2f} dB  worst frame {worst:6.2f} dB  {len(ours)} frames  {seconds:5.1f} s")

    measure("reference fidelity", reference)
    measure("noise seeded per chunk (no generator carried over)", pipeline({"context_gen": PerChunkNoise(whole.audio_encoder, whole.frames, whole.steps, cpu)}))
    measure("wav2vec2 per chunk over 8 s, 12 frames ahead", pipeline({"context_gen": WindowedAudio(whole, windowed)}))
    streaming_a2v = WanAudioToVideoStage(a2v.dit, a2v.vae, a2v.frames, a2v.schedule, a2v.guidance, a2v.guided, reencode=True)
    measure("motion re-encoded from a decode of the motion latents alone", pipeline({"audio_to_video": streaming_a2v}))
    latent_a2v = WanAudioToVideoStage(a2v.dit, a2v.vae, a2v.frames, a2v.schedule, a2v.guidance, a2v.guided, reencode=False)
    measure("motion latents handed over (--motion latent)", pipeline({"audio_to_video": latent_a2v}))
    strength = float(reference.settings["color_correction"] or 0.0)
    with swapped(causal_decode, "video_to_frames", lambda video: truncated_frames(video.cpu())):
        measure("output decoded causally, VAE cache carried across chunks", pipeline({"decode": WanDecodeStage(window_decode.vae, strength)}))
    uncorrected = dataclasses.replace(options, color_correction=0.0)
    measure("no colour correction", build_pipeline(family, cpu, uncorrected))
    measure("reference cropped as streaming does (centred, Lanczos)", reference, load_reference_image(run_args["reference"], (width, height)))
    with swapped(reference_decode, "truncated_frames", lambda video: video_to_frames(video)):
        measure("uint8 by rounding, not truncation", reference)
    measure("round(duration x fps) frames", pipeline(video_frames=None))
    streaming = dataclasses.replace(options, fidelity="streaming", color_correction=None)
    measure("streaming fidelity (all of its choices)", build_pipeline(family, cpu, streaming), load_reference_image(run_args["reference"], (width, height)))
    measure(
        "streaming fidelity with --color-correction 1",
        build_pipeline(family, cpu, dataclasses.replace(streaming, color_correction=1.0)),
        load_reference_image(run_args["reference"], (width, height)),
    )


if __name__ == "__main__":
    main()
