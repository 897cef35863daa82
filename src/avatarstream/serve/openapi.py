"""The OpenAPI schema, plus what OpenAPI cannot say itself (the audio WebSocket and its JSON messages),
and the browsable /docs page, served from the package's own Swagger UI files so it works offline."""

from __future__ import annotations

from importlib import resources
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response

from avatarstream.families.options import FamilyOptions
from avatarstream.serve.model_options import openapi_field
from avatarstream.serve.ws_messages import CLIENT_MESSAGES, SERVER_EVENTS

WEBSOCKET = (
    "**Audio WebSocket** `ws://HOST/sessions/{{id}}/audio?format=s16le|f32le|encoded&rate=16000&channels=1[&token=...]`: "
    "binary messages are PCM in that format (or, with `format=encoded`, one whole WAV/MP3/FLAC/OGG clip each); "
    "text messages are the client commands below. The server sends the events below as JSON text. "
    "Closing with code 1000 or 1001 leaves the session open; a dropped connection closes it. "
    "Client commands: {client}. Server events: {server} (schemas under components.schemas; docs/api.md has examples)."
)


#: OpenAPI links: which answers give the id the next operations take (clients, and schemathesis's stateful runs, chain
#: them): (method, path, status) -> {link name: (method, path of the operation it leads to)}.
SESSION = "/sessions/{sid}"
JOB = "/jobs/{sid}"
LINKS: dict[tuple[str, str, str], dict[str, tuple[str, str]]] = {
    ("post", "/sessions", "201"): {
        "status": ("get", SESSION), "speak": ("post", f"{SESSION}/audio"), "interrupt": ("post", f"{SESSION}/interrupt"),
        "end": ("post", f"{SESSION}/end"), "close": ("delete", SESSION), "playlist": ("get", f"{SESSION}/hls/{{name}}"),
        "webrtc": ("post", f"{SESSION}/webrtc"), "video": ("get", f"{SESSION}/video.mp4"),
    },
    ("post", f"{SESSION}/audio", "202"): {"interrupt": ("post", f"{SESSION}/interrupt"), "end": ("post", f"{SESSION}/end"), "close": ("delete", SESSION)},
    ("post", f"{SESSION}/interrupt", "200"): {"speak": ("post", f"{SESSION}/audio"), "end": ("post", f"{SESSION}/end"), "close": ("delete", SESSION)},
    ("post", f"{SESSION}/end", "202"): {"status": ("get", SESSION), "close": ("delete", SESSION)},
    ("delete", SESSION, "200"): {"status": ("get", SESSION), "video": ("get", f"{SESSION}/video.mp4")},
    ("post", "/jobs", "202"): {
        "status": ("get", JOB), "video": ("get", f"{JOB}/video.mp4"), "frame": ("get", f"{JOB}/frames/{{name}}"), "cancel": ("delete", JOB),
    },
    ("delete", JOB, "200"): {"status": ("get", JOB)},
}  # fmt: skip
#: Where each link finds the id: the new session's or job's in the body, else the id the request named.
LINK_ID = {("post", "/sessions"): "$response.body#/id", ("post", "/jobs"): "$response.body#/id"}
#: The file names a link gives: the playlist every HLS session has, and a job's first frame.
LINK_NAMES = {f"{SESSION}/hls/{{name}}": "index.m3u8", f"{JOB}/frames/{{name}}": "000000.png"}

SWAGGER_UI = resources.files("avatarstream.serve") / "static" / "swagger-ui"
#: The Swagger UI files /docs loads, by name (scripts/vendor_swagger_ui.sh refreshes them).
SWAGGER_FILES = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css", "favicon-32x32.png": "image/png"}


def install(app: FastAPI, options: type[FamilyOptions], model: str) -> None:
    """Make ``app.openapi()`` carry the WebSocket's description and message schemas and the model's options (the
    ``model_options`` form field of sessions and jobs), and serve /docs offline."""
    _add_docs_page(app)
    model_options = openapi_field(options, model)

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            names = {kind: ", ".join(f"`{m.__name__}`" for m in models) for kind, models in (("client", CLIENT_MESSAGES), ("server", SERVER_EVENTS))}
            spec["info"]["description"] = WEBSOCKET.format(**names)
            components = spec.setdefault("components", {}).setdefault("schemas", {})
            for message in (*CLIENT_MESSAGES, *SERVER_EVENTS):
                components[message.__name__] = message.model_json_schema(ref_template="#/components/schemas/{model}")
            for body in components.values():  # the forms of POST /sessions and POST /jobs
                field = body.get("properties", {}).get("model_options")
                if field is not None:
                    field.update(model_options)
            _add_links(spec["paths"])
            app.openapi_schema = spec
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]  # FastAPI's documented way to extend the schema: replace the method


def _add_links(paths: dict[str, Any]) -> None:
    """Each answer of LINKS gets its links, by the operationId of the operation each leads to (those this app serves)."""
    for (method, path, status), links in LINKS.items():
        response = paths.get(path, {}).get(method, {}).get("responses", {}).get(status)
        if response is None:
            continue
        found = {}
        for name, (to_method, to_path) in links.items():
            operation = paths.get(to_path, {}).get(to_method)
            if operation is None:
                continue
            parameters = {"sid": LINK_ID.get((method, path), "$request.path.sid")}
            if to_path in LINK_NAMES:
                parameters["name"] = LINK_NAMES[to_path]
            found[name] = {"operationId": operation["operationId"], "parameters": parameters}
        response["links"] = found


def _add_docs_page(app: FastAPI) -> None:
    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} API",
            swagger_js_url="/docs-assets/swagger-ui-bundle.js", swagger_css_url="/docs-assets/swagger-ui.css",
            swagger_favicon_url="/docs-assets/favicon-32x32.png",
        )  # fmt: skip

    @app.get("/docs-assets/{name}", include_in_schema=False)
    async def docs_asset(name: str) -> Response:
        if name not in SWAGGER_FILES:
            return JSONResponse({"detail": "not found"}, status_code=404)
        return Response((SWAGGER_UI / name).read_bytes(), media_type=SWAGGER_FILES[name], headers={"Cache-Control": "max-age=86400"})
