"""The Ray Serve application: the ingress (one replica, on the head node) over the SessionSlot deployment.

``build_app(settings)`` is what ``avatarstream fleet`` runs; ``app_builder`` is
the same for a Serve config file (``import_path: avatarstream.fleet.app:app_builder``),
the way a KubeRay RayService deploys it (docs/fleet.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict
from ray import serve
from ray.serve import Application
from ray.serve.handle import DeploymentHandle

from avatarstream.fleet.api import create_fleet_app
from avatarstream.fleet.sessions import Fleet
from avatarstream.fleet.settings import FleetSettings
from avatarstream.fleet.slot import SessionSlot
from avatarstream.serve.settings import ServeSettings

INGRESS_REQUESTS = 10_000  # every client socket is an ongoing request of the ingress, for as long as it is open
HEAD_NODE = {"node:__internal_head__": 0.001}  # the resource only the head node has: the ingress lives as long as the cluster


class FleetIngress:
    """The ingress deployment: the fleet's sessions and the app that answers for them."""

    def __init__(self, slots: DeploymentHandle, settings: FleetSettings) -> None:
        self.fleet = Fleet(settings, slots)

    def __serve_build_asgi_app__(self) -> FastAPI:
        return create_fleet_app(self.fleet)

    async def close_sessions(self) -> int:
        """Called through a handle when the fleet stops, before its application is deleted: Serve would otherwise wait for
        the clients' sockets (ongoing requests of this replica) to end by themselves."""
        return await self.fleet.close_all()


def build_app(settings: FleetSettings) -> Application:
    """Both deployments with the options that make one replica one session slot (see slot.py)."""
    scaling: dict[str, Any] = {"num_replicas": settings.min_replicas}
    if settings.autoscales:
        scaling = {
            "autoscaling_config": {
                "min_replicas": settings.min_replicas,
                "max_replicas": settings.max_replicas,
                "target_ongoing_requests": settings.target_busy,  # busy slots per replica: below 1 keeps free slots ready
                "upscale_delay_s": 5.0,
                "downscale_delay_s": 60.0,
            }
        }
    actor: dict[str, Any] = {"num_cpus": settings.replica_cpus, "num_gpus": settings.replica_gpus}
    if settings.replica_resources:
        actor["resources"] = settings.replica_resources
    slot = serve.deployment(
        name="SessionSlot",
        max_ongoing_requests=1,
        graceful_shutdown_timeout_s=settings.drain_timeout_s,  # a replica going away finishes its session first
        graceful_shutdown_wait_loop_s=1.0,
        health_check_period_s=2.0,
        health_check_timeout_s=10.0,
        ray_actor_options=actor,
        **scaling,
    )(SessionSlot)
    ingress = serve.deployment(
        name="FleetIngress",
        num_replicas=1,
        max_ongoing_requests=INGRESS_REQUESTS,
        graceful_shutdown_timeout_s=settings.drain_timeout_s,  # replaced by a redeploy, it keeps its sockets as long as the slots drain
        graceful_shutdown_wait_loop_s=1.0,
        ray_actor_options={"num_cpus": 0, "resources": HEAD_NODE},
    )(serve.ingress()(FleetIngress))
    return ingress.bind(slot.bind(settings.replica_serve_settings()), settings.ingress_view())


class FleetArgs(BaseModel):
    """The ``args`` of a Serve config file (or ``serve run ... key=value``); the token comes from AVATARSTREAM_TOKEN.

    ``model`` names a registered family (required); ``model_options`` are its own options, as ``avatarstream families``
    and ``serve --model NAME --help`` list them (keys as the API's ``model_options`` takes them)."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    model: str
    weights: Path | None = None
    model_options: dict[str, Any] = {}
    device: str = "auto"
    min_replicas: int = 1
    max_replicas: int = 1
    target_busy: float = 0.8
    replica_cpus: float = 1.0
    replica_gpus: float = 0.0
    replica_host: str = "auto"
    idle_timeout_s: float = 300.0
    drain_timeout_s: float = 3600.0
    ice_servers: list[str] = []  # the WebRTC viewers' STUN/TURN servers (none: host candidates only; publish/ice.py)
    upscale: str | None = None  # an upscaler after the model (``avatarstream families`` lists them), with its weights and options
    upscale_weights: Path | None = None
    upscale_options: dict[str, Any] = {}


def app_builder(args: dict[str, Any]) -> Application:
    import os

    parsed = FleetArgs.model_validate(args)
    serve_settings = ServeSettings(
        token=os.environ.get("AVATARSTREAM_TOKEN"),
        model=parsed.model,
        weights=parsed.weights,
        model_options=parsed.model_options,
        device=parsed.device,
        idle_timeout_s=parsed.idle_timeout_s,
        ice_servers=tuple(parsed.ice_servers),
        upscale=parsed.upscale,
        upscale_weights=parsed.upscale_weights,
        upscale_options=parsed.upscale_options,
    )
    serve_fields = {"model", "weights", "model_options", "device", "idle_timeout_s", "ice_servers", "upscale", "upscale_weights", "upscale_options"}
    fields = parsed.model_dump(exclude=serve_fields)
    return build_app(FleetSettings(serve=serve_settings, **fields))
