"""The LiveAvatar golden cases: one streaming DiT call, the audio path, the VAE, the LoRA merge, and the whole loop.

Every size comes from ``golden.json`` (its ``config.pipeline``) and the weight
folders, so a set of another configuration and seed runs unchanged. The
sampler case replays the reference's single-GPU loop (clip-level decode and
re-encode of the motion frames included) with this port's pieces.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from PIL import Image

from avatarstream.components.wan.vae import DecoderCache, decode, encode
from avatarstream.errors import InputError
from avatarstream.families.liveavatar.layout import resolve
from avatarstream.families.liveavatar.networks import LiveAvatarNetworks
from avatarstream.models.liveavatar.audio_features import bucket_indices, frame_features, hidden_states, normalize, to_feature_rate
from avatarstream.models.liveavatar.caches import SinkCache, StepCache
from avatarstream.models.liveavatar.config import BLOCK_FRAMES, LAT_MOTION_FRAMES, MOTION_FRAMES
from avatarstream.models.liveavatar.dit import S2VDiT
from avatarstream.models.liveavatar.lora import lora_pairs, merged_weight
from avatarstream.models.liveavatar.rope import motion_positions, reference_positions
from avatarstream.models.liveavatar.sampler import Schedule, denoise_block, euler_step
from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import GoldenSet, read_wav_int16, run_each
from avatarstream.weights.files import read_safetensors

Case = Callable[[GoldenSet, LiveAvatarNetworks], list[Check]]


def _pipeline(gs: GoldenSet) -> dict[str, Any]:
    config = gs.spec.get("config", {}).get("pipeline")
    if not isinstance(config, dict):
        raise InputError(f"{gs.root / 'golden.json'} has no config.pipeline; it states the loop's sizes and sink offsets")
    return config


def _layers(t: dict[str, torch.Tensor], stem: str) -> torch.Tensor:
    """Per-layer tensors ``{stem}{i}`` [rows, heads, d] -> [layers, 1, rows, heads, d]."""
    count = sum(1 for key in t if key.startswith(stem) and key[len(stem) :].isdigit())
    return torch.stack([t[f"{stem}{i}"] for i in range(count)])[:, None].clone()


def dit_case(gs: GoldenSet, nets: LiveAvatarNetworks) -> list[Check]:
    t, call = gs.tensors("dit"), gs.case("dit")["call"]
    tol = gs.tolerance("dit", "atol")
    h, w = t["x"].shape[2] // 2, t["x"].shape[3] // 2
    frame = call["current_start"] // (h * w)
    context = nets.dit.embed_text(t["context"][None])
    sink = SinkCache(_layers(t, "cond_k_l"), _layers(t, "cond_v_l"), reference_positions(h, w), motion_positions(h, w))

    def run(offset: int) -> tuple[torch.Tensor, StepCache]:
        k = _layers(t, "cache_k_l")
        filled = min(k.shape[2], call["current_start"])
        cache = StepCache(k, _layers(t, "cache_v_l"), filled=filled, next_row=call["cache_write_row"])
        return nets.dit(t["x"][None], t["t"], context, t["audio_input"][None], cache, sink, frame, offset)[0], cache

    velocity, cache = run(call["rel_dist"])
    checks = [Check.compare("dit", "velocity", velocity, t["velocity"], tol)]
    cache_tol = gs.tolerance("dit", "cache_atol")
    checks.append(Check.compare("dit", "cache keys after", cache.k[:, 0], _layers(t, "cache_k_after_l")[:, 0], cache_tol))
    checks.append(Check.compare("dit", "cache values after", cache.v[:, 0], _layers(t, "cache_v_after_l")[:, 0], cache_tol))
    for offset in (4, 30):
        checks.append(Check.compare("dit", f"velocity, sink offset {offset}", run(offset)[0], t[f"velocity_rel_dist_{offset}"], tol))
    return checks


def audio_case(gs: GoldenSet, nets: LiveAvatarNetworks) -> list[Check]:
    t = gs.tensors("audio")
    waveform = read_wav_int16(gs.file("audio", "speech_file"))
    values = normalize(nets.audio_encoder.extractor, waveform)
    states = hidden_states(nets.audio_encoder.network, values)
    features = to_feature_rate(states)
    indices = bucket_indices(0, t["bucket_indices"].shape[0])
    return [
        Check.compare("audio", "input_values", values, t["input_values"], gs.tolerance("audio", "input_values_atol")),
        Check.compare("audio", "hidden_states_50hz", states, t["hidden_states_50hz"], gs.tolerance("audio", "hidden_atol")),
        Check.compare("audio", "features_30hz_first8", features[:, :8], t["features_30hz_first8"], gs.tolerance("audio", "hidden_atol")),
        Check("audio", "n_features_30hz", float(abs(features.shape[1] - int(t["n_features_30hz"][0]))), 0.0),
        Check.compare("audio", "bucket_indices", indices, t["bucket_indices"], 0.0),
        Check.compare("audio", "audio_emb", frame_features(features, indices), t["audio_emb"], gs.tolerance("audio", "audio_emb_atol")),
    ]


def vae_case(gs: GoldenSet, nets: LiveAvatarNetworks) -> list[Check]:
    t = gs.tensors("vae")
    tol = gs.tolerance("vae", "video_atol")
    z = t["z"][None]
    full = decode(nets.vae, z, DecoderCache.for_vae(nets.vae))[0]
    cache = DecoderCache.for_vae(nets.vae)
    bounds = t["chunk_bounds"].tolist()
    chunks = torch.cat([decode(nets.vae, z[:, :, a:b], cache) for a, b in itertools.pairwise(bounds)], dim=2)[0]
    image5 = t["ref_image"][None].expand(-1, -1, 5, -1, -1)
    return [
        Check.compare("vae", "video_full", full, t["video_full"], tol),
        Check.compare("vae", "video_streamed", chunks, t["video_full"], tol),
        Check.compare("vae", "ref_image_x5_latent", encode(nets.vae, image5)[0], t["ref_image_x5_latent"], gs.tolerance("vae", "latent_atol")),
    ]


def lora_case(gs: GoldenSet, nets: LiveAvatarNetworks) -> list[Check]:
    t = gs.tensors("lora")
    raw = gs.spec.get("config", {}).get("lora", {})
    alpha = float(raw.get("alpha", 64.0))
    pairs = lora_pairs(read_safetensors(resolve(gs.weights).lora))
    tol = gs.tolerance("lora", "atol")
    checks = []
    for key in (k for k in t if k.startswith("base.")):
        name = key.removeprefix("base.")
        module = name.removesuffix(".weight")
        expected = t[f"merged.{name}"]
        checks.append(Check.compare("lora", f"merge {module}", merged_weight(t[key], *pairs[module], alpha), expected, tol))
        checks.append(Check.compare("lora", f"loaded {module}", nets.dit.get_parameter(name), expected, tol))
    return checks


def read_image(path: Any) -> torch.Tensor:
    """PNG -> [1, 3, 1, H, W] in [-1, 1] (x / 255 * 2 - 1)."""
    rgb = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32) / 255
    return (torch.from_numpy(rgb).permute(2, 0, 1) * 2 - 1)[None, :, None]


@dataclass
class _StepProbe:
    """After each of our steps: compare our input, and rerun the step teacher-forced (reference input, sink, caches)."""

    t: dict[str, torch.Tensor]
    dit: S2VDiT
    schedule: Schedule
    context: torch.Tensor
    forced_caches: list[StepCache]
    stored_sink: SinkCache
    block: tuple[str, int, torch.Tensor, list[int]] = ("", 0, torch.empty(0), [])
    worst: dict[str, float] = field(default_factory=lambda: {"velocity": 0.0, "input": 0.0, "update": 0.0})

    def __call__(self, i: int, x: torch.Tensor, velocity: torch.Tensor) -> None:
        name, first, audio, offsets = self.block
        stored_in, stored_v = self.t[f"{name}_s{i}_latent_in"], self.t[f"{name}_s{i}_v"]
        self._note("input", x[0], stored_in)
        t_i = self.schedule.timesteps[i].expand(audio.shape[-1] // 4)
        forced = self.dit(stored_in[None], t_i, self.context, audio, self.forced_caches[i], self.stored_sink, first, offsets[i])
        self._note("velocity", forced[0], stored_v)
        if i + 1 < self.schedule.steps:
            sigmas = self.schedule.sigmas
            self._note("update", euler_step(stored_in, stored_v, sigmas[i], sigmas[i + 1]), self.t[f"{name}_s{i + 1}_latent_in"])

    def _note(self, what: str, ours: torch.Tensor, reference: torch.Tensor) -> None:
        self.worst[what] = max(self.worst[what], (ours - reference).abs().max().item())


def sampler_case(gs: GoldenSet, nets: LiveAvatarNetworks) -> list[Check]:
    """Two clips of the reference loop: sink prefills, 4 cached steps per block, clip-level decode and motion re-encode."""
    t, p = gs.tensors("sampler"), _pipeline(gs)
    tol = gs.tolerance
    dit, vae = nets.dit, nets.vae
    schedule = Schedule.make(p["sample_steps"], p["sample_shift"])
    checks = [Check.compare("sampler", "timesteps", schedule.timesteps, t["timesteps"], tol("sampler", "timesteps_atol"))]
    png = gs.root / "cases" / "ref_image.png"
    image = read_image(png) if png.is_file() else t["ref_image"][None]
    checks.append(Check.compare("sampler", "ref_image", image[0], t["ref_image"], 0.0))
    ref = encode(vae, image.expand(-1, -1, 5, -1, -1))[:, :, 1:]
    motion_frames, lat_motion, per_block = (
        p.get("motion_frames", MOTION_FRAMES),
        p.get("lat_motion_frames", LAT_MOTION_FRAMES),
        p.get("num_frames_per_block", BLOCK_FRAMES),
    )
    last_frames = image.expand(-1, -1, 5 * motion_frames, -1, -1)
    motion = encode(vae, last_frames)
    context = dit.embed_text(t["context"][None])
    blocks, infer = p["blocks_per_clip"], p["infer_frames"]
    heads, head_dim = dit.config.num_heads, dit.config.head_dim

    def new_caches() -> list[StepCache]:
        return [StepCache.empty(dit.config.num_layers, 1, p["kv_cache_rows"], heads, head_dim, torch.float32, ref.device) for _ in range(schedule.steps)]

    caches, forced_caches = new_caches(), new_caches()  # ours, and teacher-forced ones that only ever see the reference's inputs
    x0_tol, v_tol = tol("sampler", "x0_atol"), tol("sampler", "per_step_velocity_atol")
    video: list[torch.Tensor] = []
    for r in range(p["num_clips"]):
        if r < 2:  # the reference prefills before clip 0 and, with online decode, again before clip 1
            checks.append(Check.compare("sampler", f"sink{r} ref latents", ref[0], t[f"sink{r}_ref_latents"], x0_tol))
            checks.append(Check.compare("sampler", f"sink{r} motion latents", motion[0, :, -lat_motion:], t[f"sink{r}_motion_latents_last"], x0_tol))
            sink = dit.prefill_sink(ref, motion, context)
            stored_sink = SinkCache(_layers(t, f"sink{r}_cond_k_l"), _layers(t, f"sink{r}_cond_v_l"), sink.reference, sink.motion)
            checks.append(Check.compare("sampler", f"sink{r} keys", sink.k[:, 0], _layers(t, f"sink{r}_cond_k_l")[:, 0], v_tol))
            checks.append(Check.compare("sampler", f"sink{r} values", sink.v[:, 0], _layers(t, f"sink{r}_cond_v_l")[:, 0], v_tol))
        noise = t[f"c{r}_noise"][None]
        audio = t[f"c{r}_audio"]
        clip = []
        probe = _StepProbe(t, dit, schedule, context, forced_caches, stored_sink)
        for b in range(blocks):
            offsets = [p["rel_dist"][f"c{r}_b{b}_s{i}"] for i in range(schedule.steps)]
            span = slice(b * per_block, (b + 1) * per_block)
            block_audio = audio[..., b * 4 * per_block : (b + 1) * 4 * per_block]
            first = (r * blocks + b) * per_block
            probe.block = (f"c{r}_b{b}", first, block_audio, offsets)
            clip.append(denoise_block(dit, noise[:, :, span], schedule, context, block_audio, caches, sink, first, offsets, probe))
        worst = probe.worst
        x0 = torch.cat(clip, dim=2)
        checks.append(Check("sampler", f"c{r} teacher-forced velocities", worst["velocity"], v_tol))
        checks.append(Check("sampler", f"c{r} per-step inputs", worst["input"], x0_tol))
        checks.append(Check("sampler", f"c{r} update from stored velocities", worst["update"], tol("sampler", "update_atol")))
        checks.append(Check.compare("sampler", f"c{r}_x0", x0[0], t[f"c{r}_x0"], x0_tol))
        pixels = decode(vae, torch.cat([motion, x0], dim=2), DecoderCache.for_vae(vae))[:, :, -infer:]
        if r == 0:  # the reference drops the first 3 frames of the first clip
            pixels = pixels[:, :, 3:]
            ref = x0[:, :, :1]
        keep = min(motion_frames, pixels.shape[2])
        last_frames = torch.cat([last_frames[:, :, keep:], pixels[:, :, -keep:]], dim=2)
        motion = encode(vae, last_frames)
        video.append(pixels)
    index = t["video_frame_index"]
    frames_out = torch.cat(video, dim=2)[0][:, index]
    checks.append(Check.compare("sampler", "video frames", frames_out, t["video_frames"], tol("sampler", "video_atol")))
    return checks


CASES: dict[str, Case] = {"dit": dit_case, "audio": audio_case, "vae": vae_case, "lora": lora_case, "sampler": sampler_case}


def run_cases(gs: GoldenSet, on_case: Callable[[str], None]) -> list[Check]:
    """Load ``weights/`` in float32 on the CPU (as the fixtures were made), the LoRA at the set's alpha, and run each case."""
    alpha = float(gs.spec.get("config", {}).get("lora", {}).get("alpha", 64.0))

    def load() -> LiveAvatarNetworks:
        networks = LiveAvatarNetworks.load(resolve(gs.weights), torch.float32, alpha=alpha, text=False)
        networks.dit.motion_frames = int(gs.spec.get("config", {}).get("pipeline", {}).get("motion_frames", MOTION_FRAMES))
        return networks

    return run_each(gs, CASES, load, on_case)
