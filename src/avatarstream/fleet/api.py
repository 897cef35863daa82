"""The fleet's HTTP API: the single server's session and job routes, answered by the ingress and the replica that holds each session.

Clients do not change: the same paths, forms and WebSocket protocol as
``avatarstream serve``, every one of them at the ingress. Status, DELETE,
audio and interrupts are the ingress's own (it calls the replica); the video
routes (the MP4, HLS, the WebRTC offer) are proxied to the session's replica,
whose answer (status, headers, body) is passed on as it is. Session JSON adds
``placement`` (replica, node, the replica's URL) and ``resumes``; its links to
video (HLS, WebRTC, the MP4, the preview page) point at the replica itself,
for clients that fetch video from there directly (docs/fleet.md has the table).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, FastAPI, File, Request, UploadFile
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from avatarstream.families.registry import options_class
from avatarstream.fleet import api_audio
from avatarstream.fleet.replica_link import ReplicaError
from avatarstream.fleet.schemas import FleetHealth, FleetSessionInfo
from avatarstream.fleet.sessions import Fleet
from avatarstream.fleet.slot import OpenRequest
from avatarstream.serve import openapi
from avatarstream.serve.api_sessions import ERRORS, JOB_AUDIO_HELP, UPLOAD_BODY, Offer, SessionForm, job_form, session_form
from avatarstream.serve.app import add_handlers
from avatarstream.serve.context import form_body
from avatarstream.serve.model_options import parse_model_options
from avatarstream.serve.problems import NotFound
from avatarstream.serve.schemas import AudioQueued, Ending, Interrupted, Problem
from avatarstream.serve.uploads import check_image_type


def fleet(request: Request) -> Fleet:
    return request.app.state.fleet


def authorized(request: Request) -> None:
    fleet(request).auth.check(request.headers.get("authorization"))


FleetDep = Annotated[Fleet, Depends(fleet)]
router = APIRouter(prefix="/sessions", tags=["live sessions"], dependencies=[Depends(authorized)])


@router.post("", status_code=201, response_model=FleetSessionInfo, responses=ERRORS, summary="Open a live session", dependencies=[Depends(form_body)])
async def create_session(fleet: FleetDep, form: Annotated[SessionForm, Depends(session_form)]) -> dict[str, Any]:
    """On a free replica (503 with Retry-After when every slot is busy); the replica checks the inputs as the single server does."""
    session = await fleet.open(await _request(form, fleet.settings.serve.model, fleet.settings.serve.max_upload_bytes))
    return session.public_info()


async def _request(form: SessionForm, model: str, limit: int, **more: Any) -> OpenRequest:
    """The form as the replica takes it. The model options and the reference image's type are checked here, before a slot
    is taken; the replica checks everything as the single server does."""
    options = parse_model_options(options_class(model), form.model_options)
    image = kind = None
    if form.reference is not None:
        check_image_type(form.reference.content_type)
        image, kind = await form.reference.read(limit + 1), form.reference.content_type
    return OpenRequest(
        identity=form.identity,
        model_options=json.dumps(options.to_json()),
        prompt=form.prompt,
        seed=form.seed,
        outputs=form.outputs.model_dump_json(),
        reference=image,
        reference_type=kind,
        upscale=form.upscale,
        **more,
    )


@router.get("/{sid}", response_model=FleetSessionInfo, responses=ERRORS, summary="Status, figures and placement of a session")
async def session_status(sid: str, fleet: FleetDep) -> dict[str, Any]:
    return await fleet.info(sid)


@router.delete("/{sid}", response_model=FleetSessionInfo, responses=ERRORS, summary="Close a session")
async def close_session(sid: str, fleet: FleetDep) -> dict[str, Any]:
    return await fleet.close(sid)


@router.post("/{sid}/audio", status_code=202, response_model=AudioQueued, responses=ERRORS, summary="Speak an audio file", openapi_extra=UPLOAD_BODY)
async def upload_audio(sid: str, request: Request, fleet: FleetDep) -> AudioQueued:
    """As on the single server: a multipart form with the file in field ``audio``, or the file itself as the body."""
    session = fleet.get(sid)
    fleet.check_takes_speech(session)
    clip = await api_audio.receive_clip(request, session.folder, fleet.settings.serve.max_upload_bytes)
    await session.feed.put(clip)
    queued = float(session.info["stats"]["queued_audio_s"]) + (clip.duration_s or 0.0)
    return AudioQueued(clip_s=None if clip.duration_s is None else round(clip.duration_s, 3), queued_audio_s=round(queued, 3))


@router.post("/{sid}/end", status_code=202, response_model=Ending, responses=ERRORS, summary="End after the queued speech")
async def end_session(sid: str, fleet: FleetDep) -> dict[str, Any]:
    """As on the single server: no more audio, the queued speech is spoken, then the session closes with every output final."""
    return await fleet.end(fleet.get(sid))


@router.post("/{sid}/interrupt", response_model=Interrupted, responses=ERRORS, summary="Drop queued speech")
async def interrupt(sid: str, fleet: FleetDep) -> dict[str, Any]:
    return await fleet.interrupt(fleet.get(sid))


VIDEO = ERRORS | {200: {"content": {"video/mp4": {}}, "description": "the MP4"}, 409: {"model": Problem}}


@router.get("/{sid}/hls/{name}", responses=ERRORS, response_class=Response, summary="Live HLS playlist and segments (proxied from the session's replica)")
async def hls_file(sid: str, name: str, request: Request, fleet: FleetDep) -> Response:
    return await fleet.forward(sid, "live", f"/hls/{quote(name, safe='')}", request.headers)


@router.post("/{sid}/webrtc", responses=ERRORS, summary="WebRTC offer -> answer (negotiated with the session's replica, which sends the media)")
async def webrtc_offer(sid: str, offer: Offer, fleet: FleetDep) -> dict[str, Any]:
    return await fleet.ask(sid, "live", "POST", "/webrtc", offer.model_dump())


@router.get("/{sid}/video.mp4", response_class=Response, responses=VIDEO, summary="The session's MP4, after close (proxied from its replica)")
async def session_video(sid: str, request: Request, fleet: FleetDep) -> Response:
    return await _video(fleet, sid, "live", request)


async def _video(fleet: Fleet, sid: str, mode: str, request: Request) -> Response:
    """The replica's answer (the MP4; 409 while it runs; 404 when it made none); its replica gone: 404 with why."""
    try:
        return await fleet.forward(sid, mode, "/video.mp4", request.headers)
    except ReplicaError as err:
        info = await fleet.info(sid, mode)
        if info["state"] == "running":
            raise
        raise NotFound(f"no video: {info['error']}" if info["error"] else "no video: the replica that held it is gone") from err


