"""The fleet's additions to the session JSON: where the session lives, and how often it moved."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from avatarstream.serve.schemas import SessionInfo


class Placement(BaseModel):
    replica: str = Field(description="the Ray Serve replica that holds the session")
    node: str = Field(description="the Ray node that replica runs on")
    url: str = Field(description="the replica's own server: HLS, WebRTC and the MP4 are served from there")


class FleetSessionInfo(SessionInfo):
    state: Literal["running", "ending", "resuming", "done", "closed", "failed"]  # type: ignore[assignment]  # a fleet adds "resuming"
    placement: Placement
    resumes: int = Field(description="times the session moved to another replica after its replica or node was lost")
    resumed_from_frame: int | None = Field(description="the frame the last resume went on from: the saved state's (None: never resumed)")
    speech_done_s: float = Field(description="speech spoken (or dropped by an interrupt) so far, across resumes")
    speech_received_s: float = Field(description="streamed speech (PCM over the socket) the fleet has taken so far; after a 1012 close, send again from here")


class FleetHealth(BaseModel):
    status: Literal["ok"]
    model: str
    sessions: int
    max_sessions: int = Field(description="replicas running now: one session slot each")
    draining: int = Field(description="replicas going away, finishing their session")
    auth_required: bool
