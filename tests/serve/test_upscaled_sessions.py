"""A server started with an upscaler runs it on every session unless the session asks not to (``upscale=false``), and a
server without one says so when a session asks for it."""

from __future__ import annotations

import time

import av
import httpx
from serve_harness import running_server, speech, wav_bytes


def _job_video_size(client: httpx.Client, tmp_path, **data: str) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    created = client.post("/jobs", files={"audio": ("talk.wav", wav_bytes(speech(1.5)), "audio/wav")}, data=data)
    assert created.status_code == 202, created.text
    job = created.json()
    deadline = time.monotonic() + 60
    while (info := client.get(f"/jobs/{job['id']}").json())["state"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert info["state"] == "done", info
    path = tmp_path / f"{job['id']}.mp4"
    path.write_bytes(client.get(job["links"]["video"]).content)
    with av.open(str(path)) as container:
        frames = list(container.decode(video=0))
    return len(frames), frames[0].width, frames[0].height


def test_sessions_run_the_servers_upscaler_unless_they_ask_not_to(tmp_path) -> None:
    upscaler = {"upscale": "held-nearest", "upscale_options": {"lead": 25, "scale": 2}}
    with running_server(tmp_path, **upscaler) as base, httpx.Client(base_url=base, timeout=30) as client:
        assert _job_video_size(client, tmp_path) == (38, 128, 128)  # demo-tiny's 64x64, twice; every frame out
        assert _job_video_size(client, tmp_path, upscale="false") == (38, 64, 64)


def test_a_session_asking_for_an_upscaler_the_server_lacks_is_told_how_to_get_one(tmp_path) -> None:
    with running_server(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as client:
        refused = client.post("/jobs", files={"audio": ("talk.wav", wav_bytes(speech(0.5)), "audio/wav")}, data={"upscale": "true"})
        assert refused.status_code == 422 and "start it with --upscale NAME" in refused.text
