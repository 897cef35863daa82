"""Where and as whom to PutMedia: the data endpoint and SigV4-signed request headers, via botocore.

Signing follows the Kinesis Video producer SDKs: the body is a stream of
unknown length, so only the headers are signed and the payload hash in the
canonical request is that of an empty body (the C producer SDK's
AwsV4Signer: "Streaming treats this portion as if the body were empty"); no
x-amz-content-sha256 header is sent.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from avatarstream.errors import InputError, PublishError
from avatarstream.publish.kvs.settings import KvsSettings

SERVICE = "kinesisvideo"
# GetDataEndpoint failures that no retry can fix.
_FATAL_CODES = {
    "ResourceNotFoundException",
    "NotAuthorizedException",
    "AccessDeniedException",
    "InvalidArgumentException",
}
_DEFAULT_PORTS = {"https": 443, "http": 80}


class EndpointUnavailable(Exception):
    """The data endpoint or the credentials could not be had just now; worth retrying."""


class PutMediaTarget:
    """Region and credentials come from ``session`` (the standard AWS chain); blocking calls, run them off the loop."""

    def __init__(self, settings: KvsSettings, session: botocore.session.Session) -> None:
        self._settings = settings
        self._session = session
        self.region = settings.region or session.get_config_variable("region")
        if not self.region:
            raise InputError("no AWS region for Kinesis Video Streams: set AWS_DEFAULT_REGION, a region in your AWS profile, or --kvs-region")
        self._credentials = session.get_credentials()
        if self._credentials is None:
            raise InputError(
                "no AWS credentials for Kinesis Video Streams: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                "AWS_PROFILE, or run where an IAM role is available"
            )
        self._endpoint = settings.endpoint_url

    def put_media_url(self) -> str:
        """The PutMedia URL; resolves the data endpoint with GetDataEndpoint unless one was given."""
        if self._endpoint is None:
            self._endpoint = self._get_data_endpoint()
        return self._endpoint.rstrip("/") + "/putMedia"

    def forget_endpoint(self) -> None:
        """After a failure: cached data endpoints are safe only if reloaded on failure (KVS limits page)."""
        self._endpoint = self._settings.endpoint_url

    def signed_headers(self, url: str, producer_start_ms: int) -> dict[str, str]:
        """PutMedia's request headers with a fresh SigV4 signature (credentials may refresh here)."""
        try:
            credentials = self._credentials.get_frozen_credentials()
        except BotoCoreError as err:
            raise EndpointUnavailable(f"cannot refresh the AWS credentials: {err}") from err
        settings = self._settings
        if settings.stream_name:
            stream = {"x-amzn-stream-name": settings.stream_name}
        else:
            stream = {"x-amzn-stream-arn": settings.stream_arn or ""}
        request = AWSRequest(
            method="POST",
            url=url,
            headers={
                "host": _host(url),
                **stream,
                "x-amzn-fragment-timecode-type": "ABSOLUTE",
                "x-amzn-producer-start-timestamp": f"{producer_start_ms // 1000}.{producer_start_ms % 1000:03d}",
                "x-amzn-fragment-acknowledgment-required": "1",
            },
            data=b"",
        )
        SigV4Auth(credentials, SERVICE, self.region).add_auth(request)
        return {name: str(value) for name, value in request.headers.items()}

    def _get_data_endpoint(self) -> str:
        settings = self._settings
        config = Config(connect_timeout=settings.connect_timeout_s, read_timeout=settings.ack_timeout_s, retries={"max_attempts": 1})
        stream = {"StreamName": settings.stream_name} if settings.stream_name else {"StreamARN": settings.stream_arn}
        try:
            client = self._session.create_client(SERVICE, region_name=self.region, config=config)
            return str(client.get_data_endpoint(APIName="PUT_MEDIA", **stream)["DataEndpoint"])
        except ClientError as err:
            code = err.response.get("Error", {}).get("Code", "")
            message = f"GetDataEndpoint for stream {settings.stream!r} in {self.region} failed: {code}: {err}"
            if code in _FATAL_CODES:
                raise PublishError(
                    f"{message}; check that the stream exists in this region and that the credentials "
                    "may call kinesisvideo:GetDataEndpoint and kinesisvideo:PutMedia"
                ) from err
            raise EndpointUnavailable(message) from err
        except BotoCoreError as err:
            message = f"GetDataEndpoint for stream {settings.stream!r} in {self.region} failed: {err}"
            raise EndpointUnavailable(message) from err


def _host(url: str) -> str:
    """The Host header as signed: the URL's host, with the port only when it is not the scheme's default."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return host if parts.port in (None, _DEFAULT_PORTS.get(parts.scheme)) else f"{host}:{parts.port}"
