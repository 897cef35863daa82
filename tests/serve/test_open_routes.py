"""With a token, exactly these answer without it: the browser page and its files, /healthz, and the API's own
description (/openapi.json, /docs and its assets); every other route of the schema says 401. Server and fleet alike."""

from __future__ import annotations

import importlib.util
import re

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from avatarstream.serve.settings import ServeSettings

TOKEN = "test-token-0123456789"
SETTINGS = ServeSettings(model="demo-tiny", token=TOKEN)
DOCS = ("/healthz", "/openapi.json", "/docs", "/docs-assets/swagger-ui.css")
PAGE = ("/", "/static/app.js")  # the single server's browser page (the fleet's ingress serves the API only)


def _single() -> FastAPI:
    from avatarstream.serve.app import create_app

    return create_app(SETTINGS)


def _fleet() -> FastAPI:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("the fleet extra is not installed: pip install 'avatarstream[fleet]'")
    from avatarstream.fleet.api import create_fleet_app
    from avatarstream.fleet.sessions import Fleet
    from avatarstream.fleet.settings import FleetSettings

    return create_fleet_app(Fleet(FleetSettings(serve=SETTINGS), slots=None))


@pytest.mark.parametrize(("build", "open_paths"), [(_single, PAGE + DOCS), (_fleet, DOCS)], ids=["serve", "fleet"])
def test_only_the_documented_routes_are_open(build, open_paths: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    client = TestClient(build())  # no lifespan: nothing here starts a session
    for path in open_paths:
        assert client.get(path).status_code == 200, path
    spec = client.get("/openapi.json").json()
    for path, operations in spec["paths"].items():
        if path in open_paths:
            continue
        concrete = re.sub(r"\{[^}]+\}", "x", path)
        for method in operations:
            response = client.request(method.upper(), concrete)
            assert response.status_code == 401, f"{method.upper()} {path} answers {response.status_code} without the token"
            assert response.headers["www-authenticate"].startswith("Bearer")
