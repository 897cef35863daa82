"""``avatarstream livekit-worker``: the avatar of LiveKit Agents voice agents, joining their rooms on request (docs/agents.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from avatarstream.cli.help_format import DefaultsHelpFormatter
from avatarstream.cli.model_args import add_model_arguments, model_options, upscale_request
from avatarstream.cli.runtime_args import add_runtime_arguments
from avatarstream.errors import InputError
from avatarstream.families.registry import check_weights
from avatarstream.output_paths import check_port

ENV = {"url": "LIVEKIT_URL", "api_key": "LIVEKIT_API_KEY", "api_secret": "LIVEKIT_API_SECRET"}


def add_parser(commands: argparse._SubParsersAction, model: str | None, upscaler: str | None = None) -> None:
    p = commands.add_parser(
        "livekit-worker",
        help="the avatar of LiveKit Agents voice agents: joins their rooms when an agent asks (extra: [livekit])",
        description=(
            "Keep a model warm and wait for agents: an agent's AvatarstreamAvatar(dispatcher_url=...) posts its room to "
            "/launch; the worker joins that room, takes the agent's speech from LiveKit's data streams and publishes the "
            "talking avatar (video and its audio, in sync) on the agent's behalf. The LiveKit URL, API key and secret mint "
            "the worker's own access tokens."
        ),
        epilog="example: LIVEKIT_URL=wss://my.livekit.cloud LIVEKIT_API_KEY=... LIVEKIT_API_SECRET=... avatarstream livekit-worker --port 8089",
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--livekit-url", default=os.environ.get(ENV["url"]), help=f"the LiveKit server, ws(s)://... (default: ${ENV['url']})")
    p.add_argument("--api-key", default=os.environ.get(ENV["api_key"]), help=f"LiveKit API key (default: ${ENV['api_key']})")
    p.add_argument("--api-secret", default=os.environ.get(ENV["api_secret"]), help=f"LiveKit API secret (default: ${ENV['api_secret']})")
    p.add_argument("--host", default="127.0.0.1", help="address the agents' /launch requests come to")
    p.add_argument("--port", type=int, default=8089, help="port of /launch")
    p.add_argument("--max-rooms", type=int, default=1, help="avatars this worker runs at once (one per room)")
    p.add_argument("--reference", type=Path, help="reference image (PNG/JPEG) of the avatar (default: the model's own)")
    p.add_argument("--server-url", help="render on a running `avatarstream serve` instead of in this process")
    p.add_argument("--server-token", default=os.environ.get("AVATARSTREAM_TOKEN"), help="that server's token (default: $AVATARSTREAM_TOKEN)")
    add_runtime_arguments(p)
    add_model_arguments(p, model, upscaler)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    given = {"url": args.livekit_url, "api_key": args.api_key, "api_secret": args.api_secret}
    flags = {"url": "--livekit-url", "api_key": "--api-key", "api_secret": "--api-secret"}
    missing = [f"{flags[name]} (or ${ENV[name]})" for name, value in given.items() if not value]
    if missing:
        raise InputError(f"the worker joins rooms with its own tokens: give {', '.join(missing)}")
    if args.max_rooms < 1:
        raise InputError(f"--max-rooms must be 1 or more, got {args.max_rooms}")
    check_port(args.host, args.port, "--port", what="the worker")
    if args.server_url is None:  # the model loads here: a wrong weights folder is told before torch loads
        check_weights(args.model, args.weights, model_options(args))
        upscale_request(args).check()
    try:
        from aiohttp import web

        from avatarstream.integrations.livekit_worker import AvatarWorker
    except ImportError as err:
        raise InputError(f"the LiveKit worker needs the livekit extra: pip install 'avatarstream[livekit]' ({err})") from None
    worker = AvatarWorker(args.livekit_url, args.api_key, args.api_secret, _engines(args), max_rooms=args.max_rooms)
    print(f"avatarstream livekit-worker: agents launch avatars at http://{args.host}:{args.port}/launch", flush=True)
    web.run_app(worker.app(), host=args.host, port=args.port, print=None)
    return 0


def _engines(args: argparse.Namespace) -> Any:
    """A maker of one engine per room: over the family loaded once here, or sessions of a server."""
    if args.server_url is not None:
        from avatarstream.integrations.remote_engine import RemoteEngine

        RemoteEngine(args.server_url, token=args.server_token, reference=args.reference)  # checks the server now
        return lambda: RemoteEngine(args.server_url, token=args.server_token, reference=args.reference)
    from avatarstream.families.registry import load_family
    from avatarstream.integrations.local_engine import LocalEngine
    from avatarstream.runtime.cpu_threads import set_threads
    from avatarstream.runtime.devices import resolve_device

    set_threads(args.threads)
    options = model_options(args)
    device = resolve_device(args.device)
    upscale = upscale_request(args)
    family = upscale.load(load_family(args.model, args.weights, options.given("load"), device=device), device=device)
    build = {k: v for k, v in options.given().items() if k not in options.given("load")}
    LocalEngine(family, reference=args.reference, model_options=build, device=device)  # checks the reference and the options now
    return lambda: LocalEngine(family, reference=args.reference, model_options=build, device=device)
