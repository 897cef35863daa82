"""The session manager: admission, lookup, idle timeout, and freeing everything a session held at once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import time
from collections import OrderedDict
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from avatarstream.input_warnings import Warnings
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.publish.publisher import Publisher
from avatarstream.serve.live_audio import LiveAudio
from avatarstream.serve.logs import event
from avatarstream.serve.outputs import FRAMES_FOLDER, FramesOnly, build_outputs
from avatarstream.serve.pipelines import Built
from avatarstream.serve.problems import Busy, NotFound
from avatarstream.serve.schemas import Outputs, SessionInfo
from avatarstream.serve.session import Engine, Mode, SavedSession, Session
from avatarstream.serve.session_ids import new_session_id
from avatarstream.serve.settings import ServeSettings
from avatarstream.serve.ws_messages import ClosedEvent
from avatarstream.sources.audio_file import AudioFileSource
from avatarstream.sources.pcm import PcmBlock

MAX_ENDED = 1000  # ended records kept (status + result file), oldest forgotten first
FOLDER_PREFIX = "session-"  # a session's folder in the work dir


@dataclass
class Ended:
    """What is left of a session after it ended: its last status, and its video file if it made one."""

    info: SessionInfo
    folder: Path
    video: Path | None
    expires: float


class SessionManager:
    """Holds the running sessions (bounded by ``max_sessions``) and the records of ended ones.

    ``keeps_files``: ``work_dir`` is the user's (``--work-dir``): the session folders in it outlive the server (a stop
    finalizes them and leaves them), and the reaper removes any folder older than the result TTL, this run's or an
    earlier one's. Otherwise the folder is the server's temporary one, removed at exit.
    """

    def __init__(self, settings: ServeSettings, engine: Engine, work_dir: Path, *, keeps_files: bool = False) -> None:
        self.settings = settings
        self.engine = engine
        self.work_dir = work_dir
        self.keeps_files = keeps_files
        self.active: dict[str, Session] = {}
        self.ended: OrderedDict[str, Ended] = OrderedDict()
        self._reserved = 0
        self._reaper: asyncio.Task[None] | None = None

    # -- admission --------------------------------------------------------------------------------

    def reserve(self) -> Path:
        """Take a slot (or raise Busy) and make the new session's folder; ``release`` gives the slot back."""
        if len(self.active) + self._reserved >= self.settings.max_sessions:
            self.engine.metrics.rejected.inc()
            event("session refused", reason="full", max_sessions=self.settings.max_sessions)
            raise Busy(
                f"the server is running its maximum of {self.settings.max_sessions} sessions; try again shortly",
                {"Retry-After": str(self.settings.retry_after_s)},
            )
        self._reserved += 1
        return Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=self.work_dir))

    def release(self, folder: Path) -> None:
        """Give back a slot whose session never started."""
        self._reserved -= 1
        shutil.rmtree(folder, ignore_errors=True)

    def start(
        self,
        mode: Mode,
        folder: Path,
        spec: Outputs,
        built: Built,
        reference: np.ndarray,
        prompt: str,
        seed: int,
        audio: AudioFileSource | None = None,
        *,
        resume: SavedSession | None = None,
        saving: bool = False,
        warnings: Warnings | None = None,
    ) -> Session:
        """Open outputs and start the run on ``built``'s pipeline in a reserved slot; on failure the slot, the folder and
        ``built`` (acquired from the engine's pipelines) are freed.

        ``resume`` carries a saved live session on; ``saving`` keeps its resumable state after every chunk (a fleet's replica).
        ``warnings``: those found while reading its inputs (logged with the session's first line, and in its JSON)."""
        try:
            outputs = build_outputs(spec, folder, live=mode == "live", ice_servers=self.settings.ice_servers)
            try:
                publisher: Publisher | FramesOnly = (
                    Publisher(built.encoder, outputs.sinks, frame_sinks=outputs.frame_sinks) if outputs.sinks or outputs.frame_sinks else FramesOnly()
                )
            except BaseException:
                if outputs.webrtc is not None:
                    outputs.webrtc.close()
                raise
        except BaseException:
            if audio is not None:
                audio.close()
            self.engine.pipelines.release(built)
            self.release(folder)
            raise
        self._reserved -= 1
        sid = new_session_id()
        source = self._audio(mode, audio, built.pipeline)
        if resume is not None and isinstance(source, LiveAudio):
            source.resume_at(resume.state.audio.input_samples, resume.speech_done)
        session = Session(
            sid, mode, self.engine, built, folder, spec, outputs, publisher, source, reference, prompt, seed, resume=resume, saving=saving, warnings=warnings
        )
        self.active[sid] = session
        session.task = asyncio.get_running_loop().create_task(self._run(session))
        self.engine.metrics.started.labels(mode).inc()
        self.engine.metrics.sessions.labels(mode).inc()
        found = session.warnings.list()
        event(
            "session opened", logging.WARNING if found else logging.INFO, session=session.log_id, mode=mode,
            outputs=spec.model_dump(exclude_none=True, exclude={"rtmp", "kvs"}), warnings=found,
        )  # fmt: skip
        return session

    def _audio(self, mode: Mode, audio: AudioFileSource | None, pipeline: Pipeline) -> AsyncIterable[PcmBlock]:
        if mode == "batch":
            assert audio is not None
            return _file_blocks(audio)
        fps = pipeline.fps
        lookahead = self.settings.lookahead_s or pipeline.chunk_seconds
        return LiveAudio(fps=fps, lookahead_s=lookahead, max_queued_s=self.settings.max_queued_audio_s, on_underrun=self.engine.metrics.underruns.inc)

    # -- lookup -----------------------------------------------------------------------------------

    def get(self, sid: str, mode: Mode) -> Session:
        """A running session of this mode; anything else is 'not found' (ids of one kind open nothing else)."""
        session = self.active.get(sid)
        if session is None or session.mode != mode:
            raise NotFound(_gone(mode))
        session.last_active = time.monotonic()
        return session

    def info(self, sid: str, mode: Mode) -> SessionInfo:
        ended = self.ended.get(sid)
        if ended is not None and ended.info.mode == mode:
            return ended.info
        return self.get(sid, mode).info()

    def frame(self, sid: str, name: str) -> Path | None:
        """A PNG frame of a finished batch job that asked for frames (None while it runs, or for a frame it did not make)."""
        ended = self.ended.get(sid)
        if ended is None or ended.info.mode != "batch" or not ended.info.outputs.frames:
            return None
        path = ended.folder / FRAMES_FOLDER / name
        return path if path.is_file() else None

    def video(self, sid: str, mode: Mode) -> Path | None:
        """The finished MP4 of an ended session (None while it runs or if it made none)."""
        ended = self.ended.get(sid)
        if ended is not None and ended.info.mode == mode:
            return ended.video
        self.get(sid, mode)
        return None

    @property
    def queued_audio_s(self) -> float:
        return sum(s.live.queued_s for s in self.active.values() if s.live is not None)

    # -- ending -----------------------------------------------------------------------------------

    async def close(self, sid: str, mode: Mode) -> SessionInfo:
        """Stop a running session (its video stays until the TTL); forget an ended one and its files."""
        ended = self.ended.get(sid)
        if ended is not None and ended.info.mode == mode:
            self._forget(sid)
            return ended.info
        session = self.get(sid, mode)
        session.stop()
        assert session.task is not None
        await asyncio.wait([session.task])
        if mode == "batch":
            self._forget(sid)
        return self.info(sid, mode) if sid in self.ended else session.info()

    async def close_if_running(self, sid: str) -> None:
        """Close a live session unless it already ended (a client, the reaper and shutdown may race)."""
        if sid in self.active:
            with contextlib.suppress(NotFound):
                await self.close(sid, "live")

    async def _run(self, session: Session) -> None:
        try:
            await session.run()
        finally:
            await self._finish(session)
            session.task = None  # the finished task's traceback frames refer to the session: no cycle to wait for the GC

    async def _finish(self, session: Session) -> None:
        """Free everything the run held; keep only its status and finished video."""
        loop = asyncio.get_running_loop()
        try:
            reports = await loop.run_in_executor(self.engine.executor, session.close_outputs)
        except Exception as err:  # noqa: BLE001 - an output that fails to finalize is reported, not raised
            reports = []
            session.error = session.error or f"an output could not be finalized: {err}"
        session.fail_on_outputs(reports)
        del self.active[session.id]
        self.engine.pipelines.release(session.built)
        session.built.pipeline.runtime.ops.release_host_memory()  # the session's buffers, freed just now, leave the server's RSS (CPU)
        if session.state == "running":  # only now: a session that reads done or closed holds nothing any more
            session.state = "done" if session.completed else "closed"
        self.engine.metrics.sessions.labels(session.mode).dec()
        session.broadcast(ClosedEvent(state=session.state))
        video = session.outputs.video if session.state in ("done", "closed") and session.outputs.video is not None else None
        if video is None:
            shutil.rmtree(session.folder, ignore_errors=True)
        elif session.outputs.hls_dir is not None:
            shutil.rmtree(session.outputs.hls_dir, ignore_errors=True)
        self.ended[session.id] = Ended(session.info(), session.folder, video, time.monotonic() + self.settings.result_ttl_s)
        while len(self.ended) > MAX_ENDED:
            self._forget(next(iter(self.ended)))
        event(
            "session ended",
            session=session.log_id,
            mode=session.mode,
            state=session.state,
            frames=session.frames,
            ttff_s=session.ttff_s,
            underruns=session.live.underruns if session.live is not None else 0,
            sinks=[{"name": r.name.split(":")[0], "delivered": r.packets_delivered, "dropped": r.packets_dropped, "errors": r.errors} for r in reports],
        )

    def _forget(self, sid: str) -> None:
        ended = self.ended.pop(sid, None)
        if ended is not None:
            shutil.rmtree(ended.folder, ignore_errors=True)

    # -- housekeeping -----------------------------------------------------------------------------

    def start_reaper(self) -> None:
        self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def _reap_forever(self) -> None:
        period = min(1.0, self.settings.idle_timeout_s / 4)
        while True:
            await asyncio.sleep(period)
            try:
                await self.reap()
            except Exception:
                logging.getLogger(__name__).exception("reaping sessions failed")

    async def reap(self) -> None:
        """Close live sessions nobody has touched for the idle timeout; forget expired records."""
        now = time.monotonic()
        for session in list(self.active.values()):
            idle = session.sockets == session.watchers == 0 and now - session.last_active > self.settings.idle_timeout_s
            if session.mode == "live" and idle and not session.ending:  # an ending session closes on its own
                event("session idle", session=session.log_id, idle_timeout_s=self.settings.idle_timeout_s)
                await self.close_if_running(session.id)
        for sid in [sid for sid, e in self.ended.items() if e.expires < now]:
            self._forget(sid)
        if self.keeps_files:
            self._remove_aged_folders()

    def _remove_aged_folders(self) -> None:
        """Session folders in the user's work dir that no session here holds and that are older than the result TTL (an
        earlier run's, say): removed, as this run's own are once their TTL passes."""
        held = {s.folder for s in self.active.values()} | {e.folder for e in self.ended.values()}
        oldest = time.time() - self.settings.result_ttl_s
        for folder in self.work_dir.glob(f"{FOLDER_PREFIX}*"):
            with contextlib.suppress(OSError):  # gone already, or not ours to read
                if folder.is_dir() and folder not in held and _last_written(folder) < oldest:
                    shutil.rmtree(folder, ignore_errors=True)

    async def shutdown(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        await asyncio.gather(*(self.close(sid, s.mode) for sid, s in list(self.active.items())), return_exceptions=True)
        if not self.keeps_files:  # a user's work dir keeps its finalized sessions; the temporary one goes at exit anyway
            for sid in list(self.ended):
                self._forget(sid)


async def _file_blocks(source: AudioFileSource) -> AsyncIterator[PcmBlock]:
    """A file as an async source for a batch job (decoding a codec frame takes microseconds)."""
    try:
        for block in source:
            yield block
    finally:
        source.close()


def _last_written(folder: Path) -> float:
    """When the folder or a file in it last changed (a video grows long after its folder was made)."""
    return max(path.stat().st_mtime for path in (folder, *folder.iterdir()))


def _gone(mode: Mode) -> str:
    kind = "session" if mode == "live" else "job"
    return f"no such {kind}; it may have ended, timed out or never existed"
