"""Fixtures of the Kinesis Video Streams tests."""

from __future__ import annotations

import pytest
from kvs_media import encoded_stream

from avatarstream.publish.packets import EncodedPacket, StreamInfo


@pytest.fixture(scope="session")
def media() -> tuple[StreamInfo, list[EncodedPacket]]:
    """5 s at 25 fps with a keyframe every second: five fragments."""
    return encoded_stream(5.0)
