"""``avatarstream serve``: the live session API and its browser page (FastAPI + uvicorn)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from avatarstream.cli.encoder_args import add_x264_preset_argument
from avatarstream.cli.help_format import DefaultsHelpFormatter
from avatarstream.cli.model_args import add_model_arguments, model_options, upscale_request
from avatarstream.cli.runtime_args import add_compile_argument, add_parallel_argument, add_runtime_arguments
from avatarstream.errors import InputError
from avatarstream.families.registry import check_weights
from avatarstream.output_paths import check_port
from avatarstream.publish.options import add_ice_argument

if TYPE_CHECKING:
    import torch

    from avatarstream.runtime.parallel.groups import ParallelGroups
    from avatarstream.serve.settings import ServeSettings

TOKEN_ENV = "AVATARSTREAM_TOKEN"


def add_parser(commands: argparse._SubParsersAction, model: str | None, upscaler: str | None = None) -> None:
    p = commands.add_parser(
        "serve",
        help="serve live avatar sessions over HTTP/WebSocket, with a browser page at /",
        description=(
            "Serve talking-avatar sessions: open a session, stream audio over a WebSocket or upload files, "
            "interrupt, watch it live (HLS, WebRTC) or send it to RTMP / Kinesis Video Streams; batch jobs render "
            "a file to MP4. Open http://HOST:PORT/ for a page that starts a session and /docs for the API."
        ),
        epilog="example: avatarstream serve --port 8000   (then open http://127.0.0.1:8000/)",
        formatter_class=DefaultsHelpFormatter,
    )
    add_server_arguments(p)
    add_runtime_arguments(p)
    add_compile_argument(p)
    p.add_argument("--nproc", type=int, default=1, help="processes (one per GPU) under torchrun that run each session together; rank 0 serves HTTP")
    add_parallel_argument(p)
    p.add_argument(
        "--max-sessions", type=int, help="sessions and batch jobs at once; one more gets 503 with Retry-After (default: 4; 1 with --nproc, which it must be)"
    )
    add_model_arguments(p, model, upscaler)
    p.set_defaults(run=run)


def add_server_arguments(p: argparse.ArgumentParser) -> None:
    """Where the API listens, its token and its limits (``serve`` and ``fleet`` share them)."""
    p.add_argument("--host", default="127.0.0.1", help="address to bind; any non-loopback address needs --token")
    p.add_argument("--port", type=int, default=8000, help="port to bind")
    p.add_argument("--token", default=os.environ.get(TOKEN_ENV), help=f"bearer token every API call must carry (default: ${TOKEN_ENV})")
    p.add_argument("--idle-timeout", type=float, default=300.0, help="seconds a live session may go without any client activity")
    p.add_argument("--max-upload-mb", type=float, default=50.0, help="largest request body or WebSocket message, in MiB")
    p.add_argument("--max-queued-audio", type=float, default=60.0, help="seconds of streamed speech a session queues before the socket waits")
    p.add_argument("--lookahead", type=float, help="seconds generation may run ahead of the wall clock (default: one chunk)")
    p.add_argument(
        "--result-ttl", type=float, default=3600.0,
        help="seconds a finished video stays downloadable; with --work-dir, also how long a session's folder stays there (across restarts)",
    )  # fmt: skip
    add_x264_preset_argument(p)
    add_ice_argument(p)
    p.add_argument(
        "--work-dir", type=Path,
        help="folder for session files, kept after the server stops until --result-ttl passes (default: a temporary folder, removed at exit)",
    )  # fmt: skip
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"], help="JSON logs on stderr")


def server_settings(args: argparse.Namespace, *, max_sessions: int, processes: int = 1) -> ServeSettings:
    """The settings ``add_server_arguments``, the runtime and the model arguments give, checked."""
    from avatarstream.serve.settings import ServeSettings

    upscale = upscale_request(args)
    if not 0 < args.max_upload_mb < 2**20:  # also refuses NaN, which round() below could not convert
        raise InputError(f"--max-upload-mb must be a number of MiB above 0 (and below 1 TiB), got {args.max_upload_mb}")
    return ServeSettings(
        host=args.host,
        port=args.port,
        token=args.token or None,
        model=args.model,
        weights=args.weights,
        model_options=model_options(args).to_json(),
        device=args.device,
        max_sessions=max_sessions,
        idle_timeout_s=args.idle_timeout,
        max_upload_bytes=round(args.max_upload_mb * 2**20),
        max_queued_audio_s=args.max_queued_audio,
        lookahead_s=args.lookahead,
        result_ttl_s=args.result_ttl,
        preset=args.x264_preset,
        threads=args.threads,
        work_dir=args.work_dir,
        processes=processes,
        compile=args.compile,
        ice_servers=tuple(args.ice_server),
        upscale=upscale.name,
        upscale_weights=args.upscale_weights,
        upscale_options=upscale.options_json(),
    )


def run(args: argparse.Namespace) -> int:
    check_weights(args.model, args.weights, model_options(args))  # a wrong weights folder is told before torch loads
    settings = server_settings(args, max_sessions=args.max_sessions if args.max_sessions is not None else (1 if args.nproc > 1 else 4), processes=args.nproc)
    check_port(settings.host, settings.port, "--port", what="the API")  # before the model loads, not after
    from avatarstream.runtime.devices import resolve_device  # torch loads once the command line is good
    from avatarstream.runtime.launch import finish, init_rank, relaunch

    relaunch(args.nproc, getattr(args, "argv", sys.argv[1:]), args.parallel)  # returns in a torchrun worker or when --nproc is 1
    rank, device = init_rank(resolve_device(settings.device), args.parallel)
    try:
        if rank.publishes:
            return _serve(args, settings, device, rank.groups)
        from avatarstream.runtime.parallel.guard import stops_every_rank
        from avatarstream.serve.app import load_pipeline

        with stops_every_rank(rank.groups):  # a failure here (even loading) reaches rank 0
            load_pipeline(settings, device, rank.groups)[1].follow()  # every session rank 0 serves, until it stops
        return 0
    finally:
        finish(rank)


def _serve(args: argparse.Namespace, settings: ServeSettings, device: torch.device, parallel: ParallelGroups) -> int:
    import uvicorn

    from avatarstream.serve.api_audio_ws import message_limit
    from avatarstream.serve.app import create_app
    from avatarstream.serve.logs import configure_logging, event

    configure_logging(args.log_level)
    # uvicorn logs each WebSocket's URL (a session id, maybe a token) at info: keep its warnings only
    logging.getLogger("uvicorn.error").setLevel(max(logging.WARNING, logging.getLogger().level))
    app = create_app(settings, device, parallel)
    host = f"[{args.host}]" if ":" in args.host else args.host
    event("listening", url=f"http://{host}:{args.port}/", docs=f"http://{host}:{args.port}/docs")
    print(f"avatarstream serve: open http://{host}:{args.port}/ (API docs at /docs)", flush=True)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        access_log=False,  # request paths hold session ids; the app logs route templates instead
        log_config=None,
        ws_max_size=message_limit(settings.max_upload_bytes),
        timeout_graceful_shutdown=10,
    )
    return 0
