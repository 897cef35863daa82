"""``avatarstream serve``: the live session API and the demo page (FastAPI + uvicorn)."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from avatarstream.cli.help_format import DefaultsHelpFormatter
from avatarstream.cli.model_args import add_model_arguments, generation_options, model_folders
from avatarstream.cli.runtime_args import add_runtime_arguments
from avatarstream.errors import InputError
from avatarstream.output_paths import check_port

TOKEN_ENV = "AVATARSTREAM_TOKEN"


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "serve",
        help="serve live avatar sessions over HTTP/WebSocket, with a demo page at /",
        description=(
            "Serve talking-avatar sessions: open a session, stream audio over a WebSocket or upload files, "
            "interrupt, watch it live (HLS, WebRTC) or send it to RTMP / Kinesis Video Streams; batch jobs render "
            "a file to MP4. Open http://HOST:PORT/ for the demo page and /docs for the API."
        ),
        epilog="example: avatarstream serve --port 8000   (then open http://127.0.0.1:8000/)",
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind; any non-loopback address needs --token")
    p.add_argument("--port", type=int, default=8000, help="port to bind")
    p.add_argument("--token", default=os.environ.get(TOKEN_ENV), help=f"bearer token every API call must carry (default: ${TOKEN_ENV})")
    add_runtime_arguments(p)
    p.add_argument("--max-sessions", type=int, default=4, help="sessions and batch jobs at once; one more gets 503 with Retry-After")
    p.add_argument("--idle-timeout", type=float, default=300.0, help="seconds a live session may go without any client activity")
    p.add_argument("--max-upload-mb", type=float, default=50.0, help="largest request body or WebSocket message, in MiB")
    p.add_argument("--max-queued-audio", type=float, default=60.0, help="seconds of streamed speech a session queues before the socket waits")
    p.add_argument("--lookahead", type=float, help="seconds generation may run ahead of the wall clock (default: one chunk)")
    p.add_argument("--result-ttl", type=float, default=3600.0, help="seconds a finished video stays downloadable")
    p.add_argument("--preset", default="veryfast", help="x264 speed preset")
    p.add_argument("--work-dir", type=Path, help="folder for session files (default: a fresh temporary folder)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"], help="JSON logs on stderr")
    add_model_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from avatarstream.serve import ServeSettings, create_app
    from avatarstream.serve.logs import configure_logging, event

    if not 0 < args.max_upload_mb < 2**20:  # also refuses NaN, which round() below could not convert
        raise InputError(f"--max-upload-mb must be a number of MiB above 0 (and below 1 TiB), got {args.max_upload_mb}")
    settings = ServeSettings(
        host=args.host,
        port=args.port,
        token=args.token or None,
        model=args.model,
        weights=args.weights,
        folders=model_folders(args),
        dtype=args.dtype,
        device=args.device,
        generation=generation_options(args),
        max_sessions=args.max_sessions,
        idle_timeout_s=args.idle_timeout,
        max_upload_bytes=round(args.max_upload_mb * 2**20),
        max_queued_audio_s=args.max_queued_audio,
        lookahead_s=args.lookahead,
        result_ttl_s=args.result_ttl,
        preset=args.preset,
        threads=args.threads,
        work_dir=args.work_dir,
    )
    check_port(settings.host, settings.port, "--port", what="the API")  # before the model loads, not after
    configure_logging(args.log_level)
    # uvicorn logs each WebSocket's URL (a session id, maybe a token) at info: keep its warnings only
    logging.getLogger("uvicorn.error").setLevel(max(logging.WARNING, logging.getLogger().level))
    app = create_app(settings)
    host = f"[{args.host}]" if ":" in args.host else args.host
    event("listening", url=f"http://{host}:{args.port}/", docs=f"http://{host}:{args.port}/docs")
    print(f"avatarstream serve: open http://{host}:{args.port}/ (API docs at /docs)", flush=True)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        access_log=False,  # request paths hold session ids; the app logs route templates instead
        log_config=None,
        ws_max_size=settings.max_upload_bytes,
        timeout_graceful_shutdown=10,
    )
    return 0
