"""Schemathesis against a running server's own OpenAPI (the single server's or a fleet's).

``fuzz_api``: every operation alone, positive and negative examples, checked for no 5xx and for responses that keep to
the schema (status, content type, body, headers); bounded for CI, a few examples per operation and mode, derandomized.
``fuzz_stateful``: scenarios that follow the schema's links (open a session, speak, interrupt, end, close; a job, its
frames, its cancel), with checks beyond the schema: an answer within a time bound, a refusal whose detail is one line,
a resource that the answer that made it names can be read. CI runs a few scenarios derandomized; ``make fuzz`` runs
them randomized for its budget (tests/fuzz/api_stateful.py).

Sessions and jobs either opens are closed afterwards, so the server is as free as before (a fleet of one replica has one
slot).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
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


#: Opened by these answers, closed by DELETE on the path plus the id (a scenario's teardown closes what it opened).
OPENS = {("POST", "/sessions", 201): "/sessions", ("POST", "/jobs", 202): "/jobs"}
#: The 503 of a server whose every session slot is taken (serve/sessions.py).
FULL = "the server is running its maximum of"


@dataclass
class StatefulRun:
    """What a stateful run found (one line each), and how much it ran."""

    failures: list[str] = field(default_factory=list)
    calls: int = 0
    scenarios: int = 0


def fuzz_stateful(
    base: str,
    headers: dict[str, str],
    *,
    scenarios: int,
    steps: int,
    derandomize: bool,
    max_response_s: float,
    leave_out: frozenset[tuple[str, str]] = frozenset(),
) -> StatefulRun:
    """Up to ``scenarios`` chains of at most ``steps`` linked calls, without the operations in ``leave_out`` (method, path);
    stops at the first failure (after shrinking it). Hypothesis's health checks stay on; a run that cannot generate is a
    failure too."""
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    for method, path in leave_out:
        schema = schema.exclude(method=method, path=path)
    result = StatefulRun()
    checks = [not_a_server_error_but_full, listed_status, *CHECKS[2:], in_time(max_response_s), one_line_detail, _readable(base, headers)]

    class Scenario(schema.as_state_machine()):  # type: ignore[misc]
        opened: list[str]

        def setup(self) -> None:
            self.opened = []
            result.scenarios += 1

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": headers}

        def after_call(self, response: Any, case: Any) -> None:
            super().after_call(response, case)
            result.calls += 1
            kind = OPENS.get((case.operation.method.upper(), case.operation.path, response.status_code))
            if kind is not None:
                self.opened.append(f"{kind}/{response.json()['id']}")

        def validate_response(self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any) -> None:
            case.validate_response(response, checks=checks, headers=headers, transport_kwargs=kwargs or None, recorder=self.recorder)

        def teardown(self) -> None:
            with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
                for path in self.opened:
                    client.delete(path)

    try:
        Scenario.run(settings=settings(max_examples=scenarios, stateful_step_count=steps, deadline=None, derandomize=derandomize, database=None))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as err:  # noqa: BLE001 -- schemathesis reports its findings as an exception group: collected
        result.failures.append(" ".join(str(err).split())[:2000])
    return result


def sessions_left(base: str, settle_s: float = 10.0) -> int:
    """Sessions (and jobs) still open once what a run opened was closed, given ``settle_s`` to finish closing."""
    deadline = time.monotonic() + settle_s
    while (count := int(httpx.get(f"{base}/healthz", timeout=30).json()["sessions"])) and time.monotonic() < deadline:
        time.sleep(0.1)
    return count


def not_a_server_error_but_full(ctx: Any, response: Any, case: Any) -> None:
    """No 5xx, except the documented 503 of a server whose every session slot is taken (a scenario may open several)."""
    if response.status_code >= 500:
        full = response.status_code == 503 and (case.operation.method.upper(), case.operation.path) in {(m, p) for m, p, _ in OPENS}
        assert full and FULL in response.text, f"{case.operation.label} answered {response.status_code}: {response.text[:500]}"


def listed_status(ctx: Any, response: Any, case: Any) -> bool | None:
    """The status is one the operation's OpenAPI lists."""
    return status_code_conformance(ctx, response, case)


def in_time(limit_s: float) -> Any:
    def answers_in_time(ctx: Any, response: Any, case: Any) -> None:
        assert response.elapsed <= limit_s, f"{case.operation.label} took {response.elapsed:.2f} s, over the bound of {limit_s:g} s"

    return answers_in_time


def _readable(base: str, headers: dict[str, str]) -> Any:
    def created_is_readable(ctx: Any, response: Any, case: Any) -> None:
        """What an answer says it opened can be read at once (its HLS playlist and video come later, by design)."""
        kind = OPENS.get((case.operation.method.upper(), case.operation.path, response.status_code))
        if kind is not None:
            status = httpx.get(f"{base}{kind}/{response.json()['id']}", headers=headers, timeout=30)
            assert status.status_code == 200, f"{case.operation.label} opened {response.json()['id']}, then its GET answered {status.status_code} {status.text}"

    return created_is_readable


def one_line_detail(ctx: Any, response: Any, case: Any) -> None:
    """A refusal says why in one line (the API's promise: the CLI and the page print it as is)."""
    kind = next((values[0] for name, values in response.headers.items() if name.lower() == "content-type"), "")
    if response.status_code >= 400 and "json" in kind:
        detail = response.json().get("detail")
        assert isinstance(detail, str) and detail.strip() and "\n" not in detail, f"{case.operation.label} refused with detail {detail!r}"
