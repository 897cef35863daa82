"""``AvatarstreamVideoService``: avatarstream in a Pipecat pipeline, after the TTS and before the transport's output.

It takes the TTS's audio (``TTSAudioRawFrame``, any rate and channel count) as the avatar's speech and pushes, for
every video frame at the model's frame rate, the image (``OutputImageRawFrame``) and then the audio that plays with it:
the speech as ``TTSAudioRawFrame`` where the frame speaks, silence as ``OutputAudioRawFrame`` where it is idle, so the
avatar keeps moving and the transport's "bot speaking" follows the face. The images travel in the transport's audio
queue (``sync_with_audio``), so each one shows when its audio starts: give the transport ``video_out_enabled=True``,
``video_out_is_live=False``, the service's ``frame_size`` and ``fps``. Frames that come after speech in the pipeline
(TTS text, ``TTSStoppedFrame``, ...) are held back until that speech has played, so they stay in order with the
audio. An ``InterruptionFrame`` drops the queued speech and the frames that speak what the model already took (at most
one chunk): the sound stops at once, the picture holds for at most that chunk, then the avatar is idle again.
Time to first frame (the first TTS audio of an utterance to its first speaking frame) is reported as the service's
TTFB metric.

Two back-ends, one interface: ``model=`` (a family's name, with ``weights``, ``reference``, ``model_options`` as
``avatarstream.render`` takes them, or a family already loaded, to keep a model warm across bots) renders in this
process; ``server_url=`` (with ``token``) drives a live session of ``avatarstream serve``. Bad arguments raise
``InputError`` when the service is made, before the pipeline starts.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pipecat.frames.frames import (
    CancelFrame,
    EndFrame,
    Frame,
    InterruptionFrame,
    OutputAudioRawFrame,
    OutputImageRawFrame,
    StartFrame,
    SystemFrame,
    TTSAudioRawFrame,
)
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.ai_service import AIService
from pipecat.services.settings import ServiceSettings

from avatarstream.errors import InputError
from avatarstream.families.base import Family
from avatarstream.integrations.backends import engine_for
from avatarstream.integrations.engine import AUDIO_RATE, AvatarEngine, AvatarFrame, SpeechIn, SpeechMarks, s16_bytes

#: How long a graceful end waits for queued speech to play, beyond its own length.
END_GRACE_S = 5.0


class AvatarstreamVideoService(AIService):
    """A talking avatar for a Pipecat bot; see the module's docstring."""

    def __init__(
        self,
        *,
        model: str | Family | None = None,
        server_url: str | None = None,
        token: str | None = None,
        engine: AvatarEngine | None = None,
        name: str | None = None,
        **avatar: Any,
    ) -> None:
        """``model``: render in this process (the bundled model by default); ``avatar`` takes what ``avatarstream.render``
        takes with it: ``weights``, ``reference``, ``model_options``, ``device``, ``prompt``, ``seed``. ``server_url`` with
        ``token``: a running ``avatarstream serve`` instead (``avatar``: ``reference``, ``model_options``, ``prompt``,
        ``seed``, for its session). ``engine``: any other ``AvatarEngine``. ``name``: the processor's name in Pipecat."""
        self._engine = engine if engine is not None else engine_for(model, server_url, token, avatar)
        super().__init__(settings=ServiceSettings(model=str(getattr(self._engine, "name", "avatarstream"))), name=name)
        self._speech_in = SpeechIn()
        self._marks: SpeechMarks[Frame] = SpeechMarks(1)  # counted per frame once the engine knows its frame rate (start)
        self._frames_task: asyncio.Task[None] | None = None
        self._skip_until = 0  # after an interrupt: the frames before this one speak what was interrupted, and are dropped
        self._utterance_at: float | None = None  # when the first audio of the utterance being waited for arrived
        self.ttff_s: list[float] = []  # per utterance: first TTS audio -> first speaking frame pushed

    @property
    def fps(self) -> int:
        """The model's frame rate: the transport's ``video_out_framerate`` (a server's is known once the pipeline started)."""
        return self._engine.fps

    @property
    def frame_size(self) -> tuple[int, int]:
        """(width, height): the transport's ``video_out_width`` and ``video_out_height``."""
        return self._engine.frame_size

    def can_generate_metrics(self) -> bool:
        return True

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        try:
            await self._engine.start()
        except Exception as err:  # noqa: BLE001 -- a fatal error for the pipeline, which ends the bot
            await self.push_error(f"{self}: the avatar could not start: {err}", exception=err, fatal=True)
            return
        self._marks = SpeechMarks(AUDIO_RATE // self._engine.fps)
        self._frames_task = self.create_task(self._push_frames(), name="avatarstream-frames")

    async def stop(self, frame: EndFrame) -> None:
        """A graceful end: the engine takes no more speech and its frames end once the queued speech is spoken."""
        await super().stop(frame)
        if self._frames_task is not None and not self._frames_task.done():
            remaining_s = await self._engine.end()
            await asyncio.wait([self._frames_task], timeout=remaining_s + END_GRACE_S)
        await self._close()
        for held in self._marks.take_all():  # what waited for speech that never played goes on, in order, before the end
            await self.push_frame(held)

    async def cancel(self, frame: CancelFrame) -> None:
        await super().cancel(frame)
        await self._close()

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._close()

    async def _close(self) -> None:
        if self._frames_task is not None:
            await self.cancel_task(self._frames_task)
            self._frames_task = None
        await self._engine.aclose()
        self._speech_in.close()

    # -- frames in --------------------------------------------------------------------------------

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InterruptionFrame):
            idle_from = await self._engine.interrupt()
            self._marks.dropped(idle_from)
            self._skip_until = idle_from
            self._utterance_at = None
            await self.push_frame(frame, direction)
        elif direction == FrameDirection.DOWNSTREAM and isinstance(frame, TTSAudioRawFrame):
            try:
                samples = self._speech_in.s16(frame.audio, frame.sample_rate, frame.num_channels)
            except InputError as err:
                await self.push_error(f"{self}: {err}")
                return
            if not self._marks.waiting and self._utterance_at is None:
                self._utterance_at = time.monotonic()
                await self.start_ttfb_metrics()
            self._marks.pushed(samples.size)
            await self._engine.push(samples)
        elif direction == FrameDirection.DOWNSTREAM and not isinstance(frame, (SystemFrame, StartFrame, EndFrame)) and self._marks.waiting:
            self._marks.mark(frame)  # after the speech before it
        else:
            await self.push_frame(frame, direction)

    # -- frames out -------------------------------------------------------------------------------

    async def _push_frames(self) -> None:
        try:
            async for avatar in self._engine.frames():
                await self._push_one(avatar)
        except Exception as err:  # noqa: BLE001 -- reported to the pipeline, which decides what a failed avatar means
            await self.push_error(f"{self}: the avatar stopped: {err}", exception=err)

    async def _push_one(self, avatar: AvatarFrame) -> None:
        if avatar.index < self._skip_until:
            return
        height, width = avatar.image.shape[:2]
        image = OutputImageRawFrame(avatar.image.tobytes(), (width, height), "RGB")
        image.sync_with_audio = True  # shown when the audio pushed before it has played: its own audio starts then
        await self.push_frame(image)
        kind = TTSAudioRawFrame if avatar.speech > 0 else OutputAudioRawFrame
        await self.push_frame(kind(s16_bytes(avatar.audio), AUDIO_RATE, 1))
        if avatar.speech > 0 and self._utterance_at is not None:
            self.ttff_s.append(time.monotonic() - self._utterance_at)
            self._utterance_at = None
            await self.stop_ttfb_metrics()
        for held in self._marks.played(avatar.index, avatar.speech):
            await self.push_frame(held)
