"""PutMedia acknowledgements: newline-separated JSON events on the response body.

Events and ErrorIds are those of the PutMedia API reference. On the wire the
objects are flat (``{"EventType":"PERSISTED","FragmentTimecode":...,
"FragmentNumber":"..."}``, as the producer SDKs log them); the reference's
example wraps them in ``Acknowledgement``, so that form is accepted too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

EVENTS = ("BUFFERING", "RECEIVED", "PERSISTED", "ERROR", "IDLE")

ERROR_IDS = {
    4000: "error reading the data stream",
    4001: "fragment larger than the 50 MB limit",
    4002: "fragment longer than the 10 s limit",
    4003: "connection open longer than the service allows",
    4004: "fragment timecode not after the previous fragment's",
    4005: "more than one track in the MKV",
    4006: "input is not valid MKV",
    4007: "invalid producer timestamp",
    4008: "stream no longer exists",
    4009: "fragment metadata limit reached",
    4010: "an MKV frame's track number is not in the MKV header",
    4011: "fragment has no frame for a track in the MKV header",
    4012: "more tracks than allowed",
    4500: "access to the stream's KMS key denied",
    4501: "the stream's KMS key is disabled",
    4502: "the stream's KMS key failed validation",
    4503: "the stream's KMS key is unavailable",
    4504: "invalid usage of the stream's KMS key",
    4505: "the stream's KMS key is in an invalid state",
    4506: "the stream's KMS key was not found",
    5000: "internal service error",
    5001: "the service failed to persist the fragment",
}


@dataclass(frozen=True)
class Ack:
    """One acknowledgement; IDLE carries no fragment, ERROR carries an ErrorId."""

    event: str
    timecode: int | None = None
    fragment_number: str | None = None
    error_id: int | None = None

    def error_text(self) -> str:
        description = ERROR_IDS.get(self.error_id or 0, "unknown error")
        return f"ErrorId {self.error_id}: {description}"


def parse_ack(line: bytes) -> Ack | None:
    """The acknowledgement on one line; None for a blank line; ValueError for anything else."""
    text = line.strip()
    if not text:
        return None
    body = json.loads(text)
    if isinstance(body, dict) and isinstance(body.get("Acknowledgement"), dict):
        body = body["Acknowledgement"]
    if not isinstance(body, dict) or body.get("EventType") not in EVENTS:
        raise ValueError(f"not a PutMedia acknowledgement: {text[:200]!r}")
    timecode, number, error_id = body.get("FragmentTimecode"), body.get("FragmentNumber"), body.get("ErrorId")
    return Ack(
        event=body["EventType"],
        timecode=None if timecode is None else int(timecode),
        fragment_number=None if number is None else str(number),
        error_id=None if error_id is None else int(error_id),
    )
