"""The same sink against the real service; runs only where AWS access and a test stream are configured.

Set AVATARSTREAM_KVS_TEST_STREAM to a Kinesis video stream with data retention
(so that PERSISTED acknowledgements come), plus AWS credentials and a region
through the standard AWS chain.
"""

from __future__ import annotations

import os
import time

import botocore.session
import pytest

from avatarstream.publish.kvs import KvsSettings, KvsSink
from avatarstream.publish.packets import EncodedPacket, StreamInfo

STREAM_VARIABLE = "AVATARSTREAM_KVS_TEST_STREAM"


def test_putmedia_contract_with_aws(media: tuple[StreamInfo, list[EncodedPacket]]) -> None:
    stream = os.environ.get(STREAM_VARIABLE)
    if not stream:
        pytest.skip(f"{STREAM_VARIABLE} is not set: no Kinesis video stream to test against")
    session = botocore.session.get_session()
    if session.get_credentials() is None or not session.get_config_variable("region"):
        pytest.skip("no AWS credentials or region in the environment")
    info, packets = media
    sink = KvsSink(KvsSettings(stream_name=stream), aws_session=session)
    sink.open(info)
    started = time.monotonic()
    for packet in packets:  # at the pace of a live producer: PutMedia takes at most 5 fragments a second
        time.sleep(max(0.0, started + packet.pts_s - time.monotonic()))
        sink.write(packet)
    report = sink.close()
    assert report.complete, report
    assert report.packets_delivered == len(packets)
