"""Batch jobs: a whole audio file in, an MP4 out as fast as the model runs; status and download."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, UploadFile
from fastapi.responses import FileResponse

from avatarstream.serve.api_sessions import AVATAR_HELP, ERRORS, IDENTITY_HELP, open_session, parse_outputs, video_response
from avatarstream.serve.context import Server, authorized, form_body
from avatarstream.serve.schemas import Problem, SessionInfo

router = APIRouter(prefix="/jobs", tags=["batch jobs"], dependencies=[Depends(authorized)])


@router.post("", status_code=202, response_model=SessionInfo, responses=ERRORS, summary="Render an audio file to MP4", dependencies=[Depends(form_body)])
async def create_job(
    server: Server,
    audio: Annotated[UploadFile, File(description="driving audio: WAV, MP3, FLAC or OGG")],
    identity: Annotated[str, Form(description=IDENTITY_HELP)] = "demo",
    reference: Annotated[UploadFile | None, File(description="reference image (PNG/JPEG)")] = None,
    avatar: Annotated[int | None, Form(ge=0, description=AVATAR_HELP)] = None,
    prompt: Annotated[str, Form(max_length=2000)] = "",
    seed: Annotated[int, Form()] = 0,
    outputs: Annotated[str, Form(description="JSON of Outputs; the MP4 is always written (outputs.file reads true)")] = '{"hls": false}',
) -> SessionInfo:
    """Counts as a session while it runs; its MP4 stays downloadable until the result TTL or DELETE."""
    job = await open_session(server, "batch", identity, reference, avatar, prompt, seed, parse_outputs(outputs), audio)
    return job.info()


@router.get("/{sid}", response_model=SessionInfo, responses=ERRORS, summary="Status of a job")
async def job_status(sid: str, server: Server) -> SessionInfo:
    return server.manager.info(sid, "batch")


@router.get("/{sid}/video.mp4", response_class=FileResponse, responses=ERRORS | {409: {"model": Problem}}, summary="The finished MP4")
async def job_video(sid: str, server: Server) -> FileResponse:
    return video_response(server, sid, "batch")


@router.delete("/{sid}", response_model=SessionInfo, responses=ERRORS, summary="Cancel a job and delete its video")
async def delete_job(sid: str, server: Server) -> SessionInfo:
    return await server.manager.close(sid, "batch")
