"""The in-process engine: a family's pipeline in this process, driven like a server's live session.

It takes what ``avatarstream.render`` takes (a family's name with its weights and options, or a family already loaded,
a reference image), loads and checks everything when it is made, so a bad argument is an error before an agent's
pipeline starts, and then runs one live stream per ``start``: the same live source as ``avatarstream serve`` (speech
when queued, silence otherwise, paced to the wall clock one chunk ahead), so idle frames, interruptions and pacing
behave as a server's session does.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from avatarstream.api import open_model
from avatarstream.errors import InputError
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.base import Family
from avatarstream.families.options import FamilyOptions
from avatarstream.families.registry import DEFAULT_MODEL, Upscale
from avatarstream.input_warnings import Warnings
from avatarstream.integrations.engine import AUDIO_RATE, AvatarFrame
from avatarstream.runtime.devices import resolve_device
from avatarstream.serve.audio_input import PcmSegment
from avatarstream.serve.live_audio import LiveAudio

MAX_QUEUED_S = 120.0  # speech an agent may queue ahead (a TTS answers faster than real time); 23 MB of float32


def _print_warning(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr)


class LocalEngine:
    """A model in this process; see the module's docstring. ``model`` and the arguments after it as ``avatarstream.render``."""

    def __init__(
        self,
        model: str | Family = DEFAULT_MODEL,
        *,
        weights: str | os.PathLike[str] | None = None,
        reference: str | os.PathLike[str] | None = None,
        model_options: FamilyOptions | Mapping[str, Any] | None = None,
        upscale: str | None = None,
        upscale_weights: str | os.PathLike[str] | None = None,
        upscale_options: FamilyOptions | Mapping[str, Any] | None = None,
        device: str | torch.device = "auto",
        prompt: str = "",
        seed: int = 0,
        max_queued_s: float = MAX_QUEUED_S,
    ) -> None:
        if seed < 0:
            raise InputError(f"seed must be 0 or more, got {seed}")
        if reference is not None and not Path(reference).is_file():
            raise InputError(f"reference image {reference} not found; give a PNG or JPEG file, or None for the model's default avatar")
        run_device = resolve_device(str(device))
        self.warnings = Warnings(on_new=_print_warning)
        upscaler = Upscale(upscale, upscale_weights, upscale_options)
        family, self.name, options = open_model(model, weights, model_options, run_device, self.warnings, upscaler)
        self.pipeline = build_pipeline(family, run_device, options, overlap=run_device.type == "cuda")
        self.pipeline.prepare()
        if self.pipeline.output_sample_rate != AUDIO_RATE:
            raise InputError(f"model {self.name!r} makes audio at {self.pipeline.output_sample_rate} Hz; the agent integrations take {AUDIO_RATE} Hz")
        self._image = family.reference(Path(reference) if reference is not None else None, options)
        self._fps = family.fps
        assert self.pipeline.frame_size is not None, "a family's pipeline knows its size"
        self._size = self.pipeline.frame_size  # the reference's size, or an upscaler's
        self._prompt, self._seed, self._max_queued_s = prompt, seed, max_queued_s
        self._live: LiveAudio | None = None
        self._frames: AsyncGenerator[AvatarFrame, None] | None = None

    @property
    def fps(self) -> int:
        return self._fps

    @property
    def frame_size(self) -> tuple[int, int]:
        return self._size

    async def start(self) -> None:
        if self._live is not None:
            raise RuntimeError("this engine's stream is already open; aclose() it first")
        self._live = LiveAudio(fps=self._fps, lookahead_s=self.pipeline.chunk_seconds, max_queued_s=self._max_queued_s)

    def _opened(self) -> LiveAudio:
        if self._live is None:
            raise RuntimeError("start() the engine first")
        return self._live

    async def push(self, samples: np.ndarray) -> None:
        live = self._opened()
        await live.wait_for_room()
        live.push(PcmSegment(np.ascontiguousarray(samples, dtype=np.float32)))

    async def interrupt(self) -> int:
        return self._opened().interrupt().idle_from_frame

    async def end(self) -> float:
        return self._opened().end()

    def frames(self) -> AsyncIterator[AvatarFrame]:
        if self._frames is None:
            self._frames = self._frames_of(self._opened())
        return self._frames

    async def _frames_of(self, live: LiveAudio) -> AsyncGenerator[AvatarFrame, None]:
        per_frame = AUDIO_RATE // self._fps
        stream = self.pipeline.astream(live, self._image, self._prompt, seed=self._seed)
        async with contextlib.aclosing(stream) as media:
            async for chunk in media:
                mono = chunk.audio.mean(axis=0, dtype=np.float32)
                for i in range(chunk.num_frames):
                    index = chunk.first_frame + i
                    yield AvatarFrame(index, chunk.frames[i], mono[i * per_frame : (i + 1) * per_frame], live.speech_fraction(index, index + 1))

    async def aclose(self) -> None:
        """End the stream: its audio ends, so the loop's thread stops within one chunk."""
        if self._live is not None:
            self._live.close()
        if isinstance(self._frames, types.AsyncGeneratorType) and not self._frames.ag_running:  # a running one (a reader waits on it) ends by itself
            await self._frames.aclose()
        self._live = self._frames = None
