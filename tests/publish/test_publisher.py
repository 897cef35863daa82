"""Publisher: one encode fans out; slow, failing and stuck sinks cost only themselves."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

import pytest

from avatarstream.errors import PublishError
from avatarstream.publish.packets import EncodedPacket, StreamInfo
from avatarstream.publish.publisher import Publisher
from avatarstream.publish.runner import Backoff
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sink import Sink, SinkReport
from avatarstream.publish.sinks import HlsSink, Mp4FileSink
from mp4_checks import decode, make_chunks

SETTINGS = EncoderSettings(width=64, height=48, fps=25, preset="ultrafast")
FAST = Backoff(first_s=0.05, max_s=0.2)


class Recorder(Sink):
    """Keeps what it is given; optionally slow, failing or stuck."""

    def __init__(self, name: str = "recorder", delay_s: float = 0.0, lossless: bool = False) -> None:
        self.name = name
        self.delay_s = delay_s
        self.lossless = lossless
        self.packets: list[EncodedPacket] = []
        self.sessions: list[list[EncodedPacket]] = []
        self.opened_at: list[float] = []
        self.open_failures = 0
        self.fail_writes_at: set[int] = set()  # write numbers (over the whole run) that raise
        self.writes = 0
        self.block = threading.Event()  # cleared: write blocks (a network stall)
        self.block.set()

    def open(self, info: StreamInfo) -> None:
        self.opened_at.append(time.monotonic())
        if self.open_failures:
            self.open_failures -= 1
            raise ConnectionRefusedError("server down")
        self.sessions.append([])

    def write(self, packet: EncodedPacket) -> None:
        self.block.wait()
        self.writes += 1
        if self.writes in self.fail_writes_at:
            raise BrokenPipeError("connection reset")
        time.sleep(self.delay_s)
        self.packets.append(packet)
        self.sessions[-1].append(packet)

    def close(self) -> SinkReport:
        return SinkReport(self.name, packets_delivered=len(self.sessions[-1]))


def run(sinks: list[Sink], seconds: int = 4, pace_s: float = 0.0, **kwargs: object) -> tuple[list[SinkReport], float]:
    """Publish ``seconds`` of 25 fps video, a chunk every ``pace_s``; returns the reports and the longest submit()."""
    longest = 0.0
    with Publisher(SETTINGS, sinks, backoff=FAST, **kwargs) as publisher:  # type: ignore[arg-type]
        for chunk in make_chunks([25] * seconds):
            start = time.monotonic()
            publisher.submit(chunk)
            longest = max(longest, time.monotonic() - start)
            time.sleep(pace_s)
    return publisher.reports, longest


def starts_clean(session: list[EncodedPacket]) -> bool:
    """What a sink got after a gap must start with a keyframe to be decodable."""
    video = [p for p in session if p.kind == "video"]
    return bool(video) and video[0].keyframe


def test_every_sink_gets_the_same_packets(tmp_path: Path) -> None:
    a, b = Recorder("a"), Recorder("b")
    reports, _ = run([Mp4FileSink(tmp_path / "out.mp4"), a, b])
    assert [r.name for r in reports] == [f"mp4:{tmp_path / 'out.mp4'}", "a", "b"]
    assert all(r.complete for r in reports)
    assert [p.data for p in a.packets] == [p.data for p in b.packets]
    assert reports[0].packets_delivered == len(a.packets)
    assert len(decode(tmp_path / "out.mp4").frames) == 100


def test_slow_sink_drops_to_keyframes_without_stalling_anyone(tmp_path: Path) -> None:
    slow = Recorder("slow", delay_s=0.02)  # 50 packets/s, far below the ~140 packets/s produced
    reports, longest = run([Mp4FileSink(tmp_path / "out.mp4"), slow], seconds=6, max_queued_packets=16)
    file_report, slow_report = reports
    assert file_report.complete and len(decode(tmp_path / "out.mp4").frames) == 150
    assert slow_report.packets_dropped > 0 and slow_report.packets_delivered == len(slow.packets)
    assert slow_report.packets_delivered + slow_report.packets_dropped == file_report.packets_delivered
    assert longest < 1.0
    video = [p for p in slow.packets if p.kind == "video"]
    gaps = [(a, b) for a, b in itertools.pairwise(video) if b.pts != a.pts + 1]
    assert gaps and all(b.keyframe for _, b in gaps)  # every skip resumes at a keyframe


def test_lossless_sink_is_waited_for_never_dropped() -> None:
    slow_file = Recorder("slow-file", delay_s=0.002, lossless=True)
    reports, _ = run([slow_file], max_queued_packets=4)
    assert reports[0].complete
    assert [p.pts for p in slow_file.packets if p.kind == "video"] == list(range(100))


def test_failing_sink_reconnects_with_backoff_at_a_keyframe() -> None:
    flaky = Recorder("flaky")
    flaky.fail_writes_at = {40}
    original_open = flaky.open

    def open_then_refuse_twice(info: StreamInfo) -> None:
        if len(flaky.opened_at) == 1:  # after the first session breaks, the server is down twice
            flaky.open_failures = 2
        original_open(info)

    flaky.open = open_then_refuse_twice  # type: ignore[method-assign]
    other = Recorder("other")
    reports, _ = run([flaky, other], seconds=8, pace_s=0.15)
    report = reports[0]
    assert len(flaky.sessions) == 2
    assert report.retries == 3  # two refused, one accepted
    assert report.packets_dropped > 0
    assert report.errors[0] == "write failed: connection reset"
    assert report.errors[1:] == ["open failed: server down"] * 2
    waits = [b - a for a, b in zip(flaky.opened_at[1:], flaky.opened_at[2:])]
    assert waits[0] >= FAST.delay(2) * 0.9 and waits[1] >= FAST.delay(3) * 0.9
    assert starts_clean(flaky.sessions[1])
    assert report.packets_delivered == len(flaky.packets)
    assert reports[1].complete and len(other.packets) == report.packets_delivered + report.packets_dropped


def test_stuck_sink_is_abandoned_at_close() -> None:
    stuck = Recorder("stuck")
    stuck.block.clear()
    start = time.monotonic()
    reports, longest = run([stuck, Recorder("fine")], close_timeout_s=0.5)
    assert time.monotonic() - start < 5 and longest < 1.0
    assert reports[0].errors[-1] == "did not finish within 0.5 s; abandoned"
    assert reports[0].packets_delivered == 0 and reports[0].packets_dropped > 0
    assert reports[1].complete
    stuck.block.set()


def test_failing_file_sink_is_reported_and_others_go_on(tmp_path: Path) -> None:
    disk = Recorder("disk", lossless=True)
    disk.fail_writes_at = {10}
    disk.reconnect = False
    reports, _ = run([disk, HlsSink(tmp_path / "hls")])
    assert reports[0].errors == ["write failed: connection reset"] and reports[0].retries == 0
    assert reports[0].packets_delivered == 9 and reports[0].packets_dropped > 0
    assert reports[1].complete


@pytest.mark.parametrize("error", [KeyboardInterrupt(), SystemExit(143), RuntimeError("inference blew up")])
def test_outputs_are_finalized_when_the_run_dies(tmp_path: Path, error: BaseException) -> None:
    with pytest.raises(type(error)), Publisher(SETTINGS, [Mp4FileSink(tmp_path / "out.mp4", fragmented=False), HlsSink(tmp_path / "hls")]) as p:
        for chunk in make_chunks([25, 25, 5]):
            p.submit(chunk)
        raise error
    assert len(decode(tmp_path / "out.mp4").frames) == 55
    assert (tmp_path / "hls" / "index.m3u8").read_text().rstrip().endswith("#EXT-X-ENDLIST")


def test_encoder_failure_reaches_the_caller(tmp_path: Path) -> None:
    publisher = Publisher(SETTINGS, [Mp4FileSink(tmp_path / "out.mp4")])
    publisher.submit(make_chunks([10])[0])
    publisher.submit(make_chunks([5, 5, 5, 5])[3])  # a gap: frames 10-14 are missing
    with pytest.raises(PublishError, match="chunk starts at frame 15 but 10 frames were written"):
        for chunk in make_chunks([1] * 50):
            publisher.submit(chunk)
    reports = publisher.close()
    assert reports[0].packets_delivered > 0
    assert len(decode(tmp_path / "out.mp4").frames) == 10


def test_needs_a_sink() -> None:
    with pytest.raises(ValueError, match="at least one sink"):
        Publisher(SETTINGS, [])
