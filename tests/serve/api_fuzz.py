"""Schemathesis against a running server's own OpenAPI (the single server's or a fleet's): every operation, positive and
negative examples, checked for no 5xx and for responses that keep to the schema (status, content type, body, headers).

Bounded for CI: a few examples per operation and mode, derandomized. Sessions and jobs it opens are closed afterwards,
so the server is as free as before (a fleet of one replica has one slot).
"""

from __future__ import annotations

import contextlib
from typing import Any

import httpx
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_headers_conformance, response_schema_conformance, status_code_conformance

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance, response_headers_conformance]
#: Operations left out: the WebRTC offer needs a real SDP to reach anything but its 4xx (test_a_webrtc_offer covers it).
SKIP = {("POST", "/sessions/{sid}/webrtc")}


def fuzz_api(base: str, headers: dict[str, str], examples: int = 6) -> list[str]:
    """Every failure found, one line each (empty: none)."""
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    failures: list[str] = []
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        for result in schema.get_all_operations():
            operation = result.ok()
            if (operation.method.upper(), operation.path) in SKIP:
                continue
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                failure = _fuzz(operation, mode, base, headers, client, examples)
                if failure:
                    failures.append(f"{operation.method.upper()} {operation.path} ({mode.value}): {failure}")
    return failures


def _fuzz(operation: Any, mode: GenerationMode, base: str, headers: dict[str, str], client: httpx.Client, examples: int) -> str | None:
    """One operation in one mode; what failed, in one line. A session or job the fuzzer opens is closed at once, so a
    slot is free for the next example (a 503 would then be a real one)."""

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        response = case.call(base_url=base, headers=headers)
        try:
            case.validate_response(response, checks=CHECKS)
        finally:
            if response.status_code in (201, 202) and operation.path in ("/sessions", "/jobs"):
                with contextlib.suppress(ValueError, KeyError):
                    client.delete(f"{operation.path}/{response.json()['id']}")

    try:
        run()
    except Unsatisfiable:  # negative examples of an operation whose only inputs are free strings: none exist
        return None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as err:  # noqa: BLE001 -- schemathesis reports its findings as an exception group: collected, the run goes on
        return " ".join(str(err).split())[:600]
    return None
