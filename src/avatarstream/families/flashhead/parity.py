"""The FlashHead golden cases (Pro and Lite): the DiT, the VAEs, the stream's audio, and the stream loop step by step.

Sizes come from ``golden.json``'s ``config`` (each variant's ``infer_params``)
and the weight folders; tolerances from its ``tolerance``. The stream cases
replay the reference's loop with this port's pieces: teacher-forced
velocities and updates from the stored draws, the free-running latents from
the stored noise, the decode, colour correction and truncation of every
chunk, and (Pro) the motion latents re-encoded from the corrected frames.
Lite's encodes draw from torch's global generator in the reference, so its
reference and motion latents are taken from the case, not re-encoded.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator

import numpy as np
import torch

from avatarstream.errors import InputError
from avatarstream.families.flashhead.layout import resolve
from avatarstream.families.flashhead.networks import FlashHeadNetworks
from avatarstream.families.flashhead.reference_image import load_reference
from avatarstream.models.flashhead.audio_features import FPS, SAMPLE_RATE, frame_features, normalize, windows
from avatarstream.models.flashhead.color import correct_colors, to_uint8
from avatarstream.models.flashhead.sampler import denoise, renoise, timesteps
from avatarstream.models.flashhead.vae import LtxVideoVAE
from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import Entries, GoldenSet, read_wav_int16
from avatarstream.stages.flashhead.reference import reference_pixels

VARIANTS = ("pro", "lite")


def _tensors(gs: GoldenSet, name: str) -> Entries:
    from avatarstream.weights.files import read_safetensors
    from avatarstream.weights.sandbox import inside

    path = inside(gs.root, gs.root / "cases" / f"{name}.safetensors")
    if not path.is_file():
        raise InputError(f"{path} not found; the FlashHead golden set keeps case {name!r} there")
    return Entries(read_safetensors(path), str(path))


def _tolerance(gs: GoldenSet, key: str) -> float:
    try:
        return float(gs.spec["tolerance"][key])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{gs.root / 'golden.json'} gives no tolerance {key!r}") from exc


def _infer(gs: GoldenSet, variant: str) -> Entries:
    try:
        return Entries(gs.spec["config"][variant]["infer_params"], f"{gs.root / 'golden.json'} config.{variant}.infer_params")
    except (KeyError, TypeError) as exc:
        raise InputError(f"{gs.root / 'golden.json'} has no config.{variant}.infer_params; it states the stream's sizes") from exc


def dit_case(gs: GoldenSet, nets: FlashHeadNetworks) -> list[Check]:
    name = f"dit_{nets.variant}"
    t = _tensors(gs, name)
    tol = _tolerance(gs, "dit_velocity_atol")
    checks = [Check.compare(name, "audio_tokens", nets.dit.audio_tokens(t["audio"])[0], t["audio_tokens"], _tolerance(gs, "audio_tokens_atol"))]
    for i in (0, 1):
        velocity = nets.dit(t["x"][None], t[f"t_{i}"], t["audio"], t["y"][None])[0]
        checks.append(Check.compare(name, f"velocity_{i}", velocity, t[f"velocity_{i}"], tol))
    return checks


def vae_case(gs: GoldenSet, nets: FlashHeadNetworks) -> list[Check]:
    name = f"vae_{nets.variant}"
    t = _tensors(gs, name)
    motion = t["video"][None, :, -_infer(gs, nets.variant)["motion_frames_num"] :]
    encode_tol = _tolerance(gs, "vae_encode_atol")
    checks = [Check.compare(name, "decode", nets.vae.decode(t["z"][None])[0], t["video"], _tolerance(gs, "vae_decode_atol"))]
    if isinstance(nets.vae, LtxVideoVAE):
        mean, std = nets.vae.posterior(motion)
        sample = nets.vae.encode(motion, torch.Generator().manual_seed(1234))  # the case drew it after torch.manual_seed(1234)
        checks += [
            Check.compare(name, "posterior_mean", mean[0], t["posterior_mean"], encode_tol),
            Check.compare(name, "posterior_std", std[0], t["posterior_std"], encode_tol),
            Check.compare(name, "latent_sample_seed1234", sample[0], t["latent_sample_seed1234"], encode_tol),
        ]
    else:
        checks.append(Check.compare(name, "encode (posterior mean)", nets.vae.encode(motion)[0], t["latent"], encode_tol))
    return checks


def stream_windows(gs: GoldenSet, nets: FlashHeadNetworks, infer: Entries, chunks: int) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Per chunk of the stream: the buffer's input values, its features and the chunk's windows, from ``speech.wav``."""
    new = infer["frame_num"] - infer["motion_frames_num"]
    buffer = infer["cached_audio_duration"] * SAMPLE_RATE
    speech = read_wav_int16(gs.root / "cases" / "speech.wav")
    for c in range(chunks):
        end = (c + 1) * new * SAMPLE_RATE // FPS
        heard = speech[:end]  # silence before the start (the ring buffer's zeros) and past the end (the reference's padding)
        samples = np.concatenate([np.zeros(buffer, np.float32), heard, np.zeros(end - heard.size, np.float32)])[-buffer:]
        values = normalize(nets.extractor, samples)
        features = frame_features(nets.audio_encoder, values, buffer * FPS // SAMPLE_RATE)
        yield values, features, windows(features, infer["frame_num"])


def audio_case(gs: GoldenSet, nets: FlashHeadNetworks) -> list[Check]:
    t = _tensors(gs, "audio")
    chunks = sum(1 for key in t if key.endswith("_features"))
    checks = []
    for c, (values, features, window) in enumerate(stream_windows(gs, nets, _infer(gs, "pro"), chunks)):
        if c == 0:
            checks.append(Check.compare("audio", "c0_w2v_input", values, t["c0_w2v_input"], _tolerance(gs, "wav2vec2_input_atol")))
        checks.append(Check.compare("audio", f"c{c}_features", features, t[f"c{c}_features"], _tolerance(gs, "features_atol")))
        checks.append(
            Check.compare("audio", f"c{c}_audio (windows of the stored features)", windows(t[f"c{c}_features"], window.shape[1]), t[f"c{c}_audio"], 0.0)
        )
    return checks


def frame_checks(case: str, frames: torch.Tensor, golden: torch.Tensor) -> list[Check]:
    """uint8 frames: at most 1 apart on at most 0.1 % of values, and a PSNR of 60 dB or more over all of them."""
    if frames.shape != golden.shape:
        return [Check(case, f"frames_u8 (shape {tuple(frames.shape)} != {tuple(golden.shape)})", math.inf, 0.0)]
    diff = (frames.double() - golden.double()).abs()
    mse = float((diff**2).mean())
    psnr = math.inf if mse == 0 else 10 * math.log10(255**2 / mse)
    return [
        Check(case, "frames_u8 max |diff|", float(diff.max()), 1.0),
        Check(case, "frames_u8 fraction differing", float((diff > 0).double().mean()), 1e-3),
        Check(case, "frames_u8 PSNR (dB)", psnr, 60.0, bound="min"),
    ]


def stream_case(gs: GoldenSet, nets: FlashHeadNetworks) -> list[Check]:
    name = f"stream_{nets.variant}"
    t, infer = _tensors(gs, name), _infer(gs, nets.variant)
    chunks = sum(1 for key in t if key.endswith("_x0"))
    schedule = timesteps(infer["sample_steps"], float(infer["sample_shift"]))
    image = load_reference(gs.root / "cases" / "ref_image.png", (infer["width"], infer["height"]))
    cond = reference_pixels(image)
    checks = [
        Check.compare(name, "timesteps", schedule, t["timesteps"], _tolerance(gs, "timesteps_atol")),
        Check.compare(name, "cond_image", cond, t["cond_image"], _tolerance(gs, "wav2vec2_input_atol")),
    ]
    if not isinstance(nets.vae, LtxVideoVAE):
        still = cond.expand(-1, -1, infer["frame_num"], -1, -1)
        checks.append(Check.compare(name, "ref_latent", nets.vae.encode(still)[0], t["ref_latent"], _tolerance(gs, "vae_encode_atol")))
    worst = {"velocity": 0.0, "update": 0.0}
    motion_frames = infer["motion_frames_num"]
    frames = []
    for c, (_, _, audio) in zip(range(chunks), stream_windows(gs, nets, infer, chunks)):
        checks.append(Check.compare(name, f"c{c}_audio", audio, t[f"c{c}_audio"], _tolerance(gs, "features_atol")))
        motion, stored_audio = t[f"c{c}_motion_latents_in"], t[f"c{c}_audio"]

        def forced(i: int, x: torch.Tensor, velocity: torch.Tensor, eps: torch.Tensor, c: int = c, motion: torch.Tensor = motion) -> None:
            """Our step on the reference's input, and the reference's update from its own velocity and draw."""
            stored_in = t[f"c{c}_step{i}_latent_in"]
            v = nets.dit(stored_in[None], schedule[i : i + 1], t[f"c{c}_audio"], t["ref_latent"][None])[0]
            worst["velocity"] = max(worst["velocity"], float((v - t[f"c{c}_step{i}_v"]).abs().max()))
            updated = renoise(stored_in, t[f"c{c}_step{i}_v"], schedule[i : i + 1], schedule[i + 1 : i + 2], t[f"c{c}_step{i}_eps"])
            updated[:, : motion.shape[1]] = motion
            following = t[f"c{c}_step{i + 1}_latent_in"] if i + 1 < schedule.shape[0] - 1 else t[f"c{c}_x0"]
            worst["update"] = max(worst["update"], float((updated - following).abs().max()))

        draws = iter(t[f"c{c}_step{i}_eps"] for i in itertools.count())
        x0 = denoise(nets.dit, t[f"c{c}_noise"], motion, t["ref_latent"], stored_audio, schedule, lambda shape, draws=draws: next(draws), forced)  # type: ignore[misc]
        checks.append(Check.compare(name, f"c{c}_x0 (free-running, stored draws)", x0, t[f"c{c}_x0"], _tolerance(gs, "x0_free_running_atol")))
        video = nets.vae.decode(t[f"c{c}_x0"][None])
        if c == 0:
            checks.append(Check.compare(name, "c0_video_float", video[0], t["c0_video_float"], _tolerance(gs, "video_float_atol")))
        corrected = correct_colors(video, t["cond_image"], float(infer["color_correction_strength"]))
        frames.append(to_uint8(corrected)[motion_frames:])
        if not isinstance(nets.vae, LtxVideoVAE):
            encoded = nets.vae.encode(corrected[:, :, -motion_frames:])[0]
            checks.append(Check.compare(name, f"c{c}_motion_latents_out", encoded, t[f"c{c}_motion_latents_out"], _tolerance(gs, "vae_encode_atol")))
    checks.append(Check(name, "teacher-forced velocities (every step)", worst["velocity"], _tolerance(gs, "per_step_velocity_atol")))
    checks.append(Check(name, "re-noising updates (stored v and eps)", worst["update"], _tolerance(gs, "sampler_update_atol")))
    return checks + frame_checks(name, torch.cat(frames), t["frames_u8"])


CASES: dict[str, Callable[[GoldenSet, FlashHeadNetworks], list[Check]]] = {"dit": dit_case, "vae": vae_case, "stream": stream_case}


def run_cases(gs: GoldenSet, on_case: Callable[[str], None]) -> list[Check]:
    """Every case of both variants (each variant's networks loaded once), and the audio case with Pro's wav2vec2."""
    checks: list[Check] = []
    with torch.inference_mode():
        for variant in VARIANTS:
            on_case(f"(loading {variant})")
            nets = FlashHeadNetworks.load(resolve(gs.weights, variant=variant))
            for kind, case in CASES.items():
                on_case(f"{kind}_{variant}")
                checks += case(gs, nets)
            if variant == "pro":
                on_case("audio")
                checks += audio_case(gs, nets)
    return checks
