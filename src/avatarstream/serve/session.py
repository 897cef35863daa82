"""One live session or batch job: the pipeline run, its outputs, its figures, its listeners."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import functools
import hashlib
import logging
import time
import weakref
from collections.abc import AsyncIterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from avatarstream.errors import AvatarStreamError
from avatarstream.input_warnings import Warnings, audio_rate_warning
from avatarstream.pipeline.observer import ChunkDone, RunObserver
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.pipeline.resume import Resumable
from avatarstream.publish.media import MediaChunk
from avatarstream.publish.publisher import Publisher
from avatarstream.publish.sinks.hls import PLAYLIST
from avatarstream.serve.live_audio import Interruption, LiveAudio
from avatarstream.serve.logs import event
from avatarstream.serve.media_watch import MediaWatchers
from avatarstream.serve.metrics import FrameRate, ServeMetrics
from avatarstream.serve.outputs import FramesOnly, SessionOutputs
from avatarstream.serve.pipelines import Built, Pipelines
from avatarstream.serve.problems import ending
from avatarstream.serve.schemas import Outputs, SessionInfo, Stats
from avatarstream.serve.ws_messages import ErrorEvent, FramesEvent, InterruptedEvent
from avatarstream.sources.pcm import PcmBlock

Mode = Literal["live", "batch"]
EVENT_QUEUE = 64  # events buffered per listener; a slow listener loses the oldest


@dataclass(frozen=True)
class SavedSession:
    """A live session between two chunks, enough to carry it on elsewhere: the run's state and how much of the speech it is done with."""

    state: Resumable
    speech_done: int


@dataclass
class Engine:
    """What every session shares: the pipelines (stateless stages over read-only modules), metrics, threads."""

    pipelines: Pipelines
    metrics: ServeMetrics
    executor: concurrent.futures.ThreadPoolExecutor


