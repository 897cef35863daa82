"""Sinks wired to the fake PutMedia service, and a way to run a stream through them."""

from __future__ import annotations

import time

import botocore.session
from botocore.credentials import Credentials
from fake_kvs import CREDENTIALS, REGION, STREAM

from avatarstream.publish.kvs import KvsSettings, KvsSink
from avatarstream.publish.packets import EncodedPacket, StreamInfo
from avatarstream.publish.runner import Backoff
from avatarstream.publish.sink import SinkReport

FAST_BACKOFF = Backoff(first_s=0.05, max_s=0.2)


def aws_session(credentials: Credentials = CREDENTIALS) -> botocore.session.Session:
    session = botocore.session.Session()
    session.set_credentials(credentials.access_key, credentials.secret_key, credentials.token)
    return session


def fake_sink(endpoint_url: str | None, credentials: Credentials = CREDENTIALS, backoff: Backoff = FAST_BACKOFF, **settings: object) -> KvsSink:
    """A sink for the fake service's stream, with timeouts sized for tests.

    ``endpoint_url`` None: the data endpoint is found with GetDataEndpoint.
    """
    options: dict[str, object] = {"stream_name": STREAM, "ack_timeout_s": 2.0, "close_timeout_s": 5.0, **settings}
    return KvsSink(
        KvsSettings(region=REGION, endpoint_url=endpoint_url, **options),  # type: ignore[arg-type]
        aws_session=aws_session(credentials),
        backoff=backoff,
    )


def publish(sink: KvsSink, info: StreamInfo, packets: list[EncodedPacket], pause_at: dict[int, float] | None = None) -> SinkReport:
    """open, write every packet (sleeping ``pause_at[i]`` s before packet i), close."""
    sink.open(info)
    for i, packet in enumerate(packets):
        if pause_at and i in pause_at:
            time.sleep(pause_at[i])
        sink.write(packet)
    return sink.close()
