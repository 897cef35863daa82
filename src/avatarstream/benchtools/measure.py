"""One measured run of the pipeline: the render report's figures plus per-chunk records."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.pipeline.report import ReportRecorder
from avatarstream.pipeline.stage import Role, Stage
from avatarstream.publish import EncoderSettings, Mp4FileSink, Publisher
from avatarstream.runtime.devices import peak_device_bytes
from avatarstream.sources.pcm import PcmBlock


def stage_named_for(stages: Iterable[Stage], role: Role) -> str:
    """The name of the stage that plays ``role`` (the figures are reported by stage name, and names differ between families)."""
    found = [s.name for s in stages if s.role == role]
    if len(found) != 1:
        raise ValueError(f"the pipeline has {len(found)} stages with role {role!r}, not one: {found}")
    return found[0]


def measure(
    pipeline: Pipeline,
    reference: np.ndarray,
    audio: Iterable[PcmBlock],
    *,
    encode_to: Path | None = None,
    keep_frames: bool = False,
) -> dict[str, Any]:
    """Run once; with ``encode_to`` the frames are encoded to a fragmented MP4 there, as ``render --fragmented`` does
    (fragmented: a plain MP4 keeps its growing index in memory until it is closed).

    Returns the report (summary and ``chunks``); with ``keep_frames`` also the
    frames, for equality checks on short runs.
    """
    recorder = ReportRecorder(lambda: peak_device_bytes(pipeline.device), late_fields={"stage_switches": pipeline.runtime.switch_summary})
    frames: list[np.ndarray] = []
    height, width = reference.shape[:2]
    try:
        stream = pipeline.stream(audio, reference, observers=[recorder])
        if encode_to is None:
            for media in stream:
                if keep_frames:
                    frames.append(media.frames)
        else:
            settings = EncoderSettings(width=width, height=height, fps=pipeline.fps)
            with Publisher(settings, [Mp4FileSink(encode_to, fragmented=True)]) as publisher:
                for media in stream:
                    publisher.submit(media)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "report.json"
            recorder.write(path)
            report = json.loads(path.read_text())
    finally:
        recorder.close()
    if keep_frames:
        report["frames_array"] = np.concatenate(frames) if frames else np.zeros((0, height, width, 3), np.uint8)
    if pipeline.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(pipeline.device)
    return report
