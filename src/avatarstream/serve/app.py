"""The FastAPI app: one model loaded once, shared by every session (DESIGN.md §2: a thin shell).

``create_app(settings)`` loads the model and returns the app; uvicorn (or a
test) runs it. Sessions share one Pipeline: its stages are stateless and
its modules are resident and in inference mode, so concurrent runs (one
thread each, all state in the run) are safe; offloading policies, which move
weights per stage, would not be, so the server never configures them. A
session whose ``model_options`` change how chunks are generated runs on a
pipeline of its own over the same modules (pipelines.py).
Everything a session holds is freed when it ends; the app's registry of
metrics, threads and work folder live as long as the app.
"""

from __future__ import annotations

import concurrent.futures
import logging
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

import numpy as np
import torch
from fastapi import Depends, FastAPI, Request, WebSocket
from fastapi.exceptions import RequestValidationError, WebSocketRequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.middleware.base import RequestResponseEndpoint

from avatarstream.errors import AvatarStreamError, InputError
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.base import Family, model_warnings
from avatarstream.families.registry import load_family
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.runtime.cpu_threads import set_threads
from avatarstream.runtime.devices import resolve_device
from avatarstream.runtime.parallel.groups import ParallelGroups
from avatarstream.serve import api_audio_ws, api_frames_ws, api_jobs, api_sessions, openapi
from avatarstream.serve.audio_input import RATE
from avatarstream.serve.auth import TokenCheck
from avatarstream.serve.context import ServerContext, authorized, server
from avatarstream.serve.limits import BodyLimit
from avatarstream.serve.logs import event, quiet_refused_handshakes
from avatarstream.serve.metrics import ServeMetrics
from avatarstream.serve.pipelines import Pipelines
from avatarstream.serve.problems import ServeError
from avatarstream.serve.schemas import Health
from avatarstream.serve.session import Engine
from avatarstream.serve.sessions import SessionManager
from avatarstream.serve.settings import ServeSettings
from avatarstream.sources.pcm import PcmBlock

PAGE = resources.files("avatarstream.serve") / "static"
#: The files the page may load, by name (hls.js is the one the preview page vendors).
STATIC = {
    "app.js": (PAGE / "app.js", "text/javascript"),
    "hls.light.min.js": (resources.files("avatarstream.publish.preview") / "static" / "hls.light.min.js", "text/javascript"),
}


def load_pipeline(settings: ServeSettings, device: torch.device, parallel: ParallelGroups | None = None) -> tuple[Family, Pipeline]:
    """The model and the pipeline every session shares (every rank of a ``--nproc`` server builds the same, over its ``parallel``
    groups)."""
    set_threads(settings.threads)
    options = settings.family_options()
    upscale = settings.upscaler()
    family = load_family(
        settings.model, settings.weights, options, device=device, upscale=upscale.name, upscale_weights=upscale.weights, upscale_options=upscale.options
    )
    pipeline = build_pipeline(family, device, options, parallel=parallel)
    if settings.compile:
        pipeline.compile()
    pipeline.prepare()
    return family, pipeline


def create_app(settings: ServeSettings, device: torch.device | None = None, parallel: ParallelGroups | None = None) -> FastAPI:
    """Load the model, build the shared pipeline and return the app (nothing listens yet); ``device`` and ``parallel``: this
    rank's device and process groups, under torchrun."""
    device = resolve_device(settings.device) if device is None else device
    family, pipeline = load_pipeline(settings, device, parallel)
    options = settings.family_options()
    pipelines = Pipelines(
        family, options, pipeline, settings.preset, parallel=settings.processes > 1, retry_after_s=settings.retry_after_s, compile=settings.compile
    )
    _warm_up(pipeline, pipelines.reference(pipelines.shared, None, options))
    owns_work_dir = settings.work_dir is None
    work_dir = Path(tempfile.mkdtemp(prefix="avatarstream-serve-")) if settings.work_dir is None else Path(settings.work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=2 * settings.max_sessions + 4, thread_name_prefix="serve")
    manager: SessionManager
    metrics = ServeMetrics(lambda: manager.queued_audio_s)
    engine = Engine(pipelines, metrics, executor)
    manager = SessionManager(settings, engine, work_dir, keeps_files=not owns_work_dir)
    context = ServerContext(settings, engine, manager, TokenCheck(settings.token))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        manager.start_reaper()
        found = model_warnings(family)  # every session's JSON repeats them
        event(
            "server ready", logging.WARNING if found else logging.INFO, model=settings.model, device=str(device),
            max_sessions=settings.max_sessions, auth=settings.token is not None, warnings=found,
        )  # fmt: skip
        try:
            yield
        finally:
            await manager.shutdown()
            executor.shutdown(wait=True)
            if owns_work_dir:
                shutil.rmtree(work_dir, ignore_errors=True)

    app = FastAPI(
        title="avatarstream",
        summary="Live talking-avatar sessions and batch renders over HTTP and WebSocket.",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # served by openapi.install from the package's own Swagger UI files (no CDN)
        redoc_url=None,
    )
    app.state.server = context
    app.add_middleware(BodyLimit, max_bytes=settings.max_upload_bytes)
    add_handlers(app)
    app.include_router(api_sessions.router)
    app.include_router(api_audio_ws.router)
    app.include_router(api_frames_ws.router)
    app.include_router(api_jobs.router)
    _add_basic_routes(app)
    openapi.install(app, type(options), settings.model)
    return app


