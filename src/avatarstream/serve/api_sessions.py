"""Live sessions over HTTP: create, status, speak a file, interrupt, watch (HLS, WebRTC), close, download."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any, NamedTuple

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import FileResponse, Response
from pydantic import BaseModel, ValidationError
from starlette.datastructures import UploadFile as StarletteUpload

from avatarstream.errors import InputError
from avatarstream.families.base import model_warnings
from avatarstream.input_warnings import Warnings, audio_rate_warning
from avatarstream.serve.audio_input import ClipSegment
from avatarstream.serve.context import Blocking, Server, ServerContext, authorized, form_body
from avatarstream.serve.model_options import FIELD_HELP as MODEL_OPTIONS_HELP
from avatarstream.serve.model_options import MAX_TEXT as MODEL_OPTIONS_MAX
from avatarstream.serve.problems import Conflict, NotFound
from avatarstream.serve.schemas import AudioQueued, Ending, Interrupted, Outputs, Problem, SessionInfo
from avatarstream.serve.session import Mode, SavedSession, Session
from avatarstream.serve.uploads import AUDIO_TYPES, check_audio_type, open_upload_audio, reference_image, save_body, save_upload

router = APIRouter(prefix="/sessions", tags=["live sessions"], dependencies=[Depends(authorized)])
HLS_NAME = re.compile(r"index\.m3u8|init\.mp4|seg\d{5}\.m4s")
HLS_TYPES = {".m3u8": "application/vnd.apple.mpegurl", ".mp4": "video/mp4", ".m4s": "video/iso.segment"}
#: 400: a malformed multipart body (Starlette's parser refuses it before any field is read).
ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": Problem} for code in (400, 401, 404, 413, 415, 422, 503)}
CONFLICT: dict[int | str, dict[str, Any]] = {409: {"model": Problem}}  # the session's state refuses it (ending; no such output)
IDENTITY_HELP = (
    "default: the model's default avatar (the one `avatarstream render` uses without --reference), when no reference is uploaded; "
    "a model's request options (model_options) may choose another"
)
JOB_AUDIO_HELP = "driving audio: WAV, MP3, FLAC or OGG"


#: The body of an audio upload: a form with the file in ``audio``, or the file itself (FastAPI cannot infer either).
UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {"schema": {"type": "object", "required": ["audio"], "properties": {"audio": {"type": "string", "format": "binary"}}}},
            **{t: {"schema": {"type": "string", "format": "binary"}} for t in AUDIO_TYPES},
        },
    }
}


class Offer(BaseModel):
    sdp: str
    type: str


def parse_outputs(text: str) -> Outputs:
    try:
        return Outputs.model_validate_json(text or "{}")
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'outputs'}: {e['msg']}" for e in err.errors())
        raise InputError(f"outputs: {problems}") from err


async def open_session(
    server: ServerContext,
    mode: Mode,
    form: SessionForm,
    audio: UploadFile | None = None,
    *,
    resume: SavedSession | None = None,
    saving: bool = False,
) -> Session:
    """Admit, read the inputs into the new session's folder, start the run (shared by live sessions, jobs and a fleet's slots).

    The session's ``model_options`` are merged over the server's; options of scope build that differ from the server's
    give it a pipeline of its own (pipelines.py). A batch job always writes its MP4, and its outputs say so. What the model
    and the inputs warn of goes into the session's ``warnings``. ``resume`` and ``saving``: see ``SessionManager.start``."""
    if form.seed < 0:
        raise InputError(f"seed must be 0 or more, got {form.seed}")
    outputs = form.outputs.model_copy(update={"file": True}) if mode == "batch" else form.outputs
    pipelines = server.engine.pipelines
    options = pipelines.session_options(form.model_options)  # a bad option is refused before a slot is taken
    manager = server.manager
    folder = manager.reserve()
    built = source = None
    warnings = Warnings(model_warnings(pipelines.family))
    try:
        built = await server.blocking(pipelines.acquire, options, form.upscale)
        if mode == "live" and built.pipeline.whole_audio:
            raise InputError("these model_options read the whole audio before the first frame, which a live session never has: send a batch job (POST /jobs)")
        make = partial(pipelines.reference, built, options=options, warnings=warnings)
        image = await server.blocking(reference_image, form.identity, form.reference, folder, make, server.settings.max_upload_bytes)
        if audio is not None:
            check_audio_type(audio.content_type)
            path = await server.blocking(save_upload, audio, folder, server.settings.max_upload_bytes)
            source = await server.blocking(open_upload_audio, path)
            warnings.extend(filter(None, [audio_rate_warning(source.sample_rate, built.pipeline.model_sample_rate)]))
    except BaseException:
        if built is not None:
            pipelines.release(built)
        manager.release(folder)
        raise
    saving = saving and not built.pipeline.holds_frames  # an upscaler's held frames cannot travel in a saved state
    return manager.start(mode, folder, outputs, built, image, form.prompt, form.seed, source, resume=resume, saving=saving, warnings=warnings)


