"""PutMedia's request headers: what is sent, and a signature the service-side check accepts."""

from __future__ import annotations

import pytest
from botocore.credentials import Credentials
from fake_kvs import CREDENTIALS, REGION
from kvs_harness import aws_session
from kvs_sigv4_check import PUT_MEDIA_SIGNED, signature_problem
from multidict import CIMultiDict

from avatarstream.publish.kvs import KvsSettings
from avatarstream.publish.kvs.aws import PutMediaTarget

ARN = "arn:aws:kinesisvideo:us-west-2:123456789012:stream/avatar-test/1700000000000"
URL = "https://s-1234abcd.kinesisvideo.us-west-2.amazonaws.com/putMedia"


@pytest.mark.parametrize("credentials", [CREDENTIALS, Credentials("ASIATEMPORARY", "secret", "session-token")])
def test_headers_are_signed_with_the_streaming_convention(credentials: Credentials) -> None:
    target = PutMediaTarget(KvsSettings(stream_arn=ARN, region=REGION), aws_session(credentials))
    headers = CIMultiDict(target.signed_headers(URL, 1_700_000_000_123))
    assert headers["host"] == "s-1234abcd.kinesisvideo.us-west-2.amazonaws.com"
    assert headers["x-amzn-stream-arn"] == ARN
    assert headers["x-amzn-fragment-timecode-type"] == "ABSOLUTE"
    assert headers["x-amzn-producer-start-timestamp"] == "1700000000.123"
    assert "x-amz-content-sha256" not in headers  # the body is signed as if empty, like the producer SDKs
    assert headers.get("x-amz-security-token") == credentials.token
    signed = PUT_MEDIA_SIGNED | {"x-amzn-stream-arn"}
    assert signature_problem(headers, URL, b"", credentials, REGION, signed) is None
    assert signature_problem(headers, URL, b"x", credentials, REGION, signed) == "signature does not match"
