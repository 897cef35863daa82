"""KvsSink against the local PutMedia service: what arrives is exactly what was sent, whatever goes wrong."""

from __future__ import annotations

import numpy as np
import pytest
from fake_kvs import FakeKvs, Faults
from kvs_harness import fake_sink, publish
from kvs_media import FPS, RATE, TONE_HZ, colour_errors, decode_mkv

from avatarstream.publish.packets import EncodedPacket, StreamInfo

Media = tuple[StreamInfo, list[EncodedPacket]]
FRAGMENTS = 5


def assert_exact_stream(kvs: FakeKvs, packets: list[EncodedPacket]) -> None:
    """Every fragment once, in order, and the decoded stream is the one that was encoded."""
    assert kvs.problems == []
    timecodes = kvs.timecodes()
    assert len(timecodes) == FRAGMENTS
    assert timecodes == sorted(set(timecodes))
    decoded = decode_mkv(kvs.mkv())
    frames = sum(p.kind == "video" for p in packets)
    assert len(decoded.frames) == frames
    assert max(colour_errors(decoded.frames)) < 6
    assert abs(decoded.audio.shape[1] / RATE - frames / FPS) < 0.1
    spectrum = np.abs(np.fft.rfft(decoded.audio[0]))
    assert np.fft.rfftfreq(decoded.audio.shape[1], 1 / RATE)[spectrum.argmax()] == pytest.approx(TONE_HZ, abs=1)


def test_stream_arrives_exactly(media: Media) -> None:
    info, packets = media
    with FakeKvs() as kvs:
        report = publish(fake_sink(kvs.endpoint_url), info, packets)
    assert report.complete, report
    assert report.packets_delivered == len(packets)
    assert report.retries == 0
    assert len(kvs.connections) == 1
    headers = kvs.connections[0].headers
    assert headers["x-amzn-fragment-timecode-type"] == "ABSOLUTE"
    assert headers["Transfer-Encoding"] == "chunked"
    assert kvs.connections[0].acks == ["BUFFERING", "RECEIVED", "PERSISTED"] * FRAGMENTS
    assert_exact_stream(kvs, packets)


def test_error_ack_resends_from_first_unpersisted_fragment(media: Media) -> None:
    info, packets = media
    with FakeKvs(Faults(error_at={2: 5001})) as kvs:
        report = publish(fake_sink(kvs.endpoint_url), info, packets)
    assert report.complete, report
    assert report.retries == 1
    first, second = kvs.connections
    assert first.acks[-1] == "ERROR" and len(first.fragments) == 2
    assert second.fragments == kvs.timecodes()[2:]  # resumed at the fragment that failed
    assert_exact_stream(kvs, packets)


def test_connection_dropped_mid_fragment(media: Media) -> None:
    info, packets = media
    with FakeKvs(Faults(drop_at={1})) as kvs:
        report = publish(fake_sink(kvs.endpoint_url), info, packets)
    assert report.complete, report
    assert report.retries == 1
    assert kvs.connections[0].ended == "dropped"
    assert kvs.connections[1].fragments == kvs.timecodes()[1:]
    assert_exact_stream(kvs, packets)


def test_data_endpoint_comes_from_get_data_endpoint_and_is_reloaded_after_a_failure(media: Media, monkeypatch: pytest.MonkeyPatch) -> None:
    info, packets = media
    with FakeKvs(Faults(drop_at={1})) as kvs:
        monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS_VIDEO", kvs.endpoint_url)  # the control plane, via the AWS chain
        report = publish(fake_sink(None), info, packets)
    assert report.complete, report
    assert kvs.endpoint_lookups == 2
    assert_exact_stream(kvs, packets)


def test_idle_period_is_not_a_failure(media: Media) -> None:
    """The producer pauses; the service sends IDLE, then ends the request; the next data opens a new one."""
    info, packets = media
    middle = len(packets) // 2
    with FakeKvs(Faults(idle_ack_s=0.1, idle_close_s=0.6)) as kvs:
        report = publish(fake_sink(kvs.endpoint_url), info, packets, pause_at={middle: 1.2})
    assert report.complete, report
    assert report.retries == 0
    assert "IDLE" in kvs.connections[0].acks
    assert kvs.connections[0].ended == "idle"
    assert len(kvs.connections) == 2
    assert_exact_stream(kvs, packets)


def test_connections_rotate_before_their_maximum_duration(media: Media) -> None:
    info, packets = media
    keyframes = [i for i, p in enumerate(packets) if p.kind == "video" and p.keyframe]
    with FakeKvs() as kvs:
        report = publish(fake_sink(kvs.endpoint_url, max_connection_s=0.15), info, packets, pause_at={i: 0.25 for i in keyframes[1:]})
    assert report.complete, report
    assert report.retries == 0
    assert len(kvs.connections) >= 4
    assert all(c.ended.startswith("body ended") for c in kvs.connections)
    assert all(c.headers["Authorization"] for c in kvs.connections)  # each one signed afresh
    assert_exact_stream(kvs, packets)


def test_received_is_enough_for_streams_without_retention(media: Media) -> None:
    info, packets = media
    with FakeKvs(persist=False) as kvs:
        report = publish(fake_sink(kvs.endpoint_url, delivered_on="RECEIVED"), info, packets)
    assert report.complete, report
    assert "PERSISTED" not in kvs.connections[0].acks
    assert_exact_stream(kvs, packets)
