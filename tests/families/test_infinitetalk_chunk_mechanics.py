"""Motion hand-over and I-chunks of the infinitetalk family on known inputs (tiny checkpoint)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from avatarstream.components.wan.vae import DecoderCache, decode, encode
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.infinitetalk.audio_window import window_errors
from avatarstream.families.infinitetalk.layout import WeightsLayout
from avatarstream.families.registry import load_family
from avatarstream.pipeline.chunks import Chunk
from avatarstream.sources.pcm import PcmBlock
from avatarstream.stages.infinitetalk import generate
from avatarstream.stages.infinitetalk.context import WanAudioContextStage

SIZE = (32, 32)


def _speech(seconds: float) -> np.ndarray:
    t = np.arange(round(seconds * 16000)) / 16000
    return (0.3 * np.sin(2 * np.pi * 180 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def _run(weights: Path, seconds: float, monkeypatch: pytest.MonkeyPatch, **options: object) -> tuple[list[dict], np.ndarray, object]:
    """Render and record what the A2V stage was given and made for every chunk."""
    family = load_family("infinitetalk", weights)
    chosen = dict(preset="flashtalk", size=SIZE, **options)
    pipeline = build_pipeline(family, torch.device("cpu"), chosen)  # type: ignore[arg-type]
    seen: list[dict] = []
    original = generate.WanAudioToVideoStage.run

    def spy(stage: generate.WanAudioToVideoStage, ctx) -> None:  # type: ignore[no-untyped-def]
        original(stage, ctx)
        held = ctx["conditioning"]
        seen.append({"chunk": ctx["chunk"], "held": None if held is None else held.clone(), "latents": ctx["latents"].clone(),
                     "reference_latent": ctx["reference_latent"]})  # fmt: skip

    monkeypatch.setattr(generate.WanAudioToVideoStage, "run", spy)
    frames = [m.frames for m in pipeline.stream([PcmBlock(_speech(seconds)[None], 16000)], family.reference(None, chosen))]  # type: ignore[arg-type]
    return seen, np.concatenate(frames), family


def test_latent_hand_over_continues_from_the_previous_chunks_last_frames(tiny_original: WeightsLayout, monkeypatch: pytest.MonkeyPatch) -> None:
    seen, frames, _ = _run(tiny_original.base.parent, 3.0, monkeypatch, motion="latent")
    assert frames.shape[0] == 75
    first, second = seen[0], seen[1]
    assert first["held"] is None and first["chunk"].cond_positions == (0,)
    assert torch.equal(first["latents"][:, :, :1], first["reference_latent"].float())  # N0's first frame is the reference
    motion = len(second["chunk"].cond_positions)
    assert motion == 2  # flashtalk: 5 motion frames = 2 latent frames
    assert torch.equal(second["held"], first["latents"][:, :, -motion:])  # handed over unchanged
    assert torch.equal(second["latents"][:, :, :motion], second["held"])  # and held clean through sampling


def test_reencoded_motion_is_decoded_then_encoded(tiny_original: WeightsLayout, monkeypatch: pytest.MonkeyPatch) -> None:
    seen, _, family = _run(tiny_original.base.parent, 2.0, monkeypatch, motion="reencode")
    second = seen[1]
    vae = family.networks.vae
    with torch.inference_mode():
        pixels = decode(vae, second["held"], DecoderCache.for_vae(vae))
        expected = encode(vae, pixels)
    assert pixels.shape[2] == 5  # the 5 motion frames of the preset, as the reference re-encodes them
    assert torch.equal(second["latents"][:, :, :2], expected.float())
    assert not torch.equal(expected, second["held"])


def test_i_chunks_sit_between_two_anchors(tiny_original: WeightsLayout, monkeypatch: pytest.MonkeyPatch) -> None:
    seen, frames, _ = _run(tiny_original.base.parent, 3.0, monkeypatch, motion="latent", interp_frames=4)
    assert frames.shape[0] == 75
    names = [s["chunk"].name for s in seen]
    assert names[:4] == ["N0", "N1", "I0", "N2"]
    by_name = {s["chunk"].name: s for s in seen}
    i0, n0, n1 = by_name["I0"], by_name["N0"], by_name["N1"]
    chunk: Chunk = i0["chunk"]
    assert chunk.window_frames == 3 and chunk.cond_positions == (0, 2)  # a = 1 latent frame (4 video frames)
    left = n0["latents"][:, :, chunk.cond_frames[0] - n0["chunk"].window_start]
    right = n1["latents"][:, :, chunk.cond_frames[1] - n1["chunk"].window_start]
    assert torch.equal(i0["held"][:, :, 0], left) and torch.equal(i0["held"][:, :, 1], right)
    assert torch.equal(i0["latents"][:, :, 0], left) and torch.equal(i0["latents"][:, :, 2], right)


def test_rolling_window_features_approach_whole_file_features(tiny_original: WeightsLayout) -> None:
    family = load_family("infinitetalk", tiny_original.base.parent)
    pipeline = build_pipeline(family, torch.device("cpu"), {"preset": "flashtalk", "size": SIZE})
    stage = next(s for s in pipeline.stages if isinstance(s, WanAudioContextStage))
    errors = window_errors(family.modules["audio_encoder"], stage, pipeline.plan, _speech(5.0), [(1.0, 2), (2.0, 12), (60.0, 250)])
    assert errors[(60.0, 250)]["max_abs"] == 0.0  # a window holding the whole clip is the whole-file computation
    assert errors[(1.0, 2)]["mean_abs"] > 0 and errors[(2.0, 12)]["mean_abs"] > 0
    assert all(e["chunks"] == errors[(1.0, 2)]["chunks"] > 1 for e in errors.values())
