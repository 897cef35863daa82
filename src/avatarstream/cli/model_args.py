"""The options that choose a model and how it generates, shared by ``render``, ``serve`` and ``bench``."""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from avatarstream.errors import InputError
from avatarstream.families import DTYPES, VARIANTS, load_family
from avatarstream.families.base import Family
from avatarstream.families.options import GenerationOptions


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model", "which model runs and from which weights")
    g.add_argument(
        "--model",
        default="demo",
        choices=sorted(VARIANTS),
        help="model family: demo (bundled, trained on procedural avatars), demo-tiny (random weights: grey noise, for benchmarks and tests), infinitetalk (Wan2.1-I2V-14B + InfiniteTalk)",
    )
    g.add_argument(
        "--weights",
        type=Path,
        help="weights folder: demo's own, or the folder holding the infinitetalk downloads (Wan2.1-I2V-14B-480P[-Diffusers]/, InfiniteTalk/, chinese-wav2vec2-base/)",
    )
    g.add_argument("--base", type=Path, help="infinitetalk: the Wan2.1-I2V-14B-480P (or -Diffusers) folder, if not under --weights")
    g.add_argument("--adapter", type=Path, help="infinitetalk: infinitetalk.safetensors (or its folder), if not under --weights")
    g.add_argument("--audio-encoder", type=Path, help="infinitetalk: the chinese-wav2vec2-base folder, if not under --weights")
    g.add_argument("--dtype", choices=sorted(DTYPES), help="infinitetalk: weight precision (default: bf16 on CUDA, fp32 on the CPU)")
    s = p.add_argument_group("generation", "how chunks are generated; unset options take the model's (or preset's) defaults")
    s.add_argument(
        "--model-preset",
        dest="model_preset",
        help="infinitetalk: infinitetalk (81-frame chunks, 40 steps, guidance 5/4) or flashtalk (33 frames, 4 steps, no guidance)",
    )
    s.add_argument("--chunk-frames", type=int, help="frames per chunk (demo: new frames per N-chunk, 12; infinitetalk: the window, 1 + 4k, 81)")
    s.add_argument(
        "--interp-frames", type=int, help="frames each I-chunk regenerates at a seam; 0 switches I-chunks off (demo: 3; infinitetalk: 0, a multiple of 4)"
    )
    s.add_argument("--motion-frames", type=int, help="infinitetalk: frames of the previous chunk each chunk continues from (1 + 4k; 9)")
    s.add_argument("--steps", type=int, help="flow-matching Euler steps (demo: 4; infinitetalk: 40, flashtalk: 4)")
    s.add_argument("--shift", type=float, help="time shift of the flow-matching schedule (demo: 3; infinitetalk: 7 at 480p, 11 at 720p)")
    s.add_argument("--text-guidance", type=float, help="infinitetalk: text guidance scale (1 = none)")
    s.add_argument("--audio-guidance", type=float, help="infinitetalk: audio guidance scale (1 = none)")
    s.add_argument(
        "--motion",
        choices=("reencode", "latent"),
        help="infinitetalk: motion frames re-encoded from decoded pixels (as the reference) or handed over as latents (cheaper)",
    )
    s.add_argument("--size", type=_size, metavar="WxH", help="infinitetalk: output size in multiples of 16 (default: the preset's, 832x480 or 768x448)")
    s.add_argument("--negative-prompt", help="infinitetalk: what guidance steers away from (default: the reference's)")
    s.add_argument(
        "--audio-window", type=float, dest="audio_window_s", metavar="SECONDS", help="infinitetalk: seconds of audio wav2vec2 sees per chunk (bounded; 8)"
    )
    s.add_argument(
        "--audio-lookahead",
        type=int,
        metavar="FRAMES",
        help="infinitetalk: frames of audio after a chunk its features see; more is closer to whole-file features, and later in a live session (12)",
    )


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT such as 832x480, got {text!r}") from None
    return width, height


def generation_options(args: argparse.Namespace) -> GenerationOptions:
    return GenerationOptions(
        preset=args.model_preset, chunk_frames=args.chunk_frames, interp_frames=args.interp_frames, motion_frames=args.motion_frames,
        steps=args.steps, shift=args.shift, text_guidance=args.text_guidance, audio_guidance=args.audio_guidance, motion=args.motion,
        size=args.size, negative_prompt=args.negative_prompt, audio_window_s=args.audio_window_s, audio_lookahead=args.audio_lookahead,
    )  # fmt: skip


def model_folders(args: argparse.Namespace) -> dict[str, Path]:
    """The infinitetalk folders named one by one (``--base``, ``--adapter``, ``--audio-encoder``)."""
    named = {"base": args.base, "adapter": args.adapter, "audio_encoder": args.audio_encoder}
    return {k: v for k, v in named.items() if v is not None}


def check_model_folders(args: argparse.Namespace) -> dict[str, Path]:
    """The folders ``--model`` loads from, refused early when infinitetalk has none."""
    folders = model_folders(args)
    if args.model == "infinitetalk" and args.weights is None and len(folders) < 3:
        raise InputError("--model infinitetalk needs --weights ROOT (the folder holding the downloads) or --base, --adapter and --audio-encoder")
    return folders


def load_model(args: argparse.Namespace, device: torch.device, *, seed: int = 0) -> Family:
    folders = check_model_folders(args)
    return load_family(args.model, args.weights, seed=seed, dtype=args.dtype, device=device, folders=folders)
