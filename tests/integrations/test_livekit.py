"""The LiveKit Agents avatar below the room: livekit-agents' own AvatarRunner and QueueAudioOutput drive the generator.

No LiveKit server can run here, so the runner publishes nothing: its track publication is the one step left out, and
what it would publish is recorded as it goes into LiveKit's A/V synchronizer (real ``rtc`` audio and video sources).
The agent's side says two answers through the queue output, the second interrupted; the test checks what the runner
pushed (frames at the model's rate, idle frames without audio, each answer's audio with its frames), what it reported
back to the agent (playback finished, interrupted or not, and where), and that the interruption cut the sound at once.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import numpy as np
import pytest
from agent_script import COLOURBARS_CHUNK_S, flashes, loud, pieces, tone
from livekit import rtc
from livekit.agents.voice.avatar import AvatarRunner, QueueAudioOutput

from avatarstream.integrations.livekit import AvatarstreamVideoGenerator
from avatarstream.integrations.local_engine import LocalEngine


class UnpublishedRunner(AvatarRunner):
    """The runner without a room to publish in: everything else is LiveKit's own."""

    async def _publish_track(self) -> None:
        self._video_publication = True  # type: ignore[assignment]


@dataclass
class Pushed:
    """What the runner handed to the A/V synchronizer, in order: (time, "video" | "audio", contrast | loudness, seconds)."""

    items: list[tuple[float, str, float, float]] = field(default_factory=list)

    def record(self, frame: rtc.VideoFrame | rtc.AudioFrame) -> None:
        if isinstance(frame, rtc.VideoFrame):
            image = np.frombuffer(frame.data, np.uint8).astype(np.float32)
            self.items.append((time.monotonic(), "video", float(image.std()), 0.0))
        else:
            samples = np.frombuffer(frame.data, "<i2").astype(np.float32)
            self.items.append((time.monotonic(), "audio", float(np.abs(samples).mean()), frame.duration))

    def between(self, start: float, end: float) -> list[tuple[float, str, float, float]]:
        return [item for item in self.items if start <= item[0] < end]


async def say(output: QueueAudioOutput, seconds: float, rate: int) -> None:
    """An answer from the agent's TTS, as AgentSession hands it to its audio output: 20 ms frames, then flush."""
    for piece in pieces(tone(seconds, rate), rate, 1):
        await output.capture_frame(rtc.AudioFrame(piece, rate, 1, len(piece) // 2))
    output.flush()


async def conversation() -> tuple[Pushed, dict[str, float], list, float]:
    generator = AvatarstreamVideoGenerator(LocalEngine("colourbars", device="cpu"))
    await generator.start()
    output = QueueAudioOutput(sample_rate=24000)
    runner = UnpublishedRunner(rtc.Room(), audio_recv=output, video_gen=generator, options=generator.options())
    pushed = Pushed()
    push = runner.av_sync.push

    async def recording(frame, timestamp=None):  # type: ignore[no-untyped-def]
        pushed.record(frame)
        await push(frame, timestamp)

    runner.av_sync.push = recording  # type: ignore[method-assign]
    finished: list = []
    output.on("playback_finished", finished.append)
    marks: dict[str, float] = {}
    await runner.start()
    try:
        await asyncio.sleep(1.0)
        marks["a"] = time.monotonic()
        await say(output, 0.8, 24000)
        await asyncio.wait_for(output.wait_for_playout(), 10)
        marks["a_done"] = time.monotonic()
        await asyncio.sleep(0.8)  # idle
        marks["b"] = time.monotonic()
        await say(output, 3.0, 16000)
        while not any(kind == "audio" and loud(value) for _, kind, value, _ in pushed.between(marks["b"], time.monotonic())):
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.6)
        marks["interrupt"] = time.monotonic()
        output.clear_buffer()
        await asyncio.wait_for(output.wait_for_playout(), 10)
        await asyncio.sleep(0.8)
        marks["end"] = time.monotonic()
    finally:
        await runner.aclose()
        await generator.aclose()
    return pushed, marks, finished, generator.engine.fps


def test_runner_speaks_idles_and_is_interrupted() -> None:
    pushed, marks, finished, fps = asyncio.run(conversation())
    a = pushed.between(marks["a"], marks["a_done"] + 0.3)
    ttff = next(t for t, kind, value, _ in a if kind == "audio") - marks["a"]
    tone_after = sum(s for _, kind, value, s in pushed.between(marks["interrupt"] + 0.05, marks["end"]) if kind == "audio" and loud(value))
    print(f"\nlivekit: TTFF after first TTS audio {ttff:.3f} s; the tone went on {tone_after:.3f} s after clear_buffer; playback {finished}")
    # two answers, the first played whole, the second cut short
    assert [ev.interrupted for ev in finished] == [False, True]
    assert finished[0].playback_position == pytest.approx(0.8, abs=2 / fps)
    assert 0.2 < finished[1].playback_position < 3.0
    # frames at the model's rate, idle ones included (they carry no audio: the position counts speech only)
    videos = [t for t, kind, _, _ in pushed.items if kind == "video"]
    assert len(videos) / (videos[-1] - videos[0]) == pytest.approx(fps, rel=0.15)
    idle = pushed.between(marks["a_done"] + 0.1, marks["b"])
    assert idle and all(kind == "video" and not flashes(value) for _, kind, value, _ in idle)
    # each speaking frame is followed by its audio, and the tone's flash comes with it: within one frame of its first audio
    first = next(i for i, item in enumerate(a) if item[1] == "audio")
    flash = next(i for i, item in enumerate(a) if item[1] == "video" and flashes(item[2]))
    assert a[first - 1][1] == "video" and sum(kind == "video" for _, kind, _, _ in a[min(first, flash) : max(first, flash)]) <= 1
    # the interruption cuts the sound at once (frames already generated with it are dropped, at most a chunk)
    assert tone_after == 0.0
    assert ttff < 1.0 + COLOURBARS_CHUNK_S
