"""The JSON messages of the audio WebSocket, as models: the session sends them, the OpenAPI schema and docs/api.md describe them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class InterruptCommand(BaseModel):
    """Client -> server (a text message): drop the queued speech, as POST /sessions/{id}/interrupt."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["interrupt"]


class EndCommand(BaseModel):
    """Client -> server (a text message): take no more audio, speak what is queued, then close, as POST /sessions/{id}/end."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["end"]


class FramesEvent(BaseModel):
    """Server -> client: frames were published (one message per chunk)."""

    type: Literal["frames"] = "frames"
    first_frame: int = Field(description="index of the chunk's first frame in the session's timeline")
    count: int = Field(description="frames in the chunk")
    speech: float = Field(description="fraction of the chunk's frames that carry speech (0 = idle)")
    motion: float = Field(description="mean absolute pixel change from the chunk's first to its last frame")
    at_s: float = Field(description="seconds since the session was created")


class InterruptedEvent(BaseModel):
    """Server -> client: queued speech was dropped (by the command, the REST route or another client)."""

    type: Literal["interrupted"] = "interrupted"
    dropped_s: float = Field(description="queued speech that was dropped")
    idle_from_frame: int = Field(description="the first frame without speech")
    idle_in_s: float = Field(description="how far ahead of the wall clock that frame is")


class ErrorEvent(BaseModel):
    """Server -> client: a message was refused (bad PCM, not a control) and the session goes on; or the session failed."""

    type: Literal["error"] = "error"
    message: str


class ClosedEvent(BaseModel):
    """Server -> client: the session ended; the socket closes after it."""

    type: Literal["closed"] = "closed"
    state: Literal["done", "closed", "failed"]


SERVER_EVENTS: tuple[type[BaseModel], ...] = (FramesEvent, InterruptedEvent, ErrorEvent, ClosedEvent)
CLIENT_MESSAGES: tuple[type[BaseModel], ...] = (InterruptCommand, EndCommand)
