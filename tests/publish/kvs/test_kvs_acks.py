"""Acknowledgement lines as the service sends them."""

from __future__ import annotations

import pytest

from avatarstream.publish.kvs.acks import Ack, parse_ack


def test_flat_acknowledgement() -> None:
    number = "91343852333181432511524306419788296366724229586"
    line = b'{"EventType":"PERSISTED","FragmentTimecode":1711124585823,"FragmentNumber":"%s"}\n' % number.encode()
    assert parse_ack(line) == Ack("PERSISTED", 1711124585823, number)


def test_error_and_idle() -> None:
    error = parse_ack(b'{"EventType":"ERROR","FragmentTimecode":5,"FragmentNumber":"1","ErrorId":4004}')
    assert error is not None and error.error_id == 4004
    assert "not after the previous fragment" in error.error_text()
    assert parse_ack(b'{"EventType":"IDLE"}') == Ack("IDLE")


def test_wrapped_form_of_the_api_reference() -> None:
    assert parse_ack(b'{"Acknowledgement":{"EventType":"RECEIVED","FragmentTimecode":7}}') == Ack("RECEIVED", 7)


def test_blank_and_garbage() -> None:
    assert parse_ack(b"\r\n") is None
    with pytest.raises(ValueError):
        parse_ack(b'{"EventType":"MAYBE"}')
    with pytest.raises(ValueError):
        parse_ack(b"<html>")
