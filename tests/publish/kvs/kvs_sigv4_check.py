"""Check a request's SigV4 signature the way the service would: recompute it with botocore."""

from __future__ import annotations

import datetime
import hmac
import re
from collections.abc import Mapping

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,\s*"
    r"SignedHeaders=(?P<signed>[a-z0-9;-]+),\s*Signature=(?P<signature>[0-9a-f]{64})"
)
PUT_MEDIA_SIGNED = {"host", "x-amz-date", "x-amzn-fragment-timecode-type", "x-amzn-producer-start-timestamp"}
MAX_SKEW = datetime.timedelta(minutes=5)
SERVICE = "kinesisvideo"


def signature_problem(
    headers: Mapping[str, str],
    url: str,
    body: bytes,
    credentials: Credentials,
    region: str,
    must_sign: set[str] = frozenset({"host", "x-amz-date"}),  # type: ignore[assignment]
) -> str | None:
    """Why the POST's signature does not hold, or None if it does. ``url`` is as the client addressed us.

    ``body`` is what the payload hash covers: the JSON of a control-plane call, or nothing for
    PutMedia, whose streamed body is signed as if it were empty (as the producer SDKs do).
    """
    found = _AUTH.fullmatch(headers.get("Authorization", ""))
    if not found:
        return "missing or malformed Authorization header"
    amz_date = headers.get("X-Amz-Date", "")
    if found["key"] != credentials.access_key:
        return "unknown access key"
    if (found["region"], found["service"]) != (region, SERVICE) or found["date"] != amz_date[:8]:
        return "credential scope does not match"
    try:
        when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return "bad X-Amz-Date"
    if abs(datetime.datetime.now(datetime.timezone.utc) - when) > MAX_SKEW:
        return "request time too skewed"
    signed = found["signed"].split(";")
    if not set(signed) >= must_sign:
        return f"headers not signed: {sorted(must_sign - set(signed))}"
    if credentials.token and headers.get("X-Amz-Security-Token") != credentials.token:
        return "bad security token"
    request = AWSRequest(method="POST", url=url, headers={name: headers.get(name, "") for name in signed}, data=body)
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(credentials, SERVICE, region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return None if hmac.compare_digest(expected, found["signature"]) else "signature does not match"
