"""The InfiniteTalk family's golden sets: every component case against the networks loaded from a set's ``weights/``,
and a whole-video set's run of the reference CLI rendered through the product path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from avatarstream.errors import InputError
from avatarstream.families.infinitetalk.layout import resolve
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.families.infinitetalk.parity_cases import CASES
from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import GoldenSet, run_each


def run_cases(gs: GoldenSet, on_case: Callable[[str], None]) -> list[Check]:
    """Load ``weights/`` in float32 on the CPU (as the fixtures were made) and run each case."""
    return run_each(gs, CASES, lambda: InfiniteTalkNetworks.load(resolve(gs.weights), torch.float32, encoders=False), on_case)


def _argv_value(argv: list[str], flag: str) -> str | None:
    """The value after ``flag`` in the reference CLI's recorded argv (None when not given)."""
    return argv[argv.index(flag) + 1] if flag in argv and argv.index(flag) + 1 < len(argv) else None


def _setting(settings: dict[str, Any], key: str, path: Path) -> Any:
    if key not in settings:
        raise InputError(f"{path} has no settings.{key}; a whole-video set records the reference CLI's resolved settings")
    return settings[key]


def render_arguments(gs: GoldenSet) -> dict[str, Any]:
    """``avatarstream.render``'s arguments for the reference CLI's run that made the set (docs/models/infinitetalk.md maps them)."""
    path, spec = gs.root / "golden.json", gs.spec
    settings, command = spec.get("settings") or {}, spec.get("command") or {}
    argv, inputs = list(command.get("argv") or []), command.get("input_json") or {}
    unsupported = [flag for flag in ("--use_apg", "--use_teacache", "--scene_seg", "--quant", "--lora_dir") if flag in argv]
    if _setting(settings, "mode", path) != "streaming":
        unsupported.append(f"--mode {settings['mode']}")
    if len(inputs.get("cond_audio") or {}) != 1:
        unsupported.append("a cond_audio other than one person's")
    if unsupported:
        raise InputError(f"{path}: the reference run used {', '.join(unsupported)}, which this port does not reproduce")
    height, width = _setting(settings, "size_bucket", path)
    options: dict[str, Any] = {
        "fidelity": "reference",
        "dtype": "fp32",  # the sets are made in float32 on the CPU
        "chunk_frames": _setting(settings, "frame_num", path),
        "motion_frames": _setting(settings, "motion_frame", path),
        "steps": _setting(settings, "sample_steps", path),
        "shift": float(_setting(settings, "shift", path)),
        "text_guidance": float(_setting(settings, "text_guide_scale", path)),
        "audio_guidance": float(_setting(settings, "audio_guide_scale", path)),
        "color_correction": float(_setting(settings, "color_correction_strength", path)),
        "size": (width, height),
    }
    for flag, option in (("--ckpt_dir", "base"), ("--infinitetalk_dir", "adapter"), ("--wav2vec_dir", "audio_encoder")):
        value = _argv_value(argv, flag)
        if value is not None:
            options[option] = gs.root / value
    negative = _argv_value(argv, "--n_prompt")
    if negative:
        options["negative_prompt"] = negative
    audio = next(iter((inputs.get("cond_audio") or {}).values()), None)
    if not isinstance(audio, str) or not isinstance(inputs.get("cond_video"), str):
        raise InputError(f"{path}: command.input_json names no cond_video and cond_audio; they are the reference and the audio")
    weights = None if {"base", "adapter", "audio_encoder"} <= set(options) else gs.weights
    return {
        "audio": gs.root / audio, "reference": gs.root / inputs["cond_video"], "prompt": inputs.get("prompt", ""),
        "model": "infinitetalk", "weights": weights, "model_options": options, "seed": int(_setting(settings, "seed", path)),
        "device": "cpu",  # the reference drew its noise from the CPU generator
    }  # fmt: skip
