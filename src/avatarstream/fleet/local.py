"""``avatarstream fleet``: a Ray cluster (local, or the one at ``address``), Serve's proxy on the fleet's host and port, the app."""

from __future__ import annotations

import signal
import threading
import time

from avatarstream.fleet.settings import FleetSettings


def run_fleet(settings: FleetSettings, address: str | None = None, num_cpus: int | None = None, stop: threading.Event | None = None) -> None:
    """Start the fleet and serve until ``stop`` is set or the process gets SIGINT/SIGTERM; then shut down cleanly (sessions close,
    their files are finalized)."""
    import ray
    from ray import serve

    stop = stop or _stop_on_signals()
    ray.init(address=address, num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        started = time.monotonic()
        deploy(settings)
        host = f"[{settings.serve.host}]" if ":" in settings.serve.host else settings.serve.host
        print(f"avatarstream fleet: {settings.min_replicas}..{settings.max_replicas} replicas ready in {time.monotonic() - started:.1f} s; "
              f"sessions at http://{host}:{settings.serve.port}/sessions", flush=True)  # fmt: skip
        stop.wait()
    finally:
        serve.shutdown()
        ray.shutdown()


def deploy(settings: FleetSettings) -> None:
    """Serve's proxy on the fleet's host and port, and the application, on the Ray cluster this process is connected to."""
    from ray import serve

    from avatarstream.fleet.app import build_app

    # the ingress lives on the head node, so clients reach its proxy there: a proxy on a node that dies would drop its sockets
    serve.start(proxy_location="HeadOnly", http_options={"host": settings.serve.host, "port": settings.serve.port})
    serve.run(build_app(settings), name=settings.app_name, route_prefix="/")


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop
