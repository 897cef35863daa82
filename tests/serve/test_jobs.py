"""Batch jobs: upload a file, follow its status, download the finished MP4; ids open only their own kind."""

from __future__ import annotations

import time

import av
import httpx
import pytest
from serve_harness import FAMILIES, family_overrides, running_server, speech, wav_bytes


@pytest.mark.parametrize("model", list(FAMILIES))
def test_batch_job_renders_a_downloadable_mp4(tmp_path, model: str, request: pytest.FixtureRequest) -> None:
    overrides, _, _ = family_overrides(model, request)
    with running_server(tmp_path, **overrides) as base, httpx.Client(base_url=base, timeout=30) as client:
        created = client.post("/jobs", files={"audio": ("talk.wav", wav_bytes(speech(2.0)), "audio/wav")}, data={"prompt": "a calm voice"})
        assert created.status_code == 202, created.text
        job = created.json()
        assert job["mode"] == "batch" and job["links"]["video"] == f"/jobs/{job['id']}/video.mp4"
        deadline = time.monotonic() + 60
        while (info := client.get(f"/jobs/{job['id']}").json())["state"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert info["state"] == "done", info
        assert info["stats"]["frames"] == 50 and info["stats"]["ttff_s"] is not None

        video = client.get(job["links"]["video"])
        assert video.status_code == 200 and video.headers["content-type"] == "video/mp4"
        path = tmp_path / "job.mp4"
        path.write_bytes(video.content)
        with av.open(str(path)) as container:
            assert sum(1 for _ in container.decode(video=0)) == 50
            assert container.streams.audio

        assert client.get(f"/sessions/{job['id']}").status_code == 404  # a job id opens no live session
        assert client.delete(f"/jobs/{job['id']}").status_code == 200
        assert client.get(f"/jobs/{job['id']}").status_code == 404
        assert client.get(job["links"]["video"]).status_code == 404

        short = client.post("/jobs", files={"audio": ("tiny.wav", wav_bytes(speech(0.01)), "audio/wav")})
        assert short.status_code == 202
        while (info := client.get(f"/jobs/{short.json()['id']}").json())["state"] == "running":
            time.sleep(0.05)
        assert info["state"] == "failed" and "too short" in info["error"]


def test_batch_job_serves_its_frames_as_pngs(tmp_path) -> None:
    with running_server(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as client:
        assert client.post("/sessions", data={"outputs": '{"frames": true}'}).status_code == 422  # a live session has no end
        created = client.post("/jobs", files={"audio": ("talk.wav", wav_bytes(speech(1.0)), "audio/wav")}, data={"outputs": '{"frames": true}'})
        assert created.status_code == 202, created.text
        job = created.json()
        deadline = time.monotonic() + 60
        while (info := client.get(f"/jobs/{job['id']}").json())["state"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert info["state"] == "done", info
        last = info["stats"]["frames"] - 1
        first = client.get(info["links"]["frames"])
        assert first.status_code == 200 and first.content.startswith(b"\x89PNG")
        assert client.get(f"/jobs/{job['id']}/frames/{last:06d}.png").status_code == 200
        assert client.get(f"/jobs/{job['id']}/frames/{last + 1:06d}.png").status_code == 404
        assert client.get(f"/jobs/{job['id']}/frames/..%2Fvideo.mp4").status_code == 404


def test_a_live_session_refuses_options_that_wait_for_the_whole_audio(tmp_path, request: pytest.FixtureRequest) -> None:
    overrides, _, _ = family_overrides("infinitetalk", request)
    with running_server(tmp_path, **overrides) as base, httpx.Client(base_url=base, timeout=60) as client:
        refused = client.post("/sessions", data={"model_options": '{"fidelity": "reference", "size": [32, 48]}'})
        assert refused.status_code == 422 and "batch job" in refused.json()["detail"], refused.text
