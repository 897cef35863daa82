"""Each family's int8 distance from the reference on the tiny golden sets, bounded.

The sets' weights are random, so these bounds say how far int8 moves these numbers (a regression in how quantization
is applied shows), not how a trained 14B model's video looks. ``scripts/quantization_quality.py`` measures every set
and mode; docs/quantization.md has its table (the figures quoted below are from it, 2026-12-07).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import avatarstream
from avatarstream.families.flashhead.layout import resolve as resolve_flashhead
from avatarstream.families.flashhead.networks import FlashHeadNetworks
from avatarstream.families.flashhead.parity import dit_case as flashhead_dit_case
from avatarstream.families.flashvsr.layout import resolve as resolve_flashvsr
from avatarstream.families.flashvsr.networks import FlashVSRNetworks
from avatarstream.families.flashvsr.parity import ParityNetworks as FlashVSRParityNetworks
from avatarstream.families.flashvsr.parity import dit_case as flashvsr_dit_case
from avatarstream.families.flashvsr.parity import lq_proj_case as flashvsr_lq_proj_case
from avatarstream.families.infinitetalk.layout import resolve as resolve_infinitetalk
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.families.infinitetalk.parity import render_arguments
from avatarstream.families.infinitetalk.parity_cases import dit_case as infinitetalk_dit_case
from avatarstream.families.liveavatar.layout import resolve as resolve_liveavatar
from avatarstream.families.liveavatar.networks import LiveAvatarNetworks
from avatarstream.families.liveavatar.parity import dit_case as liveavatar_dit_case
from avatarstream.parity.fixture import GoldenSet
from avatarstream.parity.video import frame_checks, golden_frames
from avatarstream.runtime.quantize import quantize_network
from avatarstream.weights.files import read_safetensors

FIXTURES = Path(__file__).parents[1] / "fixtures"
CPU = torch.device("cpu")


def test_infinitetalk_int8_renders_the_whole_video_set_within_its_psnr_bound(tmp_path: Path) -> None:
    gs = GoldenSet.open(FIXTURES / "infinitetalk-video")
    arguments = render_arguments(gs)
    arguments["model_options"] = {**arguments["model_options"], "quantize": "int8"}
    avatarstream.render(out=None, frames=tmp_path, threads=1, **arguments)
    golden = golden_frames(gs)
    assert golden is not None
    checks = {c.name: c for c in frame_checks(gs, tmp_path, golden)}
    assert checks["psnr_db"].passed and checks["psnr_db"].max_abs_err > 45  # 48.7 dB measured; 83.1 in full precision
    assert checks["worst_frame_psnr_db"].max_abs_err > 40


def _relative_errors(checks: list, reference: dict[str, torch.Tensor], names: dict[str, str]) -> dict[str, float]:
    """Each velocity check's largest error over the reference velocity's largest magnitude."""
    return {c.name: c.max_abs_err / reference[names[c.name]].abs().max().item() for c in checks if c.name in names}


def test_infinitetalk_int8_dit_stays_within_two_hundredths_of_the_velocity() -> None:
    gs = GoldenSet.open(FIXTURES / "infinitetalk-tiny")
    networks = InfiniteTalkNetworks.load(resolve_infinitetalk(gs.weights), torch.float32, encoders=False)
    quantize_network(networks.dit, "int8", CPU, "dit")
    with torch.inference_mode():
        checks = infinitetalk_dit_case(gs, networks)
    errors = _relative_errors(checks, gs.tensors("dit"), {"velocity_0": "velocity_0", "velocity_1": "velocity_1"})
    assert len(errors) == 2 and max(errors.values()) < 0.02, errors  # 0.013 measured


def test_liveavatar_int8_dit_stays_within_a_hundredth_of_the_velocity() -> None:
    gs = GoldenSet.open(FIXTURES / "liveavatar-tiny")
    networks = LiveAvatarNetworks.load(resolve_liveavatar(gs.weights), torch.float32, text=False)
    quantize_network(networks.dit, "int8", CPU, "dit")
    with torch.inference_mode():
        checks = liveavatar_dit_case(gs, networks)
    names = {"velocity": "velocity", "velocity, sink offset 4": "velocity_rel_dist_4", "velocity, sink offset 30": "velocity_rel_dist_30"}
    errors = _relative_errors(checks, gs.tensors("dit"), names)
    assert len(errors) == 3 and max(errors.values()) < 0.01, errors  # 0.0055 measured (0.028 of 5.2)


def test_flashvsr_int8_dit_and_lq_projection_stay_within_a_hundredth_of_their_outputs() -> None:
    gs = GoldenSet.open(FIXTURES / "flashvsr-tiny")
    networks = FlashVSRNetworks.load(resolve_flashvsr(gs.weights / "FlashVSR"))
    for name in ("dit", "lq_proj"):  # what --upscale-quantize quantizes by default
        quantize_network(getattr(networks, name), "int8", CPU, name)
    parity = FlashVSRParityNetworks(networks, vae=None)  # the two cases use the tiny mode's networks alone
    with torch.inference_mode():
        checks = flashvsr_dit_case(gs, parity) + flashvsr_lq_proj_case(gs, parity)
    reference = {**read_safetensors(gs.root / "cases" / "dit.safetensors"), **read_safetensors(gs.root / "cases" / "lq_proj.safetensors")}
    errors = _relative_errors(checks, reference, {"v": "v", "out_group0": "out_group0", "out_group1": "out_group1"})
    assert len(errors) == 3 and max(errors.values()) < 0.01, errors  # 0.0052 (velocity), 0.0039 (LQ tokens) measured


@pytest.mark.parametrize("variant", ["pro", "lite"])
def test_flashhead_int8_dit_stays_within_three_hundredths_of_the_velocity(variant: str) -> None:
    gs = GoldenSet.open(FIXTURES / "flashhead-tiny")
    networks = FlashHeadNetworks.load(resolve_flashhead(gs.weights, variant=variant))
    quantize_network(networks.dit, "int8", CPU, "dit")
    with torch.inference_mode():
        checks = flashhead_dit_case(gs, networks)
    reference = read_safetensors(gs.root / "cases" / f"dit_{variant}.safetensors")
    errors = _relative_errors(checks, reference, {"audio_tokens": "audio_tokens", "velocity_0": "velocity_0", "velocity_1": "velocity_1"})
    assert len(errors) == 3 and max(errors.values()) < 0.03, errors  # 0.018 (Pro), 0.012 (Lite) measured


def test_flashhead_int8_renders_the_golden_pro_stream_within_its_psnr_bound(tmp_path: Path) -> None:
    """Through the family's own --quantize, from the reference's seed: Pro's draws are the reference's, so its frames compare."""
    gs = GoldenSet.open(FIXTURES / "flashhead-tiny")
    infer = gs.spec["config"]["pro"]["infer_params"]
    options = {"size": [infer["width"], infer["height"]], "chunk_frames": infer["frame_num"], "motion_latents": infer["motion_frames_latent_num"],
               "steps": infer["sample_steps"], "shift": infer["sample_shift"], "audio_buffer_s": infer["cached_audio_duration"], "quantize": "int8"}  # fmt: skip
    avatarstream.render(gs.root / "cases" / "speech.wav", gs.root / "cases" / "ref_image.png", model="flashhead", weights=gs.weights,
                        model_options=options, out=None, frames=tmp_path, seed=42, threads=1)  # fmt: skip
    golden = read_safetensors(gs.root / "cases" / "stream_pro.safetensors")["frames_u8"].numpy().astype(np.float64)
    ours = np.stack([np.asarray(Image.open(p)) for p in sorted(tmp_path.glob("*.png"))[: len(golden)]]).astype(np.float64)
    psnr = 10 * np.log10(255**2 / ((ours - golden) ** 2).mean())
    assert 48 < psnr < 80, psnr  # 52.0 dB measured; 89.5 in full precision (so the DiT was quantized)
