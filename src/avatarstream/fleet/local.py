"""``avatarstream fleet``: a Ray cluster (local, or the one at ``address``), Serve's proxy on the fleet's host and port, the app.

It prints its own lines only: Serve's informational log lines in this process
(Serve started, the application ready, deleted) are turned down to warnings,
the Ray cluster it starts gets token authentication as Ray gives one by default
(asked for explicitly, so without Ray's notice that it did), and it stops by
deleting its application (the sessions close and their files are finalized)
before the cluster goes, instead of ``serve.shutdown()``, whose controller kills
itself under the driver's pending call (Ray's "killed by ray.kill" line).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time

from avatarstream.fleet.settings import FleetSettings

SERVE_LOGGER = "ray.serve"  # Serve's logger in the driver (Ray's "Configure Serve logging" docs name it)


def run_fleet(settings: FleetSettings, address: str | None = None, num_cpus: int | None = None, stop: threading.Event | None = None) -> None:
    """Start the fleet and serve until ``stop`` is set or the process gets SIGINT/SIGTERM; then shut down cleanly (sessions close,
    their files are finalized, the application is deleted). On a cluster it joined (``address``), Serve itself stays up for
    the cluster's other applications (``serve shutdown`` stops it); a cluster it started stops with it."""
    if address is None and "ray" not in sys.modules:  # read when Ray is imported
        # token authentication, what Ray gives a new local cluster by default; asked for, it is not announced (Ray's notice
        # "Token authentication is enabled for this Ray cluster"). RAY_AUTH_MODE=disabled in the environment opts out.
        os.environ.setdefault("RAY_AUTH_MODE", "token")
    import ray

    stop = stop or _stop_on_signals()
    ray.init(address=address, num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    deployed = False
    try:
        started = time.monotonic()
        deployed = True  # from here on there may be an application to delete
        deploy(settings)
        host = f"[{settings.serve.host}]" if ":" in settings.serve.host else settings.serve.host
        print(f"avatarstream fleet: {settings.min_replicas}..{settings.max_replicas} replicas ready in {time.monotonic() - started:.1f} s; "
              f"sessions at http://{host}:{settings.serve.port}/sessions", flush=True)  # fmt: skip
        stop.wait()
        print("avatarstream fleet: stopping (open sessions close, their files are finalized)", flush=True)
    finally:
        if deployed:
            stop_app(settings.app_name)
        ray.shutdown()
    print("avatarstream fleet: stopped", flush=True)


def deploy(settings: FleetSettings) -> None:
    """Serve's proxy on the fleet's host and port, and the application, on the Ray cluster this process is connected to."""
    from ray import serve

    from avatarstream.fleet.app import build_app

    # serve.run connects to the Serve that serve.start started, which Serve logs at INFO as "Connecting to existing Serve app
    # ... will not be applied" (here it is the same Serve), along with "Started Serve" and "Application ... is ready":
    # avatarstream says when the fleet is ready. Serve's warnings still show.
    logging.getLogger(SERVE_LOGGER).setLevel(logging.WARNING)
    # the ingress lives on the head node, so clients reach its proxy there: a proxy on a node that dies would drop its sockets
    serve.start(proxy_location="HeadOnly", http_options={"host": settings.serve.host, "port": settings.serve.port})
    serve.run(build_app(settings), name=settings.app_name, route_prefix="/")


def stop_app(name: str, timeout_s: float = 120.0) -> None:
    """Close the fleet's sessions (their clients are told, their files finalized), then delete its application. Serve itself
    is left to the cluster: ``serve.shutdown()`` would kill its controller under this process's pending call."""
    from ray import serve

    with contextlib.suppress(Exception):  # not deployed, or its ingress gone: nothing to close
        serve.get_app_handle(name).close_sessions.remote().result(timeout_s=timeout_s)
    with contextlib.suppress(Exception):  # Serve may not have started at all
        serve.delete(name)


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop
