"""What an operator chooses when starting the server, checked once before anything listens."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avatarstream.errors import InputError
from avatarstream.families.options import FamilyOptions
from avatarstream.families.registry import Upscale, options_class
from avatarstream.publish.ice import check_ice_servers


@dataclass(frozen=True)
class ServeSettings:
    """Limits, model and security of one server.

    ``lookahead_s`` bounds how far generation may run ahead of the wall clock
    in a live session (None: one chunk), which is also how late an interrupt
    can take effect. ``threads`` sets PyTorch's intra-op threads for the
    whole process (each session runs on a thread of its own; on a shared CPU
    one thread per session avoids oversubscription). ``work_dir`` holds per-session folders the server names
    itself (None: a fresh temporary folder). ``processes`` > 1 (``--nproc``)
    splits every session over that many processes, so they hold one session at a time.

    ``model`` is a registered family's name (required: the command line has the
    default) and ``model_options`` its own options as a JSON-like mapping, checked
    by the family's options dataclass here, before anything loads or listens;
    a session's ``model_options`` are merged over them.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    model: str = field(kw_only=True)
    weights: Path | None = None
    model_options: Mapping[str, Any] = field(default_factory=dict)  # the family's options (FamilyOptions.to_json())
    device: str = "auto"
    max_sessions: int = 4
    idle_timeout_s: float = 300.0
    max_upload_bytes: int = 50 * 2**20
    max_queued_audio_s: float = 60.0
    lookahead_s: float | None = None
    result_ttl_s: float = 3600.0
    retry_after_s: int = 5
    preset: str = "veryfast"
    threads: int | None = None
    work_dir: Path | None = None
    processes: int = 1  # torchrun processes that run each session together (--nproc)
    compile: bool = False  # every pipeline's DiT blocks compiled (--compile)
    ice_servers: tuple[str, ...] = ()  # the sessions' WebRTC STUN/TURN servers (none: host candidates only; publish/ice.py)
    upscale: str | None = None  # an upscaler every session runs after the model (unless it asks not to), ``--upscale``
    upscale_weights: Path | None = None
    upscale_options: Mapping[str, Any] = field(default_factory=dict)  # the upscaler's own options (FamilyOptions.to_json())

    def __post_init__(self) -> None:
        if self.token is not None and len(self.token) < 8:
            raise InputError("--token must be at least 8 characters; use a long random string (e.g. `openssl rand -hex 16`)")
        if self.token is None and not is_loopback(self.host):
            raise InputError(
                f"--host {self.host} is reachable from other machines; give --token T (or set AVATARSTREAM_TOKEN) "
                "so that only clients with the token can use the server"
            )
        check_ice_servers(self.ice_servers)
        if not 0 <= self.port <= 65535:
            raise InputError(f"--port must be in 0..65535, got {self.port}")
        if self.threads is not None and self.threads < 1:
            raise InputError(f"--threads must be at least 1, got {self.threads}")
        for name in ("max_sessions", "max_upload_bytes"):
            if getattr(self, name) < 1:
                raise InputError(f"{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        for name in ("idle_timeout_s", "max_queued_audio_s", "result_ttl_s"):
            if not getattr(self, name) > 0:
                raise InputError(f"{name.replace('_', '-')} must be positive, got {getattr(self, name)}")
        if self.processes > 1 and self.max_sessions != 1:
            raise InputError(
                f"--nproc {self.processes} runs one session at a time on all its processes: use --max-sessions 1 (got {self.max_sessions}), "
                "or run one server per GPU for more sessions"
            )
        if self.lookahead_s is not None and not self.lookahead_s > 0:
            raise InputError(f"lookahead must be positive, got {self.lookahead_s}")
        self.family_options()  # an unknown model or option, or a value out of range, is refused before anything loads
        self.upscaler().check()

    def family_options(self) -> FamilyOptions:
        """``model_options`` as the family's options dataclass (an InputError names a bad option and its range)."""
        return options_class(self.model).parse(self.model_options)

    def upscaler(self) -> Upscale:
        """The upscaler every session runs (its name None: none), its options checked by its dataclass."""
        return Upscale(self.upscale, self.upscale_weights, self.upscale_options or None)


def is_loopback(host: str) -> bool:
    """True only for addresses no other machine can reach; any name but ``localhost`` counts as reachable."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
