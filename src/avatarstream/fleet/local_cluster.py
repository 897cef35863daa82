"""A Ray cluster of several nodes on this one machine (loopback only), with the fleet on it.

For trying the fleet's failure handling without a cluster: the tests and
``avatarstream bench --scenario fleet`` run on it, ``LocalFleet.remove``
takes a node away as a crash would, and ``LocalFleet.add_node`` brings one.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import ray
from ray import serve
from ray.cluster_utils import Cluster

from avatarstream.fleet.app import build_app
from avatarstream.fleet.local import deploy, stop_app
from avatarstream.fleet.settings import FleetSettings
from avatarstream.serve.settings import ServeSettings

FAST_FAILURE_DETECTION = {"health_check_period_ms": 500, "health_check_failure_threshold": 3, "health_check_initial_delay_ms": 0}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalFleet:
    cluster: Cluster
    settings: FleetSettings
    url: str
    nodes: list[Any] = field(default_factory=list)

    ready_s: float = 0.0  # from deploying the app to every replica ready

    def node(self, node_id: str) -> Any:
        return next(n for n in self.nodes if n.node_id == node_id)

    def remove(self, node_id: str) -> None:
        node = self.node(node_id)
        self.nodes.remove(node)
        self.cluster.remove_node(node, allow_graceful=False)

    def add_node(self) -> None:
        """A node of one CPU joins, as a replacement would: Serve starts the replicas it could not place on it."""
        self.nodes.append(self.cluster.add_node(num_cpus=1))

    def redeploy(self, **changes: Any) -> threading.Thread:
        """Deploy changed settings, as an operator would with a new config; returns at once (Serve's wait runs on a thread)."""
        self.settings = replace(self.settings, **changes)
        app = build_app(self.settings)
        deploying = threading.Thread(target=serve.run, args=(app,), kwargs={"name": self.settings.app_name, "route_prefix": "/"}, daemon=True)
        deploying.start()
        return deploying


@contextlib.contextmanager
def local_fleet(nodes: int, replicas: int, *, model: str, token: str | None = None, **serve_changes: Any) -> Iterator[LocalFleet]:
    """A head node (the ingress, Serve's controller and proxy; no slots) and ``nodes`` nodes of one CPU: one slot each, running
    ``model`` (a registered family's name) with ``serve_changes`` to its ServeSettings (``model_options``, limits ...)."""
    port = free_port()
    settings = FleetSettings(
        serve=ServeSettings(model=model, port=port, token=token, threads=1, **serve_changes),
        min_replicas=replicas,
        max_replicas=replicas,
        admission_wait_s=3.0,
        resume_timeout_s=30.0,
        drain_timeout_s=120.0,
    )
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, "_system_config": FAST_FAILURE_DETECTION})
    try:
        workers = [cluster.add_node(num_cpus=1) for _ in range(nodes)]
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        started = time.monotonic()
        deploy(settings)
        yield LocalFleet(cluster, settings, f"http://127.0.0.1:{port}", workers, ready_s=time.monotonic() - started)
    finally:
        if ray.is_initialized():
            stop_app(settings.app_name, timeout_s=30.0)  # as `avatarstream fleet` stops: quietly, its sessions closed first
        ray.shutdown()
        cluster.shutdown()
        _wait_for_children(timeout_s=15.0)


def _wait_for_children(timeout_s: float) -> None:
    """The nodes' processes (raylets, workers) take a moment to exit: what runs next should not share the CPU with them."""
    import psutil

    nodes = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if any("ray" in part for part in child.cmdline()):  # only Ray's own: other children are not this cluster's
                nodes.append(child)
    _, alive = psutil.wait_procs(nodes, timeout=timeout_s)
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
