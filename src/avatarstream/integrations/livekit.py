"""avatarstream as a LiveKit Agents avatar, built on livekit-agents' own avatar interfaces.

``AvatarstreamVideoGenerator`` is the ``VideoGenerator`` an ``AvatarRunner`` drives: the runner feeds it the agent's
speech from its ``AudioReceiver`` (``push_audio``, ``AudioSegmentEnd`` between answers, ``clear_buffer`` on an
interruption) and publishes what it yields through LiveKit's A/V synchronizer: every video frame at the model's rate,
each speaking frame followed by its audio (idle frames carry none, so the playback position the runner reports back to
the agent counts speech only), and ``AudioSegmentEnd`` once an answer has played.

``AvatarstreamAvatar`` is the agent's side (an ``AvatarSession``): in the agent's process (``model=``, as
``avatarstream.render`` takes it) it runs the runner there; with ``dispatcher_url=`` it asks an
``avatarstream livekit-worker`` (docs/agents.md) to join the room and streams the agent's audio to it over LiveKit's
data streams, the way LiveKit's hosted avatar plugins work.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from livekit import rtc
from livekit.agents.voice.avatar import (
    AudioSegmentEnd,
    AvatarOptions,
    AvatarRunner,
    AvatarSession,
    DataStreamAudioOutput,
    QueueAudioOutput,
    VideoGenerator,
)

from avatarstream.errors import InputError
from avatarstream.families.base import Family
from avatarstream.integrations.backends import engine_for
from avatarstream.integrations.engine import AUDIO_RATE, AvatarEngine, SpeechIn, SpeechMarks, s16_bytes

AVATAR_IDENTITY = "avatarstream-avatar"
#: How long an end waits for queued speech to play, beyond its own length.
END_GRACE_S = 5.0


class AvatarstreamVideoGenerator(VideoGenerator):
    """livekit-agents' ``VideoGenerator`` over an avatarstream engine (in this process or a server's session)."""

    def __init__(self, engine: AvatarEngine) -> None:
        self.engine = engine
        self._speech_in = SpeechIn()
        self._marks: SpeechMarks[AudioSegmentEnd] = SpeechMarks(1)
        self._ended_idle: list[AudioSegmentEnd] = []  # segments that ended with nothing left to play
        self._skip_until = 0
        self._finished = asyncio.Event()  # the engine's frames ran out (after ``finish``)

    async def start(self) -> None:
        await self.engine.start()
        self._marks = SpeechMarks(AUDIO_RATE // self.engine.fps)

    def options(self) -> AvatarOptions:
        """What the runner publishes: the engine's frames and mono audio at AUDIO_RATE (known once started)."""
        width, height = self.engine.frame_size
        return AvatarOptions(video_width=width, video_height=height, video_fps=self.engine.fps, audio_sample_rate=AUDIO_RATE, audio_channels=1)

    async def push_audio(self, frame: rtc.AudioFrame | AudioSegmentEnd) -> None:
        if isinstance(frame, AudioSegmentEnd):
            if self._marks.waiting:
                self._marks.mark(frame)
            else:
                self._ended_idle.append(frame)
            return
        samples = self._speech_in.s16(bytes(frame.data), frame.sample_rate, frame.num_channels)
        self._marks.pushed(samples.size)
        await self.engine.push(samples)

    async def clear_buffer(self) -> None:
        """An interruption: the queued speech goes, and the frames that would speak what the model already took."""
        self._skip_until = await self.engine.interrupt()
        self._marks.dropped(self._skip_until)

    def __aiter__(self) -> AsyncIterator[rtc.VideoFrame | rtc.AudioFrame | AudioSegmentEnd]:
        return self._stream()

    async def finish(self, grace_s: float = END_GRACE_S) -> None:
        """End after the last words: no more speech, and wait (at most their length and ``grace_s``) until they played."""
        remaining_s = await self.engine.end()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._finished.wait(), remaining_s + grace_s)

    async def _stream(self) -> AsyncGenerator[rtc.VideoFrame | rtc.AudioFrame | AudioSegmentEnd, None]:
        try:
            async for frame in self._frames():
                yield frame
        finally:
            self._finished.set()

    async def _frames(self) -> AsyncGenerator[rtc.VideoFrame | rtc.AudioFrame | AudioSegmentEnd, None]:
        async for avatar in self.engine.frames():
            if avatar.index < self._skip_until:
                continue
            height, width = avatar.image.shape[:2]
            yield rtc.VideoFrame(width, height, rtc.VideoBufferType.RGB24, avatar.image.tobytes())
            if avatar.speech > 0:
                yield rtc.AudioFrame(s16_bytes(avatar.audio), AUDIO_RATE, 1, avatar.audio.size)
            for end in [*self._ended_idle, *self._marks.played(avatar.index, avatar.speech)]:
                yield end
            self._ended_idle.clear()

    async def aclose(self) -> None:
        await self.engine.aclose()
        self._speech_in.close()


