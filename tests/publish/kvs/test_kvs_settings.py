"""Settings and AWS configuration problems are InputErrors that say what to do, before any network."""

from __future__ import annotations

import pytest
from kvs_media import encoded_stream

from avatarstream.errors import InputError
from avatarstream.publish.kvs import KvsSettings, KvsSink

ARN = "arn:aws:kinesisvideo:us-west-2:123456789012:stream/avatar-test/1700000000000"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "one of --kvs NAME"),
        ({"stream_name": "a", "stream_arn": ARN}, "--kvs NAME or --kvs-stream-arn ARN, not both"),
        ({"stream_name": "bad name!"}, "not a Kinesis video stream name"),
        ({"stream_arn": "arn:aws:s3:::bucket"}, "not a Kinesis video stream ARN"),
        ({"stream_name": "a", "endpoint_url": "ftp://host"}, "expected https://HOST"),
        ({"stream_name": "a", "endpoint_url": "https://host/putMedia?x=1"}, "only the scheme, host and port"),
        ({"stream_name": "a", "endpoint_url": "https://host:99999"}, "bad port"),
        ({"stream_name": "a", "max_connection_s": 0}, "max_connection_s must be positive"),
        ({"stream_name": "a", "delivered_on": "BUFFERING"}, "delivered_on"),
    ],
)
def test_bad_settings(settings: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        KvsSettings(**settings)  # type: ignore[arg-type]


def test_good_settings() -> None:
    assert KvsSettings(stream_arn=ARN).stream == ARN
    assert KvsSettings(stream_name="avatar-test", endpoint_url="https://s-1234.kinesisvideo.us-west-2.amazonaws.com")


@pytest.fixture
def no_aws_config(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    """An environment with no AWS region or credentials anywhere (and no instance metadata to ask)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", f"{tmp_path}/none")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", f"{tmp_path}/none")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.usefixtures("no_aws_config")
def test_missing_region_and_credentials_are_reported_at_open() -> None:
    info, _ = encoded_stream(0.2)
    with pytest.raises(InputError, match=r"no AWS region.*AWS_DEFAULT_REGION"):
        KvsSink(KvsSettings(stream_name="avatar-test")).open(info)
    with pytest.raises(InputError, match=r"no AWS credentials.*AWS_ACCESS_KEY_ID"):
        KvsSink(KvsSettings(stream_name="avatar-test", region="us-west-2")).open(info)