jobs = APIRouter(prefix="/jobs", tags=["batch jobs"], dependencies=[Depends(authorized)])


@jobs.post("", status_code=202, response_model=FleetSessionInfo, responses=ERRORS, summary="Render an audio file to MP4", dependencies=[Depends(form_body)])
async def create_job(
    fleet: FleetDep,
    audio: Annotated[UploadFile, File(description=JOB_AUDIO_HELP)],
    form: Annotated[SessionForm, Depends(job_form)],
) -> dict[str, Any]:
    """On a free replica, as a session is; its MP4 is made there, and served through here (or from there: ``links.video``).
    A job whose replica is lost fails: submit it again."""
    limit = fleet.settings.serve.max_upload_bytes
    request = await _request(form, fleet.settings.serve.model, limit, mode="batch", audio=await audio.read(limit + 1), audio_type=audio.content_type)
    return (await fleet.open(request)).public_info()


@jobs.get("/{sid}", response_model=FleetSessionInfo, responses=ERRORS, summary="Status and placement of a job")
async def job_status(sid: str, fleet: FleetDep) -> dict[str, Any]:
    return await fleet.info(sid, "batch")


@jobs.get("/{sid}/video.mp4", response_class=Response, responses=VIDEO, summary="The finished MP4 (proxied from the job's replica)")
async def job_video(sid: str, request: Request, fleet: FleetDep) -> Response:
    return await _video(fleet, sid, "batch", request)


@jobs.get("/{sid}/frames/{name}", response_class=Response, responses=VIDEO, summary="One PNG frame of a finished job (proxied from its replica)")
async def job_frame(sid: str, name: str, request: Request, fleet: FleetDep) -> Response:
    return await fleet.forward(sid, "batch", f"/frames/{quote(name, safe='')}", request.headers)


@jobs.delete("/{sid}", response_model=FleetSessionInfo, responses=ERRORS, summary="Cancel a job")
async def delete_job(sid: str, fleet: FleetDep) -> dict[str, Any]:
    return await fleet.close(sid, "batch")


def create_fleet_app(state: Fleet) -> FastAPI:
    """The ingress's app over the fleet's sessions (Ray Serve builds it on the ingress replica)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await state.start()
        try:
            yield
        finally:
            await state.shutdown()

    app = FastAPI(
        title="avatarstream fleet",
        summary="Live talking-avatar sessions on a Ray Serve fleet.",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # served by openapi.install from the package's own Swagger UI files (no CDN), as on the single server
        redoc_url=None,
    )
    app.state.fleet = state

    add_handlers(app)
    app.include_router(router)
    app.include_router(jobs)
    openapi.install(app, options_class(state.settings.serve.model), state.settings.serve.model)
    app.include_router(api_audio.router)

    @app.get("/healthz", response_model=FleetHealth, tags=["server"], summary="Liveness, slots and whether a token is needed")
    async def healthz(request: Request) -> FleetHealth:
        return FleetHealth(
            status="ok",
            model=state.settings.serve.model,
            sessions=len(state.sessions),
            max_sessions=state.running,
            draining=state.draining,
            auth_required=state.auth.required,
        )

    @app.get("/metrics", tags=["server"], summary="Prometheus metrics", dependencies=[Depends(authorized)], response_class=Response)
    async def metrics() -> Response:
        return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return app
