"""`avatarstream eval`: render held-out identities with held-out speech and measure the three promises.

Short clips are rendered twice, with the family's seam smoothing (I-chunks)
on and off, so its gain is visible; one long run (10 minutes by default)
measures identity per minute against the reference, next to the same measure
on the ground-truth render, which shows how much of the error is just head
motion.

Any family the registry knows can be measured, through the family interface
(``families/base.py``, assembled by ``families.assemble``) and one optional
member: ``seam_smoothing_off``, the options that switch its seam smoothing off
(a mapping of option names to values; the family's defaults for the rest). A
family without it is refused in one line that says so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from PIL import Image

from avatarstream.avatars import Identity, motion_track, mouth_track, reference_image, render_frame
from avatarstream.avatars.identity import HELD_OUT_IDENTITIES
from avatarstream.avatars.renderer import pose_at
from avatarstream.avatars.speech import SAMPLE_RATE, speech_track
from avatarstream.errors import InputError
from avatarstream.evaluation.metrics import StreamMeter, correlation, identity_error, per_minute, seam_frames, seam_ratio
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.base import Family, FamilyClass, optional
from avatarstream.pipeline.report import ReportRecorder
from avatarstream.sources.pcm import PcmBlock
from avatarstream.sources.reference import crop_resize

TARGETS = {"lip_sync_correlation": 0.8, "identity_last_over_first": 1.05, "seam_ratio_with_i_chunks": 1.2}
#: The optional family member eval needs (see the module docstring).
SEAM_SMOOTHING_OFF = "seam_smoothing_off"


def seam_smoothing_off(family: Family | FamilyClass) -> Mapping[str, Any]:
    """The options that switch ``family``'s seam smoothing off; an InputError naming the family and what it lacks."""
    options: Mapping[str, Any] | None = optional(family, SEAM_SMOOTHING_OFF)
    if options is None:
        name = getattr(family, "name", "chosen")
        raise InputError(
            f"the {name} model cannot be evaluated: eval measures its seams with and without seam smoothing, "
            f"and it offers no {SEAM_SMOOTHING_OFF} (the options that switch its seam smoothing off)"
        )
    return options


@dataclass
class Run:
    """Per-frame measures of one generated video and its ground truth."""

    identity_seed: int
    smoothed: bool  # rendered with the family's seam smoothing
    truth: np.ndarray  # ground-truth mouth openness
    measured: dict[str, np.ndarray]  # openness, identity, changes
    seams: np.ndarray  # True where a frame starts a new chunk piece
    report: dict

    @property
    def lip_sync(self) -> float:
        return correlation(self.measured["openness"], self.truth)

    @property
    def seam_ratio(self) -> float:
        return seam_ratio(self.measured["changes"], self.seams)


def blocks(audio: np.ndarray, seconds: float = 1.0) -> Iterator[PcmBlock]:
    step = int(seconds * SAMPLE_RATE)
    for i in range(0, len(audio), step):
        yield PcmBlock(audio[None, i : i + step].astype(np.float32), SAMPLE_RATE)


def generate(family: Family, identity_seed: int, audio: np.ndarray, smoothed: bool, device: torch.device, seed: int = 0) -> Run:
    """Run the pipeline on `audio` with the identity's reference and measure every frame as it streams out.

    `smoothed`: with the family's default options; else with its seam smoothing switched off.
    """
    pipeline = build_pipeline(family, device, None if smoothed else seam_smoothing_off(family))
    fps = family.fps
    reference = reference_image(Identity.from_seed(identity_seed))
    if pipeline.frame_size is not None:  # the family's video size (a family's pipeline says it)
        reference = crop_resize(Image.fromarray(reference), *pipeline.frame_size)
    recorder = ReportRecorder(extra={"seam_smoothing": smoothed, "identity_seed": identity_seed})
    meter = StreamMeter(reference)
    for media in pipeline.stream(blocks(audio), reference, seed=seed, observers=[recorder]):
        meter.add(media.frames)
    report = recorder.summary()
    recorder.close()
    measured = meter.arrays()
    frames = len(measured["openness"])
    truth = mouth_track(audio, SAMPLE_RATE, fps).openness[:frames]
    return Run(identity_seed, smoothed, truth, measured, seam_frames(pipeline.plan, frames, pipeline.frames), report)


