"""The four golden cases: DiT forward, audio path, VAE decode/encode, two chunks of sampling.

Each takes the golden set and the loaded networks and returns its checks; the
rules each case follows are the reference's, as golden.json describes them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan
from PIL import Image

from avatarstream.components.wan.config import VAE_TEMPORAL_STRIDE
from avatarstream.components.wan.vae import DecoderCache, decode, encode
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.models.infinitetalk.audio_features import audio_windows, extend_for_last_chunk, loudness_normalize, wav2vec2_features
from avatarstream.models.infinitetalk.predict import ChunkConditions, DiTPredictor
from avatarstream.models.infinitetalk.sampler import Guidance, euler_step, fix_motion, sample, timesteps
from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import GoldenSet, read_wav_int16

Case = Callable[[GoldenSet, InfiniteTalkNetworks], list[Check]]


def dit_case(gs: GoldenSet, nets: InfiniteTalkNetworks) -> list[Check]:
    t = gs.tensors("dit")
    checks = [Check.compare("dit", "audio_tokens", nets.dit.audio_proj(t["audio"]), t["audio_tokens"], gs.tolerance("dit", "audio_tokens_atol"))]
    for j in (0, 1):
        v = nets.dit(t["x"][None], t["y"][None], t[f"t_{j}"], t["context"][None], t["clip_fea"], t["audio"])
        checks.append(Check.compare("dit", f"velocity_{j}", v[0], t[f"velocity_{j}"], gs.tolerance("dit", "atol")))
    return checks


def audio_case(gs: GoldenSet, nets: InfiniteTalkNetworks) -> list[Check]:
    t, spec = gs.tensors("audio"), gs.case("audio")
    waveform = loudness_normalize(read_wav_int16(gs.file("audio", "speech_file")))
    features = wav2vec2_features(nets.audio_encoder, torch.from_numpy(waveform))
    checks = [
        Check.compare("audio", "waveform", torch.from_numpy(waveform), t["waveform"], gs.tolerance("audio", "waveform_atol")),
        Check.compare("audio", "features", features, t["features"], gs.tolerance("audio", "features_atol")),
    ]
    windows = spec["windows"]
    frame_num, step = windows["frame_num"], windows["frame_num"] - windows["motion_frame"]
    starts = {"chunk0": 0, "chunk1": step, "last": windows["last_chunk_start"]}
    reference = t["features"]  # windows are pure indexing: index the reference features, exact
    for name, start in starts.items():
        checks.append(Check.compare("audio", f"window_{name}", audio_windows(reference, start, frame_num), t[f"window_{name}"], 0.0))
    extended = extend_for_last_chunk(reference, starts["last"], frame_num)
    checks.append(Check.compare("audio", "features_extended_last", extended, t["features_extended_last"], 0.0))
    return checks


def vae_case(gs: GoldenSet, nets: InfiniteTalkNetworks) -> list[Check]:
    t = gs.tensors("vae")
    video_tol, latent_tol = gs.tolerance("vae", "video_atol"), gs.tolerance("vae", "latent_atol")
    unclamped = decode(nets.vae, t["z"][None], DecoderCache.for_vae(nets.vae), clamp=False)[0]
    return [
        Check.compare("vae", "video_unclamped", unclamped, t["video_unclamped"], video_tol),
        Check.compare("vae", "video", unclamped.clamp(-1, 1), t["video"], video_tol),
        Check.compare("vae", "latent", encode(nets.vae, t["pixels"][None])[0], t["latent"], latent_tol),
        Check.compare("vae", "image_latent", encode(nets.vae, t["image"][None])[0], t["image_latent"], latent_tol),
    ]


def read_image(path: Path) -> torch.Tensor:
    """PNG -> [1, 3, 1, H, W] in [-1, 1]: (pixels / 255 - 0.5) * 2, as the model sees the reference image."""
    rgb = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32) / 255
    return ((torch.from_numpy(rgb).permute(2, 0, 1) - 0.5) * 2)[None, :, None]


def reference_conditioning(vae: AutoencoderKLWan, image: torch.Tensor, frame_num: int) -> torch.Tensor:
    """y = [4 mask channels (1 on latent frame 0), VAE latent of the image followed by zero frames]."""
    pixels = torch.cat([image, image.new_zeros(*image.shape[:2], frame_num - 1, *image.shape[3:])], dim=2)
    latent = encode(vae, pixels)
    mask = torch.zeros(latent.shape[0], VAE_TEMPORAL_STRIDE, *latent.shape[2:], dtype=latent.dtype)
    mask[:, :, 0] = 1
    return torch.cat([mask, latent], dim=1)


def sampler_case(gs: GoldenSet, nets: InfiniteTalkNetworks) -> list[Check]:
    t, settings = gs.tensors("sampler"), gs.case("sampler")["settings"]
    tol = gs.tolerance
    frame_num, motion_frame = settings["frame_num"], settings["motion_frame"]
    schedule = timesteps(settings["sampling_steps"], settings["shift"])
    guidance = Guidance(settings["text_guide_scale"], settings["audio_guide_scale"])
    checks = [Check.compare("sampler", "timesteps", schedule, t["timesteps"], tol("sampler", "timesteps_atol"))]
    image = read_image(gs.file("sampler", "image_file"))
    checks.append(Check.compare("sampler", "cond_image", image[0], t["cond_image"], 0.0))
    y = reference_conditioning(nets.vae, image, frame_num)
    motion = encode(nets.vae, image)
    video = []
    for c in (0, 1):
        cond = ChunkConditions(y, t["clip_fea"], t["context"][None], t["context_null"][None], t[f"c{c}_audio"])
        predict = DiTPredictor(nets.dit, cond)
        checks.append(Check.compare("sampler", f"c{c}_y", y[0], t[f"c{c}_y"], tol("sampler", "x0_atol")))
        checks.append(Check.compare("sampler", f"c{c}_motion_latents", motion[0], t[f"c{c}_motion_latents"], tol("sampler", "x0_atol")))
        checks += _step_checks(gs, t, c, predict, guidance, schedule, t[f"c{c}_motion_latents"][None])
        x0 = sample(predict, t[f"c{c}_noise"][None], motion, schedule, guidance)
        checks.append(Check.compare("sampler", f"c{c}_x0", x0[0], t[f"c{c}_x0"], tol("sampler", "x0_atol")))
        pixels = decode(nets.vae, x0, DecoderCache.for_vae(nets.vae))
        video.append(pixels if c == 0 else pixels[:, :, motion_frame:])
        motion = encode(nets.vae, pixels[:, :, frame_num - motion_frame : frame_num])
    checks.append(Check.compare("sampler", "video", torch.cat(video, dim=2)[0], t["video"], tol("sampler", "video_atol")))
    return checks


def _step_checks(
    gs: GoldenSet, t: dict[str, torch.Tensor], c: int, predict: DiTPredictor, guidance: Guidance, schedule: torch.Tensor, motion: torch.Tensor
) -> list[Check]:
    """Teacher-forced velocities at every stored step, and the update from the stored velocities alone."""
    vel_err, upd_err = 0.0, 0.0
    names = ("v_cond", "v_drop_text", "v_uncond")
    for i in range(len(schedule) - 1):
        latent_in = t[f"c{c}_step{i}_latent_in"][None]
        ours = predict(latent_in, schedule[i : i + 1], guidance.predictions)
        for name, v in zip(names, ours, strict=True):
            vel_err = max(vel_err, (v[0] - t[f"c{c}_step{i}_{name}"]).abs().max().item())
        stored = [t[f"c{c}_step{i}_{name}"][None] for name in names]
        updated = fix_motion(euler_step(latent_in, guidance.combine(stored), schedule[i], schedule[i + 1]), motion)
        target = t[f"c{c}_step{i + 1}_latent_in"] if i + 2 < len(schedule) else t[f"c{c}_x0"]
        upd_err = max(upd_err, (updated[0] - target).abs().max().item())
    return [
        Check("sampler", f"c{c} teacher-forced velocities", vel_err, gs.tolerance("sampler", "per_step_velocity_atol")),
        Check("sampler", f"c{c} update from stored velocities", upd_err, gs.tolerance("sampler", "update_atol")),
    ]


CASES: dict[str, Case] = {"dit": dit_case, "audio": audio_case, "vae": vae_case, "sampler": sampler_case}
