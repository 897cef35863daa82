"""``serve`` told to stop (SIGTERM, or Ctrl-C's SIGINT) with a live session writing its MP4: the file is finalized and
playable, and it stays in the user's ``--work-dir`` after the server exits; a session folder older than ``--result-ttl``
(an earlier run's) is removed by the running server, and nothing else in the folder is touched."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import av
import httpx
import pytest
from serve_child import CLI, serve_argv, start_serving


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_stopped_server_leaves_finalized_videos_in_the_users_folder(tmp_path: Path, stop: signal.Signals) -> None:
    work = tmp_path / "work"
    old = work / "session-from-an-earlier-run"
    old.mkdir(parents=True)
    (old / "video.mp4").write_bytes(b"old")
    long_ago = time.time() - 3600
    os.utime(old / "video.mp4", (long_ago, long_ago))
    os.utime(old, (long_ago, long_ago))
    (work / "notes.txt").write_text("the user's own file")
    argv, base = serve_argv(work, "--result-ttl", "600")
    server = start_serving([*CLI, *argv], base)
    try:
        sid = httpx.post(f"{base}/sessions", data={"outputs": '{"hls": false, "file": true}'}).json()["id"]
        deadline = time.monotonic() + 60
        while (frames := httpx.get(f"{base}/sessions/{sid}").json()["stats"]["frames"]) < 50:
            assert time.monotonic() < deadline, "no frames"
            time.sleep(0.2)
        server.send_signal(stop)
        assert server.wait(60) in (0, -stop, 128 + stop), "the server did not exit cleanly"
    finally:
        if server.poll() is None:
            server.kill()
    videos = list(work.glob("session-*/video.mp4"))
    assert len(videos) == 1, list(work.rglob("*"))  # the earlier run's aged folder went; this session's stayed
    with av.open(str(videos[0])) as container:
        decoded = sum(1 for _ in container.decode(video=0))
    assert decoded >= frames  # finalized: every frame published before the stop, and those after it, play
    assert (work / "notes.txt").read_text() == "the user's own file"
