"""Batch jobs: a whole audio file in, an MP4 (and, asked for, PNG frames) out as fast as the model runs; status and download."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, File, UploadFile
from fastapi.responses import FileResponse

from avatarstream.serve.api_sessions import ERRORS, JOB_AUDIO_HELP, SessionForm, job_form, open_session, video_response
from avatarstream.serve.context import Server, authorized, form_body
from avatarstream.serve.problems import Conflict, NotFound
from avatarstream.serve.schemas import Problem, SessionInfo

FRAME_NAME = re.compile(r"\d{6,}\.png")

router = APIRouter(prefix="/jobs", tags=["batch jobs"], dependencies=[Depends(authorized)])


@router.post("", status_code=202, response_model=SessionInfo, responses=ERRORS, summary="Render an audio file to MP4", dependencies=[Depends(form_body)])
async def create_job(
    server: Server, audio: Annotated[UploadFile, File(description=JOB_AUDIO_HELP)], form: Annotated[SessionForm, Depends(job_form)]
) -> SessionInfo:
    """Counts as a session while it runs; its MP4 stays downloadable until the result TTL or DELETE."""
    job = await open_session(server, "batch", form, audio)
    return job.info()


@router.get("/{sid}", response_model=SessionInfo, responses=ERRORS, summary="Status of a job")
async def job_status(sid: str, server: Server) -> SessionInfo:
    return server.manager.info(sid, "batch")


@router.get("/{sid}/video.mp4", response_class=FileResponse, responses=ERRORS | {409: {"model": Problem}}, summary="The finished MP4")
async def job_video(sid: str, server: Server) -> FileResponse:
    return video_response(server, sid, "batch")


@router.get("/{sid}/frames/{name}", response_class=FileResponse, responses=ERRORS | {409: {"model": Problem}}, summary="One PNG frame of a finished job")
async def job_frame(sid: str, name: str, server: Server) -> FileResponse:
    """Frame i is ``{i:06d}.png`` (outputs.frames); served once the job is done."""
    path = server.manager.frame(sid, name) if FRAME_NAME.fullmatch(name) else None
    if path is None:
        info = server.manager.info(sid, "batch")
        if info.state == "running":
            raise Conflict(f"the frames are ready when the job is done ({info.stats.frames} frames so far)")
        raise NotFound(f'no frame {name}: ask for outputs {{"frames": true}}; frames are 000000.png to {max(info.stats.frames - 1, 0):06d}.png')
    return FileResponse(path, media_type="image/png")


@router.delete("/{sid}", response_model=SessionInfo, responses=ERRORS, summary="Cancel a job and delete its video")
async def delete_job(sid: str, server: Server) -> SessionInfo:
    return await server.manager.close(sid, "batch")