def _warm_up(pipeline: Pipeline, reference: np.ndarray) -> None:
    """One short silent run, so the first session does not pay for the framework's lazy start-up."""
    silence = PcmBlock(np.zeros((1, RATE // 4), np.float32), RATE)
    for _ in pipeline.stream([silence], np.zeros_like(reference)):
        pass


def add_handlers(app: FastAPI) -> None:
    """Errors as JSON with the status they mean, and one log line per request (the fleet's ingress uses them too); a
    refused WebSocket handshake is logged at info, not as uvicorn's error."""
    quiet_refused_handshakes()

    @app.exception_handler(ServeError)
    async def serve_error(request: Request, err: ServeError) -> JSONResponse:
        return JSONResponse({"detail": str(err)}, status_code=err.status, headers=err.headers)

    @app.exception_handler(InputError)
    async def input_error(request: Request, err: InputError) -> JSONResponse:
        return JSONResponse({"detail": str(err)}, status_code=422)

    @app.exception_handler(AvatarStreamError)
    async def run_error(request: Request, err: AvatarStreamError) -> JSONResponse:
        event("request failed", logging.ERROR, error=str(err))
        return JSONResponse({"detail": str(err)}, status_code=500)

    @app.exception_handler(WebSocketRequestValidationError)
    async def invalid_socket(ws: WebSocket, err: WebSocketRequestValidationError) -> None:
        """A query FastAPI cannot parse (``rate=fast``) is refused like any other bad query: 422 with a JSON detail, not a bare 403."""
        await api_audio_ws.refuse(ws, InputError(_problems(err)))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _problems(err)}, status_code=422)

    @app.middleware("http")
    async def log_requests(request: Request, call_next: RequestResponseEndpoint) -> Response:
        start = time.perf_counter()
        response = await call_next(request)
        route = getattr(request.scope.get("route"), "path", "?")  # the template: session ids stay out of the logs
        if route not in ("/metrics", "/healthz", "/sessions/{sid}/hls/{name}") or response.status_code >= 400:
            event("request", method=request.method, route=route, status=response.status_code, ms=round((time.perf_counter() - start) * 1000, 1))
        return response


def _problems(err: RequestValidationError | WebSocketRequestValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:]) or e['loc'][0]}: {e['msg']}" for e in err.errors())


def _add_basic_routes(app: FastAPI) -> None:
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse((PAGE / "index.html").read_text(), headers={"Cache-Control": "no-store"})

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        found = STATIC.get(name)
        if found is None:
            return JSONResponse({"detail": "not found"}, status_code=404)
        resource, media_type = found
        return Response(resource.read_bytes(), media_type=media_type)

    @app.get("/healthz", response_model=Health, tags=["server"], summary="Liveness, load and whether a token is needed")
    async def healthz(request: Request) -> Health:
        ctx = server(request)
        return Health(
            status="ok", model=ctx.settings.model, sessions=len(ctx.manager.active), max_sessions=ctx.settings.max_sessions, auth_required=ctx.auth.required
        )

    @app.get("/metrics", tags=["server"], summary="Prometheus metrics", dependencies=[Depends(authorized)], response_class=Response)
    async def metrics(request: Request) -> Response:
        return Response(server(request).engine.metrics.render(), media_type=CONTENT_TYPE_LATEST)
