"""The liveavatar family on a tiny random checkpoint: exact frame counts, seeded reproducibility, positions past any table."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
import torch

import avatarstream
from avatarstream import load_family
from avatarstream.families.liveavatar.tiny import TINY
from avatarstream.models.liveavatar.caches import StepCache
from avatarstream.models.liveavatar.dit import S2VDiT
from avatarstream.models.liveavatar.lora import apply_lora
from avatarstream.models.liveavatar.rope import block_positions, rope_cos_sin
from avatarstream.sources.pcm import PcmBlock

RATE = 16000
#: Small and fast: 64x64, the rolling cache one block long (so the ring wraps and the sink refresh happen at block 1).
OPTIONS = {"size": [64, 64], "cache_blocks": 1, "audio_window_s": 1.0, "audio_lookahead": 4}


def speech(seconds: float) -> list[PcmBlock]:
    t = np.arange(round(seconds * RATE)) / RATE
    samples = (0.3 * np.sin(2 * np.pi * 180 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t))).astype(np.float32)
    return [PcmBlock(samples[None, i : i + RATE // 5], RATE) for i in range(0, samples.size, RATE // 5)]


def frames(path: Path) -> np.ndarray:
    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


def test_renders_the_exact_frame_count_and_the_same_seed_gives_the_same_video(tiny_liveavatar: Path, tmp_path: Path) -> None:
    family = load_family("liveavatar", tiny_liveavatar)
    common = {"model": family, "model_options": OPTIONS, "threads": 1, "preset": "ultrafast"}
    first = avatarstream.render(speech(1.32), out=tmp_path / "a.mp4", seed=3, **common)
    avatarstream.render(speech(1.32), out=tmp_path / "b.mp4", seed=3, **common)
    avatarstream.render(speech(1.32), out=tmp_path / "c.mp4", seed=4, **common)
    assert first.report["frames"] == 33 and first.report["num_chunks"] == 3  # blocks of 9, 12, 12 frames
    a, b, c = frames(tmp_path / "a.mp4"), frames(tmp_path / "b.mp4"), frames(tmp_path / "c.mp4")
    assert len(a) == 33 and a.shape[1:] == (64, 64, 3)
    assert np.array_equal(a, b), "same seed: the same video (sink offsets come from the seed)"
    assert not np.array_equal(a, c)
    assert first.report["warnings"] and "random" in first.report["warnings"][0]
    late = avatarstream.render(speech(1.32), out=tmp_path / "d.mp4", seed=3, **{**common, "model_options": {**OPTIONS, "start_position": 45_000}})
    assert late.report["frames"] == 33 and len(frames(tmp_path / "d.mp4")) == 33  # past the reference's 45,000-row RoPE table


def _tiny_dit(seed: int = 0) -> S2VDiT:
    torch.manual_seed(seed)
    return S2VDiT(TINY).eval()


def _stream(dit: S2VDiT, start: int, blocks: int = 3) -> list[torch.Tensor]:
    """Velocities of ``blocks`` consecutive blocks starting at latent frame ``start`` (fresh caches, fixed inputs)."""
    g = torch.Generator().manual_seed(1)
    ref, motion = torch.randn(1, 16, 1, 8, 8, generator=g), torch.randn(1, 16, 19, 8, 8, generator=g)
    context = dit.embed_text(torch.randn(1, 5, TINY.text_dim, generator=g))
    sink = dit.prefill_sink(ref, motion, context)
    cache = StepCache.empty(TINY.num_layers, 1, 2 * 3 * 16, TINY.num_heads, TINY.head_dim, torch.float32, torch.device("cpu"))
    out = []
    for b in range(blocks):
        x = torch.randn(1, 16, 3, 8, 8, generator=g)
        audio = torch.randn(1, TINY.audio_layers, TINY.audio_dim, 12, generator=g)
        out.append(dit(x, torch.full((3,), 500.0), context, audio, cache, sink, start + 3 * b, 10))
    return out


def test_positions_go_past_the_references_table_and_only_relative_positions_matter() -> None:
    """The reference's RoPE table ends at 45,000 frames (about 2 h); here angles come from the positions themselves.

    A stream starting at frame 45,123 gives what one starting at frame 123 gives (RoPE sees relative positions;
    the only difference is float16 rounding of cos/sin at other angles)."""
    dit = _tiny_dit()
    with torch.no_grad():
        early, late = _stream(dit, 123), _stream(dit, 45_123)
    for a, b in zip(early, late, strict=True):
        assert torch.isfinite(b).all()
        assert (a - b).abs().max() < 2e-2 * a.abs().max()
    cos, _ = rope_cos_sin(block_positions(45_000, 1, 1, 1), TINY.head_dim, 10000.0)
    assert not torch.equal(cos, rope_cos_sin(block_positions(0, 1, 1, 1), TINY.head_dim, 10000.0)[0])


def test_the_lora_unmerged_gives_the_merged_models_output() -> None:
    merged, unmerged = _tiny_dit(), _tiny_dit()
    g = torch.Generator().manual_seed(2)
    pairs = {
        name: (torch.randn(4, m.in_features, generator=g) * 0.1, torch.randn(m.out_features, 4, generator=g) * 0.1)
        for name, m in merged.named_modules()
        if isinstance(m, torch.nn.Linear) and name.endswith((".q", ".ffn.0"))
    }
    apply_lora(merged, pairs, alpha=8.0, merge=True)
    apply_lora(unmerged, pairs, alpha=8.0, merge=False)
    with torch.no_grad():
        a, b = _stream(merged, 0, blocks=1)[0], _stream(unmerged, 0, blocks=1)[0]
        base = _stream(_tiny_dit(), 0, blocks=1)[0]
    assert (a - b).abs().max() < 1e-4 and (a - base).abs().max() > 1e-3


def test_a_lora_that_does_not_fit_is_a_clear_error(tiny_liveavatar: Path, tmp_path: Path) -> None:
    from safetensors.torch import save_file

    from avatarstream.errors import InputError

    bad = tmp_path / "lora.safetensors"
    save_file({"blocks.0.self_attn.q.lora_A.default.weight": torch.zeros(4, 7), "blocks.0.self_attn.q.lora_B.default.weight": torch.zeros(32, 4)}, str(bad))
    with pytest.raises(InputError, match="does not fit that layer"):
        load_family("liveavatar", tiny_liveavatar, {"lora": bad})


def test_a_file_renders_to_its_end(tiny_liveavatar: Path, tmp_path: Path) -> None:
    """With a file (the bundled speech, 13.3 s) the audio's end is known: the blocks past it hear nothing, and their audio
    window, pinned to the file's end, may begin before the audio the timeline kept. They must not read it (they failed
    with 'samples before ... were already discarded')."""
    family = load_family("liveavatar", tiny_liveavatar)
    result = avatarstream.render(out=tmp_path / "a.mp4", model=family, model_options={"size": [64, 64]}, threads=1, preset="ultrafast")
    assert result.report["frames"] == len(frames(tmp_path / "a.mp4")) == 334
