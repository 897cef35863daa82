"""The single server's OpenAPI holds under schemathesis: no 5xx, no response outside its schema (the fleet's is checked
in tests/fleet/test_one_api.py, on the fleet that module starts)."""

from __future__ import annotations

from pathlib import Path

from serve.api_fuzz import fuzz_api
from serve.serve_harness import TOKEN, running_server


def test_the_servers_schema_holds(tmp_path: Path) -> None:
    with running_server(tmp_path, token=TOKEN, max_sessions=1, max_upload_bytes=256 * 1024) as base:
        failures = fuzz_api(base, {"Authorization": f"Bearer {TOKEN}"})
    assert failures == [], "\n".join(failures)
