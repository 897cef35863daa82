"""One replica of the fleet: a session slot running the single server's own app on its node.

The slot's only Ray Serve request is ``open``: it starts a session on the
replica's app and lasts until the session ends, reporting the session's
resumable state after every chunk. Because the deployment takes one request
at a time, a busy replica gets no second session, autoscaling counts busy
slots, and a replica that Serve scales away finishes its session before it
stops (the drain). Audio, control and video go to and from the replica's app
over HTTP and WebSocket, not through Serve.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

import ray
import uvicorn
from fastapi import UploadFile
from ray import serve
from starlette.datastructures import Headers

from avatarstream.serve.api_audio_ws import message_limit
from avatarstream.serve.api_sessions import SessionForm, open_session, parse_outputs
from avatarstream.serve.app import create_app
from avatarstream.serve.context import ServerContext
from avatarstream.serve.problems import NotFound
from avatarstream.serve.session import SavedSession, Session
from avatarstream.serve.settings import ServeSettings

POLL_S = 0.05  # how often the slot looks for a newer state (a chunk takes far longer)


@dataclass(frozen=True)
class OpenRequest:
    """A session as the client asked for it (kept by the ingress, so it can be asked for again elsewhere), and where to resume."""

    identity: str = "default"
    model_options: str = "{}"  # a JSON object of the model's options, checked by the ingress (and again by the replica)
    prompt: str = ""
    seed: int = 0
    outputs: str = "{}"
    reference: bytes | None = None
    reference_type: str | None = None
    resume: SavedSession | None = None
    mode: Literal["live", "batch"] = "live"  # batch: a job, rendering ``audio`` (a whole file) to MP4
    audio: bytes | None = None
    audio_type: str | None = None
    upscale: bool | None = None  # run the replica's upscaler (None: when it has one)


@dataclass(frozen=True)
class SlotReport:
    """What the slot tells the ingress: the session opened, a newer state was saved, or the session ended."""

    kind: Literal["opened", "saved", "ended"]
    info: dict[str, Any]
    replica: str
    node: str
    base_url: str
    speech_done: int
    saved: SavedSession | None = None


class SessionSlot:
    """The Ray Serve deployment class (app.py applies the options): the model, one session slot and the app that serves it."""

    async def __init__(self, settings: ServeSettings) -> None:  # type: ignore[misc]  # Ray Serve awaits an async constructor
        host = ray.util.get_node_ip_address() if settings.host == "auto" else settings.host
        app = create_app(dataclasses.replace(settings, host=host))
        self.context: ServerContext = app.state.server
        self.server = uvicorn.Server(
            uvicorn.Config(app, host=host, port=0, log_config=None, access_log=False, ws_max_size=message_limit(settings.max_upload_bytes))
        )
        self.serving = asyncio.get_running_loop().create_task(self.server.serve())
        while not self.server.started:
            if self.serving.done():
                self.serving.result()  # raises why it could not listen
                raise RuntimeError("the replica's server stopped before it started")
            await asyncio.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://{host}:{port}"
        self.replica = serve.get_replica_context().replica_id.unique_id
        self.node = ray.get_runtime_context().get_node_id()

    async def open(self, request: OpenRequest) -> AsyncIterator[SlotReport]:
        """Start the session; report it, then every newer saved state, then its end. Cancelled (the ingress went away): the
        session is closed."""
        session = await self._start(request)
        manager = self.context.manager
        try:
            yield self._report("opened", session)
            last = None
            while session.id in manager.active:
                saved = session.saved()
                if saved is not None and saved.state is not last:
                    keep_values = last is None and request.resume is None  # the init outputs travel once: the ingress keeps them
                    last = saved.state
                    yield self._report("saved", session, saved if keep_values else _without_values(saved))
                await asyncio.sleep(POLL_S)
            yield self._report("ended", session)
        finally:
            if session.id in manager.active:  # the ingress went away: nobody is left to serve the session
                await asyncio.shield(manager.close_if_running(session.id))

    async def _start(self, request: OpenRequest) -> Session:
        upload = _upload(request.reference, "reference", request.reference_type)
        audio = _upload(request.audio, "audio", request.audio_type)
        form = SessionForm(request.identity, upload, request.model_options, request.prompt, request.seed, parse_outputs(request.outputs), request.upscale)
        return await open_session(self.context, request.mode, form, audio, resume=request.resume, saving=request.mode == "live")

    def _report(self, kind: Literal["opened", "saved", "ended"], session: Session, saved: SavedSession | None = None) -> SlotReport:
        try:
            info = self.context.manager.info(session.id, session.mode).model_dump()
        except NotFound:  # a cancelled job is forgotten at once: its last figures are the session's own
            info = session.info().model_dump()
        speech_done = session.live.speech_done if session.live is not None else 0
        return SlotReport(kind, info, self.replica, self.node, self.base_url, speech_done, saved)

    async def __del__(self) -> None:
        """Serve stops the replica (after its session ended, or at shutdown): close the app's sessions and files."""
        self.server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.serving, 30)


def _upload(data: bytes | None, name: str, content_type: str | None) -> UploadFile | None:
    """Bytes the ingress received, as the upload the single server's session code reads."""
    if data is None:
        return None
    return UploadFile(io.BytesIO(data), filename=name, headers=Headers({"content-type": content_type or ""}))


def _without_values(saved: SavedSession) -> SavedSession:
    return dataclasses.replace(saved, state=dataclasses.replace(saved.state, values={}))