class Session:
    """A pipeline run feeding a publisher; ``run()`` lasts until the audio ends or ``stop()`` is called."""

    def __init__(
        self,
        sid: str,
        mode: Mode,
        engine: Engine,
        built: Built,
        folder: Path,
        spec: Outputs,
        outputs: SessionOutputs,
        publisher: Publisher | FramesOnly,
        audio: AsyncIterable[PcmBlock],
        reference: np.ndarray,
        prompt: str,
        seed: int,
        *,
        resume: SavedSession | None = None,
        saving: bool = False,
        warnings: Warnings | None = None,
    ) -> None:
        self.id = sid
        self.log_id = hashlib.sha256(sid.encode()).hexdigest()[:10]  # follows a session through the logs; reveals nothing of its id
        self.mode = mode
        self.engine = engine
        self.built = built  # its pipeline (the shared one unless its model_options change how chunks are generated)
        self.folder = folder
        self.spec = spec
        self.outputs = outputs
        self.publisher = publisher
        self.audio = audio
        self.live = audio if isinstance(audio, LiveAudio) else None
        self.reference = reference
        self.prompt = prompt
        self.seed = seed
        self.state: Literal["running", "done", "closed", "failed"] = "running"
        self.completed = False  # the run reached the end of its audio
        self.error: str | None = None
        self.created = time.monotonic()
        self.last_active = self.created
        self.sockets = 0  # audio sockets: at most one (api_audio_ws.claim_socket)
        self.watchers = 0  # frames sockets (api_frames_ws), any number
        self.resume = resume
        self.saving = saving  # keep the run's resumable state after every chunk (a fleet's replica)
        self._state: Resumable | None = None
        self.frames = 0 if resume is None else resume.state.published_frames
        self.ttff_s: float | None = None
        self.first_speech_latency_s: float | None = None
        self.speaking = False
        self.chunk_latency_s: float | None = None
        self.rate = FrameRate(window_s=2.0)
        self._listeners: set[asyncio.Queue[dict[str, Any]]] = set()
        self.media = MediaWatchers()  # clients of the frames WebSocket
        self._stopping = False
        self._ran = False  # run() has returned: the manager is finishing the session (finalizing its outputs), not to be cancelled
        self._submitting: concurrent.futures.Future[None] | None = None
        self._in_submit = False
        self.task: asyncio.Task[None] | None = None
        self.warnings = warnings if warnings is not None else Warnings()  # those found so far are in the "session opened" line
        # logs what is found later; it holds the session's log id and mode, not the session: no cycle keeps an ended session alive
        self.warnings.on_new = functools.partial(_log_warning, self.log_id, self.mode)

    # -- running ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """Stream frames from the pipeline into the publisher until the audio ends or ``stop()``."""
        pipeline = self.pipeline
        try:
            observers: list[RunObserver] = [_ChunkTimer(self), *([_StateKeeper(self)] if self.saving else [])]
            resume = None if self.resume is None else self.resume.state
            stream = pipeline.astream(self.audio, self.reference, self.prompt, seed=self.seed, observers=observers, resume=resume)
            async with contextlib.aclosing(stream) as media:
                async for chunk in media:
                    self._in_submit = True
                    try:
                        self._submitting = self.engine.executor.submit(self.publisher.submit, self._own_stream(chunk))
                        await asyncio.wrap_future(self._submitting)
                    finally:
                        self._in_submit = False
                    self._published(chunk)
                    if failed := self.publisher.failed_outputs():  # a full disk, say: this session stops, the others go on
                        self._fail(f"output {failed[0]}; the session stopped")
                        break
                    if self._stopping:
                        break
            # the audio ended (a batch job's file): the manager reports "done" once the outputs are final
            self.completed = not self._stopping
        except AvatarStreamError as err:
            self._fail(str(err))
        except Exception as err:
            logging.getLogger(__name__).exception("session %s failed", self.log_id)
            self._fail(f"internal error ({type(err).__name__}); the server log has the details")
        finally:
            self._ran = True
            self.media.end()

    @property
    def pipeline(self) -> Pipeline:
        return self.built.pipeline

    def _own_stream(self, chunk: MediaChunk) -> MediaChunk:
        """The chunk as this session's encoder counts: a resumed session's outputs are new streams that start at 0, while its
        timeline (events, figures) goes on from the saved state."""
        offset = 0 if self.resume is None else self.resume.state.published_frames
        return dataclasses.replace(chunk, first_frame=chunk.first_frame - offset) if offset else chunk

    def stop(self) -> None:
        """End the run now: waiting for frames is cancelled (the loop's thread stops within one chunk);
        a chunk being handed to the publisher is finished first, so no output gets half a chunk."""
        self._stopping = True
        if self.live is not None:
            self.live.close()
        if self.task is not None and not self._in_submit and not self._ran:  # a session that ended by itself is finishing
            self.task.cancel()

    def end(self) -> float:
        """Take no more speech, speak what is queued, then end the run (its outputs are finalized as at any end). Returns
        the estimated seconds until then: the media still to play, at the pace the session has been generating."""
        assert self.live is not None
        media_s = self.live.end()
        generated_fps = self.rate.rate()
        speed = min(1.0, generated_fps / self.pipeline.fps) if generated_fps > 0 else 1.0
        remaining_s = round(media_s / speed, 3)
        event("session ending", session=self.log_id, remaining_s=remaining_s)
        return remaining_s

    @property
    def ending(self) -> bool:
        return self.live is not None and self.live.ending

    def check_takes_speech(self) -> None:
        """Refuse speech once the session is ending."""
        if self.ending:
            raise ending()

    def interrupt(self) -> Interruption:
        """Drop the queued speech of a live session and tell its listeners."""
        assert self.live is not None
        done = self.live.interrupt()
        self.engine.metrics.interrupts.inc()
        event("interrupted", session=self.log_id, **asdict(done))
        self.broadcast(InterruptedEvent(**asdict(done)))
        return done

    def check_audio_rate(self, rate: int) -> None:
        """Warn of speech sampled below the rate the model listens at (live audio is resampled before the pipeline sees it)."""
        text = audio_rate_warning(rate, self.pipeline.model_sample_rate)
        if text is not None:
            self.warnings.add(text)

    def saved(self) -> SavedSession | None:
        """The latest resumable state (None before the first chunk, or when its speech position has gone from memory)."""
        state = self._state
        if state is None or self.live is None:
            return None
        done = self.live.speech_done_at(state.audio.input_samples)
        return None if done is None else SavedSession(state, done)

    def close_outputs(self) -> list[Any]:
        """Finalize every output (blocking; run on a worker thread) once the run has ended."""
        if self._submitting is not None:
            concurrent.futures.wait([self._submitting])
        return self.publisher.close()

    def fail_on_outputs(self, reports: list[Any]) -> None:
        """After the outputs closed: a file output that did not get everything fails the session (unless it failed already)."""
        failed = [r for r in reports if r.failed]
        if failed and self.state != "failed":
            self._fail(f"output {failed[0].name}: {failed[0].summary()}")

    def _fail(self, message: str) -> None:
        self.state = "failed"
        self.error = message
        self.engine.metrics.failed.labels(self.mode).inc()
        event("session failed", logging.WARNING, session=self.log_id, mode=self.mode, error=message)
        self.broadcast(ErrorEvent(message=message))

    def _published(self, chunk: MediaChunk) -> None:
        now = time.monotonic()
        if self.ttff_s is None:
            self.ttff_s = now - self.created
            self.engine.metrics.ttff.labels(self.mode).observe(self.ttff_s)
            event("first frame", session=self.log_id, mode=self.mode, ttff_s=round(self.ttff_s, 3))
        end = chunk.first_frame + chunk.num_frames
        per_frame = [self.live.speech_fraction(i, i + 1) for i in range(chunk.first_frame, end)] if self.live is not None else [1.0] * chunk.num_frames
        speech = sum(per_frame) / max(len(per_frame), 1)
        if self.media:
            self.media.publish(chunk, per_frame)
        self.speaking = speech > 0
        if self.speaking and self.first_speech_latency_s is None and self.live is not None and self.live.first_speech_at is not None:
            self.first_speech_latency_s = now - self.live.first_speech_at
        self.frames = end
        self.rate.add(chunk.num_frames)
        self.engine.metrics.published(self.mode, chunk.num_frames)
        frames = chunk.frames
        motion = float(np.abs(frames[-1].astype(np.int16) - frames[0]).mean()) if chunk.num_frames > 1 else 0.0
        self.broadcast(
            FramesEvent(
                first_frame=chunk.first_frame, count=chunk.num_frames, speech=round(speech, 3), motion=round(motion, 3), at_s=round(now - self.created, 3)
            )
        )

    # -- listeners (the audio WebSocket hears what happens) ------------------------------------------

    def listen(self) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(EVENT_QUEUE)
        self._listeners.add(queue)
        return queue

    def unlisten(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self._listeners.discard(queue)

    def broadcast(self, event: BaseModel) -> None:
        """Queue one of the WebSocket's server events (ws_messages.py) for every listener; a full queue drops its oldest."""
        message = event.model_dump()
        for queue in self._listeners:
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(message)

    # -- reporting --------------------------------------------------------------------------------

    def info(self) -> SessionInfo:
        fps = self.pipeline.fps
        base = f"/{'sessions' if self.mode == 'live' else 'jobs'}/{self.id}"
        links = {"self": base}
        if self.mode == "live":
            links |= {
                "audio_ws": f"{base}/audio",
                "frames_ws": f"{base}/frames",
                "audio_upload": f"{base}/audio",
                "interrupt": f"{base}/interrupt",
                "end": f"{base}/end",
                "preview": f"/#session={self.id}",
            }
        if self.outputs.hls_dir is not None:
            links["hls"] = f"{base}/hls/index.m3u8"
        if self.outputs.webrtc is not None:
            links["webrtc"] = f"{base}/webrtc"
        if self.outputs.video is not None:
            links["video"] = f"{base}/video.mp4"
        if self.outputs.frame_sinks:
            links["frames"] = f"{base}/frames/000000.png"
        stats = Stats(
            frames=self.frames,
            duration_s=round(self.frames / fps, 3),
            ttff_s=_round(self.ttff_s),
            first_speech_latency_s=_round(self.first_speech_latency_s),
            fps=round(self.rate.rate(), 2),
            underruns=self.live.underruns if self.live is not None else 0,
            queued_audio_s=round(self.live.queued_s, 3) if self.live is not None else 0.0,
            speaking=self.speaking,
            chunk_latency_s=_round(self.chunk_latency_s),
            hls_ready=self.outputs.hls_dir is not None and (self.outputs.hls_dir / PLAYLIST).is_file(),
        )
        return SessionInfo(
            id=self.id, log_id=self.log_id, mode=self.mode, state="ending" if self.state == "running" and self.ending else self.state, error=self.error, outputs=self.spec, links=links, stats=stats,
            warnings=self.warnings.list(),
        )  # fmt: skip


class _ChunkTimer(RunObserver):
    """Chunk wall times into the metrics (called on the pipeline's thread)."""

    def __init__(self, session: Session) -> None:
        self._session = weakref.ref(session)  # no cycle: an ended session is freed at once, with its encoder and buffers
        self._histogram = session.engine.metrics.chunk_seconds

    def on_chunk(self, done: ChunkDone) -> None:
        seconds = done.end_s - done.start_s
        session = self._session()
        if session is not None:
            session.chunk_latency_s = seconds
        self._histogram.observe(seconds)


class _StateKeeper(RunObserver):
    """Keeps the run's latest resumable state on the session (set on the pipeline's thread, read on the event loop)."""

    wants_resumable = True

    def __init__(self, session: Session) -> None:
        self._session = weakref.ref(session)

    def on_resumable(self, state: Resumable) -> None:
        session = self._session()
        if session is not None:
            session._state = state


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _log_warning(log_id: str, mode: str, text: str) -> None:
    event("session warning", logging.WARNING, session=log_id, mode=mode, warning=text)
