"""stats.hls_ready says when a session's playlist exists, so a player can wait for it without asking for it (404s)."""

from __future__ import annotations

import time

import httpx
from serve_harness import running_server


def test_hls_ready_turns_true_when_the_playlist_is_there(tmp_path) -> None:
    with running_server(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as client:
        info = client.post("/sessions").json()
        assert info["stats"]["hls_ready"] is False  # a live session's first segment needs a second of video, in real time
        deadline = time.monotonic() + 30
        while not info["stats"]["hls_ready"]:
            assert time.monotonic() < deadline, info
            time.sleep(0.1)
            info = client.get(f"/sessions/{info['id']}").json()
        playlist = client.get(info["links"]["hls"])
        assert playlist.status_code == 200 and "#EXTINF" in playlist.text
        no_hls = client.post("/sessions", data={"outputs": '{"hls": false, "file": true}'}).json()
        time.sleep(1.5)
        assert client.get(f"/sessions/{no_hls['id']}").json()["stats"]["hls_ready"] is False
        for sid in (info["id"], no_hls["id"]):
            client.delete(f"/sessions/{sid}")
