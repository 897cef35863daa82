"""KvsSink when the service refuses or cannot be reached: clear errors, and the caller is never held up."""

from __future__ import annotations

import socket
import time

import pytest
from botocore.credentials import Credentials
from fake_kvs import CREDENTIALS, FakeKvs, Faults
from kvs_harness import fake_sink, publish

from avatarstream.errors import PublishError
from avatarstream.publish.kvs import KvsSink
from avatarstream.publish.packets import EncodedPacket, StreamInfo

Media = tuple[StreamInfo, list[EncodedPacket]]
WRONG_SECRET = Credentials(CREDENTIALS.access_key, "not-the-secret")


def write_until_refused(sink: KvsSink, packets: list[EncodedPacket], timeout_s: float = 5.0) -> tuple[int, PublishError]:
    """Keep writing the stream (looping) until write() raises; how many packets were accepted, and the error."""
    accepted = 0
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            sink.write(packets[accepted % len(packets)])
        except PublishError as err:
            return accepted, err
        accepted += 1
        time.sleep(0.005)
    raise AssertionError(f"the refusal did not reach the caller within {timeout_s} s")


def test_bad_signature_is_refused_and_reported(media: Media) -> None:
    info, packets = media
    with FakeKvs() as kvs:
        sink = fake_sink(kvs.endpoint_url, credentials=WRONG_SECRET)
        sink.open(info)
        accepted, raised = write_until_refused(sink, packets)
        report = sink.close()
    message = str(raised)
    assert "HTTP 403" in message and "NotAuthorizedException" in message and "signature" in message
    assert "check the AWS credentials" in message and "avatar-test" in message
    assert [c.status for c in kvs.connections] == [403]  # refused for good: no retry loop against a 403
    assert kvs.stored == []
    assert report.packets_delivered == 0
    assert report.packets_dropped == accepted
    assert message not in report.errors  # raised once, not reported twice


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("endpoint", ["refused", "hung"])
def test_unreachable_endpoint_never_blocks_write(media: Media, endpoint: str) -> None:
    info, packets = media
    with FakeKvs(respond=False) as hung:
        url = hung.endpoint_url if endpoint == "hung" else f"http://127.0.0.1:{_closed_port()}"
        sink = fake_sink(url, ack_timeout_s=1.0, connect_timeout_s=1.0, close_timeout_s=0.5, max_buffered_fragments=2)
        sink.open(info)
        slowest = 0.0
        for _ in range(3):  # 15 s of media, three times what the buffer holds
            for packet in packets:
                started = time.perf_counter()
                sink.write(packet)
                slowest = max(slowest, time.perf_counter() - started)
        started = time.monotonic()
        report = sink.close()
        closing = time.monotonic() - started
    assert slowest < 0.6  # never a network wait (1 s timeouts); the margin is for a loaded machine's scheduling
    assert closing < 0.5 + 2.5
    assert report.packets_delivered == 0
    assert report.packets_dropped == 3 * len(packets)
    explained = f"{report.packets_dropped} packets not delivered; last failure: "
    assert any(e.startswith(explained) for e in report.errors), report


def test_unknown_stream_is_refused_by_get_data_endpoint(media: Media, monkeypatch: pytest.MonkeyPatch) -> None:
    info, packets = media
    with FakeKvs() as kvs:
        monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS_VIDEO", kvs.endpoint_url)  # the control plane, via the AWS chain
        sink = fake_sink(None, stream_name="no-such-stream")
        sink.open(info)
        accepted, raised = write_until_refused(sink, packets)
        report = sink.close()
    assert "ResourceNotFoundException" in str(raised) and "check that the stream exists" in str(raised)
    assert kvs.connections == []  # no PutMedia without an endpoint
    assert report.packets_delivered == 0
    assert report.packets_dropped == accepted


@pytest.mark.parametrize("error_type", ["ClientLimitExceededException", "ConnectionLimitExceededException", "InvalidEndpointException"])
def test_throttling_and_a_wrong_endpoint_are_retried_at_a_fresh_endpoint(media: Media, monkeypatch: pytest.MonkeyPatch, error_type: str) -> None:
    """PutMedia's HTTP 400 refusals that a later request can pass: throttled, or sent to an endpoint that is not the stream's."""
    info, packets = media
    with FakeKvs(Faults(refuse={0: (400, error_type), 1: (400, error_type)})) as kvs:
        monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS_VIDEO", kvs.endpoint_url)  # the control plane, via the AWS chain
        report = publish(fake_sink(None), info, packets)
    assert report.complete, report
    assert report.retries == 2
    assert [c.status for c in kvs.connections] == [400, 400, 200]
    assert kvs.endpoint_lookups == 3  # each retry asks GetDataEndpoint where to go
    assert len(kvs.stored) == 5
