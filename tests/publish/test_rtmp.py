"""RTMP against a real nginx-rtmp server: delivery, and reconnection when the server goes away."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from avatarstream.errors import InputError
from avatarstream.publish.publisher import Publisher
from avatarstream.publish.runner import Backoff
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sinks import Mp4FileSink, RtmpSink
from mp4_checks import make_chunks
from publish_needs import require_nginx_rtmp
from rtmp_server import RtmpServer
from stream_checks import inspect

SETTINGS = EncoderSettings(width=64, height=48, fps=25, preset="ultrafast")


@pytest.fixture
def server(tmp_path: Path) -> RtmpServer:
    require_nginx_rtmp()
    with RtmpServer(tmp_path / "nginx") as running:
        yield running


def test_stream_arrives_whole(server: RtmpServer) -> None:
    with Publisher(SETTINGS, [RtmpSink(server.url("known"))]) as publisher:
        for chunk in make_chunks([25, 25, 10]):
            publisher.submit(chunk)
    (report,) = publisher.reports
    assert report.complete and report.packets_delivered > 60
    recording = server.recordings / "known.flv"
    deadline = time.monotonic() + 5
    while not recording.exists() and time.monotonic() < deadline:  # written when the publisher disconnects
        time.sleep(0.05)
    seen = inspect(recording)
    assert (seen.frames, seen.width, seen.height) == (60, 64, 48)
    assert seen.video_s == pytest.approx(2.4, abs=0.002)  # FLV keeps milliseconds
    assert abs(seen.audio_s - seen.video_s) <= 1 / 25
    assert seen.keyframe_times == pytest.approx([0.0, 1.0, 2.0], abs=0.03)


def test_server_gone_then_back(tmp_path: Path, server: RtmpServer) -> None:
    """The server dies mid-stream and returns: the sink reconnects; the file and the run never wait."""
    backoff = Backoff(first_s=0.1, max_s=0.4)
    sinks = [Mp4FileSink(tmp_path / "out.mp4"), RtmpSink(server.url("flaky"))]
    longest = 0.0
    with Publisher(SETTINGS, sinks, backoff=backoff, max_queued_packets=64) as publisher:
        for second, chunk in enumerate(make_chunks([25] * 10)):
            if second == 3:
                server.stop()
            if second == 6:
                server.start()
            start = time.monotonic()
            publisher.submit(chunk)
            longest = max(longest, time.monotonic() - start)
            time.sleep(0.25)
    file_report, rtmp_report = publisher.reports
    assert file_report.complete and inspect(tmp_path / "out.mp4").frames == 250
    assert longest < 1.0
    # a reconnection starts a fresh connection process (~0.4 s), so this 0.75 s outage may cost only one retry
    assert rtmp_report.retries >= 1 and rtmp_report.packets_dropped > 0
    assert any("failed" in e for e in rtmp_report.errors)
    assert rtmp_report.packets_delivered + rtmp_report.packets_dropped == file_report.packets_delivered
    seen = inspect(server.recordings / "flaky.flv")  # the session after the reconnection
    assert seen.frames >= 25 and seen.keyframe_times[0] == min(seen.keyframe_times)


@pytest.mark.parametrize("url", ["http://example.com/live/x", "rtmp:///live/x", "rtmp://host", "rtmp://host/live", "rtmp://host:99999/live/x"])
def test_bad_urls_are_refused(url: str) -> None:
    with pytest.raises(InputError, match="--rtmp"):
        RtmpSink(url)


def test_a_silent_peer_is_dropped_in_bounded_time_and_never_stalls_the_rest(tmp_path: Path) -> None:
    """A peer that accepts TCP and then says nothing (FFmpeg's handshake would hold the GIL forever) costs the others nothing."""
    import socket
    import threading

    import psutil

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: [held.append(listener.accept()[0]) for _ in range(16)], daemon=True).start()
    url = f"rtmp://127.0.0.1:{listener.getsockname()[1]}/live/silent"
    ticks: list[float] = []
    stop = threading.Event()

    def tick() -> None:  # a Python thread that only runs while nothing holds the GIL
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.05)

    threading.Thread(target=tick, daemon=True).start()
    sinks = [Mp4FileSink(tmp_path / "out.mp4"), RtmpSink(url, write_timeout_s=1.0)]
    started = time.monotonic()
    with Publisher(SETTINGS, sinks, backoff=Backoff(first_s=0.1, max_s=0.2), close_timeout_s=5) as publisher:
        for chunk in make_chunks([25] * 40):  # enough packets to fill the pipe to the stuck connection
            publisher.submit(chunk)
            time.sleep(0.05)
    elapsed = time.monotonic() - started
    stop.set()
    listener.close()
    file_report, rtmp_report = publisher.reports
    assert file_report.complete and inspect(tmp_path / "out.mp4").frames == 1000
    assert not rtmp_report.complete and any("took nothing for 1 s" in e or "did not take the end" in e for e in rtmp_report.errors), rtmp_report
    assert elapsed < 2.0 + 40 * 0.05 + 5, "closing waits at most the close timeout for the stuck peer"
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert max(gaps) < 0.5, f"the process froze for {max(gaps):.2f} s: the RTMP connection held the GIL"
    assert not [p for p in psutil.Process().children(recursive=True) if "rtmp_child" in " ".join(p.cmdline())], "no connection process is left"
