"""What a Kinesis Video Streams output needs to know, checked before the run starts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from avatarstream.errors import InputError

# Patterns and lengths from the PutMedia API reference (x-amzn-stream-name, x-amzn-stream-arn).
_STREAM_NAME = re.compile(r"[a-zA-Z0-9_.-]{1,256}")
_STREAM_ARN = re.compile(r"arn:aws[a-z-]*:kinesisvideo:[a-z0-9-]+:[0-9]+:[a-z]+/[a-zA-Z0-9_.-]+/[0-9]+")
_MAX_ARN = 1024
# A PutMedia connection is cut by the service after 40 minutes (the producer SDK's
# MAX_ENFORCED_TOKEN_EXPIRATION_DURATION); rotating a little earlier avoids ErrorId 4003.
DEFAULT_MAX_CONNECTION_S = 38 * 60.0


@dataclass(frozen=True)
class KvsSettings:
    """One Kinesis video stream to publish to, and how patient to be with it.

    Give ``stream_name`` or ``stream_arn`` (not both). Region and credentials
    come from the standard AWS chain unless ``region`` is set.
    ``endpoint_url`` is the PutMedia data endpoint; when set, GetDataEndpoint
    is not called. A fragment counts as delivered on the ``delivered_on``
    acknowledgement: PERSISTED, or RECEIVED for streams without retention
    (those never send PERSISTED).
    """

    stream_name: str | None = None
    stream_arn: str | None = None
    region: str | None = None
    endpoint_url: str | None = None
    delivered_on: Literal["PERSISTED", "RECEIVED"] = "PERSISTED"
    max_buffered_fragments: int = 60
    max_queued_packets: int = 1024
    max_connection_s: float = DEFAULT_MAX_CONNECTION_S
    connect_timeout_s: float = 5.0
    ack_timeout_s: float = 15.0
    close_timeout_s: float = 8.0
    max_fragment_attempts: int = 3

    def __post_init__(self) -> None:
        if self.stream_name is not None and self.stream_arn is not None:
            raise InputError("give --kvs NAME or --kvs-stream-arn ARN, not both: they name the same stream two ways")
        if self.stream_name is None and self.stream_arn is None:
            raise InputError("a Kinesis Video Streams output needs one of --kvs NAME or --kvs-stream-arn ARN")
        if self.stream_name is not None and not _STREAM_NAME.fullmatch(self.stream_name):
            raise InputError(f"--kvs {self.stream_name!r} is not a Kinesis video stream name: use 1-256 characters from a-z, A-Z, 0-9, '_', '.', '-'")
        arn = self.stream_arn
        if arn is not None and (len(arn) > _MAX_ARN or not _STREAM_ARN.fullmatch(arn)):
            raise InputError(
                f"--kvs-stream-arn {self.stream_arn!r} is not a Kinesis video stream ARN (arn:aws:kinesisvideo:REGION:ACCOUNT:stream/NAME/CREATION_TIME)"
            )
        if self.endpoint_url is not None:
            check_endpoint_url(self.endpoint_url)
        if self.delivered_on not in ("PERSISTED", "RECEIVED"):
            raise InputError(f"delivered_on must be 'PERSISTED' or 'RECEIVED', got {self.delivered_on!r}")
        for name in ("max_buffered_fragments", "max_queued_packets", "max_fragment_attempts"):
            if getattr(self, name) < 1:
                raise InputError(f"{name} must be at least 1, got {getattr(self, name)!r}")
        for name in ("max_connection_s", "connect_timeout_s", "ack_timeout_s", "close_timeout_s"):
            if not getattr(self, name) > 0:
                raise InputError(f"{name} must be positive, got {getattr(self, name)!r}")

    @property
    def stream(self) -> str:
        """The stream as a person would name it in a message."""
        return self.stream_name or self.stream_arn or ""


def check_endpoint_url(url: str) -> None:
    """Accept only a bare http(s)://host[:port] base, so nothing else can ride into the request."""
    parts = urlsplit(url)
    problem = None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        problem = "expected https://HOST[:PORT]"
    elif parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        problem = "give only the scheme, host and port (PutMedia's path is added)"
    else:
        try:
            _ = parts.port  # parsing it raises for a bad port
        except ValueError as err:
            problem = f"bad port: {err}"
    if problem:
        raise InputError(f"--kvs-endpoint {url!r} is not a Kinesis Video data endpoint URL: {problem}")