@dataclass(frozen=True)
class SessionForm:
    """The form that opens a live session or a batch job (the single server's and the fleet's)."""

    identity: str
    reference: UploadFile | None
    model_options: str  # a JSON object, checked against the model's options when the session opens
    prompt: str
    seed: int
    outputs: Outputs
    upscale: bool | None = None  # run the server's upscaler (None: when it has one)


class _Who(NamedTuple):
    """Who the avatar is and what drives it: the fields sessions and jobs share (their ``outputs`` defaults differ)."""

    identity: str
    reference: UploadFile | None
    model_options: str
    prompt: str
    seed: int
    upscale: bool | None


def _who_form(
    identity: Annotated[str, Form(description=IDENTITY_HELP)] = "default",
    reference: Annotated[UploadFile | None, File(description="reference image (PNG/JPEG), centre-cropped")] = None,
    model_options: Annotated[str, Form(max_length=MODEL_OPTIONS_MAX, description=MODEL_OPTIONS_HELP)] = "{}",
    prompt: Annotated[str, Form(max_length=2000)] = "",
    seed: Annotated[int, Form()] = 0,
    upscale: Annotated[bool | None, Form(description="run the server's upscaler on this session's frames (default: when the server has one)")] = None,
) -> _Who:
    if seed < 0:
        raise InputError(f"seed must be 0 or more, got {seed}")
    return _Who(identity, reference, model_options, prompt, seed, upscale)


def session_form(
    who: Annotated[_Who, Depends(_who_form)],
    outputs: Annotated[str, Form(description='JSON of Outputs, e.g. {"hls": true, "webrtc": true, "file": true}')] = "{}",
) -> SessionForm:
    return _form(who, outputs)


def _form(who: _Who, outputs: str) -> SessionForm:
    return SessionForm(who.identity, who.reference, who.model_options, who.prompt, who.seed, parse_outputs(outputs), who.upscale)


def job_form(
    who: Annotated[_Who, Depends(_who_form)],
    outputs: Annotated[str, Form(description="JSON of Outputs; the MP4 is always written (outputs.file reads true)")] = '{"hls": false}',
) -> SessionForm:
    return _form(who, outputs)


@router.post("", status_code=201, response_model=SessionInfo, responses=ERRORS, summary="Open a live session", dependencies=[Depends(form_body)])
async def create_session(server: Server, form: Annotated[SessionForm, Depends(session_form)]) -> SessionInfo:
    """The avatar starts moving at once (idle) and speaks whatever audio arrives, until closed or idle too long."""
    session = await open_session(server, "live", form)
    return session.info()


@router.get("/{sid}", response_model=SessionInfo, responses=ERRORS, summary="Status and figures of a session")
async def session_status(sid: str, server: Server) -> SessionInfo:
    return server.manager.info(sid, "live")


@router.delete("/{sid}", response_model=SessionInfo, responses=ERRORS, summary="Close a session")
async def close_session(sid: str, server: Server) -> SessionInfo:
    """Frees the session at once. Its MP4 (outputs.file) stays downloadable until the result TTL;
    deleting an already closed session removes that too."""
    return await server.manager.close(sid, "live")


@router.post(
    "/{sid}/audio",
    status_code=202,
    response_model=AudioQueued,
    responses=ERRORS | CONFLICT,
    summary="Speak an audio file",
    openapi_extra=UPLOAD_BODY,
)
async def upload_audio(sid: str, request: Request, server: Server) -> AudioQueued:
    """A multipart form with the file in field ``audio`` (as POST /jobs takes it), or the file itself as the body.

    It is queued after what is already queued and spoken in real time."""
    session = server.manager.get(sid, "live")
    session.check_takes_speech()
    path = await receive_audio(request, session.folder, server.settings.max_upload_bytes, server.blocking)
    source = await server.blocking(open_upload_audio, path)
    clip = ClipSegment(source, path)
    session.check_audio_rate(source.sample_rate)
    try:
        live = server.manager.get(sid, "live").live  # the session may have ended while the body arrived
    except NotFound:
        clip.close()
        raise
    assert live is not None
    if live.ending:  # ended while the body arrived
        clip.close()
        session.check_takes_speech()
    live.push(clip)
    return AudioQueued(clip_s=None if clip.duration_s is None else round(clip.duration_s, 3), queued_audio_s=round(live.queued_s, 3))


