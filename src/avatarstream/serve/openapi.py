"""The OpenAPI schema, plus what OpenAPI cannot say itself: the audio WebSocket and its JSON messages."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from avatarstream.serve.ws_messages import CLIENT_MESSAGES, SERVER_EVENTS

WEBSOCKET = (
    "**Audio WebSocket** `ws://HOST/sessions/{{id}}/audio?format=s16le|f32le|encoded&rate=16000&channels=1[&token=...]`: "
    "binary messages are PCM in that format (or, with `format=encoded`, one whole WAV/MP3/FLAC/OGG clip each); "
    "text messages are the client commands below. The server sends the events below as JSON text. "
    "Closing with code 1000 or 1001 leaves the session open; a dropped connection closes it. "
    "Client commands: {client}. Server events: {server} (schemas under components.schemas; docs/api.md has examples)."
)


def install(app: FastAPI) -> None:
    """Make ``app.openapi()`` carry the WebSocket's description and message schemas."""

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            names = {kind: ", ".join(f"`{m.__name__}`" for m in models) for kind, models in (("client", CLIENT_MESSAGES), ("server", SERVER_EVENTS))}
            spec["info"]["description"] = WEBSOCKET.format(**names)
            components = spec.setdefault("components", {}).setdefault("schemas", {})
            for model in (*CLIENT_MESSAGES, *SERVER_EVENTS):
                components[model.__name__] = model.model_json_schema(ref_template="#/components/schemas/{model}")
            app.openapi_schema = spec
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]
