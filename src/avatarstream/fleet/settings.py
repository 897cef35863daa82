"""What an operator chooses for a fleet, checked before Ray starts."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from avatarstream.errors import InputError
from avatarstream.serve.settings import ServeSettings, is_loopback


@dataclass(frozen=True)
class FleetSettings:
    """``serve`` holds what every replica's server and the ingress share (model, token, limits; its host and port are the
    fleet's entry). Replicas scale between ``min_replicas`` and ``max_replicas`` so that about ``target_busy`` of the slots
    are busy; ``replica_host`` is where each replica's own server (its video) listens: ``auto`` is its node's address."""

    serve: ServeSettings
    min_replicas: int = 1
    max_replicas: int = 1
    target_busy: float = 0.8
    replica_host: str = "127.0.0.1"
    replica_cpus: float = 1.0
    replica_gpus: float = 0.0
    replica_resources: dict[str, float] = field(default_factory=dict)
    drain_timeout_s: float = 3600.0  # how long a replica that is going away waits for its session to end
    admission_wait_s: float = 3.0  # how long a new session waits for a slot before it is refused
    resume_timeout_s: float = 60.0  # how long a session whose replica died may take to resume on a free slot (then it fails)
    app_name: str = "avatarstream"

    def __post_init__(self) -> None:
        if not 1 <= self.min_replicas <= self.max_replicas:
            raise InputError(f"replicas must satisfy 1 <= min ({self.min_replicas}) <= max ({self.max_replicas})")
        if not 0 < self.target_busy <= 1:
            raise InputError(f"--target-busy must be in (0, 1], got {self.target_busy}")
        if self.replica_cpus < 0 or self.replica_gpus < 0:
            raise InputError("--replica-cpus and --replica-gpus must be 0 or more")
        for name in ("drain_timeout_s", "admission_wait_s", "resume_timeout_s"):
            if not getattr(self, name) > 0:
                raise InputError(f"{name.replace('_', '-')} must be positive, got {getattr(self, name)}")
        if self.serve.token is None and not (self.replica_host != "auto" and is_loopback(self.replica_host)):
            raise InputError(f"replicas serve video on {self.replica_host}, which other machines can reach; give --token T (or set AVATARSTREAM_TOKEN)")

    @property
    def autoscales(self) -> bool:
        return self.min_replicas != self.max_replicas

    def replica_serve_settings(self) -> ServeSettings:
        """The settings of one replica's own server: one session slot, any free port (``auto`` host: the replica's node)."""
        return replace(self.serve, host=self.replica_host, port=0, max_sessions=1, processes=1)

    def ingress_view(self) -> FleetSettings:
        """What the ingress depends on. Scaling is Serve's business: leaving it out means a change of replica counts is an
        in-place update of the slots, and the ingress (with its sessions) stays."""
        return replace(self, min_replicas=1, max_replicas=1, target_busy=1.0, drain_timeout_s=1.0)
