"""Request and response bodies of the API (they make the OpenAPI schema)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class KvsOutput(BaseModel):
    """An Amazon Kinesis video stream; credentials and region come from the server's AWS configuration."""

    model_config = ConfigDict(extra="forbid")
    stream_name: str | None = None
    stream_arn: str | None = None
    region: str | None = None
    delivered_on: Literal["PERSISTED", "RECEIVED"] = "PERSISTED"


class Outputs(BaseModel):
    """Where a session's video goes. ``hls`` is what the page at / plays."""

    model_config = ConfigDict(extra="forbid")
    hls: bool = Field(True, description="live HLS at /sessions/{id}/hls/index.m3u8 (the preview page plays it)")
    webrtc: bool = Field(False, description="WebRTC: the H.264 video passed through and the sound as Opus, negotiated at POST /sessions/{id}/webrtc")
    file: bool = Field(
        False,
        description="an MP4 of the whole session, downloadable at /sessions/{id}/video.mp4 after close (404 without it); batch jobs always write one",
    )
    rtmp: str | None = Field(None, description="publish to rtmp://HOST[:PORT]/APP/STREAM")
    kvs: KvsOutput | None = Field(None, description="publish to Amazon Kinesis Video Streams")
    frames: bool = Field(
        False,
        description="batch jobs: every frame as a lossless PNG, downloadable at /jobs/{id}/frames/000000.png, 000001.png, ... once the job is done",
    )
    frames_ws: bool = Field(
        False,
        description="raw frames with their audio over the frames WebSocket (links.frames_ws; every live session has it): "
        "true with no other output asks for those alone, and nothing is encoded",
    )


class Stats(BaseModel):
    frames: int = Field(description="frames published so far")
    duration_s: float = Field(description="media time published so far")
    ttff_s: float | None = Field(description="from the create request to the first published frame")
    first_speech_latency_s: float | None = Field(description="from the first queued speech to the first frame that speaks it")
    fps: float = Field(description="frames published per second over the last seconds")
    underruns: int = Field(description="times generation fell behind the wall clock (live)")
    queued_audio_s: float = Field(description="speech waiting to be spoken (live)")
    speaking: bool = Field(description="the last published frames carry speech")
    chunk_latency_s: float | None = Field(description="wall time of the last generated chunk")
    hls_ready: bool = Field(False, description="the HLS playlist (links.hls) has its first segment: a player can load it now, where before it got 404")


class SessionInfo(BaseModel):
    id: str
    log_id: str = Field(description="the name the server's log lines give this session (its id itself is never logged)")
    mode: Literal["live", "batch"]
    state: Literal["running", "ending", "done", "closed", "failed"] = Field(
        description="ending: POST /end was called, the queued speech is being rendered; done: the audio ended and every output is final"
    )
    error: str | None = None
    outputs: Outputs
    links: dict[str, str] = Field(description="where to send audio, watch, download")
    stats: Stats
    warnings: list[str] = Field(
        default_factory=list,
        description="what the session was given that it cannot use well, each with its advice: random weights, a reference the "
        "weights cannot animate, audio below the model's sample rate (the server's log has them too)",
    )


class Interrupted(BaseModel):
    dropped_s: float = Field(description="queued speech that was dropped")
    idle_from_frame: int = Field(description="the first frame without speech")
    idle_in_s: float = Field(description="how far ahead of the wall clock that frame is (at most the look-ahead)")


class Ending(BaseModel):
    id: str
    state: Literal["ending"]
    remaining_s: float = Field(
        description="estimated seconds until the session closes: its queued speech at the pace it has been generating (real time, or slower)"
    )


class AudioQueued(BaseModel):
    clip_s: float | None = Field(description="length of the uploaded clip (from its header)")
    queued_audio_s: float = Field(description="speech now waiting, this clip included")


class Health(BaseModel):
    status: Literal["ok"]
    model: str
    sessions: int
    max_sessions: int
    auth_required: bool


class Problem(BaseModel):
    detail: str