def ground_truth_identity_per_minute(identity_seed: int, audio: np.ndarray, motion_seed: int, fps: int, stride: int = 5) -> list[float]:
    """Identity error per minute of the procedural render itself, from every `stride`-th frame (a baseline:
    what head motion and blinks alone cost, with no generation error)."""
    identity = Identity.from_seed(identity_seed)
    mouth = mouth_track(audio, SAMPLE_RATE, fps)
    motion = motion_track(len(mouth), motion_seed, fps)
    reference = reference_image(identity)
    minute = 60 * fps
    out = []
    for start in range(0, len(mouth), minute):
        picked = range(start, min(start + minute, len(mouth)), stride)
        if len(picked) * stride >= minute // 2:
            frames = np.stack([render_frame(identity, pose_at(mouth, motion, i)) for i in picked])
            out.append(float(identity_error(frames, reference).mean()))
    return out


def evaluate(family: Family, device: torch.device, *, clips: int = 4, clip_seconds: float = 20.0, long_minutes: float = 10.0) -> tuple[dict, dict]:
    """Returns (results for JSON, per-frame series for plots); a family that cannot switch its seam smoothing off is refused."""
    seam_smoothing_off(family)
    fps = family.fps
    short = []
    for k in range(clips):
        identity_seed = HELD_OUT_IDENTITIES + k
        audio = speech_track(clip_seconds, 10_000 + k, "heldout")
        short.append((generate(family, identity_seed, audio, True, device), generate(family, identity_seed, audio, False, device)))
    results: dict = {
        "targets": TARGETS,
        "clips": [
            {
                "identity_seed": on.identity_seed,
                "seconds": clip_seconds,
                "lip_sync_correlation": round(on.lip_sync, 4),
                "seam_ratio_with_i_chunks": round(on.seam_ratio, 4),
                "seam_ratio_without_i_chunks": round(off.seam_ratio, 4),
            }
            for on, off in short
        ],
    }
    series: dict = {"short": short}
    truth = np.concatenate([on.truth for on, _ in short])
    measured = np.concatenate([on.measured["openness"] for on, _ in short])
    results["lip_sync_correlation"] = round(correlation(measured, truth), 4)
    results["seam_ratio_with_i_chunks"] = round(float(np.mean([on.seam_ratio for on, _ in short])), 4)
    results["seam_ratio_without_i_chunks"] = round(float(np.mean([off.seam_ratio for _, off in short])), 4)
    if long_minutes > 0:
        identity_seed = HELD_OUT_IDENTITIES + 100
        audio = speech_track(60 * long_minutes, 20_000, "heldout")
        long = generate(family, identity_seed, audio, True, device)
        minutes = per_minute(long.measured["identity"], fps)
        baseline = ground_truth_identity_per_minute(identity_seed, audio, 0, fps)
        results["long"] = {
            "minutes": long_minutes,
            "identity_seed": identity_seed,
            "identity_error_per_minute": [round(m, 3) for m in minutes],
            "ground_truth_render_identity_error_per_minute": [round(m, 3) for m in baseline],
            "identity_last_over_first": round(minutes[-1] / minutes[0], 4),
            "lip_sync_correlation": round(long.lip_sync, 4),
            "seam_ratio_with_i_chunks": round(long.seam_ratio, 4),
            "speed": {k: long.report[k] for k in ("ttff_s", "frames", "duration_s", "wall_s", "fps_out", "realtime_factor", "peak_rss_bytes")},
        }
        results["identity_last_over_first"] = results["long"]["identity_last_over_first"]
        series["long"] = (long, minutes, baseline)
    results["speed_short_clips"] = [{k: on.report[k] for k in ("ttff_s", "fps_out", "realtime_factor")} for on, _ in short]
    results["meets_targets"] = {
        "lip_sync_correlation": results["lip_sync_correlation"] >= TARGETS["lip_sync_correlation"],
        "seam_ratio_with_i_chunks": results["seam_ratio_with_i_chunks"] <= TARGETS["seam_ratio_with_i_chunks"],
        **({"identity_last_over_first": results["identity_last_over_first"] <= TARGETS["identity_last_over_first"]} if long_minutes > 0 else {}),
    }
    return results, series
