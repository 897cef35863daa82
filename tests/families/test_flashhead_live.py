"""flashhead live (tiny Pro checkpoint, CPU): a session through the real server, and the Pipecat service in this process and
against a served session: frames before speech, speech frames after it, every queued word spoken after the end."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import numpy as np
import websockets
from pipecat.frames.frames import EndFrame, Frame, OutputImageRawFrame, TTSAudioRawFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.workers.runner import WorkerRunner

from avatarstream.benchmarks.local_server import ServerProcess
from avatarstream.integrations.pipecat import AvatarstreamVideoService
from serve.serve_harness import Events, running_server, send_paced, speech, ws_url

#: 17-frame chunks (12 new) and a 2 s audio buffer: a live session starts quickly on a CPU.
OPTIONS = {"size": [64, 64], "chunk_frames": 17, "audio_buffer_s": 2}
FLAGS = ["--size", "64x64", "--chunk-frames", "17", "--audio-buffer", "2"]
TOKEN = "agent-test-token-0123456789"
SPEECH_S, TTS_RATE = 2.0, 24000


def test_a_live_session_streams_speech_frames(tmp_path: Path, tiny_flashhead: Path) -> None:
    with running_server(tmp_path, model="flashhead", weights=tiny_flashhead, model_options=OPTIONS) as base:
        asyncio.run(_session(base))


async def _session(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        created = await client.post("/sessions", data={"identity": "default", "outputs": '{"file": true}'})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        async with websockets.connect(ws_url(base, sid)) as ws:
            events = Events(ws)
            await events.wait_for(lambda e: e["type"] == "frames", timeout=120)  # idle frames before any speech
            await send_paced(ws, speech(2.0), piece_s=0.1)
            await events.wait_for(lambda e: e["type"] == "frames" and e["speech"] > 0, timeout=120)
            stats = (await client.get(f"/sessions/{sid}")).json()["stats"]
            print(f"\nflashhead live session (tiny Pro, CPU): ttff {stats['ttff_s']:.3f} s, {stats['fps']:.1f} fps, underruns {stats['underruns']}")
            assert stats["ttff_s"] is not None and stats["ttff_s"] > 0
            await events.wait_for(lambda _: sum(e["count"] for e in events.frames() if e["speech"] > 0) >= 25, timeout=120)  # a second of speech
            events.task.cancel()
        closed = await client.delete(f"/sessions/{sid}")
        assert closed.status_code == 200 and closed.json()["state"] == "closed"


class Spoken(FrameProcessor):
    """After the avatar service: the seconds of speech it pushed on and the video frames it made."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0
        self.images = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TTSAudioRawFrame):
            samples = np.frombuffer(frame.audio, "<i2")
            self.seconds += float(np.abs(samples.astype(np.float32)).mean() > 1000) * samples.size / frame.sample_rate
        elif isinstance(frame, OutputImageRawFrame):
            self.images += 1
        await self.push_frame(frame, direction)


def _answer() -> list[Frame]:
    """A TTS answer: SPEECH_S of a tone in 20 ms pieces, sent faster than real time."""
    t = np.arange(round(SPEECH_S * TTS_RATE)) / TTS_RATE
    pcm = (0.4 * 32767 * np.sin(2 * np.pi * 220 * t)).astype("<i2").tobytes()
    piece = TTS_RATE // 50 * 2
    return [TTSAudioRawFrame(pcm[i : i + piece], TTS_RATE, 1) for i in range(0, len(pcm), piece)]


def _converse(service: AvatarstreamVideoService) -> Spoken:
    out = Spoken()

    async def conversation() -> None:
        task = PipelineWorker(Pipeline([service, out]), params=PipelineParams(), enable_rtvi=False)
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(task)
        running = asyncio.create_task(runner.run())
        await task.queue_frames(_answer())
        await task.queue_frame(EndFrame())  # at once: the answer has not played yet
        await asyncio.wait_for(running, SPEECH_S + 90)

    asyncio.run(conversation())
    print(f"\nflashhead through Pipecat: {out.seconds:.2f} s of speech, {out.images} frames")
    assert out.seconds >= SPEECH_S - 2 / 25, f"{out.seconds:.2f} s of the {SPEECH_S} s answer played before the end"
    assert out.images >= SPEECH_S * 25 - 2
    return out


def test_the_pipecat_service_renders_flashhead_in_process(tiny_flashhead: Path) -> None:
    _converse(AvatarstreamVideoService(model="flashhead", weights=tiny_flashhead, model_options=OPTIONS, device="cpu"))


def test_the_pipecat_service_speaks_through_a_served_flashhead_session(tmp_path: Path, tiny_flashhead: Path) -> None:
    options = ["--model", "flashhead", "--weights", str(tiny_flashhead), *FLAGS, "--threads", "1", "--work-dir", str(tmp_path / "work")]
    with ServerProcess(options, TOKEN, tmp_path / "serve.log") as server:
        _converse(AvatarstreamVideoService(server_url=server.url, token=TOKEN))
