"""AvatarstreamVideoService in a real Pipecat pipeline on its SmallWebRTC transport, watched by an aiortc viewer on loopback.

One conversation per back-end: an utterance, idle, a long utterance interrupted, a last utterance. The viewer checks
the frame rate, hears each tone when it sees its flash, sees idle frames in between, and hears the interrupted one stop
within a chunk; the service reports time to first frame through Pipecat's metrics.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from agent_script import COLOURBARS_CHUNK_S, COLOURBARS_FPS, COLOURBARS_SIZE, Heard, flashes, heard, loud, pieces, rate, tone
from pipecat.frames.frames import (
    EndFrame,
    Frame,
    InterruptionFrame,
    MetricsFrame,
    OutputAudioRawFrame,
    OutputImageRawFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
)
from pipecat.metrics.metrics import TTFBMetricsData
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.transports.base_transport import TransportParams
from pipecat.transports.smallwebrtc.connection import SmallWebRTCConnection
from pipecat.transports.smallwebrtc.transport import SmallWebRTCTransport
from pipecat.workers.runner import WorkerRunner

from avatarstream.benchmarks.local_server import ServerProcess
from avatarstream.errors import InputError
from avatarstream.integrations.pipecat import AvatarstreamVideoService
from webrtc_watch import Viewer, contrast

TOKEN = "agent-test-token-0123456789"
DEMO_TINY_OPTIONS = {"chunk_frames": 6, "interp_frames": 2}  # as the server tests run it


class Played(FrameProcessor):
    """After the transport's output, which passes on each image once shown and each audio frame once played: what played,
    in order (images with their contrast, audio with its loudness and length), and the metrics."""

    def __init__(self, size: tuple[int, int]) -> None:
        super().__init__()
        self.size = size
        self.media: list[tuple[float, str, float, float]] = []  # (time, "image" | "audio", contrast | loudness, seconds)
        self.ttfb: list[float] = []

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, OutputImageRawFrame):
            image = np.frombuffer(frame.image, np.uint8).astype(np.float32)
            self.media.append((time.monotonic(), "image", float(image.std()), 0.0))
        elif isinstance(frame, OutputAudioRawFrame):
            samples = np.frombuffer(frame.audio, "<i2").astype(np.float32)
            self.media.append((time.monotonic(), "audio", float(np.abs(samples).mean()), samples.size / frame.num_channels / frame.sample_rate))
        elif isinstance(frame, TTSStoppedFrame):
            self.media.append((time.monotonic(), "stopped", 0.0, 0.0))
        elif isinstance(frame, MetricsFrame):
            self.ttfb += [d.value for d in frame.data if isinstance(d, TTFBMetricsData) and d.processor.startswith("AvatarstreamVideoService")]
        await self.push_frame(frame, direction)

    def between(self, start: float, end: float) -> list[tuple[float, str, float, float]]:
        return [m for m in self.media if start <= m[0] < end]

    def frames_per_audio_second(self, start: float, end: float) -> float:
        played = self.between(start, end)
        return sum(kind == "image" for _, kind, _, _ in played) / sum(seconds for _, kind, _, seconds in played if kind == "audio")

    def flash_to_tone(self, start: float, end: float) -> int:
        """Frames (images) from the first flash to the first loud audio that played: 0 when the flash shows as its tone starts."""
        played = self.between(start, end)
        flash = next(i for i, (_, kind, value, _) in enumerate(played) if kind == "image" and flashes(value))
        sound = next(i for i, (_, kind, value, _) in enumerate(played) if kind == "audio" and loud(value))
        return sum(kind == "image" for _, kind, _, _ in played[min(flash, sound) + 1 : max(flash, sound)]) * (1 if sound > flash else -1)

    def first_loud_after(self, start: float) -> float:
        """When the transport played the first loud audio after ``start``."""
        return next(t for t, kind, value, _ in self.media if t >= start and kind == "audio" and loud(value))

    def speech_between(self, start: float, end: float) -> float:
        """Seconds of loud audio that played in [start, end) (media time, whatever the machine's load)."""
        return sum(seconds for _, kind, value, seconds in self.between(start, end) if kind == "audio" and loud(value))


@dataclass
class Conversation:
    viewer: Viewer
    played: Played
    ttff_s: list[float]
    marks: dict[str, float] = field(default_factory=dict)

    def utterance(self, after: str, before: str, *, flash: bool = True) -> Heard:
        return heard(self.viewer.video, self.viewer.audio, self.marks[after], self.marks[before], flash=flash)


def utterance(seconds: float, rate_hz: int, channels: int) -> list[Frame]:
    """What a TTS sends for one answer: started, its audio in 20 ms pieces (faster than real time), stopped."""
    audio = [TTSAudioRawFrame(piece, rate_hz, channels) for piece in pieces(tone(seconds, rate_hz, channels), rate_hz, channels)]
    return [TTSStartedFrame(), *audio, TTSStoppedFrame()]


async def say(task: PipelineWorker, talk: Conversation, mark: str, frames: list[Frame]) -> None:
    talk.marks[mark] = time.monotonic()
    await task.queue_frames(frames)


async def converse(service: AvatarstreamVideoService, size: tuple[int, int], fps: int) -> Conversation:
    viewer = Viewer(("audio", "video"))  # Pipecat's peer takes the audio section first
    connection = SmallWebRTCConnection()
    await connection.initialize(**await viewer.offer())
    answer = connection.get_answer()
    await viewer.answer({"sdp": answer["sdp"], "type": answer["type"]})
    params = TransportParams(
        audio_out_enabled=True, video_out_enabled=True, video_out_is_live=False, video_out_width=size[0], video_out_height=size[1], video_out_framerate=fps
    )
    transport = SmallWebRTCTransport(connection, params)
    played = Played(size)
    task = PipelineWorker(
        Pipeline([transport.input(), service, transport.output(), played]),
        params=PipelineParams(enable_metrics=True, send_initial_empty_metrics=False, audio_out_sample_rate=48000),
        enable_rtvi=False,
    )
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(task)
    running = asyncio.create_task(runner.run())
    talk = Conversation(viewer, played, service.ttff_s)
    viewer.record(contrast)
    try:
        talk.marks["first_frame"] = await viewer.wait_for("video", lambda v: True)
        await asyncio.sleep(0.5)
        await say(task, talk, "a", utterance(0.8, 24000, 1))
        await viewer.wait_for("audio", loud, after=talk.marks["a"])
        await viewer.wait_for_quiet("audio", loud, talk.marks["a"], quiet_s=1.2)  # the tone, then idle
        await say(task, talk, "b", utterance(4.0, 16000, 2))
        await viewer.wait_for("audio", loud, after=talk.marks["b"])
        await asyncio.sleep(0.8)
        await say(task, talk, "interrupt", [InterruptionFrame()])
        await asyncio.sleep(1.5)
        await say(task, talk, "c", utterance(0.4, 48000, 1))
        await viewer.wait_for("audio", loud, after=talk.marks["c"])
        await asyncio.sleep(0.8)
        talk.marks["end"] = time.monotonic()
        await task.queue_frame(EndFrame())
        await asyncio.wait_for(running, 20)
    finally:
        if not running.done():
            await task.cancel()
        await viewer.close()
        await connection.disconnect()
    return talk


def check_conversation(talk: Conversation, fps: int, chunk_s: float, label: str) -> None:
    """What any model does: frames at its rate, idle frames between answers, the interruption, the order of frames, TTFF."""
    video, audio, marks, played = talk.viewer.video, talk.viewer.audio, talk.marks, talk.played
    a, b = talk.utterance("a", "b", flash=False), talk.utterance("b", "c", flash=False)
    talk.utterance("c", "end", flash=False)  # the answer after the interruption is heard
    cut_after = played.speech_between(marks["interrupt"] + 0.1, marks["c"])  # what was playing when the interrupt came is out ~0.1 s later
    print(
        f"\n{label}: TTFF after first TTS audio {', '.join(f'{s:.3f}' for s in talk.ttff_s)} s; "
        f"received {rate(video, marks['first_frame'] + 1, marks['end']):.1f} fps, {played.frames_per_audio_second(marks['a'], marks['end']):.2f} frames per second of audio; "
        f"{cut_after:.3f} s of the tone after the interrupt"
    )
    # frames at the model's rate: one per 1/fps of the audio played, and the viewer gets them at about that rate
    assert played.frames_per_audio_second(marks["a"], marks["end"]) == pytest.approx(fps, rel=0.03)
    assert 0.7 * fps <= rate(video, marks["first_frame"] + 1, marks["end"]) <= 1.2 * fps
    # idle between utterances: frames keep coming, silent
    idle_start, idle_end = a.last_heard + 0.3, marks["b"]
    assert rate(video, idle_start, idle_end) >= 0.6 * fps and not any(map(loud, audio.values(idle_start, idle_end)))
    # the interruption cuts the sound at once (what the transport was playing) and the picture within a chunk; the next answer plays cleanly
    assert cut_after <= 2 / fps, f"the tone went on for {cut_after:.3f} s after the interrupt"
    assert video.count(marks["interrupt"], marks["interrupt"] + chunk_s + 0.3) > 0
    assert b.last_heard - b.heard < 3.0  # of a 4 s answer
    # what follows an answer in the pipeline (its TTSStoppedFrame) reaches the transport once the answer has played
    first_answer = played.between(marks["a"], marks["b"])
    stopped = next(i for i, item in enumerate(first_answer) if item[1] == "stopped")
    last_loud = max(i for i, item in enumerate(first_answer) if item[1] == "audio" and loud(item[2]))
    assert 0 < stopped - last_loud <= 4  # right after it: the answer's last frames, not before them
    # each utterance's time to first frame went out as Pipecat's TTFB metric, and it is no later than what the transport's
    # output saw on its own: the utterance queued -> its first loud audio there (the service cannot see the transport's delay)
    assert len(talk.ttff_s) == 3 and played.ttfb == pytest.approx(talk.ttff_s, abs=0.05)
    seen = [played.first_loud_after(marks[mark]) - marks[mark] for mark in ("a", "b", "c")]
    assert all(0 < reported <= measured + 0.05 for reported, measured in zip(talk.ttff_s, seen, strict=True)), (talk.ttff_s, seen)


def check_lip_sync(talk: Conversation, label: str) -> None:
    """With colourbars, whose frames flash with the tone: each tone shows within a frame of its sound starting, counted in
    the media the transport played (its images and audio in order), not in arrival times; the viewer's offset is shown."""
    video, marks, played = talk.viewer.video, talk.marks, talk.played
    answers = [talk.utterance("a", "b"), talk.utterance("b", "c"), talk.utterance("c", "end")]
    spans = [(marks["a"], marks["b"]), (marks["b"], marks["interrupt"]), (marks["c"], marks["end"])]
    print(
        f"{label}: A/V offset at the viewer (sound after picture) {' / '.join(f'{a.offset_s * 1000:+.0f}' for a in answers)} ms, "
        f"at the transport {[played.flash_to_tone(*span) for span in spans]} frames"
    )
    for span in spans:  # judged on media positions at the transport (frames and samples), not on arrival times
        assert abs(played.flash_to_tone(*span)) <= 1  # within a frame: a frame that is only partly speech may not flash yet
    assert not any(map(flashes, video.values(answers[0].last_heard + 0.3, marks["b"])))  # idle frames do not flash


def test_in_process_avatar_talks_in_sync_over_smallwebrtc() -> None:
    service = AvatarstreamVideoService(model="colourbars", device="cpu")
    talk = asyncio.run(converse(service, service.frame_size, service.fps))
    check_conversation(talk, service.fps, COLOURBARS_CHUNK_S, "in-process colourbars")
    check_lip_sync(talk, "in-process colourbars")


def test_in_process_demo_tiny_speaks_idles_and_stops() -> None:
    """demo-tiny (random weights: noise that shows no flash) through the same conversation, lip sync aside."""
    service = AvatarstreamVideoService(model="demo-tiny", device="cpu", model_options=DEMO_TINY_OPTIONS)
    talk = asyncio.run(converse(service, service.frame_size, service.fps))
    check_conversation(talk, service.fps, DEMO_TINY_OPTIONS["chunk_frames"] / service.fps, "in-process demo-tiny")


def test_served_avatar_talks_in_sync_over_smallwebrtc(tmp_path: Path) -> None:
    """The same conversation with the avatar rendered by a real `avatarstream serve` process, frames back over its frames socket."""
    with ServerProcess(["--model", "colourbars", "--threads", "1", "--work-dir", str(tmp_path / "work")], TOKEN, tmp_path / "serve.log") as server:
        service = AvatarstreamVideoService(server_url=server.url, token=TOKEN)
        talk = asyncio.run(converse(service, COLOURBARS_SIZE, COLOURBARS_FPS))
        sessions = json.loads(urllib.request.urlopen(f"{server.url}/healthz", timeout=5).read())["sessions"]
    assert sessions == 0  # the service closed its session
    check_conversation(talk, COLOURBARS_FPS, COLOURBARS_CHUNK_S, "served colourbars")
    check_lip_sync(talk, "served colourbars")


def test_bad_arguments_fail_when_the_service_is_made(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown model 'nope'"):
        AvatarstreamVideoService(model="nope")
    with pytest.raises(InputError, match="reference image .* not found"):
        AvatarstreamVideoService(model="demo-tiny", reference=tmp_path / "missing.png")
    with pytest.raises(InputError, match="chunk-frames must be between"):
        AvatarstreamVideoService(model="demo-tiny", model_options={"chunk_frames": 0})
    with pytest.raises(InputError, match="server_url"):
        AvatarstreamVideoService(model="demo-tiny", server_url="http://127.0.0.1:1")
    with pytest.raises(InputError, match="no avatarstream server answers at http://127.0.0.1:9"):
        AvatarstreamVideoService(server_url="http://127.0.0.1:9")
    with pytest.raises(InputError, match="not an http"):
        AvatarstreamVideoService(server_url="ws://127.0.0.1:9")
    with pytest.raises(InputError, match="give one or the other"):
        AvatarstreamVideoService(model="demo-tiny", server_url="http://127.0.0.1:9")
    with pytest.raises(InputError, match="unexpected keyword argument 'weigths'"):
        AvatarstreamVideoService(model="demo-tiny", weigths="folder")
