"""Lip sync through the Pipecat service, measured from the media alone: words with known onsets (espeak-ng) go in as
TTS audio; what the service pushes out is read back independently of anything it reports: each word's onset is found in
the pushed audio, and the demo avatar's mouth opening in the pushed images (the fixed lip reader of the evaluation).
The mouth must open within a bound of each onset, counted in frames of the stream, not in wall-clock time."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from pipecat.frames.frames import EndFrame, Frame, OutputAudioRawFrame, OutputImageRawFrame, TTSAudioRawFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.workers.runner import WorkerRunner

from avatarstream.avatars.speech import SAMPLE_RATE, Voice, espeak_available, synthesize
from avatarstream.evaluation.lipreader import mouth_openness
from avatarstream.integrations.pipecat import AvatarstreamVideoService

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng makes the words (scripts/system-deps.sh installs it)")

WORDS = (("hello", 0.8), ("avatar", 2.4), ("banana", 4.0))  # (word, onset in seconds from the answer's start)
ANSWER_S = 5.6
OPEN_PX = 3.0  # the lip reader's opening (pixels) that counts as open; closed reads below 1
MAX_DELAY_FRAMES = 4  # the mouth opens at most this many frames (160 ms at 25 fps) after the word's sound starts


def _answer() -> np.ndarray:
    """The words at their onsets in silence, as int16 at SAMPLE_RATE (each word's leading silence trimmed)."""
    clip = np.zeros(round(ANSWER_S * SAMPLE_RATE), np.float32)
    for word, onset in WORDS:
        spoken = synthesize(word, Voice("en", 160, 50, 1.0))
        spoken = spoken[np.nonzero(np.abs(spoken) > 0.02)[0][0] :]
        start = round(onset * SAMPLE_RATE)
        clip[start : start + spoken.size] = spoken[: clip.size - start]
    return (clip * 32767).astype("<i2")


class Stream(FrameProcessor):
    """After the service: each pushed image and the loudness of the audio pushed with it, in stream order."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[np.ndarray] = []
        self.loudness: list[float] = []

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, OutputImageRawFrame):
            width, height = frame.size
            self.images.append(np.frombuffer(frame.image, np.uint8).reshape(height, width, 3))
        elif isinstance(frame, (TTSAudioRawFrame, OutputAudioRawFrame)) and len(self.loudness) < len(self.images):
            self.loudness.append(float(np.abs(np.frombuffer(frame.audio, "<i2").astype(np.float32)).mean()))
        await self.push_frame(frame, direction)


def _onsets(loudness: np.ndarray, quiet: float = 200.0, gap: int = 5) -> list[int]:
    """Frames where loud audio starts after at least ``gap`` quiet frames."""
    loud = loudness > quiet
    return [i for i in range(gap, loud.size) if loud[i] and not loud[i - gap : i].any()]


def test_the_mouth_opens_with_each_word_through_the_service() -> None:
    service = AvatarstreamVideoService(model="demo", device="cpu")
    stream = Stream()
    answer = _answer()

    async def conversation() -> None:
        task = PipelineWorker(Pipeline([service, stream]), params=PipelineParams(), enable_rtvi=False)
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(task)
        running = asyncio.create_task(runner.run())
        piece = SAMPLE_RATE // 50
        await task.queue_frames([TTSAudioRawFrame(answer[i : i + piece].tobytes(), SAMPLE_RATE, 1) for i in range(0, answer.size, piece)])
        await task.queue_frame(EndFrame())  # the answer plays to its end first
        await asyncio.wait_for(running, ANSWER_S + 60)

    asyncio.run(conversation())
    fps = service.fps
    onsets = _onsets(np.array(stream.loudness))
    assert len(onsets) == len(WORDS), onsets
    assert np.abs(np.diff(onsets) - np.diff([t for _, t in WORDS]) * fps).max() <= 1  # the audio kept its timing
    opening = mouth_openness(np.stack(stream.images[: len(stream.loudness)]))
    for (word, _), onset in zip(WORDS, onsets, strict=True):
        before = opening[onset - 6 : onset - 1]
        opened = next((i for i in range(onset - 1, onset + 12) if opening[i] > OPEN_PX), None)
        print(f"{word}: sound from frame {onset}, mouth {np.round(opening[onset - 2 : onset + 6], 1)}")
        assert before.max() < OPEN_PX, f"{word}: the mouth was open before the word ({before})"
        assert opened is not None and opened - onset <= MAX_DELAY_FRAMES, f"{word}: the mouth opened {opened} for a word at {onset}"