async def receive_audio(request: Request, folder: Path, max_bytes: int, blocking: Blocking) -> Path:
    """The uploaded file stored in ``folder``: from the form's ``audio`` field or the raw body (the fleet's ingress takes it so too)."""
    content_type = request.headers.get("content-type") or ""
    if not content_type.startswith("multipart/form-data"):
        check_audio_type(content_type)
        return await save_body(request, folder, max_bytes)
    form = await request.form(max_files=1, max_fields=8)
    try:
        upload = form.get("audio")
        if not isinstance(upload, StarletteUpload):
            raise InputError("the form needs the audio file in a field named 'audio'")
        check_audio_type(upload.content_type)
        return await blocking(save_upload, upload, folder, max_bytes)
    finally:
        await form.close()


@router.post("/{sid}/end", status_code=202, response_model=Ending, responses=ERRORS, summary="End after the queued speech")
async def end_session(sid: str, server: Server) -> Ending:
    """Take no more audio, speak what is queued, then close and finalize every output (the video keeps the last words).
    DELETE closes at once instead. Poll the session (or read the audio socket's ``closed`` event) to see it end."""
    session = server.manager.get(sid, "live")
    return Ending(id=sid, state="ending", remaining_s=session.end())


@router.post("/{sid}/interrupt", response_model=Interrupted, responses=ERRORS, summary="Drop queued speech")
async def interrupt(sid: str, server: Server) -> Interrupted:
    """Speech already handed to the model (at most the look-ahead, one chunk) still plays; then the avatar is idle."""
    done = server.manager.get(sid, "live").interrupt()
    return Interrupted(dropped_s=done.dropped_s, idle_from_frame=done.idle_from_frame, idle_in_s=done.idle_in_s)


@router.get("/{sid}/hls/{name}", responses=ERRORS, summary="Live HLS playlist and segments")
async def hls_file(sid: str, name: str, server: Server) -> Response:
    session = server.manager.get(sid, "live")
    if session.outputs.hls_dir is None or not HLS_NAME.fullmatch(name):
        raise NotFound("no such HLS file; the playlist is index.m3u8")
    try:
        body = await server.blocking((session.outputs.hls_dir / name).read_bytes)
    except FileNotFoundError:
        raise NotFound(f"{name} is not written yet (or has left the live window)") from None
    return Response(body, media_type=HLS_TYPES[name[name.rindex(".") :]], headers={"Cache-Control": "no-store"})


@router.post("/{sid}/webrtc", responses=ERRORS | CONFLICT, summary="WebRTC offer -> answer (H.264 video; Opus audio when the offer asks for it)")
async def webrtc_offer(sid: str, offer: Offer, server: Server) -> dict[str, str]:
    session = server.manager.get(sid, "live")
    if session.outputs.webrtc is None:
        raise Conflict('this session has no WebRTC output; create it with outputs {"webrtc": true}')
    try:
        answer = await server.blocking(session.outputs.webrtc.relay.answer, offer.sdp, offer.type)
    except ValueError as err:
        raise InputError(f"bad offer: {err}") from err
    return {"sdp": answer.sdp, "type": answer.type}


@router.get("/{sid}/video.mp4", response_class=FileResponse, responses=ERRORS | {409: {"model": Problem}}, summary="The session's MP4, after close")
async def session_video(sid: str, server: Server) -> FileResponse:
    return video_response(server, sid, "live")


def video_response(server: ServerContext, sid: str, mode: Mode) -> FileResponse:
    """The finished MP4 of an ended session or job; 409 while it runs."""
    video = server.manager.video(sid, mode)
    if video is None:
        info = server.manager.info(sid, mode)
        if info.state == "running":
            raise Conflict(f"the video is ready when the {'session is closed' if mode == 'live' else 'job is done'} ({info.stats.frames} frames so far)")
        raise NotFound('this session made no video: ask for outputs {"file": true}' if info.state != "failed" else f"no video: {info.error}")
    return FileResponse(video, media_type="video/mp4", filename="avatar.mp4")
