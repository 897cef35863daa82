"""A voice agent that says goodbye wants the goodbye rendered: an engine's ``end()`` (in this process or a server's
session), Pipecat's ``EndFrame`` and the LiveKit avatar's end keep every queued word, although the speech arrives far faster than real time."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
from agent_script import loud, pieces, tone
from livekit import rtc
from pipecat.frames.frames import EndFrame, Frame, TTSAudioRawFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.workers.runner import WorkerRunner

from avatarstream.benchmarks.local_server import ServerProcess
from avatarstream.integrations.engine import AUDIO_RATE, AvatarEngine
from avatarstream.integrations.livekit import AvatarstreamVideoGenerator
from avatarstream.integrations.local_engine import LocalEngine
from avatarstream.integrations.pipecat import AvatarstreamVideoService
from avatarstream.integrations.remote_engine import RemoteEngine

TOKEN = "agent-test-token-0123456789"
SPEECH_S = 2.0


async def _spoken_after_end(engine: AvatarEngine) -> tuple[float, float]:
    """Queue SPEECH_S of speech at once, end at once, read the frames to their end: (seconds spoken, seconds end() said)."""
    await engine.start()
    try:
        await engine.push(np.frombuffer(tone(SPEECH_S, AUDIO_RATE), "<i2").astype(np.float32) / 32768)
        remaining_s = await engine.end()
        spoken = 0.0
        async with asyncio.timeout(SPEECH_S + 30):
            async for frame in engine.frames():  # ends by itself after the last queued word
                spoken += frame.speech / engine.fps
        return spoken, remaining_s
    finally:
        await engine.aclose()


def test_a_local_engine_speaks_every_queued_word_after_end() -> None:
    engine = LocalEngine("colourbars", device="cpu")
    spoken, remaining_s = asyncio.run(_spoken_after_end(engine))
    assert remaining_s >= SPEECH_S - 0.2  # nearly all of it was still queued
    assert spoken >= SPEECH_S - 2 / engine.fps, f"{spoken:.2f} s of {SPEECH_S} s spoken"


def test_a_served_session_speaks_every_queued_word_after_end(tmp_path: Path) -> None:
    with ServerProcess(["--model", "colourbars", "--threads", "1", "--work-dir", str(tmp_path / "work")], TOKEN, tmp_path / "serve.log") as server:
        engine = RemoteEngine(server.url, token=TOKEN)
        spoken, remaining_s = asyncio.run(_spoken_after_end(engine))
    assert remaining_s >= SPEECH_S - 0.2
    assert spoken >= SPEECH_S - 2 / 25, f"{spoken:.2f} s of {SPEECH_S} s spoken"


class SpeechOut(FrameProcessor):
    """After the avatar service: seconds of loud speech it pushed downstream."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TTSAudioRawFrame):
            samples = np.frombuffer(frame.audio, "<i2").astype(np.float32)
            if loud(float(np.abs(samples).mean())):
                self.seconds += samples.size / frame.num_channels / frame.sample_rate
        await self.push_frame(frame, direction)


def test_pipecat_end_frame_lets_the_last_answer_play() -> None:
    service = AvatarstreamVideoService(model="colourbars", device="cpu")
    out = SpeechOut()

    async def conversation() -> None:
        task = PipelineWorker(Pipeline([service, out]), params=PipelineParams(), enable_rtvi=False)
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(task)
        running = asyncio.create_task(runner.run())
        rate = 24000
        await task.queue_frames([TTSAudioRawFrame(piece, rate, 1) for piece in pieces(tone(SPEECH_S, rate, 1), rate, 1)])
        await task.queue_frame(EndFrame())  # at once: the answer has not played yet
        await asyncio.wait_for(running, SPEECH_S + 30)

    asyncio.run(conversation())
    assert out.seconds >= SPEECH_S - 2 / service.fps, f"{out.seconds:.2f} s of the {SPEECH_S} s answer played before the end"


def test_livekit_generator_finish_plays_the_last_answer() -> None:
    """What ``AvatarstreamAvatar.aclose`` does at the end of a conversation, with the generator read as the runner reads it."""

    async def conversation() -> tuple[float, int]:
        generator = AvatarstreamVideoGenerator(LocalEngine("colourbars", device="cpu"))
        await generator.start()
        heard = [0.0]

        async def read() -> None:  # the runner's side: every audio frame the generator yields
            async for item in generator:
                if isinstance(item, rtc.AudioFrame) and loud(float(np.abs(np.frombuffer(item.data, "<i2").astype(np.float32)).mean())):
                    heard[0] += item.samples_per_channel / item.sample_rate

        reading = asyncio.create_task(read())
        rate = 24000
        for piece in pieces(tone(SPEECH_S, rate), rate, 1):
            await generator.push_audio(rtc.AudioFrame(piece, rate, 1, len(piece) // 2))
        await generator.finish()
        await asyncio.wait_for(reading, 5)  # the frames ran out: finish() returned after the last words, not on its timeout
        await generator.aclose()
        return heard[0], generator.engine.fps

    heard, fps = asyncio.run(conversation())
    assert heard >= SPEECH_S - 2 / fps, f"{heard:.2f} s of the {SPEECH_S} s answer played before the end"