async def run_avatar(room: rtc.Room, receiver: Any, generator: AvatarstreamVideoGenerator) -> AvatarRunner:
    """Start the generator and an ``AvatarRunner`` that publishes it in ``room``, fed by ``receiver`` (an ``AudioReceiver``)."""
    await generator.start()
    runner = AvatarRunner(room, audio_recv=receiver, video_gen=generator, options=generator.options())
    await runner.start()
    return runner


class AvatarstreamAvatar(AvatarSession):
    """The agent's avatar: ``await AvatarstreamAvatar(...).start(agent_session, room)`` before ``agent_session.start``.

    ``dispatcher_url``: an ``avatarstream livekit-worker`` joins the room as ``avatar_identity`` and publishes the avatar
    there. Otherwise the avatar runs in the agent's process: ``model`` (and ``weights``, ``reference``, ``model_options``,
    ``device``, ``prompt``, ``seed``), or ``server_url`` and ``token`` for an ``avatarstream serve`` session.
    """

    def __init__(
        self,
        *,
        dispatcher_url: str | None = None,
        avatar_identity: str = AVATAR_IDENTITY,
        model: str | Family | None = None,
        server_url: str | None = None,
        token: str | None = None,
        **avatar: Any,
    ) -> None:
        super().__init__()
        self._identity = avatar_identity
        self._dispatcher_url = dispatcher_url
        if dispatcher_url is not None and (model is not None or server_url is not None or avatar):
            raise InputError("a worker (dispatcher_url) runs its own model: give the model to `avatarstream livekit-worker`, not here")
        self._engine = None if dispatcher_url is not None else engine_for(model, server_url, token, avatar)
        self.runner: AvatarRunner | None = None
        self._generator: AvatarstreamVideoGenerator | None = None

    @property
    def avatar_identity(self) -> str:
        return self._identity

    @property
    def provider(self) -> str:
        return "avatarstream"

    async def start(self, agent_session: Any, room: rtc.Room) -> None:
        await super().start(agent_session, room)
        if self._engine is None:
            assert self._dispatcher_url is not None
            request = {"room": room.name, "agent_identity": room.local_participant.identity, "avatar_identity": self._identity}
            await asyncio.to_thread(_post_json, self._dispatcher_url.rstrip("/") + "/launch", request)
            agent_session.output.replace_audio_tail(
                DataStreamAudioOutput(room, destination_identity=self._identity, wait_remote_track=rtc.TrackKind.KIND_VIDEO)
            )
            return
        output = QueueAudioOutput(sample_rate=AUDIO_RATE)
        self._generator = AvatarstreamVideoGenerator(self._engine)
        self.runner = await run_avatar(room, output, self._generator)
        agent_session.output.replace_audio_tail(output)  # the agent's speech goes to the avatar, which publishes it with the video

    async def aclose(self) -> None:
        """The end of the conversation: the avatar speaks what it was given (bounded), then leaves."""
        if self._generator is not None:
            await self._generator.finish()
            self._generator = None
        if self.runner is not None:
            await self.runner.aclose()
            self.runner = None
        if self._engine is not None:
            await self._engine.aclose()
        await super().aclose()


def _post_json(url: str, body: dict[str, str]) -> None:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()
